package org.apache.spark.sql.fullwindow.rules

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.fullwindow.logical.FullWindowHint

/** A FULL_WINDOW_PARTITION hint with nothing to apply to (no ORDER BY, no aggregate) is a no-op. */
object DropUnusedFullWindowHint extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = plan.resolveOperatorsUp {
    case FullWindowHint(child) => child
  }
}
