package org.apache.spark.sql.fullwindow.execution

import org.apache.spark.{Partition, TaskContext}
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, SortOrder}
import org.apache.spark.sql.catalyst.plans.physical.{Partitioning, UnknownPartitioning}
import org.apache.spark.sql.execution.{CoalescedMapperPartitionSpec, CoalescedPartitionSpec, LeafExecNode, PartialMapperPartitionSpec, PartialReducerPartitionSpec, SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.adaptive.{AQEShuffleReadExec, AdaptiveSparkPlanHelper, QueryStageExec}
import org.apache.spark.sql.execution.exchange.Exchange
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.fullwindow.recovery.{CommittedInput, CommittedRows, FullWindowRecoveryListener}
import org.apache.spark.sql.types.StructType
import org.apache.spark.util.{CollectionAccumulator, SerializableConfiguration}

/**
 * Recovery: commits each partition of a full-window operation (its child) under `operatorDir`
 * while passing the rows through, or reads back the partitions an earlier run committed (see
 * [[org.apache.spark.sql.fullwindow.logical.FullWindowCommit]]). A recovered partition does not
 * touch its input at all, so the work upstream of it in the same stage does not run.
 */
case class FullWindowCommitExec(
    fingerprint: String,
    operationName: String,
    operatorDir: String,
    recordedPartitions: Int,
    recordedLayout: String,
    recovered: Map[Int, String],
    child: SparkPlan,
    commitInputs: Boolean = false,
    inputs: Seq[CommittedInput] = Nil) extends UnaryExecNode with AdaptiveSparkPlanHelper {

  override def nodeName: String = "FullWindowCommit"
  override def simpleString(maxFields: Int): String =
    s"FullWindowCommit $operationName $fingerprint (${recovered.size} recovered)"
  override def output: Seq[Attribute] = child.output
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def outputOrdering: Seq[SortOrder] = child.outputOrdering

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "recoveredPartitions" -> SQLMetrics.createMetric(sparkContext, "recovered partitions"),
    "committedPartitions" -> SQLMetrics.createMetric(sparkContext, "committed partitions"))

  override protected def doExecute(): RDD[InternalRow] = {
    val input = child.execute()
    val n = input.getNumPartitions
    val layout = FullWindowCommitExec.layoutOf(child, n)
    // A different partition count or layout than recorded: the earlier outputs do not line up
    // with this run's partitions (they would hold other keys); use none.
    val usable =
      if (recordedPartitions == n && recordedLayout == layout) recovered else Map.empty[Int, String]
    val jobDir = FullWindowRecoveryListener.escape(FullWindowCommitExec.jobDirOf(operatorDir))
    val upstream = collect(child) {
      case c: FullWindowCommitExec => c.fingerprint
      case s: FullWindowRecoveredScanExec => s.fingerprint
    }.filterNot(_ == fingerprint).distinct
    FullWindowRecoveryListener.postVertexInitialized(fingerprint, operationName, n, layout,
      FullWindowCommitExec.layoutParts(child), FullWindowCommitExec.jobDirOf(operatorDir),
      usable.size, upstream)
    val acc = new CollectionAccumulator[String]
    sparkContext.register(acc, FullWindowRecoveryListener.AccumulatorName)
    val conf = sparkContext.broadcast(new SerializableConfiguration(sparkContext.hadoopConfiguration))
    new FullWindowCommitRDD(input, fingerprint, operationName, operatorDir, layout, jobDir, usable,
      schema, conf, acc, longMetric("recoveredPartitions"), longMetric("committedPartitions"))
  }

  override protected def withNewChildInternal(newChild: SparkPlan): FullWindowCommitExec =
    copy(child = newChild)
}

object FullWindowCommitExec {
  /**
   * Which input each of the `n` partitions of `plan`'s output reads, hashed: the shuffle
   * partitions (or map outputs) behind every adaptive shuffle read in the stage, and the
   * partition count of every exchange or query stage it reads whole. Two runs of the same
   * operation with equal layouts give partition i the same rows, so a partition committed by
   * one stands in for the other's; adaptive coalescing can make them differ.
   */
  def layoutOf(plan: SparkPlan, n: Int): String = {
    val text = s"n=$n;" + layoutParts(plan).mkString(";")
    val digest = java.security.MessageDigest.getInstance("SHA-256")
      .digest(text.getBytes(java.nio.charset.StandardCharsets.UTF_8))
    digest.take(8).map(b => f"${b & 0xff}%02x").mkString
  }

  /**
   * The inputs of `plan`'s stage (the shuffle reads, query stages and exchanges it reads), in
   * plan order, each as the text of what it reads (see [[layoutOf]]).
   */
  def layoutParts(plan: SparkPlan): Seq[String] = {
    def parts(p: SparkPlan): Seq[String] = p match {
      case r: AQEShuffleReadExec =>
        val specs = r.partitionSpecs.map {
          case CoalescedPartitionSpec(s, e, _) => s"$s-$e"
          case PartialReducerPartitionSpec(red, s, e, _) => s"r$red:$s-$e"
          case PartialMapperPartitionSpec(m, s, e) => s"m$m:$s-$e"
          case CoalescedMapperPartitionSpec(s, e, nr) => s"cm$s-$e/$nr"
          case other => other.toString
        }
        Seq(s"read(${r.child.outputPartitioning.numPartitions}:${specs.mkString(",")})")
      case s: QueryStageExec => Seq(s"stage(${s.outputPartitioning.numPartitions})")
      case e: Exchange => Seq(s"exchange(${e.outputPartitioning.numPartitions})")
      case c: FullWindowCommittedInputExec => Seq(c.readPart)
      case other => other.children.flatMap(parts)
    }
    parts(plan)
  }

  /** The job directory an operator directory (`<job>/operators/<fingerprint>`) belongs to. */
  def jobDirOf(operatorDir: String): String = {
    val d = operatorDir.stripSuffix("/")
    val i = d.lastIndexOf("/operators/")
    if (i < 0) "" else d.substring(0, i)
  }
}

class FullWindowCommitRDD(
    prev: RDD[InternalRow],
    fingerprint: String,
    operationName: String,
    operatorDir: String,
    layout: String,
    jobDirJson: String,
    recovered: Map[Int, String],
    schema: StructType,
    conf: Broadcast[SerializableConfiguration],
    acc: CollectionAccumulator[String],
    recoveredMetric: SQLMetric,
    committedMetric: SQLMetric) extends RDD[InternalRow](prev) {

  override protected def getPartitions: Array[Partition] = prev.partitions

  /**
   * Recovered partitions read a committed file and nothing else, so they prefer no place. When a
   * run has recovered partitions and partitions to recompute, the recomputed ones run first:
   * without a place of their own (a committed input, or a shuffle read without reducer
   * locality) they prefer every host with an executor, which puts them at the NODE_LOCAL level,
   * ahead of the recovered ones (NO_PREF, never delayed). The recovered partitions are then the
   * short tasks that fill the cores at the end, in a JVM the recomputed ones have warmed up,
   * instead of the first wave, paying its cold start alone while no full-window work runs.
   */
  override protected def getPreferredLocations(split: Partition): Seq[String] =
    if (recovered.contains(split.index)) Nil
    else {
      val own = prev.preferredLocations(split)
      if (own.nonEmpty || recovered.isEmpty) own else executorHosts
    }

  @transient private lazy val executorHosts: Seq[String] =
    sparkContext.statusTracker.getExecutorInfos.map(_.host).distinct.sorted.toSeq

  override def compute(split: Partition, context: TaskContext): Iterator[InternalRow] = {
    val index = split.index
    recovered.get(index) match {
      case Some(path) =>
        recoveredMetric += 1
        CommittedRows.read(path, schema.length, conf.value.value)
      case None =>
        // unique across runs too: task attempt ids start again at 0 in every application
        val name = f"part-$index%05d-${context.taskAttemptId()}%d-" +
          java.util.UUID.randomUUID().toString.take(8) + ".rows"
        val path = s"${operatorDir.stripSuffix("/")}/$name"
        val it = new CommittedRows.CommittingIterator(prev.iterator(split, context), schema, path,
          conf.value.value, c => {
            committedMetric += 1
            acc.add(s"""{"type":"taskFinished","fingerprint":"$fingerprint",""" +
              s""""operator":"${FullWindowRecoveryListener.escape(operationName)}",""" +
              s""""partition":$index,"layout":"$layout","job":"$jobDirJson","path":"${FullWindowRecoveryListener.escape(c.path)}",""" +
              s""""rows":${c.rows},"bytes":${c.bytes},"checksum":${c.crc},""" +
              s""""codec":"${FullWindowRecoveryListener.escape(c.codec)}"""")
          })
        context.addTaskCompletionListener[Unit](_ => it.discard())
        it
    }
  }
}

/** Recovery: the committed outputs of a fully recovered operation, one partition per file. */
case class FullWindowRecoveredScanExec(
    fingerprint: String,
    operationName: String,
    paths: Seq[String],
    output: Seq[Attribute]) extends LeafExecNode {

  override def nodeName: String = "FullWindowRecoveredScan"
  override def simpleString(maxFields: Int): String =
    s"FullWindowRecoveredScan $operationName $fingerprint (${paths.size} partitions)"
  override def outputPartitioning: Partitioning = UnknownPartitioning(paths.size)

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "number of output rows"))

  override protected def doExecute(): RDD[InternalRow] = {
    val conf = sparkContext.broadcast(new SerializableConfiguration(sparkContext.hadoopConfiguration))
    val rows = longMetric("numOutputRows")
    new FullWindowRecoveredRDD(sparkContext, paths, output.length, conf).map { r => rows += 1; r }
  }
}

class FullWindowRecoveredRDD(
    sc: org.apache.spark.SparkContext,
    paths: Seq[String],
    numFields: Int,
    conf: Broadcast[SerializableConfiguration]) extends RDD[InternalRow](sc, Nil) {

  override protected def getPartitions: Array[Partition] =
    paths.indices.map(i => new Partition { override def index: Int = i }).toArray

  override def compute(split: Partition, context: TaskContext): Iterator[InternalRow] =
    CommittedRows.read(paths(split.index), numFields, conf.value.value)
}
