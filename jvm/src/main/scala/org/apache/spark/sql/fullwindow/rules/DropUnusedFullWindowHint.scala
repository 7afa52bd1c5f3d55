package org.apache.spark.sql.fullwindow.rules

import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan, Project}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.fullwindow.FullWindowAggregates
import org.apache.spark.sql.fullwindow.logical.{FullWindowHint, FullWindowSortPartition}
import org.apache.spark.sql.fullwindow.recovery.HintRecovery

/**
 * Removes the FULL_WINDOW_PARTITION markers once analysis is done. A marker with nothing to
 * apply to (no ORDER BY, no aggregate) is a no-op; one over the full-window operation it made
 * (a per-partition sort or aggregate) makes that operation recoverable when recovery is on.
 */
object DropUnusedFullWindowHint extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = plan.resolveOperatorsUp {
    case FullWindowHint(child) => operationOf(child) match {
      case Some(operation) => HintRecovery.recoverable(operation, child)
      case None => child
    }
  }

  private def operationOf(plan: LogicalPlan): Option[String] = plan match {
    case _: FullWindowSortPartition => Some("sql sortPartition")
    case a: org.apache.spark.sql.catalyst.plans.logical.Aggregate
        if FullWindowAggregates.isPerPartition(a) => Some("sql aggregate")
    case p: Project => operationOf(p.child)
    case f: Filter => operationOf(f.child)
    case _ => None
  }
}
