package org.apache.spark.sql.fullwindow.execution

import scala.jdk.CollectionConverters._

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, SortOrder, UnsafeProjection}
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.fullwindow.FullWindowExplain
import org.apache.spark.sql.vectorized.ColumnarBatch

/**
 * sortPartition by columns (FullWindowColumnarRule puts it in place of
 * FullWindowSortPartitionExec over Spark's ColumnarToRowExec, and, named
 * `FullWindowColumnarSort`, in place of the SortExec that EnsureRequirements puts under a keyed
 * FullWindowAggregate or a side of a FullWindowCoGroup): each partition's batches (a columnar
 * child) or rows (a row child, such as the exchange) are copied into columns and sorted by
 * (key word, row index) with Spark's RadixSort, then written out as UnsafeRows (ColumnarSorter;
 * with string or binary columns each row is held as an UnsafeRow's bytes, pointed at on output).
 * Only for keys that are columns of fixed-width primitive types, binary or strings ordered by
 * their bytes, and other columns of such types (ColumnarSort.keyColumns). With `spillOnRequest` (a coGroup side,
 * whose sorted rows are held while the other side sorts) no carry layout is used, so that the
 * rows not read yet can be written to disk when another consumer of the task needs memory
 * (ColumnarSorter.spill). When the task's memory manager refuses more memory,
 * the rows held are sorted and written to disk as a run, and the runs are merged on output. When
 * it refuses memory with nothing held, the partition falls back to the row sorter of
 * FullWindowSortPartitionExec (spilling as it does): the rows on disk first, then the rest.
 *
 * Prints as `FullWindowSortPartition ... columnar=true` (or its `name`); its metrics are the row sorter's plus
 * the partitions sorted by columns, the runs they spilled and the partitions that fell back, and
 * the batches filled into Arrow when the Python node above reads the sorter (executeSorted).
 */
case class FullWindowColumnarSortExec(
    sortOrder: Seq[SortOrder],
    child: SparkPlan,
    name: String = "FullWindowSortPartition",
    spillOnRequest: Boolean = false) extends UnaryExecNode {

  override def nodeName: String = name
  override def output: Seq[Attribute] = child.output
  override def outputOrdering: Seq[SortOrder] = sortOrder
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def simpleString(maxFields: Int): String =
    FullWindowExplain.line(nodeName, maxFields, "order" -> sortOrder, "columnar" -> true)

  override lazy val metrics: Map[String, SQLMetric] = FullWindowMetrics.sort(sparkContext) ++
    ColumnarSort.metrics(sparkContext) ++ ArrowChunks.metrics(sparkContext) +
    ("numInputBatches" -> SQLMetrics.createMetric(sparkContext, "number of input batches"))

  private val radixSortEnabled = conf.enableRadixSort
  private val packedPrefix = PackedSortPrefix.applies(sortOrder, conf)
  // lazy: Spark copies the node with its expressions rewritten (a canonicalized copy for
  // exchange reuse and plan fingerprints names no column), which must not fail; only a node
  // that runs needs them
  private lazy val keyCols: Array[Int] = ColumnarSort.keyColumns(sortOrder, output).getOrElse(
    throw new IllegalStateException(s"no columnar sort by $sortOrder over $output"))
  private lazy val types: Array[Int] = output.map(a => ColumnarSort.typeCode(a.dataType)).toArray

  override protected def doExecute(): RDD[InternalRow] =
    sortEach(sort => SortedPartition.rows(sort()))

  /**
   * Each partition as one [[SortedPartition]], sorted as doExecute sorts it (same metrics) when
   * its consumer first asks: for the Python partition node, which fills its Arrow batches from
   * the sorter (SortedArrowInput) instead of reading the sorted rows.
   */
  def executeSorted(): RDD[InternalRow] = executeQuery(sortEach(new SortedPartition(_)))

  /** `out` over each partition's sort (not run yet). */
  private def sortEach(
      out: (() => Either[ColumnarSorter, Iterator[InternalRow]]) => Iterator[InternalRow]): RDD[InternalRow] = {
    metrics // created on the driver, before the tasks use them
    if (child.supportsColumnar) child.executeColumnar().mapPartitionsInternal(b => out(() => sortBatches(b)))
    else child.execute().mapPartitionsInternal(r => out(() => sortRows(r)))
  }

  private def sortBatches(batches: Iterator[ColumnarBatch]): Either[ColumnarSorter, Iterator[InternalRow]] = {
    val toRow = UnsafeProjection.create(output, output)
    val insert = (b: ColumnarBatch, rowSorter: FullWindowRowSorter) => {
      b.rowIterator().asScala.foreach(r => rowSorter.insertRow(toRow(r)))
      b.numRows().toLong
    }
    ColumnarSort.sortPartition[ColumnarBatch](batches, sortOrder, output, types, keyCols,
      radixSortEnabled, packedPrefix, _.append(_), _.numRows(), insert, metrics, !spillOnRequest)
  }

  private def sortRows(rows: Iterator[InternalRow]): Either[ColumnarSorter, Iterator[InternalRow]] =
    ColumnarSort.sortRows(rows, sortOrder, output, types, keyCols, radixSortEnabled, packedPrefix,
      metrics, !spillOnRequest)

  override protected def withNewChildInternal(newChild: SparkPlan): FullWindowColumnarSortExec =
    copy(child = newChild)
}

/**
 * One partition of the columnar sort, not sorted yet (FullWindowColumnarSortExec.executeSorted):
 * `sort()` sorts it, giving the sorter or, after a fallback to the row sorter, its rows; a
 * consumer that reads the sorter itself (SortedArrowInput) calls it once. Read as an iterator,
 * it is the sorted rows, as doExecute gives them.
 */
final class SortedPartition(doSort: () => Either[ColumnarSorter, Iterator[InternalRow]])
  extends Iterator[InternalRow] {

  private var sorted = false

  def sort(): Either[ColumnarSorter, Iterator[InternalRow]] = {
    if (sorted) throw new IllegalStateException("the partition was sorted already")
    sorted = true
    doSort()
  }

  private lazy val rows = SortedPartition.rows(sort())

  override def hasNext: Boolean = rows.hasNext
  override def next(): InternalRow = rows.next()
}

object SortedPartition {
  /** A sorted partition's rows: the sorter's, or the row sorter's after a fallback. */
  def rows(sorted: Either[ColumnarSorter, Iterator[InternalRow]]): Iterator[InternalRow] =
    sorted.fold(_.sortedRows(), identity)
}
