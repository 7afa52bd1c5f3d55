package org.apache.spark.sql.fullwindow.recovery.writes

import java.io.FileNotFoundException
import java.util.Locale
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicInteger

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path

import org.apache.spark.internal.Logging
import org.apache.spark.sql.{Row, SparkSession => AnySession}
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.command.LeafRunnableCommand
import org.apache.spark.sql.fullwindow.{FullWindowAnalysisException, FullWindowErrors, FullWindowPython}
import org.apache.spark.sql.fullwindow.recovery.{FullWindowRecoveryJobs, FullWindowRecoveryListener, HintRecovery}
import org.apache.spark.sql.fullwindow.shims.SparkShims
import org.apache.spark.sql.fullwindow.shims.SparkShims.SparkSession
import org.apache.spark.sql.internal.SQLConf

/**
 * A write of a job with recovery on (see [[RecoveredWrites]]): `write` is the write command as
 * the analyzer made it, run by [[RecoveredWrites.run]] when this command runs.
 */
case class FullWindowWrite(write: LogicalPlan) extends LeafRunnableCommand {
  override def output: Seq[Attribute] = write.output
  override def innerChildren: Seq[LogicalPlan] = Seq(write)
  override def run(session: AnySession): Seq[Row] =
    RecoveredWrites.run(session.asInstanceOf[SparkSession], write)
}

/** Wraps each write command of a session with recovery on in [[FullWindowWrite]] (a
  * post-hoc resolution rule: the analyzer has made the command by then). */
object WrapRecoveredWrites extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = plan match {
    case _: FullWindowWrite => plan
    case p if !RecoveredWrites.inside && HintRecovery.jobDir(conf).isDefined &&
        WriteSinks.isWrite(p) => FullWindowWrite(p)
    case _ => plan
  }
}

/**
 * Exactly-once writes for recovered jobs. With recovery on, each write the job makes is numbered
 * in the order the job runs them (1, 2, ... in every run) and fingerprinted (its sink, target,
 * mode and the stable text of its query, with the listings of the files it reads). Before it
 * runs:
 *
 *  1. a write that an earlier run recorded as committed under the same number and fingerprint
 *     (`<jobDir>/writes/<n>.<fingerprint>.committed`), or that the sink's own committed state
 *     holds ([[WriteSink.committed]]: this holds when the driver died between the sink's commit
 *     and that record), is skipped: its query is not run, nothing is written;
 *  2. otherwise what an earlier run left of the same write number is undone
 *     ([[WriteSink.rollback]]), the start is recorded, and the write runs with its id attached
 *     ([[WriteSink.prepare]]), then is recorded as committed.
 *
 * A sink that keeps no record ([[UncheckedSink]]) that an earlier run started and did not record
 * as committed runs again (at least once), or fails under
 * `spark.fullwindow.recovery.onUncheckedWrite=fail`.
 */
object RecoveredWrites extends Logging {
  val OnUncheckedWrite = "spark.fullwindow.recovery.onUncheckedWrite"
  val WritesDir = "writes"

  private val depth = new ThreadLocal[Int] { override def initialValue(): Int = 0 }

  /** Whether this thread runs a recovered write now (its nested commands are part of it). */
  def inside: Boolean = depth.get > 0

  private final class JobWrites(val records: Set[String]) {
    val next = new AtomicInteger(0)
  }

  private val jobs = new ConcurrentHashMap[String, JobWrites]()
  private val warned = ConcurrentHashMap.newKeySet[String]()

  /** A new run of `jobDir` opened in this driver: its writes are numbered from 1 again. */
  def reset(jobDir: String): Unit = jobs.remove(jobDir)

  private def writes(jobDir: String, session: SparkSession): JobWrites =
    jobs.computeIfAbsent(jobDir, _ => {
      val dir = new Path(jobDir, WritesDir)
      val fs = dir.getFileSystem(session.sessionState.newHadoopConf())
      val names = try fs.listStatus(dir).map(_.getPath.getName).toSet
        catch { case _: FileNotFoundException => Set.empty[String] }
      new JobWrites(names)
    })

  def onUncheckedWrite(conf: SQLConf): String = {
    val raw = conf.getConfString(OnUncheckedWrite, "rerun")
    raw.trim.toLowerCase(Locale.ROOT) match {
      case m @ ("rerun" | "fail") => m
      case _ => throw FullWindowErrors.badConf(OnUncheckedWrite, raw,
        "rerun (a write whose sink keeps no record of its commits runs again on a resume: at " +
          "least once), fail (a resume fails at such a write that an earlier run started)")
    }
  }

  def fingerprint(sink: WriteSink): String = {
    val text = FullWindowPython.planTexts(sink.query).full
    val parts = Seq("write") ++ sink.identity ++ Seq(text) ++
      (if (sink.extra.isEmpty) Nil else Seq(sink.extra))
    WriteCall.sha(parts.mkString("\u0000")).take(24)
  }

  /** What [[begin]] decided for a write. */
  sealed trait Decision
  /** Recovery is off, or the job's runtime has not started in this driver: run, unnumbered. */
  case object NotNumbered extends Decision
  /** An earlier run committed it: nothing runs. */
  case object Skipped extends Decision
  /** Run it as write `w` (its start recorded), then call [[end]]. */
  final case class Run(w: WriteCall, sink: WriteSink) extends Decision

  def run(session: SparkSession, write: LogicalPlan): Seq[Row] =
    begin(session, WriteSinks.of(session, write)) match {
      case NotNumbered => execute(session, write, Map.empty)
      case Skipped => Nil
      case Run(w, sink) =>
        val (plan, settings) = sink.prepare(session, w)
        val rows = sink.running(session, w)(execute(session, plan, settings))
        end(session, w, sink)
        rows
    }

  /**
   * Numbers write `sink` (made only when the job is open) in the session's open job and
   * decides it: skipped (committed by an earlier run: recorded, or held by the sink), refused
   * (an unchecked sink an earlier run started, under `onUncheckedWrite=fail`), or to run: then
   * what an earlier run left of it is undone and its start recorded.
   */
  def begin(session: SparkSession, sink: => WriteSink): Decision = {
    val conf = session.sessionState.conf
    val jobDir = HintRecovery.jobDir(conf).orNull
    if (jobDir == null) return NotNumbered
    val mode = onUncheckedWrite(conf)
    if (!FullWindowRecoveryJobs.isOpen(jobDir)) {
      if (warned.add(jobDir)) {
        logWarning(s"fullwindow recovery: a write of job $jobDir ran before the job's recovery " +
          "runtime started in this driver, so it is not numbered and a resumed run writes it " +
          "again. Call fullwindow.recovery.start(spark) at the start of the job (any " +
          "full-window DataFrame operation defined first starts it too).")
      }
      return NotNumbered
    }
    val s = sink
    val jw = writes(jobDir, session)
    val n = jw.next.incrementAndGet()
    val jobId = conf.getConfString(HintRecovery.JobId, "").trim
    val w = WriteCall(jobDir, jobId, n, fingerprint(s))
    val what = s"write $n of job $jobId (${s.kind}: ${s.target}, ${s.mode})"
    if (jw.records.contains(s"$n.${w.fingerprint}.committed")) {
      skipped(w, s, what, "an earlier run recorded it as committed")
      return Skipped
    }
    if (s.committed(session, w)) {
      record(session, w, s, "committed")
      skipped(w, s, what, s"the ${s.kind} sink holds its commit")
      return Skipped
    }
    val earlier = jw.records.filter(r => r.startsWith(s"$n.") && !r.startsWith(s"$n.${w.fingerprint}."))
    if (earlier.exists(_.endsWith(".committed"))) {
      logWarning(s"fullwindow recovery: $what: an earlier run committed write $n of this job " +
        "with another plan, target or input; it runs again, and what the earlier run wrote " +
        "stays where it was written.")
    }
    if (!s.checked && jw.records.contains(s"$n.${w.fingerprint}.started")) {
      if (mode == "fail") {
        throw new FullWindowAnalysisException("RECOVERY_UNCHECKED_WRITE",
          s"$what: an earlier run of the job started this write and did not record it as " +
            "finished, and this sink keeps no record of what it committed (JDBC, foreach / " +
            "foreachPartition, a V1 relation provider, a DataSource V2 writer of its own), so " +
            "whether its rows are there already cannot be told. " +
            s"$OnUncheckedWrite=fail refuses to run it again: " +
            "check the target, then run with " + s"$OnUncheckedWrite=rerun (the write runs " +
            "again: its rows may be there twice) or start the job afresh under a new jobId.")
      }
      logWarning(s"fullwindow recovery: $what: an earlier run started it and this sink keeps " +
        "no record of its commits; it runs again (at least once).")
    }
    s.rollback(session, w)
    record(session, w, s, "started")
    Run(w, s)
  }

  /** A write of the job that Python code runs itself (`foreach` / `foreachPartition`):
    * [[begin]] it with [[RecoveredWrites.beginAction]], run it when it says so, then [[done]]. */
  final class Action private[writes] (session: SparkSession, decision: Decision) {
    /** Whether an earlier run committed it: do not run it. */
    def skipped: Boolean = decision == Skipped
    /** The action returned: recorded as committed (when it is numbered). */
    def done(): Unit = decision match {
      case Run(w, sink) => end(session, w, sink)
      case _ =>
    }
  }

  /** Numbers DataFrame action `kind` (`foreach`, `foreachPartition`) of `df` as an unchecked
    * write of the session's open job; see [[ActionSink]]. */
  def beginAction(df: SparkShims.Dataset[Row], kind: String, target: String,
      code: String): Action = {
    val session = df.sparkSession
    new Action(session, begin(session, ActionSink(kind, target, code, df.queryExecution.analyzed)))
  }

  /** Write `w` (decided [[Run]] by [[begin]]) returned: the sink's record, then the job's. */
  def end(session: SparkSession, w: WriteCall, sink: WriteSink): Unit = {
    sink.finish(session, w)
    record(session, w, sink, "committed")
    post(w, sink, "writeCommitted", "")
  }

  private def skipped(w: WriteCall, sink: WriteSink, what: String, why: String): Unit = {
    logWarning(s"fullwindow recovery: $what is skipped: $why (nothing is computed for it, " +
      "nothing written).")
    post(w, sink, "writeSkipped", why)
  }

  private def post(w: WriteCall, sink: WriteSink, kind: String, reason: String): Unit = {
    val esc = FullWindowRecoveryListener.escape _
    FullWindowRecoveryListener.post(
      s"""{"type":"$kind","job":"${esc(w.jobDir)}","number":${w.number},""" +
        s""""writeFingerprint":"${w.fingerprint}","id":"${esc(w.id)}","sink":"${sink.kind}",""" +
        s""""target":"${esc(sink.target)}","mode":"${esc(sink.mode)}",""" +
        s""""reason":"${esc(reason)}"}""")
  }

  /** `<jobDir>/writes/<n>.<fingerprint>.<state>`, made durable before the write goes on. */
  private def record(session: SparkSession, w: WriteCall, sink: WriteSink, state: String): Unit = {
    val esc = FullWindowRecoveryListener.escape _
    val p = new Path(new Path(w.jobDir, WritesDir), s"${w.number}.${w.fingerprint}.$state")
    FileSink.writeText(p,
      s"""{"number":${w.number},"fingerprint":"${w.fingerprint}","state":"$state",""" +
        s""""sink":"${sink.kind}","target":"${esc(sink.target)}","mode":"${esc(sink.mode)}",""" +
        s""""appId":"${esc(session.sparkContext.applicationId)}",""" +
        s""""time":${System.currentTimeMillis()}}""",
      session.sessionState.newHadoopConf(), durable = true)
  }

  /** Runs write command `plan` now, with `settings` set on the session while it runs. */
  private def execute(session: SparkSession, plan: LogicalPlan,
      settings: Map[String, String]): Seq[Row] = {
    val conf = session.sessionState.conf
    def go(): Seq[Row] = {
      val before = settings.keys.map(k => k -> Option(conf.getConfString(k, null))).toMap
      settings.foreach { case (k, v) => conf.setConfString(k, v) }
      depth.set(depth.get + 1)
      try SparkShims.ofRows(session, plan).collect().toSeq
      finally {
        depth.set(depth.get - 1)
        before.foreach {
          case (k, Some(v)) => conf.setConfString(k, v)
          case (k, None) => conf.unsetConf(k)
        }
      }
    }
    // settings are the session's (Delta's transaction id): two writes of one session that hold
    // some run one after the other, so that neither commits under the other's
    if (settings.isEmpty) go() else settingsLock(conf).synchronized(go())
  }

  private val settingsLocks = new java.util.WeakHashMap[SQLConf, AnyRef]()

  private def settingsLock(conf: SQLConf): AnyRef = settingsLocks.synchronized {
    var l = settingsLocks.get(conf)
    if (l == null) { l = new AnyRef; settingsLocks.put(conf, l) }
    l
  }
}
