package org.apache.spark.sql.fullwindow.execution

import org.apache.spark.{JobArtifactSet, TaskContext}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Ascending, Attribute, AttributeSet, BaseOrdering, Expression, Literal, RowOrdering, SortOrder, UnsafeProjection}
import org.apache.spark.sql.catalyst.plans.physical.{ClusteredDistribution, Distribution, Partitioning, UnknownPartitioning}
import org.apache.spark.sql.execution.{BinaryExecNode, SparkPlan}
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.execution.python.PythonSQLMetrics
import org.apache.spark.sql.fullwindow.FullWindowExplain
import org.apache.spark.sql.types.{IntegerType, StructField, StructType}

/**
 * The two-sorter coGroup of FLIP-331. Each input is asked to be clustered by its own keys (the
 * two co-partitioned: EnsureRequirements gives both sides the same hash partitioning) and sorted
 * by them with its own sorter. There is no tagged union before sorting: the two sorted streams
 * of a partition are merged by key here, into one stream of
 * `[side, key columns, left columns, right columns]` in which, for every key, the left records
 * come first and then the right ones (the other side's columns are null). That stream goes to
 * the Python worker through Spark's Arrow runner, which calls the user function once per key.
 */
case class FullWindowCoGroupExec(
    leftKeys: Seq[Attribute],
    rightKeys: Seq[Attribute],
    func: Expression,
    pandas: Boolean,
    output: Seq[Attribute],
    left: SparkPlan,
    right: SparkPlan) extends BinaryExecNode with PythonSQLMetrics {

  override def nodeName: String = "FullWindowCoGroup"
  override def producedAttributes: AttributeSet = AttributeSet(output)

  override def requiredChildDistribution: Seq[Distribution] =
    ClusteredDistribution(KeyedPython.distributionKeys(leftKeys)) ::
      ClusteredDistribution(KeyedPython.distributionKeys(rightKeys)) :: Nil

  override def requiredChildOrdering: Seq[Seq[SortOrder]] =
    leftKeys.map(SortOrder(_, Ascending)) :: rightKeys.map(SortOrder(_, Ascending)) :: Nil

  override def outputPartitioning: Partitioning =
    UnknownPartitioning(left.outputPartitioning.numPartitions)

  override def simpleString(maxFields: Int): String = FullWindowExplain.line(nodeName, maxFields,
    "leftKeys" -> leftKeys, "rightKeys" -> rightKeys, "function" -> func, "output" -> output)

  override lazy val metrics: Map[String, SQLMetric] =
    pythonMetrics ++ FullWindowMetrics.rows(sparkContext)

  private val jobArtifactUUID = JobArtifactSet.getCurrentJobArtifactState.map(_.uuid)

  /** The schema of the merged stream that reaches Python (positional names: sides may clash). */
  private def mergedSchema: StructType = StructType(
    StructField("__side", IntegerType, nullable = false) +:
      (leftKeys.zipWithIndex.map { case (k, i) => StructField(s"__key$i", k.dataType) } ++
        left.output.zipWithIndex.map { case (a, i) => StructField(s"__left$i", a.dataType) } ++
        right.output.zipWithIndex.map { case (a, i) => StructField(s"__right$i", a.dataType) }))

  override protected def doExecute(): RDD[InternalRow] = {
    val python = PythonArrowEval(func, output, mergedSchema, conf, pythonMetrics, jobArtifactUUID,
      pandas)
    val rowsIn = longMetric("numInputRows")
    val rowsOut = longMetric("numOutputRows")
    val leftOut = left.output
    val rightOut = right.output
    val lKeys = leftKeys
    val rKeys = rightKeys
    left.execute().zipPartitions(right.execute()) { (l, r) =>
      val nullsFor = (attrs: Seq[Attribute]) => attrs.map(a => Literal(null, a.dataType))
      val merged = new MergeByKey(
        l, r,
        UnsafeProjection.create(lKeys, leftOut),
        UnsafeProjection.create(rKeys, rightOut),
        UnsafeProjection.create((Literal(0) +: lKeys) ++ leftOut ++ nullsFor(rightOut), leftOut),
        UnsafeProjection.create((Literal(1) +: rKeys) ++ nullsFor(leftOut) ++ rightOut, rightOut),
        RowOrdering.createNaturalAscendingOrdering(lKeys.map(_.dataType)),
        () => rowsIn += 1)
      python.eval(TaskContext.getPartitionId(), merged).map { row =>
        rowsOut += 1; row
      }
    }
  }

  override protected def withNewChildrenInternal(
      newLeft: SparkPlan, newRight: SparkPlan): FullWindowCoGroupExec =
    copy(left = newLeft, right = newRight)
}

/**
 * Merges two partitions sorted ascending by key into one stream sorted by key, the left records
 * of a key before its right ones. Each side is read one record ahead; each record is projected
 * to the merged layout before its side moves on, so the sorters' reused rows are never kept.
 */
private class MergeByKey(
    left: Iterator[InternalRow],
    right: Iterator[InternalRow],
    leftKey: UnsafeProjection,
    rightKey: UnsafeProjection,
    leftOut: UnsafeProjection,
    rightOut: UnsafeProjection,
    keyOrdering: BaseOrdering,
    onInput: () => Unit) extends Iterator[InternalRow] {

  private var leftRow: InternalRow = _
  private var leftK: InternalRow = _
  private var rightRow: InternalRow = _
  private var rightK: InternalRow = _
  private var started = false

  private def advanceLeft(): Unit = {
    if (left.hasNext) {
      leftRow = left.next(); leftK = leftKey(leftRow); onInput()
    } else {
      leftRow = null
    }
  }

  private def advanceRight(): Unit = {
    if (right.hasNext) {
      rightRow = right.next(); rightK = rightKey(rightRow); onInput()
    } else {
      rightRow = null
    }
  }

  private def start(): Unit = if (!started) {
    started = true
    advanceLeft()
    advanceRight()
  }

  override def hasNext: Boolean = {
    start()
    leftRow != null || rightRow != null
  }

  override def next(): InternalRow = {
    if (!hasNext) throw new NoSuchElementException("end of the merged coGroup input")
    if (rightRow == null || (leftRow != null && keyOrdering.compare(leftK, rightK) <= 0)) {
      val out = leftOut(leftRow)
      advanceLeft()
      out
    } else {
      val out = rightOut(rightRow)
      advanceRight()
      out
    }
  }
}
