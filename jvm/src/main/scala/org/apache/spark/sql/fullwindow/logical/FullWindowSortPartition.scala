package org.apache.spark.sql.fullwindow.logical

import org.apache.spark.sql.catalyst.expressions.{Attribute, SortOrder}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}
import org.apache.spark.sql.fullwindow.FullWindowExplain

/**
 * Sorts the records of each partition by `order`: one full window per partition, no exchange.
 * The partition count and partitioning of `child` are kept.
 */
case class FullWindowSortPartition(order: Seq[SortOrder], child: LogicalPlan)
  extends UnaryNode with FullWindowOperator {

  override def operationName: String = "sortPartition"
  override def output: Seq[Attribute] = child.output
  override def maxRows: Option[Long] = child.maxRows
  override def maxRowsPerPartition: Option[Long] = child.maxRowsPerPartition
  override def simpleString(maxFields: Int): String =
    FullWindowExplain.line(nodeName, maxFields, "order" -> order)

  override protected def withNewChildInternal(newChild: LogicalPlan): FullWindowSortPartition =
    copy(child = newChild)
}
