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
import org.apache.spark.sql.types.{DataType, IntegerType, StructField, StructType}

/**
 * The two-sorter coGroup of FLIP-331. Each input is asked to be clustered by its own keys (the
 * two co-partitioned: EnsureRequirements gives both sides the same hash partitioning) and sorted
 * by them with its own sorter. There is no tagged union before sorting: the two sorted streams
 * of a partition are merged by key here, into one stream in the [[CoGroupLayout]] (a side
 * column, then columns the two sides share where their types allow) in which, for every key, the
 * left records come first and then the right ones. That stream goes to the Python worker
 * through Spark's Arrow runner, which calls the user function once per key.
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

  private def layout: CoGroupLayout = CoGroupLayout(leftKeys, rightKeys, left.output, right.output)

  override protected def doExecute(): RDD[InternalRow] = {
    val merged = layout
    val python = PythonArrowEval(func, output, merged.schema, conf, pythonMetrics, jobArtifactUUID,
      pandas)
    val rowsIn = longMetric("numInputRows")
    val rowsOut = longMetric("numOutputRows")
    val leftOut = left.output
    val rightOut = right.output
    val lKeys = leftKeys
    val rKeys = rightKeys
    ChildRows(left).zipPartitions(ChildRows(right)) { (l, r) =>
      val merge = new MergeByKey(
        l, r,
        UnsafeProjection.create(lKeys, leftOut),
        UnsafeProjection.create(rKeys, rightOut),
        UnsafeProjection.create(merged.leftColumns, leftOut),
        UnsafeProjection.create(merged.rightColumns, rightOut),
        RowOrdering.createNaturalAscendingOrdering(lKeys.map(_.dataType)),
        () => rowsIn += 1)
      python.eval(TaskContext.getPartitionId(), merge).map { row =>
        rowsOut += 1; row
      }
    }
  }

  override protected def withNewChildrenInternal(
      newLeft: SparkPlan, newRight: SparkPlan): FullWindowCoGroupExec =
    copy(left = newLeft, right = newRight)
}

/**
 * The columns of coGroup's merged stream. Column 0 is the side (0 left, 1 right), columns
 * 1..n the keys; every other column of a side gets a column of its own unless the other side
 * has a column of the same type not yet shared, which it then shares: a record fills only its
 * own side's columns, so with sides of alike types (the common case) most of a stream's cells
 * hold values rather than the other side's nulls. A side's key columns are read from the key
 * columns. Each column's name says whose it is (`K0`, `L2`, `R1`, comma-separated), so the
 * Python worker rebuilds each side from the names alone and this is the one place the layout
 * is decided.
 */
private[execution] final case class CoGroupLayout(
    schema: StructType,
    leftColumns: Seq[Expression],
    rightColumns: Seq[Expression])

private[execution] object CoGroupLayout {
  private final class Column(val dataType: DataType, var source: Seq[String],
      var left: Option[Expression], var right: Option[Expression])

  def apply(
      leftKeys: Seq[Attribute],
      rightKeys: Seq[Attribute],
      leftOut: Seq[Attribute],
      rightOut: Seq[Attribute]): CoGroupLayout = {
    val columns = scala.collection.mutable.ArrayBuffer.empty[Column]
    leftKeys.zip(rightKeys).zipWithIndex.foreach { case ((l, r), i) =>
      columns += new Column(l.dataType, Seq(s"K$i"), Some(l), Some(r))
    }
    val nkeys = columns.length
    def place(attrs: Seq[Attribute], keys: Seq[Attribute], tag: String, isLeft: Boolean): Unit =
      attrs.zipWithIndex.foreach { case (a, j) =>
        val name = s"$tag$j"
        val key = keys.indexWhere(_.exprId == a.exprId)
        val shared = if (key >= 0) Some(columns(key)) else if (isLeft) None else {
          columns.drop(nkeys).find(c => c.right.isEmpty && c.dataType == a.dataType)
        }
        shared match {
          case Some(c) =>
            c.source :+= name
            if (!isLeft && c.right.isEmpty) c.right = Some(a)
          case None =>
            columns += new Column(a.dataType, Seq(name),
              if (isLeft) Some(a) else None, if (isLeft) None else Some(a))
        }
      }
    place(leftOut, leftKeys, "L", isLeft = true)
    place(rightOut, rightKeys, "R", isLeft = false)
    val schema = StructType(StructField("__side", IntegerType, nullable = false) +:
      columns.map(c => StructField(c.source.mkString(","), c.dataType)).toSeq)
    def side(tag: Int, pick: Column => Option[Expression]): Seq[Expression] =
      Literal(tag) +: columns.map(c => pick(c).getOrElse(Literal(null, c.dataType))).toSeq
    CoGroupLayout(schema, side(0, _.left), side(1, _.right))
  }
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
