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
import org.apache.spark.sql.fullwindow.recovery.{CommittedRows, CommittedShuffleInput, CommittingShuffleWriteProcessor, FullWindowRecoveryListener}
import org.apache.spark.storage.ShuffleBlockId
import org.apache.spark.util.{CollectionAccumulator, SerializableConfiguration}

/**
 * Recovery: Spark's shuffle `delegate` (the `input`-th shuffle read by a committed full-window
 * operation's stage), whose map tasks also commit their output files under `operatorDir/input<i>` (see
 * [[CommittingShuffleWriteProcessor]]), so that a later run of the job can read this input back
 * instead of running everything upstream of it again. Everything else is the delegate's.
 */
case class FullWindowCommittingExchangeExec(
    delegate: ShuffleExchangeExec,
    vertex: String,
    operatorDir: String,
    input: Int,
    codec: String) extends ShuffleExchangeLike {

  override def nodeName: String = "Exchange"
  override def child: SparkPlan = delegate.child
  override def output: Seq[Attribute] = delegate.output
  override def outputPartitioning: Partitioning = delegate.outputPartitioning
  override def shuffleOrigin: ShuffleOrigin = delegate.shuffleOrigin
  override def advisoryPartitionSize: Option[Long] = delegate.advisoryPartitionSize
  override def simpleString(maxFields: Int): String =
    s"${delegate.simpleString(maxFields)}, committed as $vertex"
  override lazy val metrics: Map[String, SQLMetric] = delegate.metrics

  private def writeMetrics: Map[String, SQLMetric] = metrics.filter { case (k, _) =>
    k == SQLShuffleWriteMetricsReporter.SHUFFLE_BYTES_WRITTEN ||
      k == SQLShuffleWriteMetricsReporter.SHUFFLE_RECORDS_WRITTEN ||
      k == SQLShuffleWriteMetricsReporter.SHUFFLE_WRITE_TIME
  }

  @transient lazy val shuffleDependency: ShuffleDependency[Int, InternalRow, InternalRow] = {
    val base = ShuffleExchangeExec.prepareShuffleDependency(delegate.inputRDD, child.output,
      outputPartitioning, new UnsafeRowSerializer(child.output.size, longMetric("dataSize")),
      writeMetrics)
    val numMaps = base.rdd.getNumPartitions
    val layout = s"n=${base.partitioner.numPartitions};$codec"
    val inputDir = s"${operatorDir.stripSuffix("/")}/input$input"
    FullWindowRecoveryListener.postVertexInitialized(vertex, "shuffle input", numMaps, layout,
      Nil, FullWindowCommitExec.jobDirOf(operatorDir), 0, Nil)
    val acc = new CollectionAccumulator[String]
    sparkContext.register(acc, FullWindowRecoveryListener.AccumulatorName)
    val conf = sparkContext.broadcast(new SerializableConfiguration(sparkContext.hadoopConfiguration))
    val processor = new CommittingShuffleWriteProcessor(writeMetrics, vertex, layout, inputDir,
      FullWindowRecoveryListener.escape(FullWindowCommitExec.jobDirOf(operatorDir)), conf, acc)
    new ShuffleDependency[Int, InternalRow, InternalRow](base.rdd, base.partitioner,
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

  override def runtimeStatistics: Statistics = Statistics(
    metrics("dataSize").value,
    Some(metrics(SQLShuffleWriteMetricsReporter.SHUFFLE_RECORDS_WRITTEN).value))

  @transient private lazy val shuffleRDD = new ShuffledRowRDD(shuffleDependency, delegate.readMetrics)
  override protected def doExecute(): RDD[InternalRow] = shuffleRDD

  override protected def withNewChildInternal(newChild: SparkPlan): FullWindowCommittingExchangeExec =
    copy(delegate = delegate.withNewChildren(Seq(newChild)).asInstanceOf[ShuffleExchangeExec])
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
    override val outputPartitioning: Partitioning) extends LeafExecNode {

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
