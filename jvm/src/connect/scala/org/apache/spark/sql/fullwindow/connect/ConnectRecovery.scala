package org.apache.spark.sql.fullwindow.connect

import io.fullwindow.connect.proto.{Commit, RecoveryControl}

import org.apache.spark.SparkContext
import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.expressions.AttributeReference
import org.apache.spark.sql.catalyst.plans.logical.{LocalRelation, LogicalPlan}
import org.apache.spark.sql.fullwindow.FullWindowAnalysisException
import org.apache.spark.sql.fullwindow.recovery.RecoveryFence
import org.apache.spark.sql.fullwindow.shims.SparkShims.Dataset
import org.apache.spark.sql.types.StringType

/**
 * Recovery's runtime for the jobs of a Spark Connect server's sessions. It is the same Python
 * runtime a classic driver runs (event store, lease, fingerprints, replay: one implementation),
 * running in the Python process that started this JVM (`python -m fullwindow.server`) and
 * reached through a py4j callback. Errors come back as `KIND\u0000message`, never as exceptions
 * across py4j.
 */
trait ConnectRecoveryRuntime {
  /**
   * `dataset` (the result of full-window `operation` in Connect session `sessionId` of
   * `session`) made recoverable: a Dataset, or a String `KIND\u0000message`. `codeHex`: the
   * client's digest of the operation's Python function; `extra`: its other arguments' text.
   */
  def commit(sessionId: String, userId: String, session: AnyRef, dataset: AnyRef,
      operation: String, codeHex: String, extra: String): AnyRef

  /** A recovery call for the session's job (start, flush, cleanup, status): JSON, or
    * `KIND\u0000message`. */
  def control(sessionId: String, userId: String, session: AnyRef, action: String,
      argument: String): String
}

object FullWindowConnectRecovery {
  @volatile private var runtime: ConnectRecoveryRuntime = _

  /** How a server that can run recovery is started (said in the refusal). */
  val Launcher: String = "python -m fullwindow.server"

  /** Called by the launcher's Python process, before the Connect service starts. */
  def install(rt: ConnectRecoveryRuntime, sc: SparkContext): Unit = {
    RecoveryFence.register(sc)
    runtime = rt
  }

  def installed: Boolean = runtime != null

  private def refusal = new FullWindowAnalysisException("INVALID_CONFIG",
    "spark.fullwindow.recovery.enabled=true on a Spark Connect server that cannot run " +
      "recovery: recovery's runtime (job-event listener, event store, lease) runs in a Python " +
      s"process beside the server's driver, which a server started with " +
      "start-connect-server.sh does not have. Start the server with " +
      s"`$Launcher --master ... [--conf key=value ...]` (it starts the Spark Connect server " +
      "with fullwindow and recovery's runtime), or turn recovery off for this session.")

  private def raise(answer: String): Nothing = {
    val i = answer.indexOf('\u0000')
    if (i < 0) throw new FullWindowAnalysisException("INVALID_ARGUMENT", answer)
    throw new FullWindowAnalysisException(answer.substring(0, i), answer.substring(i + 1))
  }

  def commit(p: ConnectPlanning, input: Dataset[Row], m: Commit): LogicalPlan = {
    val rt = runtime
    if (rt == null) throw refusal
    val code = m.getCodeDigest.toByteArray.map(b => f"${b & 0xff}%02x").mkString
    rt.commit(p.sessionId, p.userId, p.session, input, m.getOperation, code, m.getExtra) match {
      case ds: Dataset[_] => ds.logicalPlan
      case answer: String => raise(answer)
      case other => throw new IllegalStateException(s"fullwindow recovery answered $other")
    }
  }

  def control(p: ConnectPlanning, m: RecoveryControl): LogicalPlan = {
    val rt = runtime
    if (rt == null) throw refusal
    val answer = rt.control(p.sessionId, p.userId, p.session, m.getAction, m.getArgument)
    if (answer != null && answer.indexOf('\u0000') >= 0) raise(answer)
    val output = Seq(AttributeReference("result", StringType, nullable = true)())
    LocalRelation.fromExternalRows(output, Seq(Row(answer)))
  }
}

