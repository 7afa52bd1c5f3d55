package org.apache.spark.sql.fullwindow.recovery

import java.util.concurrent.ConcurrentHashMap

import scala.jdk.CollectionConverters._

/**
 * The recovery state of the jobs whose event stores the Python runtime of this driver has open:
 * per operator fingerprint, what the earlier runs recorded (partition count, layout, and the
 * committed output of each finished partition, not yet verified). The Python runtime puts it here
 * when it opens a job, so that operations defined in the JVM alone (the SQL hint forms) can be
 * made recoverable too; their events go through the same queue to the same store.
 */
object FullWindowRecoveryJobs {
  final case class Finished(path: String, bytes: Long, crc: Long)
  final case class Vertex(numPartitions: Int, layout: String, finished: Map[Int, Finished])

  private val jobs = new ConcurrentHashMap[String, ConcurrentHashMap[String, Vertex]]()

  def open(jobDir: String): Unit = {
    jobs.putIfAbsent(jobDir, new ConcurrentHashMap[String, Vertex]())
    writes.RecoveredWrites.reset(jobDir)  // a new run: its writes are numbered from 1
  }

  def close(jobDir: String): Unit = {
    jobs.remove(jobDir)
    writes.RecoveredWrites.reset(jobDir)
    InputFingerprint.forget(jobDir)
    JobShuffles.forget(jobDir)
    RecoveryFence.clear(jobDir)
  }

  def isOpen(jobDir: String): Boolean = jobs.containsKey(jobDir)

  /**
   * Fails `what` (a write, a SQL hint operation, a query whose shuffles the job keeps) of job
   * `jobDir` when the job's recovery runtime is not open in this driver: with recovery on,
   * running it unrecorded would silently redo it on a resume (or mix two runs' outputs).
   */
  def requireOpen(jobDir: String, what: String): Unit = if (!isOpen(jobDir)) {
    throw new org.apache.spark.sql.fullwindow.FullWindowAnalysisException("RECOVERY_NOT_STARTED",
      s"$what: spark.fullwindow.recovery.enabled is true (job directory $jobDir) but the " +
        "job's recovery runtime is not started in this driver, so nothing of it would be kept " +
        "or recovered. In a PySpark driver, import fullwindow before the session is created " +
        "(SparkSession.builder...getOrCreate() then starts it), or call " +
        "fullwindow.recovery.start(spark) when recovery was switched on after that; a Spark " +
        "Connect server with recovery on is started with python -m fullwindow.server and its " +
        "clients import fullwindow.")
  }

  def put(jobDir: String, fingerprint: String, vertex: Vertex): Unit =
    Option(jobs.get(jobDir)).foreach(_.put(fingerprint, vertex))

  def vertex(jobDir: String, fingerprint: String): Option[Vertex] =
    Option(jobs.get(jobDir)).flatMap(m => Option(m.get(fingerprint)))

  def openJobs: Seq[String] = jobs.keys().asScala.toSeq
}
