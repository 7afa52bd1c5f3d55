package org.apache.spark.sql.fullwindow.logical

import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}

/**
 * Where a query said `/*+ FULL_WINDOW_PARTITION */`. A resolved pass-through node: it lets the
 * query around it resolve, then the ORDER BY or aggregate it belongs to is rewritten into a
 * full-window operation and the marker is removed.
 */
case class FullWindowHint(child: LogicalPlan) extends UnaryNode {
  override def output: Seq[Attribute] = child.output
  override protected def withNewChildInternal(newChild: LogicalPlan): FullWindowHint =
    copy(child = newChild)
}

object FullWindowHint {
  val Name = "FULL_WINDOW_PARTITION"
}
