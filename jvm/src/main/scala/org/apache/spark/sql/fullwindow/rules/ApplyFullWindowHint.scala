package org.apache.spark.sql.fullwindow.rules

import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, Sort}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.fullwindow.logical.{FullWindowHint, FullWindowSortPartition}

/**
 * Rewrites the operation a FULL_WINDOW_PARTITION hint belongs to, once it is resolved:
 * an ORDER BY over the hinted query becomes a per-partition sort (no range exchange).
 */
object ApplyFullWindowHint extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = plan.resolveOperatorsUp {
    case s: Sort if s.resolved && s.child.isInstanceOf[FullWindowHint] =>
      FullWindowSortPartition(s.order, s.child.asInstanceOf[FullWindowHint].child)
  }
}
