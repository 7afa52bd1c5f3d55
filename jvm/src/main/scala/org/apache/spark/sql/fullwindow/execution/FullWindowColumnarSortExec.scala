package org.apache.spark.sql.fullwindow.execution

import org.apache.spark.TaskContext
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Descending, NullsFirst, SortOrder, UnsafeProjection}
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.fullwindow.FullWindowExplain
import org.apache.spark.sql.vectorized.ColumnarBatch

/**
 * sortPartition over a columnar child (FullWindowColumnarRule puts it in place of
 * FullWindowSortPartitionExec over Spark's ColumnarToRowExec): each partition's batches are
 * copied into columns and sorted by (key word, row index) with Spark's RadixSort, then written
 * out as UnsafeRows (ColumnarSorter). Only for columns of fixed-width primitive types and keys
 * that are columns (ColumnarSort.keyColumns). When the task's memory manager refuses more memory,
 * the rows held are sorted and written to disk as a run, and the runs are merged on output. When
 * it refuses memory with nothing held, the partition falls back to the row sorter of
 * FullWindowSortPartitionExec (spilling as it does): the rows on disk first, then the rest.
 *
 * Prints as `FullWindowSortPartition ... columnar=true`; its metrics are the row sorter's plus
 * the partitions sorted by columns, the runs they spilled and the partitions that fell back.
 */
case class FullWindowColumnarSortExec(sortOrder: Seq[SortOrder], child: SparkPlan)
  extends UnaryExecNode {

  override def nodeName: String = "FullWindowSortPartition"
  override def output: Seq[Attribute] = child.output
  override def outputOrdering: Seq[SortOrder] = sortOrder
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def simpleString(maxFields: Int): String =
    FullWindowExplain.line(nodeName, maxFields, "order" -> sortOrder, "columnar" -> true)

  override lazy val metrics: Map[String, SQLMetric] = FullWindowMetrics.sort(sparkContext) ++ Map(
    "numInputBatches" -> SQLMetrics.createMetric(sparkContext, "number of input batches"),
    "columnarSorts" -> SQLMetrics.createMetric(sparkContext, "partitions sorted by columns"),
    "rowSortFallbacks" -> SQLMetrics.createMetric(sparkContext,
      "partitions that fell back to the row sorter"),
    "columnarRuns" -> SQLMetrics.createMetric(sparkContext, "sorted runs spilled by columns"))

  private val radixSortEnabled = conf.enableRadixSort
  private val packedPrefix = PackedSortPrefix.applies(sortOrder, conf)
  // lazy: Spark copies the node with its expressions rewritten (a canonicalized copy for
  // exchange reuse and plan fingerprints names no column), which must not fail; only a node
  // that runs needs them
  private lazy val keyCols: Array[Int] = ColumnarSort.keyColumns(sortOrder, output).getOrElse(
    throw new IllegalStateException(s"no columnar sort by $sortOrder over $output"))
  private lazy val types: Array[Int] = output.map(a => ColumnarSort.typeCode(a.dataType)).toArray

  override protected def doExecute(): RDD[InternalRow] = {
    metrics // created on the driver, before the tasks use them
    child.executeColumnar().mapPartitionsInternal(sortPartition)
  }

  private def sortPartition(batches: Iterator[ColumnarBatch]): Iterator[InternalRow] = {
    val ctx = TaskContext.get()
    val spilledBefore = ctx.taskMetrics().memoryBytesSpilled
    val sorter = new ColumnarSorter(types, keyCols, sortOrder.map(_.direction == Descending).toArray,
      sortOrder.map(_.nullOrdering == NullsFirst).toArray, ctx.taskMemoryManager())
    ctx.addTaskCompletionListener[Unit](_ => sorter.free())
    var refused: ColumnarBatch = null
    var numBatches = 0L
    var rows = 0L
    while (refused == null && batches.hasNext) {
      val b = batches.next()
      numBatches += 1
      // memory refused: the rows held become a sorted run on disk, and appending goes on;
      // refused with nothing held: the row sorter takes over
      if (!sorter.append(b) && (sorter.numRows == 0 || { sorter.spillRun(); !sorter.append(b) })) {
        refused = b
      } else rows += b.numRows()
    }
    if (refused == null) {
      val start = System.nanoTime()
      sorter.sort(allowCarry = true)
      longMetric("numInputBatches") += numBatches
      longMetric("numInputRows") += rows
      longMetric("numOutputRows") += rows
      longMetric("sortTime") += (System.nanoTime() - start) / 1000000
      longMetric("peakMemory") += sorter.peakMemory
      longMetric("spillSize") += ctx.taskMetrics().memoryBytesSpilled - spilledBefore
      longMetric("columnarSorts") += 1
      longMetric("columnarRuns") += sorter.numRuns
      ctx.taskMetrics().incPeakExecutionMemory(sorter.peakMemory)
      return sorter.sortedRows()
    }
    // Fallback: what is held goes to disk first (so the row sorter can have the memory), then
    // the row sorter gets the rows on disk back, then the refused batch and the rest.
    longMetric("rowSortFallbacks") += 1
    val peakColumnar = sorter.peakMemory
    if (sorter.numRows > 0) sorter.dump()
    val rowSorter = RowSorters.create(sortOrder, output, schema, radixSortEnabled, packedPrefix,
      (sortNanos, peakMemory, spilled) => {
        longMetric("sortTime") += sortNanos / 1000000
        longMetric("peakMemory") += peakMemory
        longMetric("spillSize") += spilled
      })
    var n = 0L
    sorter.replay { row => rowSorter.insertRow(row); n += 1 }
    val toRow = UnsafeProjection.create(output, output)
    def insertBatch(b: ColumnarBatch): Unit = {
      val rows = b.rowIterator()
      while (rows.hasNext) { rowSorter.insertRow(toRow(rows.next())); n += 1 }
    }
    if (refused != null) insertBatch(refused)
    while (batches.hasNext) { numBatches += 1; insertBatch(batches.next()) }
    val sorted = rowSorter.sort()
    val taskMetrics = ctx.taskMetrics()
    longMetric("numInputBatches") += numBatches
    longMetric("numInputRows") += n
    longMetric("numOutputRows") += n
    longMetric("sortTime") += rowSorter.getSortTimeNanos / 1000000
    val peak = math.max(peakColumnar, rowSorter.getPeakMemoryUsage)
    longMetric("peakMemory") += peak
    longMetric("spillSize") += taskMetrics.memoryBytesSpilled - spilledBefore
    taskMetrics.incPeakExecutionMemory(peak)
    sorted
  }

  override protected def withNewChildInternal(newChild: SparkPlan): FullWindowColumnarSortExec =
    copy(child = newChild)
}
