package org.apache.spark.sql.fullwindow.recovery

import java.util.concurrent.ConcurrentHashMap

import org.apache.spark.SparkContext
import org.apache.spark.scheduler.{SparkListener, SparkListenerJobStart}

/**
 * Stops a run whose recovery can no longer be trusted (its lease was taken over by another
 * driver, or its recovery directory vanished or filled up): the Python runtime calls [[fail]],
 * which cancels the Spark jobs running now with the reason, and every job started later in the
 * same SparkContext while the recovery job is still open, so the run ends with that reason
 * instead of finishing without the guarantee.
 */
object RecoveryFence {
  private val failed = new ConcurrentHashMap[String, String]()
  @volatile private var registeredWith: SparkContext = _

  private class Listener(sc: SparkContext) extends SparkListener {
    override def onJobStart(start: SparkListenerJobStart): Unit =
      reason.foreach(r => sc.cancelJob(start.jobId, r))
  }

  private def reason: Option[String] = {
    val it = failed.entrySet().iterator()
    while (it.hasNext) {
      val e = it.next()
      if (FullWindowRecoveryJobs.isOpen(e.getKey)) return Some(e.getValue)
    }
    None
  }

  def fail(sc: SparkContext, jobDir: String, why: String): Unit = {
    synchronized {
      if (registeredWith ne sc) {
        sc.addSparkListener(new Listener(sc))
        registeredWith = sc
      }
    }
    val message = s"fullwindow recovery: $why"
    failed.put(jobDir, message)
    sc.statusTracker.getActiveJobIds().foreach(id => sc.cancelJob(id, message))
  }

  /** Forgets `jobDir`'s failure (its job is closed, or opened again by a later run). */
  def clear(jobDir: String): Unit = failed.remove(jobDir)
}
