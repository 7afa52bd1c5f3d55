package org.apache.spark.sql.fullwindow.recovery

import java.util.concurrent.ConcurrentHashMap

import scala.jdk.CollectionConverters._

import org.apache.spark.SparkContext
import org.apache.spark.scheduler.{SparkListener, SparkListenerEvent, SparkListenerJobEnd, SparkListenerJobStart}

/**
 * Stops a run whose recovery can no longer be trusted (its lease was taken over by another
 * driver, or its recovery directory vanished or filled up): the Python runtime calls [[fail]],
 * which cancels the Spark jobs running now with the reason, and every job started later in the
 * same SparkContext while the recovery job is still open, so the run ends with that reason
 * instead of finishing without the guarantee. On a Spark Connect server, where many sessions
 * share the SparkContext, a failed job names its session: only the Spark jobs whose tags name
 * that session (`..._Session_<id>_...`, Connect's tag of each operation's jobs) are cancelled.
 * It also follows which Spark jobs run (with their tags) and which Connect sessions were closed,
 * what decides whether a Connect session still runs its recovery job.
 */
object RecoveryFence {
  /** jobDir -> (message, the tag fragment of the jobs to cancel; "" for every job) */
  private val failed = new ConcurrentHashMap[String, (String, String)]()
  /** Spark job id -> its tags, for the jobs running now */
  private val running = new ConcurrentHashMap[Int, String]()
  /** the Spark Connect sessions of this server that were closed (released or expired) */
  private val closedSessions = ConcurrentHashMap.newKeySet[String]()
  @volatile private var registeredWith: SparkContext = _

  private class Listener(sc: SparkContext) extends SparkListener {
    override def onJobStart(start: SparkListenerJobStart): Unit = {
      val tags = Option(start.properties).flatMap(p => Option(p.getProperty("spark.job.tags")))
        .getOrElse("")
      running.put(start.jobId, tags)
      reason(tags).foreach(r => sc.cancelJob(start.jobId, r))
    }

    override def onJobEnd(end: SparkListenerJobEnd): Unit = running.remove(end.jobId)

    // Spark Connect's SparkListenerConnectSessionClosed, by name: its constructor differs by line
    override def onOtherEvent(event: SparkListenerEvent): Unit =
      if (event.getClass.getSimpleName == "SparkListenerConnectSessionClosed") {
        try {
          val id = event.getClass.getMethod("sessionId").invoke(event)
          if (id != null) closedSessions.add(id.toString)
        } catch {
          case _: ReflectiveOperationException =>
        }
      }
  }

  private def reason(tags: String): Option[String] = {
    val it = failed.entrySet().iterator()
    while (it.hasNext) {
      val e = it.next()
      val (message, scope) = e.getValue
      if (FullWindowRecoveryJobs.isOpen(e.getKey) && tags.contains(scope)) return Some(message)
    }
    None
  }

  /** Starts following the SparkContext's jobs (idempotent): called when a job is opened. */
  def register(sc: SparkContext): Unit = synchronized {
    if (registeredWith ne sc) {
      sc.addSparkListener(new Listener(sc))
      registeredWith = sc
    }
  }

  def fail(sc: SparkContext, jobDir: String, why: String): Unit = fail(sc, jobDir, why, "")

  /** [[fail]] for the jobs of Spark Connect session `sessionId` only ("": every job). */
  def fail(sc: SparkContext, jobDir: String, why: String, sessionId: String): Unit = {
    register(sc)
    val message = s"fullwindow recovery: $why"
    val scope = if (sessionId == null || sessionId.isEmpty) "" else s"_Session_${sessionId}_"
    failed.put(jobDir, (message, scope))
    if (scope.isEmpty) sc.statusTracker.getActiveJobIds().foreach(id => sc.cancelJob(id, message))
    else running.asScala.foreach { case (id, tags) =>
      if (tags.contains(scope)) sc.cancelJob(id, message)
    }
  }

  /** Whether a Spark job whose tags contain `fragment` is running (the SparkContext's jobs are
    * followed once a recovery job was opened: [[register]]). */
  def anyRunning(fragment: String): Boolean = running.values().asScala.exists(_.contains(fragment))

  /** Whether Spark Connect session `sessionId` of this server was closed. */
  def sessionClosed(sessionId: String): Boolean = closedSessions.contains(sessionId)

  /** Forgets `jobDir`'s failure (its job is closed, or opened again by a later run). */
  def clear(jobDir: String): Unit = failed.remove(jobDir)
}
