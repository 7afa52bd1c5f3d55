package org.apache.spark.sql.fullwindow.recovery

import java.nio.charset.StandardCharsets
import java.security.MessageDigest

import org.apache.hadoop.fs.Path

import org.apache.spark.internal.Logging
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.fullwindow.{FullWindowAnalysisException, FullWindowPython}
import org.apache.spark.sql.fullwindow.logical.{FullWindowCommit, FullWindowRecoveredScan}
import org.apache.spark.sql.internal.SQLConf

/**
 * Recovery for the full-window operations a SQL query makes with `/*+ FULL_WINDOW_PARTITION */`
 * (they have no Python call site): the same commit as the DataFrame operations get in Python,
 * decided here in the JVM with the fingerprint computed from the analyzed plan and the job's
 * recorded state put into [[FullWindowRecoveryJobs]] by the Python runtime.
 */
object HintRecovery extends Logging {
  val Enabled = "spark.fullwindow.recovery.enabled"
  val Dir = "spark.fullwindow.recovery.dir"
  val JobId = "spark.fullwindow.recovery.jobId"

  /** The job directory recovery is on for in this session's conf (joined as Python joins it). */
  def jobDir(conf: SQLConf): Option[String] = {
    val enabled = conf.getConfString(Enabled, "false").trim.toLowerCase(java.util.Locale.ROOT)
    if (!Set("true", "1", "yes").contains(enabled)) return None
    val dir = conf.getConfString(Dir, "").trim
    val id = conf.getConfString(JobId, "").trim
    if (dir.isEmpty || id.isEmpty) None
    else Some(dir.replaceAll("/+$", "") + "/" + id.replaceAll("^/+|/+$", ""))
  }

  /** `plan` (the hinted operation, named `operation`) committed, or recovered, when recovery is on. */
  def recoverable(operation: String, plan: LogicalPlan): LogicalPlan = {
    val job = jobDir(SQLConf.get) match {
      case Some(j) => j
      case None => return plan
    }
    FullWindowRecoveryJobs.requireOpen(job, s"the $operation of a FULL_WINDOW_PARTITION query")
    val texts = FullWindowPython.planTexts(plan, FullWindowPython.textVersion(job))
    val fp = hash(operation + "\u0000" + texts.full)
    val structure = hash(operation + "\u0000" + texts.structure)
    val fail = InputFingerprint.mode(SQLConf.get.getConfString(InputFingerprint.OnInputChange,
      "recompute")) == "fail"
    InputFingerprint.operation(job, operation, fp, structure, texts.inputs, fail) match {
      case Seq(error, warning) =>
        if (fail) throw new FullWindowAnalysisException("RECOVERY_INPUT_CHANGED", error)
        logWarning(warning)
      case _ =>
    }
    val operatorDir = s"$job/operators/$fp"
    val session = SparkSession.active
    val hadoopConf = session.sparkContext.hadoopConfiguration
    val dirPath = new Path(operatorDir)
    dirPath.getFileSystem(hadoopConf).mkdirs(dirPath)
    val vertex = FullWindowRecoveryJobs.vertex(job, fp)
    val finished = vertex.map(_.finished.toSeq.sortBy(_._1)).getOrElse(Nil)
    val intact = CommittedRows.verifyAll(finished.map { case (_, f) => (f.path, f.bytes, f.crc) },
      session.sparkContext)
    val (verified, damaged) = finished.zip(intact).partition(_._2) match {
      case (ok, bad) => (ok.map(_._1), bad.map(_._1))
    }
    if (damaged.nonEmpty) {
      val parts = damaged.map(_._1)
      logWarning(s"fullwindow: $operation $fp: the committed outputs of partitions " +
        s"${parts.mkString("[", ", ", "]")} are missing or damaged; they run again")
      vertex.foreach(v => FullWindowRecoveryJobs.put(job, fp, v.copy(finished = verified.toMap)))
      val esc = FullWindowRecoveryListener.escape _
      FullWindowRecoveryListener.post(
        s"""{"type":"vertexReset","fingerprint":"$fp","operator":"${esc(operation)}",""" +
          s""""job":"${esc(job)}","partitions":${parts.mkString("[", ",", "]")},""" +
          s""""reason":"committed output missing or damaged"}""")
    }
    val n = vertex.map(_.numPartitions).getOrElse(-1)
    val done = verified.toMap
    if (n >= 0 && (0 until n).forall(done.contains)) {
      FullWindowRecoveredScan(fp, operation, (0 until n).map(done(_).path),
        (0 until n).map(done(_).bytes).sum, plan.output)
    } else {
      FullWindowCommit(fp, operation, operatorDir, n, vertex.map(_.layout).getOrElse(""),
        done.map { case (p, f) => p -> f.path }, plan)
    }
  }

  private def hash(text: String): String =
    MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8))
      .take(12).map(b => f"${b & 0xff}%02x").mkString
}
