package org.apache.spark.sql.fullwindow

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{Column, Row}
import org.apache.spark.sql.catalyst.expressions.{Alias, Ascending, Attribute, AttributeReference, Descending, PythonUDF, SortOrder}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, LeafNode, LocalRelation, LogicalPlan, Project, RepartitionByExpression}
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.apache.spark.sql.execution.{InputAdapter, SparkPlan, WholeStageCodegenExec}
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.fullwindow.execution.{FullWindowCombineInputExec, KeyedPython}
import org.apache.spark.sql.fullwindow.recovery.{CommittedInput, CommittedRows, FullWindowRecoveryJobs, FullWindowRecoveryListener, InputFingerprint, JobShuffles, RecoveryFence}
import org.apache.spark.sql.fullwindow.shims.SparkShims
import org.apache.spark.sql.fullwindow.shims.SparkShims.{Dataset, SparkSession}
import org.apache.spark.sql.fullwindow.logical.{FullWindowCoGroup, FullWindowCombineKey, FullWindowCommit, FullWindowRecoveredScan, FullWindowKeyedPythonPartition, FullWindowPartitionKey, FullWindowPythonPartition, FullWindowSortPartition, KeyedRunningPython}

/**
 * The one door from Python into the extension: Java-friendly arguments (arrays, strings,
 * booleans), DataFrames back. Every method builds a logical plan and lets Spark analyze it, so
 * argument errors surface as analysis errors before any task runs.
 */
object FullWindowPython extends AdaptiveSparkPlanHelper {
  val Version: String = "0.1.0"

  def version(): String = Version

  /** True when `fullwindow.sql.FullWindowExtensions` is registered with this session. */
  def extensionEnabled(spark: SparkSession): Boolean =
    spark.conf.getOption("spark.sql.extensions").exists(
      _.split(",").map(_.trim).contains("fullwindow.sql.FullWindowExtensions"))

  /**
   * Sorts each partition by `keys`. A key that is already a sort order (`col.desc()`) keeps its
   * direction and null ordering; otherwise `ascending(i)` picks it, with Spark's default nulls
   * placement (first when ascending, last when descending).
   */
  def sortPartition(df: Dataset[Row], keys: Array[Column], ascending: Array[Boolean]): Dataset[Row] = {
    if (keys.isEmpty) throw FullWindowErrors.invalidArgument("sortPartition", "at least one key is required")
    if (keys.length != ascending.length) {
      throw FullWindowErrors.invalidArgument("sortPartition", "one order is needed for each key")
    }
    val order = keys.zip(ascending).map { case (key, asc) =>
      SparkShims.expression(df.sparkSession, key) match {
        case s: SortOrder => s
        case e => SortOrder(e, if (asc) Ascending else Descending)
      }
    }.toSeq
    SparkShims.ofRows(df.sparkSession, FullWindowSortPartition(order, df.logicalPlan))
  }

  /**
   * Aggregates each partition with built-in aggregate columns, evaluated in the JVM: one row per
   * non-empty partition, no exchange. Each column must be an aggregate (F.sum, F.count, ...).
   */
  def aggregate(df: Dataset[Row], columns: Array[Column]): Dataset[Row] = {
    checkAggregateColumns("aggregate", df, columns)
    val key = SparkShims.column(FullWindowPartitionKey())
    val grouped = df.groupBy(key).agg(columns.head, columns.tail.toIndexedSeq: _*)
    val agg = grouped.queryExecution.analyzed
    // Drop the partition key from the output: the window is the partition.
    SparkShims.ofRows(df.sparkSession, Project(agg.output.tail, agg))
  }

  private def checkAggregateColumns(operation: String, df: Dataset[Row], columns: Array[Column]): Unit = {
    if (columns.isEmpty) {
      throw FullWindowErrors.invalidArgument(operation, "give at least one aggregate column")
    }
    columns.foreach { c =>
      // Alone in a select, an aggregate makes an Aggregate node; anything else a Project.
      df.select(c).queryExecution.analyzed match {
        case _: Aggregate =>
        case _ => throw FullWindowErrors.invalidArgument(operation,
          s"column `${c.toString}` is not an aggregate; expected built-in aggregate columns " +
            "such as F.sum(...), F.count(...), F.max(...), F.collect_list(...)")
      }
    }
  }

  /**
   * A Python function over each whole partition, given as a PythonUDF column of eval type
   * SQL_MAP_ARROW_ITER_UDF over every input column (what mapInArrow takes); `operation` names
   * the user-facing operation for plans and errors; `pandas` says that the function takes pandas
   * frames (a pandas form).
   */
  def pythonPartition(df: Dataset[Row], operation: String, udf: Column,
      pandas: Boolean): Dataset[Row] = {
    SparkShims.expression(df.sparkSession, udf) match {
      case f: PythonUDF =>
        val output = DataTypeUtils.toAttributes(f.dataType.asInstanceOf[StructType])
        SparkShims.ofRows(df.sparkSession,
          FullWindowPythonPartition(operation, f, pandas, output, df.logicalPlan))
      case other => throw FullWindowErrors.invalidArgument(operation,
        s"expected a Python function, got ${other.sql}")
    }
  }

  // ---- keyed ------------------------------------------------------------------------------

  /** The top-level columns `names` of `plan`'s output (the Python side has validated them). */
  private def keyAttributes(operation: String, plan: LogicalPlan, names: Array[String]): Seq[Attribute] = {
    if (names.isEmpty) throw FullWindowErrors.invalidArgument(operation, "at least one key is required")
    names.toSeq.map { name =>
      plan.output.filter(_.name == name) match {
        case Seq(a) => a
        case Seq() => throw FullWindowErrors.invalidArgument(operation,
          s"key `$name` is not a column of the input; columns are ${plan.output.map(_.name).mkString(", ")}")
        case _ => throw FullWindowErrors.invalidArgument(operation,
          s"key `$name` is ambiguous: the input has several columns of that name")
      }
    }
  }

  private def pythonUdf(operation: String, df: Dataset[Row], udf: Column): PythonUDF =
    SparkShims.expression(df.sparkSession, udf) match {
      // The whole input row goes to Python, so the function's arguments are not needed (and
      // would not resolve against two inputs): drop them.
      case f: PythonUDF => f.copy(children = Nil)
      case other => throw FullWindowErrors.invalidArgument(operation,
        s"expected a Python function, got ${other.sql}")
    }

  /**
   * `df` hash-partitioned by the key columns (floating-point keys normalized, so that -0.0 and
   * 0.0, and all NaNs, meet): a KeyedStream's partitioning.
   */
  def keyedRepartition(df: Dataset[Row], keys: Array[String]): Dataset[Row] = {
    val attrs = keyAttributes("keyBy", df.logicalPlan, keys)
    SparkShims.ofRows(df.sparkSession,
      RepartitionByExpression(KeyedPython.distributionKeys(attrs), df.logicalPlan, None, None))
  }

  /**
   * Keyed aggregate with built-in aggregate columns, in the JVM. Output: the key columns, then
   * the aggregates, one row per key.
   *
   * With `spark.fullwindow.combine.enabled` (the default) the aggregates combine before the
   * exchange: the plan is an `Aggregate` grouped by the keys and [[FullWindowCombineKey]], which
   * the planner turns into Spark's partial aggregation, the exchange by the keys and the final
   * aggregation, as for `groupBy(keys).agg(...)` (every aggregate accepted here can be split:
   * DISTINCT aggregates and pandas UDFs are refused at analysis). Switched off, the input is
   * hash-partitioned by the keys and each partition aggregated per key on its own (the
   * per-partition aggregate, grouped by the keys too): every record crosses the exchange.
   */
  def keyedAggregate(df: Dataset[Row], keys: Array[String], columns: Array[Column]): Dataset[Row] = {
    if (columns.isEmpty) checkAggregateColumns("keyed aggregate", df, columns)
    val combine = FullWindowConf.combineEnabled(df.sparkSession.sessionState.conf)
    val input = if (combine) df else keyedRepartition(df, keys)
    val keyCols = keyAttributes("keyed aggregate", input.logicalPlan, keys)
      .map(a => SparkShims.column(a))
    val marker = if (combine) FullWindowCombineKey() else FullWindowPartitionKey()
    val n = keys.length
    // One analysis, as groupBy().agg has: each column is checked on its own (one analysis
    // each, for the error naming it) only when this one fails or a result is no aggregate.
    val agg = try {
      input.groupBy(keyCols :+ SparkShims.column(marker): _*)
        .agg(columns.head, columns.tail.toIndexedSeq: _*).queryExecution.analyzed
    } catch {
      case e: org.apache.spark.sql.AnalysisException =>
        checkAggregateColumns("keyed aggregate", df, columns)
        throw e
    }
    agg match {
      case a: Aggregate if a.aggregateExpressions.drop(n + 1).forall(AggregateExpression.containsAggregate) =>
      case _ => checkAggregateColumns("keyed aggregate", df, columns)
    }
    // the marker is a grouping key only, never a column of the result
    val plan = agg match {
      case a: Aggregate if combine =>
        a.copy(aggregateExpressions = a.aggregateExpressions.take(n) ++ a.aggregateExpressions.drop(n + 1))
      case _ => Project(agg.output.take(n) ++ agg.output.drop(n + 1), agg)
    }
    SparkShims.ofRows(df.sparkSession, plan)
  }

  /**
   * A Python function over each key's records (see [[FullWindowKeyedPythonPartition]]): the
   * input is clustered and sorted by `keys` before it streams to Python.
   */
  def keyedPythonPartition(df: Dataset[Row], operation: String, keys: Array[String],
      udf: Column, pandas: Boolean): Dataset[Row] = {
    val f = pythonUdf(operation, df, udf)
    val attrs = keyAttributes(operation, df.logicalPlan, keys)
    val output = DataTypeUtils.toAttributes(f.dataType.asInstanceOf[StructType])
    SparkShims.ofRows(df.sparkSession,
      FullWindowKeyedPythonPartition(operation, attrs, f, pandas, output, df.logicalPlan))
  }

  /**
   * The running form of a keyed Python operation (STREAMING mode's upsert reduce): records reach
   * Python clustered by `keys` and, within a key, in the order of the `sequence` column.
   */
  def keyedRunning(df: Dataset[Row], operation: String, keys: Array[String], sequence: String,
      udf: Column): Dataset[Row] = {
    val f = pythonUdf(operation, df, udf)
    val attrs = keyAttributes(operation, df.logicalPlan, keys)
    val seq = keyAttributes(operation, df.logicalPlan, Array(sequence)).head
    val order = (attrs :+ seq).map(SortOrder(_, Ascending))
    val output = DataTypeUtils.toAttributes(f.dataType.asInstanceOf[StructType])
    SparkShims.ofRows(df.sparkSession,
      KeyedRunningPython(operation, attrs, order, f, output, df.logicalPlan))
  }

  /** Two keyed inputs grouped together by key (see [[FullWindowCoGroup]]). */
  def coGroup(left: Dataset[Row], right: Dataset[Row], leftKeys: Array[String],
      rightKeys: Array[String], udf: Column, pandas: Boolean): Dataset[Row] = {
    val f = pythonUdf("coGroup", left, udf)
    // Two sides with columns in common (a self-coGroup, or two DataFrames derived from one)
    // would be told apart by the analyzer renewing the right side's columns, which the keys
    // would not follow: give the right side's columns new ids first.
    val rightPlan =
      if (left.logicalPlan.outputSet.intersect(right.logicalPlan.outputSet).isEmpty) right.logicalPlan
      else Project(right.logicalPlan.output.map(a => Alias(a, a.name)()), right.logicalPlan)
    val l = keyAttributes("coGroup", left.logicalPlan, leftKeys)
    val r = keyAttributes("coGroup", rightPlan, rightKeys)
    val output = DataTypeUtils.toAttributes(f.dataType.asInstanceOf[StructType])
    SparkShims.ofRows(left.sparkSession,
      FullWindowCoGroup(l, r, f, pandas, output, left.logicalPlan, rightPlan))
  }

  /**
   * The SQL metrics of the full-window operators in the plan `df` last executed, as
   * `"<node name>.<metric name>" -> value`, summed over nodes of the same name; a keyed
   * aggregate that combines adds `FullWindowAggregate.numInputRows` (rows in, before the
   * combine) and `FullWindowAggregate.numCombinedRows` (after it: what crossed the exchange).
   * Reads the final adaptive plan, so call it after an action on the same DataFrame.
   */
  def operatorMetrics(df: Dataset[Row]): java.util.Map[String, java.lang.Long] = {
    val out = scala.collection.mutable.LinkedHashMap.empty[String, java.lang.Long]
    def add(key: String, value: Long): Unit =
      out(key) = out.getOrElse(key, java.lang.Long.valueOf(0L)) + value
    foreach(df.queryExecution.executedPlan) {
      // a keyed aggregate that combines: its rows in before the combine (counted under Spark's
      // partial aggregation) and after it (the partial aggregation's rows out)
      case c: FullWindowCombineInputExec =>
        add("FullWindowAggregate.numInputRows", c.metrics("numInputRows").value)
      case partial: BaseAggregateExec if stageChild(partial).isInstanceOf[FullWindowCombineInputExec] =>
        add("FullWindowAggregate.numCombinedRows", partial.metrics("numOutputRows").value)
      case plan if plan.nodeName.startsWith("FullWindow") || plan.nodeName.startsWith("KeyedRunning") =>
        plan.metrics.foreach { case (name, metric) => add(s"${plan.nodeName}.$name", metric.value) }
      case _ =>
    }
    out.asJava
  }

  /** `plan`'s child, past a whole-stage-codegen boundary. */
  private def stageChild(plan: SparkPlan): SparkPlan = plan.children.headOption match {
    case Some(w: WholeStageCodegenExec) => w.child
    case Some(i: InputAdapter) => i.child
    case Some(c) => c
    case None => plan
  }

  // ---- recovery (FLIP-383); only called when spark.fullwindow.recovery.enabled is true --------

  /** Registers the recovery listener with the session's SparkContext (once). */
  def registerRecoveryListener(spark: SparkSession): Unit = {
    FullWindowRecoveryListener.register(spark.sparkContext)
    RecoveryFence.register(spark.sparkContext)
  }

  /**
   * The job events queued since the last call, as JSON texts one per line (one string: py4j
   * would fetch each element of an array in a call of its own); first waits up to `waitMs` for
   * the listener bus to deliver what is pending, then as long again for the map outputs of
   * ended tasks still being kept in the background, then for the events whose kept files the
   * driver syncs first (0: do not wait).
   */
  def drainRecoveryEvents(spark: SparkSession, waitMs: Long): String = {
    if (waitMs > 0) {
      FullWindowRecoveryListener.waitForListenerBus(spark.sparkContext, waitMs)
      // the map outputs of ended tasks still being kept in the background (a remote store)
      FullWindowRecoveryListener.awaitUploads(waitMs)
      FullWindowRecoveryListener.awaitSynced()  // the events waiting for their files' sync
    }
    FullWindowRecoveryListener.drain().mkString("\n")
  }

  /** Blocks up to `timeoutMs` until a job event is queued; true if one is (not drained). */
  def awaitRecoveryEvents(timeoutMs: Long): Boolean =
    FullWindowRecoveryListener.awaitEvents(timeoutMs)

  /**
   * A stable text of `df`'s analyzed plan for fingerprinting: expression ids removed, local data
   * hashed in, committed or recovered operations reduced to their fingerprints (so that a plan
   * reads the same whether its inputs were computed or recovered), and the listings of the files
   * and the versions of the tables it reads (recovery/InputFingerprint.scala).
   */
  def planFingerprint(df: Dataset[Row]): String = planText(df.queryExecution.analyzed)

  /**
   * What Python fingerprints an operation with, in one call: [[planText]], the same text without
   * input listings (the operation's structure: upstream operations by their own structures, each
   * input by its root only), and one line per input the operation depends on, its upstream
   * operations' included (`root TAB digest TAB files TAB bytes`), newline-separated (three
   * strings: py4j fetches each element of an array in a call of its own). The texts are of the
   * version job `jobDir`'s first run used ([[textVersion]]; the current one for "" or a job not
   * opened here).
   */
  def planFingerprints(df: Dataset[Row], jobDir: String): Array[String] = {
    val t = planTexts(df.queryExecution.analyzed, textVersion(jobDir))
    Array(t.full, t.structure, t.inputs.map(_.line).mkString("\n"))
  }

  /**
   * How plan texts are made. The text is the canonicalized plan's, without expression ids (they
   * differ from run to run), which also drops what tells a reference to one column from one to
   * another: in version 1, `select("a")` and `select("b")` of one table, or a filter or a
   * grouping on either column, had one text, one fingerprint, and one operation's committed
   * output could be read back for the other. Version 2 adds, per node, the positions in its
   * input of the columns its expressions refer to, in order ([[columnsRead]]). A job keeps the
   * version its first run used ([[textVersion]]): a job directory written before version 2
   * resumes with the fingerprints it recorded (its committed writes still recognised), and
   * every new job uses version 2.
   */
  val TextVersion = 2

  /** Version 2's addition to a plan's text: for each node (subqueries' too), the position in its
    * children's output of each column its expressions refer to, in the order they do (`-1`: a
    * column it makes itself, such as a leaf's output). */
  private def columnsRead(plan: LogicalPlan, version: Int): String =
    if (version <= 1) ""
    else "\ncolumns:\n" + plan.collectWithSubqueries { case n =>
      val in = n.children.flatMap(_.output).map(_.exprId)
      n.expressions.flatMap(_.collect { case a: AttributeReference => in.indexOf(a.exprId) })
        .mkString(",")
    }.mkString(";")

  private val textVersions = new java.util.concurrent.ConcurrentHashMap[String, Integer]()

  /** Job `jobDir`'s plan-text version: its runtime sets it when it opens the job (the version
    * its first run recorded, 1 when that run recorded none). */
  def textVersion(jobDir: String, version: Int): Unit = textVersions.put(jobDir, version)

  /** The plan-text version a new job's fingerprints are made of ([[TextVersion]]): the Python
    * side records it in a new job's first `runStarted` event. */
  def textVersion(): Int = TextVersion

  /** The plan-text version of job `jobDir` ([[TextVersion]] for a job not opened here). */
  def textVersion(jobDir: String): Int =
    Option(textVersions.get(jobDir)).map(_.intValue).getOrElse(TextVersion)

  /** The stable text of an analyzed plan (see [[planFingerprint]]). */
  def planText(analyzed: LogicalPlan): String = planTexts(analyzed).full

  /** The stable texts of a plan, with and without input listings, and its inputs. */
  final case class PlanTexts(full: String, structure: String, inputs: Seq[InputFingerprint.Input])

  def planTexts(analyzed: LogicalPlan): PlanTexts = planTexts(analyzed, TextVersion)

  def planTexts(analyzed: LogicalPlan, version: Int): PlanTexts = {
    val plan = analyzed.transformDown {
      case c: FullWindowCommit => RecoveryMarker(c.fingerprint, c.output)
      case s: FullWindowRecoveredScan => RecoveryMarker(s.fingerprint, s.output)
    }
    val local = plan.collect { case l: LocalRelation => l.data.map(_.hashCode()).mkString(",") }
    val text = plan.canonicalized.treeString(verbose = true, addSuffix = false, maxFields = Int.MaxValue)
    val base = text.replaceAll("#\\d+L?", "") + columnsRead(plan, version) + "\nlocal:" +
      local.mkString(";")
    val upstream = plan.collect { case m: RecoveryMarker => m.fingerprint }.distinct
    val direct = InputFingerprint.direct(plan)
    // no input read here: the text it always had (fingerprints of such plans stay as they were)
    val full = if (direct.isEmpty) base
      else base + "\ninputs:\n" + direct.map(i => s"${i.root}\t${i.digest}").mkString("\n")
    val structured = upstream.foldLeft(base) { (t, fp) =>
      t.replace(s"Recovered $fp", s"Recovered ${InputFingerprint.structureOf(fp)}")
    }
    val structure = if (direct.isEmpty) structured
      else structured + "\nroots:\n" + direct.map(_.root).mkString("\n")
    PlanTexts(full, structure,
      InputFingerprint.merge(direct ++ upstream.flatMap(InputFingerprint.inputsOf)))
  }

  /**
   * Operation `fingerprint` (structure `structure`, the input lines [[planFingerprints]] gave) of
   * job `jobDir` is defined: remembered for downstream operations, compared with what earlier
   * runs recorded, recorded as a `vertexInputs` job event unless its inputs changed and
   * `failOnChange`. Returns an empty string when its inputs did not change, else the error's
   * text and the warning's, joined with a NUL character (see [[InputFingerprint.operation]]).
   */
  def operationInputs(jobDir: String, operation: String, fingerprint: String, structure: String,
      inputs: String, failOnChange: Boolean): String =
    InputFingerprint.operation(jobDir, operation, fingerprint, structure,
      lines(inputs).toSeq.map(InputFingerprint.Input.parse), failOnChange).mkString("\u0000")

  /** What earlier runs of job `jobDir` recorded about operations' inputs (the `vertexInputs`
    * events, oldest first): one line per input, `record TAB structure TAB fingerprint TAB root TAB
    * digest TAB files TAB bytes`, the lines of one record together. */
  def recordedInputs(jobDir: String, records: String): Unit =
    lines(records).toSeq.map(_.split("\t", 4)).groupBy(_(0).toInt).toSeq.sortBy(_._1).foreach {
      case (_, rs) => InputFingerprint.putRecorded(jobDir, rs.head(1), InputFingerprint.Recorded(
        rs.head(2), rs.map(r => InputFingerprint.Input.parse(r(3)))))
    }

  /**
   * `df` (a full-window operation's result) committed per partition, and the shuffles its stage
   * reads with it; see [[FullWindowCommit]]. `inputs` are the shuffle inputs an earlier run
   * committed in full (verified), one tab-separated line each: input index, shuffle partitions,
   * map outputs, codec, recorded read; `inputFiles` their files: input index, map index, data
   * file, index file.
   */
  def commit(df: Dataset[Row], fingerprint: String, operation: String, operatorDir: String,
      recordedPartitions: Int, recordedLayout: String, partitions: Array[Int],
      paths: Array[String], inputs: Array[String], inputFiles: Array[String]): Dataset[Row] = {
    val files = inputFiles.toSeq.map(_.split("\t", -1)).groupBy(_(0).toInt)
    val committed = inputs.toSeq.map(_.split("\t", -1)).map { f =>
      val k = f(0).toInt
      val maps = files.getOrElse(k, Nil).sortBy(_(1).toInt)
      CommittedInput(k, f(1).toInt, f(2).toInt, f(3), f(4), maps.map(_(2)), maps.map(_(3)))
    }
    SparkShims.ofRows(df.sparkSession, FullWindowCommit(fingerprint, operation, operatorDir,
      recordedPartitions, recordedLayout, partitions.zip(paths).toMap, df.logicalPlan,
      commitInputs = true, inputs = committed))
  }

  /**
   * Opens job `jobDir` in the JVM's registry (so SQL hint operations can be committed in it);
   * then [[recoveryVertex]] is called for each operator the earlier runs recorded.
   */
  def openRecoveryJob(jobDir: String): Unit = FullWindowRecoveryJobs.open(jobDir)

  def closeRecoveryJob(jobDir: String): Unit = FullWindowRecoveryJobs.close(jobDir)

  /** `foreach` / `foreachPartition` (`kind`) of `df`, with function `target` whose code has
    * digest `code`, numbered as an unchecked write of the session's open recovery job (see
    * [[recovery.writes.RecoveredWrites.beginAction]]): Python runs it unless the answer is
    * `skipped`, then calls `done()`. Raises `RECOVERY_UNCHECKED_WRITE` under
    * `onUncheckedWrite=fail` when an earlier run started it and did not finish it. */
  def beginRecoveredAction(df: Dataset[Row], kind: String, target: String,
      code: String): recovery.writes.RecoveredWrites.Action =
    recovery.writes.RecoveredWrites.beginAction(df, kind, target, code)

  def failRecoveryJob(spark: SparkSession, jobDir: String, why: String): Unit =
    RecoveryFence.fail(spark.sparkContext, jobDir, why)

  /** Whether Spark Connect session `sessionId` of this server runs a Spark job now. */
  def connectSessionRunning(sessionId: String): Boolean =
    RecoveryFence.anyRunning(s"_Session_${sessionId}_")

  /** Whether Spark Connect session `sessionId` of this server was closed (released, expired). */
  def connectSessionClosed(sessionId: String): Boolean = RecoveryFence.sessionClosed(sessionId)

  /** [[failRecoveryJob]] for a job of Spark Connect session `sessionId`: only that session's
    * Spark jobs are cancelled (the server's other sessions run on). */
  def failRecoveryJob(spark: SparkSession, jobDir: String, why: String, sessionId: String): Unit =
    RecoveryFence.fail(spark.sparkContext, jobDir, why, sessionId)

  /** What earlier runs of job `jobDir` recorded for operator `fingerprint` (not verified yet):
    * one line per finished partition, `partition TAB bytes TAB crc TAB path` (one call from
    * Python instead of one per array element). */
  def recoveryVertex(jobDir: String, fingerprint: String, numPartitions: Int, layout: String,
      finished: String): Unit =
    FullWindowRecoveryJobs.put(jobDir, fingerprint, FullWindowRecoveryJobs.Vertex(numPartitions,
      layout, lines(finished).map { line =>
        val Array(p, bytes, crc, path) = line.split("\t", 4)
        p.toInt -> FullWindowRecoveryJobs.Finished(path, bytes.toLong, crc.toLong)
      }.toMap))

  /** What earlier runs of job `jobDir` kept of shuffle vertex `vertex` (`shuffle:<fp>`, whole-job
    * recovery): its map count, layout, stability, and one line per kept map output,
    * `mapIndex TAB generation TAB dataBytes TAB indexBytes TAB dataCrc TAB indexCrc TAB data TAB
    * index` (not verified; a CRC32 of -1: not recorded). */
  def recoveryShuffle(jobDir: String, vertex: String, numMaps: Int, layout: String,
      stable: Boolean, maps: String): Unit =
    JobShuffles.put(jobDir, vertex.stripPrefix(JobShuffles.Operator + ":"),
      JobShuffles.Recorded(numMaps, layout, stable, lines(maps).map { line =>
        val Array(m, gen, bytes, indexBytes, crc, indexCrc, data, index) = line.split("\t", 8)
        m.toInt -> JobShuffles.KeptMap(m.toInt, gen, data, bytes.toLong, index, indexBytes.toLong,
          crc.toLong, indexCrc.toLong)
      }.toMap))

  /** `text` split at newlines (none: an empty array): how Python hands over a list of strings
    * in one call. */
  def lines(text: String): Array[String] = if (text.isEmpty) Array.empty else text.split("\n", -1)

  /** Comma-separated integers as an array (none: empty). */
  def ints(text: String): Array[Int] =
    if (text.isEmpty) Array.empty else text.split(",").map(_.trim.toInt)

  /** The committed outputs `paths` (partition order) read back in place of `df`. */
  def recoveredScan(df: Dataset[Row], fingerprint: String, operation: String, paths: Array[String],
      totalBytes: Long): Dataset[Row] =
    SparkShims.ofRows(df.sparkSession, FullWindowRecoveredScan(fingerprint, operation, paths.toSeq,
      totalBytes, DataTypeUtils.toAttributes(df.schema)))

  /** For each committed file, one line `bytes TAB crc TAB path`, whether it exists with that
    * size and CRC32: lengths from directory listings on the driver, the bytes checksummed where
    * executors run (see [[CommittedRows.verifyAll]]). */
  def verifyCommittedAll(spark: SparkSession, files: String): Array[Boolean] =
    CommittedRows.verifyAll(lines(files).toSeq.map { line =>
      val Array(bytes, crc, path) = line.split("\t", 3)
      (path, bytes.toLong, crc.toLong)
    }, spark.sparkContext).toArray
}

/** Stands for a committed or recovered operation when fingerprinting a plan. */
case class RecoveryMarker(fingerprint: String, output: Seq[Attribute]) extends LeafNode {
  override def simpleString(maxFields: Int): String = s"Recovered $fingerprint"
}
