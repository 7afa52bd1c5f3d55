package org.apache.spark.sql.fullwindow.logical

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet, Expression, SortOrder}
import org.apache.spark.sql.catalyst.plans.logical.{BinaryNode, LogicalPlan, UnaryNode}
import org.apache.spark.sql.fullwindow.FullWindowExplain

/**
 * A Python function over each key's full window: the input is clustered by `keys` (hash
 * partitioned, as a Flink KeyedStream) and sorted by them within each partition, and the Python
 * side hands each key's run of records to the user function as a lazy iterator. The keyed
 * Python operations (mapPartition, mapPartitionInArrow, aggregate with an AggregateFunction,
 * reduce, process, and their EndOfStreamWindows spellings) are all this node.
 *
 * @param operation the user-facing operation ("mapPartition", "apply", ...)
 * @param keys top-level columns of `child`
 * @param func a PythonUDF of eval type SQL_MAP_ARROW_ITER_UDF (its children are not used: the
 *             whole input row goes to Python)
 * @param pandas whether `func` takes pandas frames (a pandas form)
 */
case class FullWindowKeyedPythonPartition(
    operation: String,
    keys: Seq[Attribute],
    func: Expression,
    pandas: Boolean,
    output: Seq[Attribute],
    child: LogicalPlan) extends UnaryNode with FullWindowOperator {

  override def operationName: String = s"keyed $operation"
  override def producedAttributes: AttributeSet = AttributeSet(output)
  override lazy val references: AttributeSet = child.outputSet

  override def nodeName: String = "FullWindowKeyed" + operation.capitalize
  override def simpleString(maxFields: Int): String = FullWindowExplain.line(nodeName, maxFields,
    "keys" -> keys, "function" -> func, "output" -> output)

  override protected def withNewChildInternal(newChild: LogicalPlan): FullWindowKeyedPythonPartition =
    copy(child = newChild)
}

/**
 * The running (upsert) form of a keyed reduce, for STREAMING runtime mode on a bounded input
 * (FLIP-134): one output row per input record, in input order within each key. It is not a
 * full window (it emits as it goes), so the runtime-mode check lets it run in STREAMING mode;
 * it still refuses an unbounded input.
 *
 * @param order the keys, then the hidden input-position column: the order records reach Python
 */
case class KeyedRunningPython(
    operation: String,
    keys: Seq[Attribute],
    order: Seq[SortOrder],
    func: Expression,
    output: Seq[Attribute],
    child: LogicalPlan) extends UnaryNode {

  override def producedAttributes: AttributeSet = AttributeSet(output)
  override lazy val references: AttributeSet = child.outputSet

  override def nodeName: String = "KeyedRunning" + operation.capitalize
  override def simpleString(maxFields: Int): String = FullWindowExplain.line(nodeName, maxFields,
    "keys" -> keys, "order" -> order, "function" -> func, "output" -> output)

  override protected def withNewChildInternal(newChild: LogicalPlan): KeyedRunningPython =
    copy(child = newChild)
}

/**
 * Two keyed inputs grouped together by key (FLIP-331's coGroup over EndOfStreamWindows): each
 * input is clustered by its own keys and sorted by them with its own sorter (no tagged union of
 * the two), the two sorted streams are merged by key, and a Python function is called once per
 * key present on either side, at end of input. `pandas`: the function takes pandas frames
 * (coGroup's applyInPandas).
 */
case class FullWindowCoGroup(
    leftKeys: Seq[Attribute],
    rightKeys: Seq[Attribute],
    func: Expression,
    pandas: Boolean,
    output: Seq[Attribute],
    left: LogicalPlan,
    right: LogicalPlan) extends BinaryNode with FullWindowOperator {

  override def operationName: String = "coGroup"
  override def producedAttributes: AttributeSet = AttributeSet(output)
  override lazy val references: AttributeSet = left.outputSet ++ right.outputSet

  override def simpleString(maxFields: Int): String = FullWindowExplain.line(nodeName, maxFields,
    "leftKeys" -> leftKeys, "rightKeys" -> rightKeys, "function" -> func, "output" -> output)

  override protected def withNewChildrenInternal(
      newLeft: LogicalPlan, newRight: LogicalPlan): FullWindowCoGroup =
    copy(left = newLeft, right = newRight)
}
