package org.apache.spark.sql.fullwindow.execution

import org.apache.spark.{SparkEnv, TaskContext}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet, BindReferences, RowOrdering, SortOrder, SortPrefix, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, ExprCode}
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{CodegenSupport, SortPrefixUtils, SparkPlan, UnaryExecNode, UnsafeExternalRowSorter}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.fullwindow.FullWindowExplain
import org.apache.spark.sql.types.StructType

/**
 * Sorts each partition with Spark's spilling sorter (UnsafeExternalRowSorter): records go into
 * memory pages, which spill to disk under memory pressure and are merged back when read.
 * No exchange: the child's partitioning is kept. Takes part in whole-stage code generation, so
 * the rows of the stage below are inserted without an iterator in between.
 *
 * With one key, or a first key that is not integral, the sorter is set up exactly as SortExec
 * sets it up. With two or more keys and an integral first key, its 64-bit prefix packs several
 * keys and the sorter may radix-sort by it (PackedSortPrefix, PackedRowSorter).
 */
case class FullWindowSortPartitionExec(sortOrder: Seq[SortOrder], child: SparkPlan)
  extends UnaryExecNode with CodegenSupport {

  override def nodeName: String = "FullWindowSortPartition"
  override def output: Seq[Attribute] = child.output
  override def outputOrdering: Seq[SortOrder] = sortOrder
  override def simpleString(maxFields: Int): String =
    FullWindowExplain.line(nodeName, maxFields, "order" -> sortOrder)
  override def outputPartitioning: Partitioning = child.outputPartitioning

  override lazy val metrics: Map[String, SQLMetric] = FullWindowMetrics.sort(sparkContext)

  private val radixSortEnabled = conf.enableRadixSort
  // Two or more keys with an integral first key: a prefix packed from several keys (see
  // PackedSortPrefix), which SortExec does not have. Otherwise exactly SortExec's prefix.
  private val packedPrefix = PackedSortPrefix.applies(sortOrder, conf)

  /** A new sorter for one partition; public because generated code calls it. */
  def newSorter(): FullWindowRowSorter =
    RowSorters.create(sortOrder, output, schema, radixSortEnabled, packedPrefix, recordAfterOutput)

  /** What a packed sorter's output adds once read: sorting its runs of equal prefixes. */
  private def recordAfterOutput(sortNanos: Long, peakMemory: Long, spilled: Long): Unit = {
    longMetric("sortTime") += sortNanos / 1000000
    longMetric("peakMemory") += peakMemory
    longMetric("spillSize") += spilled
  }

  /** Sorts what was inserted and records the metrics; public because generated code calls it. */
  def sortAndRecord(sorter: FullWindowRowSorter, spilledBefore: Long, rows: Long): Iterator[InternalRow] = {
    val sorted = sorter.sort()
    val taskMetrics = TaskContext.get().taskMetrics()
    longMetric("numInputRows") += rows
    longMetric("numOutputRows") += rows
    longMetric("sortTime") += sorter.getSortTimeNanos / 1000000
    longMetric("peakMemory") += sorter.getPeakMemoryUsage
    longMetric("spillSize") += taskMetrics.memoryBytesSpilled - spilledBefore
    taskMetrics.incPeakExecutionMemory(sorter.getPeakMemoryUsage)
    sorted
  }

  // Tasks update the metrics through this exec (sortAndRecord), so they must exist before it is
  // serialized: the driver creates them here (nothing else does on every line, e.g. Spark 4.0).
  override protected def doExecute(): RDD[InternalRow] = {
    metrics
    child.execute().mapPartitionsInternal(sortPartition)
  }

  private def sortPartition(rows: Iterator[InternalRow]): Iterator[InternalRow] = {
    val sorter = newSorter()
    val spilledBefore = TaskContext.get().taskMetrics().memoryBytesSpilled
    var n = 0L
    while (rows.hasNext) {
      sorter.insertRow(rows.next().asInstanceOf[UnsafeRow])
      n += 1
    }
    sortAndRecord(sorter, spilledBefore, n)
  }

  // ---- whole-stage code generation: the child's rows are inserted as they are produced ----

  override def usedInputs: AttributeSet = AttributeSet.empty
  override def inputRDDs(): Seq[RDD[InternalRow]] = child.asInstanceOf[CodegenSupport].inputRDDs()
  override def needCopyResult: Boolean = false // rows come out of the sorter's own pages
  override def needStopCheck: Boolean = false  // the whole input is read before any output

  private var sorterTerm: String = _
  private var countTerm: String = _

  override protected def doProduce(ctx: CodegenContext): String = {
    metrics  // see doExecute
    val self = ctx.addReferenceObj("fwSortPlan", this)
    sorterTerm = ctx.addMutableState(classOf[FullWindowRowSorter].getName, "fwSorter",
      v => s"$v = $self.newSorter();", forceInline = true)
    countTerm = ctx.addMutableState("long", "fwRowsIn", v => s"$v = 0L;", forceInline = true)
    val done = ctx.addMutableState("boolean", "fwSorted", v => s"$v = false;", forceInline = true)
    val sortedIter = ctx.addMutableState("scala.collection.Iterator<InternalRow>", "fwSortedIter",
      forceInline = true)
    val fill = ctx.freshName("fwFillSorter")
    val fillFunc = ctx.addNewFunction(fill,
      s"""private void $fill() throws java.io.IOException {
         |  ${child.asInstanceOf[CodegenSupport].produce(ctx, this)}
         |}""".stripMargin)
    val row = ctx.freshName("fwRow")
    s"""if (!$done) {
       |  long spilledBefore = org.apache.spark.TaskContext.get().taskMetrics().memoryBytesSpilled();
       |  $fillFunc();
       |  $sortedIter = $self.sortAndRecord($sorterTerm, spilledBefore, $countTerm);
       |  $done = true;
       |}
       |while ($sortedIter.hasNext()) {
       |  UnsafeRow $row = (UnsafeRow) $sortedIter.next();
       |  ${consume(ctx, null, row)}
       |  if (shouldStop()) return;
       |}""".stripMargin
  }

  override def doConsume(ctx: CodegenContext, input: Seq[ExprCode], row: ExprCode): String =
    s"""${row.code}
       |$sorterTerm.insertRow((UnsafeRow) ${row.value});
       |$countTerm++;""".stripMargin

  override protected def withNewChildInternal(newChild: SparkPlan): FullWindowSortPartitionExec =
    copy(child = newChild)
}

/** The row sorters of sortPartition, also the columnar sort's fallback. */
object RowSorters {
  /**
   * A new sorter for one partition by `sortOrder` over rows of `output`: a packed prefix
   * (PackedSortPrefix) when `packedPrefix`, else exactly SortExec's sorter. `recordAfterOutput`
   * gets what a packed sorter adds once read (sort nanos, peak memory, spilled bytes).
   */
  def create(sortOrder: Seq[SortOrder], output: Seq[Attribute], schema: StructType,
      radixSortEnabled: Boolean, packedPrefix: Boolean,
      recordAfterOutput: (Long, Long, Long) => Unit): FullWindowRowSorter = {
    val pageSize = SparkEnv.get.memoryManager.pageSizeBytes
    if (packedPrefix) {
      return new PackedRowSorter(sortOrder.map(BindReferences.bindReference(_, output)),
        () => RowOrdering.create(sortOrder, output), schema, pageSize, radixSortEnabled,
        recordAfterOutput)
    }
    val ordering = RowOrdering.create(sortOrder, output)
    val first = BindReferences.bindReference(sortOrder.head, output)
    val prefix = SortPrefix(first)
    val prefixProjection = UnsafeProjection.create(prefix :: Nil)
    val computer = new UnsafeExternalRowSorter.PrefixComputer {
      private val out = new UnsafeExternalRowSorter.PrefixComputer.Prefix
      override def computePrefix(row: InternalRow): UnsafeExternalRowSorter.PrefixComputer.Prefix = {
        val p = prefixProjection(row)
        out.isNull = p.isNullAt(0)
        out.value = if (out.isNull) prefix.nullValue else p.getLong(0)
        out
      }
    }
    // Radix sort only when the 64-bit prefix of a single key decides the order on its own.
    val radix = radixSortEnabled && sortOrder.size == 1 && SortPrefixUtils.canSortFullyWithPrefix(first)
    new SparkPrefixRowSorter(UnsafeExternalRowSorter.create(schema, ordering,
      SortPrefixUtils.getPrefixComparator(first), computer, pageSize, radix))
  }
}

/** One partition's sorter, as doExecute and the generated code use it. */
abstract class FullWindowRowSorter {
  def insertRow(row: UnsafeRow): Unit
  def sort(): Iterator[InternalRow]
  def getSortTimeNanos: Long
  def getPeakMemoryUsage: Long
}

/** Spark's sorter with SortExec's prefix (the first key's). */
final class SparkPrefixRowSorter(sorter: UnsafeExternalRowSorter) extends FullWindowRowSorter {
  override def insertRow(row: UnsafeRow): Unit = sorter.insertRow(row)
  override def sort(): Iterator[InternalRow] = sorter.sort()
  override def getSortTimeNanos: Long = sorter.getSortTimeNanos
  override def getPeakMemoryUsage: Long = sorter.getPeakMemoryUsage
}
