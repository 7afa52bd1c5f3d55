package org.apache.spark.sql.fullwindow.logical

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet, Expression}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}
import org.apache.spark.sql.fullwindow.FullWindowExplain

/**
 * A Python function called once per partition with the partition's records as Arrow batches,
 * streaming, returning Arrow batches of `output`. The non-keyed Python operations (mapPartition,
 * mapPartitionInArrow, aggregate with an AggregateFunction, reduce, process) are all this node,
 * with a different Python wrapper; `operationName` says which one it is.
 *
 * @param func a PythonUDF of eval type SQL_MAP_ARROW_ITER_UDF over all of `child`'s columns
 * @param pandas whether `func` takes pandas frames (a pandas form: see
 *               [[org.apache.spark.sql.fullwindow.execution.PythonArrowEval.pandasFrameRows]])
 */
case class FullWindowPythonPartition(
    operationName: String,
    func: Expression,
    pandas: Boolean,
    output: Seq[Attribute],
    child: LogicalPlan) extends UnaryNode with FullWindowOperator {

  override def producedAttributes: AttributeSet = AttributeSet(output)
  override lazy val references: AttributeSet = child.outputSet

  override def nodeName: String = "FullWindow" + operationName.capitalize

  /** The map side of a keyed reduce or aggregate that combines (`keyedReduceCombine`) is named
   *  for the keyed operation. */
  override def userOperation: String = operationName match {
    case FullWindowPythonPartition.CombineStep(op) => s"keyed ${op.head.toLower}${op.tail}"
    case other => other
  }
  override def simpleString(maxFields: Int): String =
    FullWindowExplain.line(nodeName, maxFields, "function" -> func, "output" -> output)

  override protected def withNewChildInternal(newChild: LogicalPlan): FullWindowPythonPartition =
    copy(child = newChild)
}

object FullWindowPythonPartition {
  private val CombineStep = "keyed([A-Z][A-Za-z]*)Combine".r
}
