package org.apache.spark.sql.fullwindow.recovery

import java.nio.charset.StandardCharsets
import java.security.MessageDigest
import java.util.concurrent.{CancellationException, ConcurrentHashMap, ExecutionException, FutureTask}

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path

import org.apache.spark.{SparkContext, SparkEnv}
import org.apache.spark.internal.Logging
import org.apache.spark.shuffle.sort.SortShuffleManager
import org.apache.spark.sql.catalyst.expressions.{Expression, In, Literal, PythonUDF}
import org.apache.spark.sql.catalyst.plans.physical.{HashPartitioning, RangePartitioning, RoundRobinPartitioning}
import org.apache.spark.sql.execution.{FileSourceScanExec, InputAdapter, InSubqueryExec, LocalTableScanExec, RangeExec, SparkPlan, WholeStageCodegenExec}
import org.apache.spark.sql.execution.adaptive.{AdaptiveSparkPlanExec, AQEShuffleReadExec, QueryStageExec}
import org.apache.spark.sql.execution.columnar.InMemoryTableScanExec
import org.apache.spark.sql.execution.datasources.v2.{BatchScanExec, FileScan}
import org.apache.spark.sql.execution.exchange.{ReusedExchangeExec, ShuffleExchangeExec}
import org.apache.spark.sql.fullwindow.FullWindowErrors
import org.apache.spark.sql.fullwindow.execution.{FullWindowCommitExec, FullWindowCommittedInputExec, FullWindowCommittingExchangeExec, FullWindowRecoveredScanExec}
import org.apache.spark.sql.fullwindow.shims.SparkShims
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.util.{ThreadUtils, Utils}

/**
 * Whole-job recovery (`spark.fullwindow.recovery.scope=job`, issue 48): every shuffle of every
 * query is a *shuffle vertex* `shuffle:<fp>` whose finished map tasks are kept under
 * `<jobDir>/shuffles/<fp>/` and recorded as job events; on a resume a shuffle whose map outputs
 * were all kept is read back (nothing upstream runs), one partly kept runs only its missing map
 * tasks, unless it is *unstable* (indeterminate in Spark's sense, here or upstream): then it is
 * read back whole or computed whole. See dev/notes/issue-48-design.md.
 */
object JobShuffles extends Logging {
  val Scope = "spark.fullwindow.recovery.scope"
  val Scopes = Seq("job", "fullWindow")
  /** The default scope: the whole job (FLIP-383: no finished task of a batch job runs again,
    * whatever its operators). */
  val DefaultScope = "job"
  val Operator = "shuffle"

  /** The scope `spark.fullwindow.recovery.scope` names (checked). */
  def scope(conf: SQLConf): String = {
    val raw = conf.getConfString(Scope, DefaultScope)
    Scopes.find(_.equalsIgnoreCase(Option(raw).map(_.trim).getOrElse(""))).getOrElse(
      throw FullWindowErrors.badConf(Scope, raw, Scopes.mkString(", ")))
  }

  def vertexOf(fp: String): String = s"$Operator:$fp"

  /** One kept map output: its data and index files, each with its size and CRC32 (-1: not
    * recorded, the size alone is checked). */
  final case class KeptMap(mapIndex: Int, generation: String, data: String, dataBytes: Long,
      index: String, indexBytes: Long, dataCrc: Long = -1L, indexCrc: Long = -1L)

  /** What earlier runs recorded of a shuffle vertex: its map count, layout, stability, maps. */
  final case class Recorded(numMaps: Int, layout: String, stable: Boolean, maps: Map[Int, KeptMap])

  private val recorded = new ConcurrentHashMap[String, ConcurrentHashMap[String, Recorded]]()

  /** Records what earlier runs kept of shuffle `fp` of job `jobDir` (at the job's open), and
    * starts checking its kept files in the background: the check (a listing, the CRC32 of every
    * kept file) runs while the job's first queries are planned, instead of before their first
    * stage. */
  def put(jobDir: String, fp: String, r: Recorded): Unit = {
    recorded.computeIfAbsent(jobDir, _ => new ConcurrentHashMap[String, Recorded]()).put(fp, r)
    SparkContext.getActive match {
      case Some(sc) if r.maps.nonEmpty =>
        val check = checkOf(r, sc)
        Option(presentOf.put((jobDir, fp), check)).foreach(_.cancel(false))
        checks.execute(check)
      case _ => Option(presentOf.remove((jobDir, fp))).foreach(_.cancel(false))
    }
  }

  def get(jobDir: String, fp: String): Option[Recorded] =
    Option(recorded.get(jobDir)).flatMap(m => Option(m.get(fp)))

  // (job, fp) -> the check of its kept maps (which are intact): once per run, not at every
  // planning round; started at the job's open (`put`), in the background
  private val presentOf = new ConcurrentHashMap[(String, String), FutureTask[Map[Int, KeptMap]]]()

  // one thread: the checks of a job's shuffles queue in the order their events were recorded;
  // a query that needs one not started yet runs it itself (`keptIntact`)
  private lazy val checks = ThreadUtils.newDaemonSingleThreadExecutor("fullwindow-kept-check")

  /** The check of `r`'s kept files, run by whichever thread comes first: with the local
    * properties of the thread that asked for it (a Spark job it runs on a cluster carries that
    * thread's job tags and description, as if that thread ran it). */
  private def checkOf(r: Recorded, sc: SparkContext): FutureTask[Map[Int, KeptMap]] = {
    val props = Utils.cloneProperties(sc.getLocalProperties)
    new FutureTask[Map[Int, KeptMap]](() => {
      val own = sc.getLocalProperties
      sc.setLocalProperties(props)
      try present(r, sc) finally sc.setLocalProperties(own)
    })
  }

  /** The kept maps of shuffle `fp` whose files are intact: the check started at the job's open
    * (waited for), else one run now. A check that failed is not kept: the next query asks
    * again. */
  private def keptIntact(jobDir: String, fp: String, r: Recorded,
      sc: SparkContext): Map[Int, KeptMap] = {
    val key = (jobDir, fp)
    val check = presentOf.computeIfAbsent(key, _ => checkOf(r, sc))
    check.run()  // not started: run here (a no-op if it ran, or runs, on the checks' thread)
    try check.get()
    catch {
      case e: ExecutionException =>
        presentOf.remove(key, check)
        throw Option(e.getCause).getOrElse(e)
      case _: CancellationException => present(r, sc)  // replaced or forgotten meanwhile
    }
  }

  /** For tests: `done/started` of the checks of job `jobDir`'s kept shuffles begun so far. */
  def checksOf(jobDir: String): String = {
    val mine = presentOf.entrySet().toArray(Array.empty[java.util.Map.Entry[(String, String),
      FutureTask[Map[Int, KeptMap]]]]).filter(_.getKey._1 == jobDir).map(_.getValue)
    s"${mine.count(_.isDone)}/${mine.length}"
  }

  def forget(jobDir: String, fp: String): Unit = {
    Option(recorded.get(jobDir)).foreach(_.remove(fp))
    Option(presentOf.remove((jobDir, fp))).foreach(_.cancel(false))
  }

  def forget(jobDir: String): Unit = {
    recorded.remove(jobDir)
    presentOf.entrySet().removeIf { e =>
      val mine = e.getKey._1 == jobDir
      if (mine) e.getValue.cancel(false)
      mine
    }
  }

  /** The job directory whole-job recovery keeps shuffles for in this session now, if any. */
  def activeJob(conf: SQLConf): Option[String] = {
    val job = HintRecovery.jobDir(conf).getOrElse(return None)  // recovery off: nothing checked
    if (scope(conf) != "job") return None
    FullWindowRecoveryJobs.requireOpen(job, "a query of the job (its shuffles are kept)")
    Some(job).filter { _ =>
      SparkEnv.get != null &&
        SparkShims.blockingShuffleManager(SparkEnv.get).isInstanceOf[SortShuffleManager] &&
        conf.getConfString(CommittedShuffleInput.EnabledKey, "true").trim.toBoolean
    }
  }

  // ---- fingerprints -------------------------------------------------------------------------

  /** A plan's fingerprint text and whether it is stable; None: a source that cannot be
    * fingerprinted (nothing above it is kept or reused). */
  final case class Print(text: String, stable: Boolean)

  private def sha(text: String): String =
    MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8))
      .take(12).map(b => f"${b & 0xff}%02x").mkString

  /** `s` without the numbers a run gives its plans (plan and subquery ids); with `exprIds`, its
    * expression ids too. */
  private def clean(s: String, exprIds: Boolean): String = {
    val t = s.replaceAll("""\[plan_id=\d+\]""", "").replaceAll("""\[id=#\d+\]""", "")
      .replaceAll("""subquery\d+""", "subquery")
    if (exprIds) t.replaceAll("""#\d+L?""", "") else t
  }

  /** A node's text, the same in every run of the same plan. Canonicalized, each column it
    * references is `none#<i>`: the i-th column of its children's output (ids made in a run are
    * renumbered in order). Those positions are what tells `hashpartitioning(none#0, 4)` from
    * `hashpartitioning(none#1, 4)` over the same child, so they stay; only a node that cannot
    * be canonicalized falls back to its text without any expression id. Spark's `!` before a
    * node whose references its children's output lacks says nothing here (a canonicalized node
    * has it or not depending on how its children were renumbered: a stage computed or read
    * back), so it goes. What canonicalization leaves alone keeps the ids of the run that made
   * it (a dynamic pruning subquery's build side, a logical plan, names such as
   * `dynamicpruning#44`): those ids go too, or the shuffle would be another one in every run;
   * what they name is in the plan below them, canonicalized. */
  private def nodeText(p: SparkPlan): String =
    (try clean(wholeText(withoutSubqueryPlans(p).canonicalized), exprIds = false)
      .replaceAll("""(?<!none)#\d+L?""", "")
    catch { case NonFatal(_) => clean(p.simpleString(Int.MaxValue), exprIds = true) })
      .stripPrefix("!")

  /** A node's text with a file scan's metadata whole: a scan prints its filters, location and
    * schema cut to `spark.sql.maxMetadataStringLength` (100 by default), and two scans whose
    * partition filters differ past that would print alike (no Filter above a partition-only
    * filter shows it). */
  private def wholeText(p: SparkPlan): String = {
    def entries(m: Map[String, String]) = m.toSeq.sorted.map { case (k, v) => s"$k: $v" }
    p match {
      case s: FileSourceScanExec =>
        (s"${s.nodeName} ${s.output.mkString("[", ", ", "]")}" +: entries(s.metadata))
          .mkString(", ")
      case b: BatchScanExec => b.scan match {
        case fs: FileScan => (b.simpleString(Int.MaxValue) +: entries(fs.getMetaData()))
          .mkString(", ")
        case _ => b.simpleString(Int.MaxValue)
      }
      case _ => p.simpleString(Int.MaxValue)
    }
  }

  /** `p` with each `IN (subquery)` of its own expressions (dynamic partition pruning) reduced to
    * the column it tests: the subquery's plan is printed on its own ([[withSubqueries]]), and
    * left in, its hash (which varies from run to run) would decide where canonicalization puts
    * the filter among the others, so the same scan would print its filters in another order. */
  private def withoutSubqueryPlans(p: SparkPlan): SparkPlan = p.transformExpressions {
    case s: InSubqueryExec => In(s.child, Seq(Literal("subquery")))
  }


  /** The path of the driver's Python script (its `__main__` module's file), set in the session
    * by recovery's Python side (classic: when the job is opened; Spark Connect: by the client
    * as it starts the job). Internal. */
  val DriverScript = "spark.fullwindow.recovery.driverScript"

  private def pythonCode(e: Expression): Seq[String] = {
    lazy val script = Option(SQLConf.get.getConfString(DriverScript, null)).filter(_.nonEmpty)
    e.collect {
      case u: PythonUDF =>
        val bytes = u.func.command.map(_.asInstanceOf[Byte]).toArray
        val md = MessageDigest.getInstance("SHA-256")
        md.digest(script.fold(bytes)(PickledPaths.withoutDirectory(bytes, _)))
          .take(12).map(b => f"${b & 0xff}%02x").mkString
    }
  }

  /** The fingerprint of exchange `e` (over its child as it is now) and its stability. */
  def fingerprint(e: ShuffleExchangeExec): Option[(String, Boolean)] =
    print(e).map(p => (sha(p.text), p.stable))

  private def exchangeStable(e: ShuffleExchangeExec): Boolean = e.outputPartitioning match {
    case _: RoundRobinPartitioning | _: RangePartitioning => false
    case h: HashPartitioning => h.expressions.forall(_.deterministic)
    case _ => true
  }

  private def print(plan: SparkPlan): Option[Print] = plan match {
    case w: FullWindowCommittingExchangeExec if w.operator == Operator =>
      Some(Print(s"shuffle ${w.vertex}", w.stable))
    case w: FullWindowCommittingExchangeExec => print(w.delegate)
    case r: FullWindowCommittedInputExec if r.vertex.startsWith(Operator + ":") =>
      Some(Print(s"shuffle ${r.vertex}", r.stable))
    case r: FullWindowCommittedInputExec => Some(Print(s"input ${r.vertex}", stable = true))
    case c: FullWindowCommitExec => Some(Print(s"FullWindowOperation ${c.fingerprint}", true))
    case s: FullWindowRecoveredScanExec => Some(Print(s"FullWindowOperation ${s.fingerprint}", true))
    case e: ShuffleExchangeExec =>
      print(e.child).map(c => Print(s"shuffle ${sha(nodeText(e) + "\n" + c.text)}",
        c.stable && exchangeStable(e)))
    case s: QueryStageExec => print(s.plan)
    case r: ReusedExchangeExec => print(r.child)
    case a: AdaptiveSparkPlanExec => print(a.inputPlan)
    case w: WholeStageCodegenExec => print(w.child)
    case i: InputAdapter => print(i.child)
    case r: AQEShuffleReadExec => print(r.child)
    case m: InMemoryTableScanExec =>
      print(m.relation.cachedPlan).map(c => Print(nodeText(m) + "\ncached:\n" + c.text, c.stable))
    case f: FileSourceScanExec =>
      InputFingerprint.ofRelationIndex(f.relation.location, f.relation.options.get("path"))
        .flatMap(i => withSubqueries(f, Print(nodeText(f) + s"\nfiles ${i.root} ${i.digest}", true)))
    case b: BatchScanExec => b.scan match {
      case fs: FileScan =>
        InputFingerprint.ofRelationIndex(fs.fileIndex, None)
          .flatMap(i => withSubqueries(b, Print(nodeText(b) + s"\nfiles ${i.root} ${i.digest}", true)))
      case _ => None
    }
    case l: LocalTableScanExec =>
      Some(Print(nodeText(l) + "\nrows " + l.rows.map(_.hashCode()).mkString(","), true))
    case r: RangeExec => Some(Print(nodeText(r), true))
    case leaf if leaf.children.isEmpty && leaf.nodeName.startsWith("FullWindow") =>
      Some(Print(nodeText(leaf), true))
    case leaf if leaf.children.isEmpty => None
    case p =>
      val subs = p.subqueries.map(print)
      val kids = p.children.map(print)
      if (subs.exists(_.isEmpty) || kids.exists(_.isEmpty)) None
      else {
        val code = p.expressions.flatMap(pythonCode)
        val det = p.expressions.forall(_.deterministic)
        Some(Print(
          (Seq(nodeText(p)) ++ code.map("python " + _) ++ subs.flatten.map("subquery " + _.text) ++
            kids.flatten.map(_.text)).mkString("\n"),
          det && subs.flatten.forall(_.stable) && kids.flatten.forall(_.stable)))
      }
  }

  /** A scan's print with the prints of its subqueries (dynamic partition pruning, runtime
    * filters: what they select decides which rows it reads). */
  private def withSubqueries(scan: SparkPlan, own: Print): Option[Print] = {
    val subs = scan.subqueries.map(print)
    if (subs.exists(_.isEmpty)) None
    else Some(Print((own.text +: subs.flatten.map("subquery " + _.text)).mkString("\n"),
      own.stable && subs.flatten.forall(_.stable)))
  }

  // ---- decisions ----------------------------------------------------------------------------

  /** The layout prefix every map output of exchange `e` written with `codec` shares. */
  def reducePart(numPartitions: Int, codec: String): String = s"n=$numPartitions;$codec;"

  /**
   * The kept maps of `r` whose two files are intact: there, with the recorded sizes (one listing
   * per directory, on the driver) and CRC32s (read where the executors run:
   * [[CommittedRows.verifyAll]]). A file damaged in place (a byte changed, its size the same)
   * leaves its map output out: that map task runs again (an unstable shuffle is then computed
   * whole), as if it had not been kept; never read back as it is.
   */
  private def present(r: Recorded, sc: SparkContext): Map[Int, KeptMap] = {
    val maps = r.maps.values.toSeq.sortBy(_.mapIndex)
    val files = maps.flatMap(m => Seq((m.data, m.dataBytes, m.dataCrc),
      (m.index, m.indexBytes, m.indexCrc)))
    val (known, unknown) = files.indices.partition(i => files(i)._3 >= 0)
    val ok = new Array[Boolean](files.size)
    CommittedRows.verifyAll(known.map(files), sc).zip(known).foreach { case (v, i) => ok(i) = v }
    CommittedRows.lengthsMatch(unknown.map(files), sc.hadoopConfiguration).zip(unknown)
      .foreach { case (v, i) => ok(i) = v }
    maps.zipWithIndex.collect { case (m, i) if ok(2 * i) && ok(2 * i + 1) => m.mapIndex -> m }
      .toMap
  }

  /**
   * Exchange `e` of a query of job `jobDir`, rewritten for whole-job recovery: read back when an
   * earlier run kept all its map outputs, else committing (reusing the kept maps of a stable
   * shuffle). Left alone when it cannot be fingerprinted.
   */
  def keep(e: ShuffleExchangeExec, jobDir: String, codec: String): SparkPlan =
    try decide(e, jobDir, codec)
    catch {
      case NonFatal(err) =>
        logWarning(s"fullwindow recovery: a shuffle of job $jobDir is not kept (it runs as " +
          "usual, and is computed again after a crash)", err)
        e
    }

  private def decide(e: ShuffleExchangeExec, jobDir: String, codec: String): SparkPlan = {
    if (SparkShims.isPipelined(e)) return e
    val sc = SparkContext.getActive.getOrElse(return e)
    val (fp, stable) = fingerprint(e).getOrElse(return e)
    val vertex = vertexOf(fp)
    val n = e.outputPartitioning.numPartitions
    val dir = s"${jobDir.stripSuffix("/")}/shuffles/$fp"
    val rec = get(jobDir, fp).filter(_.layout.startsWith(reducePart(n, codec)))
    val kept = rec.map(keptIntact(jobDir, fp, _, sc)).getOrElse(Map.empty)
    val complete = rec.exists { r =>
      r.numMaps > 0 && (0 until r.numMaps).forall(kept.contains) &&
        (stable || kept.values.map(_.generation).toSet.size == 1)
    }
    if (complete) {
      val maps = (0 until rec.get.numMaps).map(kept)
      FullWindowCommittedInputExec(vertex, n, maps.map(_.data), maps.map(_.index), s"stage($n)",
        (0 until n).map(i => (i, i + 1)), e.output, e.outputPartitioning, stable)
    } else {
      val reuse = if (stable) kept.values.toSeq.sortBy(_.mapIndex) else Nil
      val reset = !stable && get(jobDir, fp).exists(_.maps.nonEmpty)
      FullWindowCommittingExchangeExec(e, vertex, dir, jobDir, Operator, codec,
        kept = reuse.map(m => (m.mapIndex, m.data, m.index)),
        recordedLayout = rec.map(_.layout).getOrElse(""), stable = stable, resetFirst = reset)
    }
  }
}
