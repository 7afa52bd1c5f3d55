package org.apache.spark.sql.fullwindow.execution

import java.io.{BufferedInputStream, InputStream}

import scala.concurrent.Future

import org.apache.spark.{MapOutputStatistics, Partition, ShuffleDependency, SparkEnv, TaskContext}
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.network.util.LimitedInputStream
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.logical.Statistics
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{LeafExecNode, ShufflePartitionSpec, ShuffledRowRDD, SparkPlan, UnsafeRowSerializer}
import org.apache.spark.sql.execution.exchange.{ShuffleExchangeExec, ShuffleExchangeLike, ShuffleOrigin}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics, SQLShuffleWriteMetricsReporter}
import org.apache.spark.sql.fullwindow.recovery.{CommittedRows, CommittedShuffleInput, CommittingShuffleWriteProcessor, FullWindowRecoveryListener, InputFingerprint, JobShuffles}
import org.apache.spark.storage.ShuffleBlockId
import org.apache.spark.util.{CollectionAccumulator, SerializableConfiguration}

/**
 * Recovery: Spark's shuffle `delegate` whose map tasks also commit their output files under
 * `commitDir` (see [[CommittingShuffleWriteProcessor]]) as vertex `vertex` of job `jobDir`, so
 * that a later run of the job can read it back instead of running everything upstream of it
 * again. Two kinds (`operator`): `shuffle input`, the `i`-th shuffle read by a committed
 * full-window operation's stage (committed under `<operatorDir>/input<i>`); `shuffle`, any
 * shuffle of a job kept whole (`spark.fullwindow.recovery.scope=job`, [[JobShuffles]]): then
 * `kept` are the map outputs (map index, data file, index file) an earlier run kept, given to
 * the shuffle writer as those map tasks' output instead of computing their upstream, when the
 * map side is laid out as it was then (`recordedLayout`); `stable`: whether its map side is
 * determinate (see [[JobShuffles]]); `resetFirst`: what earlier runs kept of this unstable
 * shuffle is voided before it is computed whole. Everything else is the delegate's.
 */
case class FullWindowCommittingExchangeExec(
    delegate: ShuffleExchangeExec,
    vertex: String,
    commitDir: String,
    jobDir: String,
    operator: String,
    codec: String,
    kept: Seq[(Int, String, String)] = Nil,
    recordedLayout: String = "",
    stable: Boolean = true,
    resetFirst: Boolean = false) extends ShuffleExchangeLike {

  override def nodeName: String = "Exchange"
  override def child: SparkPlan = delegate.child
  override def output: Seq[Attribute] = delegate.output
  override def outputPartitioning: Partitioning = delegate.outputPartitioning
  override def shuffleOrigin: ShuffleOrigin = delegate.shuffleOrigin
  override def advisoryPartitionSize: Option[Long] = delegate.advisoryPartitionSize
  override def simpleString(maxFields: Int): String =
    s"${delegate.simpleString(maxFields)}, committed as $vertex" +
      (if (kept.nonEmpty) s" (${kept.size} map outputs kept)" else "")
  override lazy val metrics: Map[String, SQLMetric] = delegate.metrics

  private def writeMetrics: Map[String, SQLMetric] = metrics.filter { case (k, _) =>
    k == SQLShuffleWriteMetricsReporter.SHUFFLE_BYTES_WRITTEN ||
      k == SQLShuffleWriteMetricsReporter.SHUFFLE_RECORDS_WRITTEN ||
      k == SQLShuffleWriteMetricsReporter.SHUFFLE_WRITE_TIME
  }

  /** The map outputs reused from an earlier run (map index -> data and index file), decided
    * when the shuffle dependency is made. */
  @transient private var reusedMaps: Map[Int, (String, String)] = Map.empty

  @transient lazy val shuffleDependency: ShuffleDependency[Int, InternalRow, InternalRow] = {
    val base = ShuffleExchangeExec.prepareShuffleDependency(delegate.inputRDD, child.output,
      outputPartitioning, new UnsafeRowSerializer(child.output.size, longMetric("dataSize")),
      writeMetrics)
    val numMaps = base.rdd.getNumPartitions
    val n = base.partitioner.numPartitions
    val esc = FullWindowRecoveryListener.escape _
    val whole = operator == JobShuffles.Operator
    val layout =
      if (!whole) s"n=$n;$codec"
      else s"${JobShuffles.reducePart(n, codec)}maps=$numMaps;reads=" +
        InputFingerprint.sha(FullWindowCommitExec.layoutParts(child)
          .map(_.replaceAll("^exchange\\(", "stage(")).mkString(",")).take(16)
    val generation = java.util.UUID.randomUUID().toString.take(12)
    if (whole && resetFirst) {
      JobShuffles.forget(jobDir, vertex.stripPrefix(JobShuffles.Operator + ":"))
      FullWindowRecoveryListener.forgetInBackground(vertex)
      FullWindowRecoveryListener.post(
        s"""{"type":"vertexReset","fingerprint":"${esc(vertex)}","operator":"${esc(operator)}",""" +
          s""""job":"${esc(jobDir)}","reason":"unstable shuffle computed again whole"}""")
    }
    reusedMaps = if (whole && recordedLayout == layout) kept.map(k => k._1 -> (k._2, k._3)).toMap
      else Map.empty
    val extra = if (!whole) "" else {
      val sc = sparkContext
      val execution = Option(sc.getLocalProperty("spark.sql.execution.id")).getOrElse("")
      val query = Option(sc.getLocalProperty("spark.job.description"))
        .orElse(Option(sc.getLocalProperty("callSite.short")))
        .getOrElse(if (execution.isEmpty) "" else s"SQL execution $execution")
      s""","stable":$stable,"generation":"$generation","query":"${esc(query)}",""" +
        s""""executionId":"${esc(execution)}",""" +
        s""""reused":${reusedMaps.size}"""
    }
    FullWindowRecoveryListener.postVertexInitialized(vertex, operator, numMaps, layout,
      Nil, jobDir, reusedMaps.size, Nil, extra)
    val acc = new CollectionAccumulator[String]
    sparkContext.register(acc, FullWindowRecoveryListener.AccumulatorName)
    val conf = sparkContext.broadcast(new SerializableConfiguration(sparkContext.hadoopConfiguration))
    val processor = new CommittingShuffleWriteProcessor(writeMetrics, vertex, layout, commitDir,
      esc(jobDir), conf, acc, operator,
      if (whole) s""","generation":"$generation"""" else "", reusedMaps)
    val rdd =
      if (reusedMaps.isEmpty) base.rdd
      else new KeptMapsRDD(base.rdd.asInstanceOf[RDD[Product2[Int, InternalRow]]], reusedMaps, n,
        child.output.size, conf)
    new ShuffleDependency[Int, InternalRow, InternalRow](rdd, base.partitioner,
      base.serializer, None, None, false, processor)
  }

  @transient override lazy val mapOutputStatisticsFuture: Future[MapOutputStatistics] =
    if (delegate.inputRDD.getNumPartitions == 0) Future.successful(null)
    else sparkContext.submitMapStage(shuffleDependency)

  override def numMappers: Int = shuffleDependency.rdd.getNumPartitions
  override def numPartitions: Int = shuffleDependency.partitioner.numPartitions
  def shuffleId: Int = shuffleDependency.shuffleId   // overrides ShuffleExchangeLike's from Spark 4.0

  override def getShuffleRDD(partitionSpecs: Array[ShufflePartitionSpec]): RDD[InternalRow] =
    new ShuffledRowRDD(shuffleDependency, delegate.readMetrics, partitionSpecs)

  /** With map outputs placed as an earlier run kept them, their rows are neither counted nor
   * sized (they are not read): the row count is unknown (never 0, which adaptive execution would
   * take for an empty shuffle), and the size at least the bytes written and placed. */
  override def runtimeStatistics: Statistics =
    if (reusedMaps.isEmpty) Statistics(
      metrics("dataSize").value,
      Some(metrics(SQLShuffleWriteMetricsReporter.SHUFFLE_RECORDS_WRITTEN).value))
    else Statistics(
      BigInt(metrics("dataSize").value) max
        BigInt(metrics(SQLShuffleWriteMetricsReporter.SHUFFLE_BYTES_WRITTEN).value), None)

  @transient private lazy val shuffleRDD = new ShuffledRowRDD(shuffleDependency, delegate.readMetrics)
  override protected def doExecute(): RDD[InternalRow] = shuffleRDD

  override protected def withNewChildInternal(newChild: SparkPlan): FullWindowCommittingExchangeExec =
    copy(delegate = delegate.withNewChildren(Seq(newChild)).asInstanceOf[ShuffleExchangeExec])

  /** The same exchange computed twice in one query (a self-join, a union of one aggregate)
   * canonicalizes to one form, as Spark's own exchange does (its partitioning's columns by
   * position), so that Spark reuses it (`ReusedExchange`) rather than running and keeping it
   * twice. */
  override protected def doCanonicalize(): SparkPlan =
    copy(delegate = delegate.canonicalized.asInstanceOf[ShuffleExchangeExec])
}

/**
 * Recovery: input `input` of a committed full-window operation's stage, read back from the map
 * outputs an earlier run committed instead of shuffling it again (nothing upstream runs).
 * Partition i reads shuffle partitions `ranges(i)` of every map output, as the earlier run's stage
 * read them (`readPart`), so the operation's partitions hold the same rows as when it committed.
 */
case class FullWindowCommittedInputExec(
    vertex: String,
    numPartitions: Int,
    data: Seq[String],
    index: Seq[String],
    readPart: String,
    ranges: Seq[(Int, Int)],
    output: Seq[Attribute],
    override val outputPartitioning: Partitioning,
    stable: Boolean = true) extends LeafExecNode {

  override def nodeName: String = "FullWindowCommittedInput"
  override def simpleString(maxFields: Int): String =
    s"FullWindowCommittedInput $vertex (${data.size} map outputs, ${ranges.size} partitions)"

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "number of output rows"))

  override protected def doExecute(): RDD[InternalRow] = {
    val hadoopConf = sparkContext.hadoopConfiguration
    val offsets = index.map(CommittedShuffleInput.readOffsets(_, numPartitions, hadoopConf))
    val parts = ranges.zipWithIndex.map { case ((s, e), i) =>
      CommittedInputPartition(i, s, offsets.map(o => o.slice(s, e + 1)).toArray)
    }
    val conf = sparkContext.broadcast(new SerializableConfiguration(hadoopConf))
    val rows = longMetric("numOutputRows")
    new CommittedInputRDD(sparkContext, data, parts, output.length, conf).map { r => rows += 1; r }
  }
}

/** Partition `index` reads shuffle partitions from `first` on; `offsets(m)` bound them in map m. */
case class CommittedInputPartition(index: Int, first: Int, offsets: Array[Array[Long]])
  extends Partition

class CommittedInputRDD(
    sc: org.apache.spark.SparkContext,
    data: Seq[String],
    parts: Seq[CommittedInputPartition],
    numFields: Int,
    conf: Broadcast[SerializableConfiguration]) extends RDD[InternalRow](sc, Nil) {

  override protected def getPartitions: Array[Partition] = parts.toArray

  override def compute(split: Partition, context: TaskContext): Iterator[InternalRow] = {
    val part = split.asInstanceOf[CommittedInputPartition]
    val serializer = new UnsafeRowSerializer(numFields).newInstance()
    val serializerManager = SparkEnv.get.serializerManager
    val hadoopConf = conf.value.value
    val blocks = for {
      j <- (0 until part.offsets.headOption.map(_.length - 1).getOrElse(0)).iterator
      m <- data.indices.iterator
      start = part.offsets(m)(j)
      length = part.offsets(m)(j + 1) - start
      if length > 0
    } yield (part.first + j, m, start, length)
    var open: InputStream = null
    context.addTaskCompletionListener[Unit] { _ => if (open != null) open.close() }
    blocks.flatMap { case (reduceId, m, start, length) =>
      if (open != null) open.close()
      val path = new org.apache.hadoop.fs.Path(data(m))
      val in = CommittedRows.fileSystem(path, hadoopConf).open(path)
      in.seek(start)
      open = serializerManager.wrapStream(ShuffleBlockId(0, m, reduceId),
        new BufferedInputStream(new LimitedInputStream(in, length), 1 << 16))
      serializer.deserializeStream(open).asKeyValueIterator.map(_._2.asInstanceOf[InternalRow])
    }
  }
}

/**
 * The map side of a shuffle partly kept by an earlier run: map task `i` gives the shuffle
 * writer its kept output's `(shuffle partition, row)` pairs when `kept` has it (nothing of its
 * parent's partition is computed), else its parent's. See [[FullWindowCommittingExchangeExec]].
 */
class KeptMapsRDD(
    parent: RDD[Product2[Int, InternalRow]],
    kept: Map[Int, (String, String)],
    numPartitions: Int,
    numFields: Int,
    conf: Broadcast[SerializableConfiguration]) extends RDD[Product2[Int, InternalRow]](parent) {

  override protected def getPartitions: Array[Partition] = firstParent[Product2[Int, InternalRow]].partitions

  override protected def getPreferredLocations(split: Partition): Seq[String] =
    firstParent[Product2[Int, InternalRow]].preferredLocations(split)

  override def compute(split: Partition, context: TaskContext): Iterator[Product2[Int, InternalRow]] =
    kept.get(split.index) match {
      case Some((data, index)) =>
        CommittedShuffleInput.readMap(data, index, numPartitions, numFields, conf.value.value, context)
      case None => firstParent[Product2[Int, InternalRow]].iterator(split, context)
    }
}
