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
import org.apache.spark.sql.execution.CommandResultExec
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
 * Exactly-once writes for recovered jobs. With recovery on, each write the job makes is
 * fingerprinted (its sink, target, mode and the stable text of its query, with the listings of
 * the files it reads) and identified by that fingerprint and its occurrence among the run's writes
 * with that fingerprint (the 1st, 2nd, ... write of fingerprint F: [[WriteCall]]), not by the
 * order the run starts its writes in, so that writes started from several threads match in a
 * resumed run whatever order its threads start them in. Before a write runs:
 *
 *  1. a write that an earlier run recorded as committed under the same identity
 *     (`<jobDir>/writes/<n>.<fingerprint>.<occurrence>.committed`, `n` being its place in the
 *     order that run started its writes, for people only), or that the sink's own committed
 *     state holds ([[WriteSink.committed]]: this holds when the driver died between the sink's
 *     commit and that record), is skipped: its query is not run, nothing is written;
 *  2. otherwise what earlier runs left half-written in its sink is undone
 *     ([[WriteSink.rollback]]), the start is recorded, and the write runs with its id attached
 *     ([[WriteSink.prepare]]), then is recorded as committed.
 *
 * A sink that keeps no record ([[UncheckedSink]]) that an earlier run started and did not record
 * as committed runs again (at least once), or fails under
 * `spark.fullwindow.recovery.onUncheckedWrite=fail`.
 *
 * Job directories written before writes had this identity hold records
 * `<n>.<fingerprint>.<state>`, `n` the write's place in the start order, and their sinks hold ids
 * with that number: the records of fingerprint F are read as F's occurrences in the order of
 * their numbers (the smallest number is occurrence 1, ...), which is what they were when that
 * run started its writes in a fixed order, and the old ids are checked beside the new ones
 * ([[WriteCall.legacyNumber]]).
 */
object RecoveredWrites extends Logging {
  val OnUncheckedWrite = "spark.fullwindow.recovery.onUncheckedWrite"
  val WritesDir = "writes"

  private val depth = new ThreadLocal[Int] { override def initialValue(): Int = 0 }

  /** Whether this thread runs a recovered write now (its nested commands are part of it). */
  def inside: Boolean = depth.get > 0

  /** A record under `<jobDir>/writes/`: write (`fingerprint`, `occurrence`) in `state`,
    * `number` in the start order of the run that wrote it; `legacy`: a record of the earlier
    * form `<n>.<fingerprint>.<state>` (its occurrence derived from the numbers). */
  private[writes] final case class Record(name: String, number: Int, fingerprint: String,
      occurrence: Int, state: String, legacy: Boolean)

  /** The job's write records, from the names under `<jobDir>/writes/`; hidden files (a local
    * file system's checksums) and names of no known form are left out. */
  private[writes] def parseRecords(names: Iterable[String]): Seq[Record] = {
    def num(t: String) = t.nonEmpty && t.length < 10 && t.forall(_.isDigit)
    def fp(t: String) = t.length == 24 && t.forall(c => c.isDigit || (c >= 'a' && c <= 'f'))
    val states = Set("started", "committed")
    val parsed = names.toSeq.filterNot(_.startsWith(".")).map(n => n -> n.split('.'))
    val current = parsed.collect {
      case (n, Array(i, f, k, st)) if num(i) && fp(f) && num(k) && states(st) =>
        Record(n, i.toInt, f, k.toInt, st, legacy = false)
    }
    val old = parsed.collect { case (n, Array(i, f, st)) if num(i) && fp(f) && states(st) =>
      (n, i.toInt, f, st) }
    // the earlier form: fingerprint F's records, by number, are F's occurrences 1, 2, ...
    val ranks = old.groupBy(_._3).map { case (f, rs) =>
      f -> rs.map(_._2).distinct.sorted.zipWithIndex.map { case (i, r) => i -> (r + 1) }.toMap }
    current ++ old.map { case (n, i, f, st) => Record(n, i, f, ranks(f)(i), st, legacy = true) }
  }

  private final class JobWrites(jobDir: String, names: Set[String]) {
    val next = new AtomicInteger(0)
    val records: Seq[Record] = parseRecords(names)
    private val states: Map[(String, Int), Set[String]] =
      records.groupBy(r => (r.fingerprint, r.occurrence)).map { case (k, rs) =>
        k -> rs.map(_.state).toSet }
    private val legacy: Map[(String, Int), Int] = records.filter(_.legacy)
      .map(r => (r.fingerprint, r.occurrence) -> r.number).toMap
    private val seen = new ConcurrentHashMap[String, AtomicInteger]()

    /** The next occurrence of fingerprint `fp` in this run (1 for its first write). */
    def occurrence(fp: String): Int =
      seen.computeIfAbsent(fp, _ => new AtomicInteger(0)).incrementAndGet()

    /** Whether this run has made write (`fp`, `k`) already (or makes it now). */
    def claimed(fp: String, k: Int): Boolean = Option(seen.get(fp)).exists(_.get >= k)

    def has(fp: String, k: Int, state: String): Boolean =
      states.get((fp, k)).exists(_.contains(state))

    def legacyNumber(fp: String, k: Int): Option[Int] = legacy.get((fp, k))

    // the sink, target and mode of each committed write (from its record), read when first asked
    @volatile private var committedTargets: Seq[(Record, String, String)] = _

    /** The committed writes of earlier runs, with the sink and target their records name. */
    def committedWrites(session: SparkSession): Seq[(Record, String, String)] = {
      if (committedTargets == null) synchronized {
        if (committedTargets == null) {
          val conf = session.sessionState.newHadoopConf()
          val dir = new Path(jobDir, WritesDir)
          committedTargets = records.filter(_.state == "committed")
            .groupBy(r => (r.fingerprint, r.occurrence)).values.map(_.head).toSeq.flatMap { r =>
              try {
                val text = FileSink.readText(new Path(dir, r.name), conf)
                Some((r, field(text, "sink"), field(text, "target")))
              } catch { case NonFatal(_) => None }
            }
        }
      }
      committedTargets
    }
  }

  /** String field `key` of a record's JSON (written by [[record]]: no nesting). */
  private def field(json: String, key: String): String = {
    val at = json.indexOf("\"" + key + "\":\"")
    if (at < 0) return ""
    val from = at + key.length + 4
    val out = new StringBuilder
    var i = from
    while (i < json.length && json.charAt(i) != '"') {
      if (json.charAt(i) == '\\' && i + 1 < json.length) { i += 1 }
      out.append(json.charAt(i))
      i += 1
    }
    out.toString
  }

  private val jobs = new ConcurrentHashMap[String, JobWrites]()

  /** A new run of `jobDir` opened in this driver: its writes are counted from the start. */
  def reset(jobDir: String): Unit = jobs.remove(jobDir)

  private def writes(jobDir: String, session: SparkSession): JobWrites =
    jobs.computeIfAbsent(jobDir, _ => {
      val dir = new Path(jobDir, WritesDir)
      val fs = dir.getFileSystem(session.sessionState.newHadoopConf())
      val names = try fs.listStatus(dir).map(_.getPath.getName).toSet
        catch { case _: FileNotFoundException => Set.empty[String] }
      new JobWrites(jobDir, names)
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

  /** Write `sink`'s fingerprint in job `jobDir` (plan texts of the job's version). */
  def fingerprint(sink: WriteSink, jobDir: String): String = {
    val text = FullWindowPython.planTexts(sink.query, FullWindowPython.textVersion(jobDir)).full
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
   * Identifies write `sink` (made only when the job is open) in the session's open job (its
   * fingerprint and its occurrence among this run's writes of that fingerprint) and decides it:
   * skipped (committed by an earlier run: recorded, or held by the sink), refused (an unchecked
   * sink an earlier run started, under `onUncheckedWrite=fail`), or to run: then its start is
   * recorded (what earlier runs left half-written in its sink is undone by the sink:
   * [[WriteSink.rollback]], or, for files, once the write holds its target).
   */
  def begin(session: SparkSession, sink: => WriteSink): Decision = {
    val conf = session.sessionState.conf
    val jobDir = HintRecovery.jobDir(conf).orNull
    if (jobDir == null) return NotNumbered
    val mode = onUncheckedWrite(conf)
    FullWindowRecoveryJobs.requireOpen(jobDir, "a write")
    val s = sink
    val jw = writes(jobDir, session)
    val n = jw.next.incrementAndGet()
    val jobId = conf.getConfString(HintRecovery.JobId, "").trim
    val fp = fingerprint(s, jobDir)
    val k = jw.occurrence(fp)
    val w = WriteCall(jobDir, jobId, n, fp, k, jw.legacyNumber(fp, k))
    val what = s"write $n of job $jobId (${s.kind}: ${s.target}, ${s.mode}; ${w.identity})"
    if (jw.has(fp, k, "committed")) {
      skipped(w, s, what, "an earlier run recorded it as committed")
      return Skipped
    }
    if (s.committed(session, w)) {
      record(session, w, s, "committed")
      skipped(w, s, what, s"the ${s.kind} sink holds its commit")
      return Skipped
    }
    if (!jw.has(fp, k, "started")) {
      // a write no earlier run made: did one commit a write into the same target that this
      // run has not made (so far), under another fingerprint (a changed plan or input)?
      val others = jw.committedWrites(session).collect {
        case (r, kind, target) if r.fingerprint != fp && kind == s.kind && target == s.target &&
            !jw.claimed(r.fingerprint, r.occurrence) => s"${r.fingerprint} #${r.occurrence}"
      }
      if (others.nonEmpty) {
        logWarning(s"fullwindow recovery: $what: an earlier run committed a write into this " +
          s"target with another plan or input (${others.sorted.mkString(", ")}) that this run " +
          "has not made so far; where this write replaces it (a changed program or input), it " +
          "runs, and what the earlier run wrote stays where it was written.")
      }
    }
    if (!s.checked && jw.has(fp, k, "started")) {
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
    * write of the session's open job (identified as any write); see [[ActionSink]]. */
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
        s""""writeFingerprint":"${w.fingerprint}","occurrence":${w.occurrence},""" +
        s""""id":"${esc(w.id)}","sink":"${sink.kind}",""" +
        s""""target":"${esc(sink.target)}","mode":"${esc(sink.mode)}",""" +
        s""""reason":"${esc(reason)}"}""")
  }

  /** `<jobDir>/writes/<n>.<fingerprint>.<occurrence>.<state>`, made durable before the write
    * goes on (`n`, the write's place in this run's start order, is for people: a resumed run
    * finds the write's records by fingerprint and occurrence). */
  private def record(session: SparkSession, w: WriteCall, sink: WriteSink, state: String): Unit = {
    val esc = FullWindowRecoveryListener.escape _
    val p = new Path(new Path(w.jobDir, WritesDir),
      s"${w.number}.${w.fingerprint}.${w.occurrence}.$state")
    FileSink.writeText(p,
      s"""{"number":${w.number},"fingerprint":"${w.fingerprint}",""" +
        s""""occurrence":${w.occurrence},"state":"$state",""" +
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
      try {
        // a command runs once, as the Dataset is made (its own execution: listeners and the
        // SQL tab see the write's own command, which lineage tools read); its rows are then
        // taken from its result as they are: a collect() would be a second execution that
        // shows the same command again
        val ds = SparkShims.ofRows(session, plan)
        ds.queryExecution.executedPlan match {
          case result: CommandResultExec => result.executeCollectPublic().toSeq
          case _ => ds.collect().toSeq
        }
      }
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
