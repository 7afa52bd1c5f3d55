package org.apache.spark.sql.fullwindow.rules

import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, Filter, LogicalPlan, Project, Sort}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.fullwindow.FullWindowAggregates
import org.apache.spark.sql.fullwindow.logical.{FullWindowHint, FullWindowPartitionKey, FullWindowSortPartition}

/**
 * Rewrites the operations a FULL_WINDOW_PARTITION hint belongs to, once they are resolved:
 *  - the query's aggregate (reached through its HAVING filter or projection) is made
 *    per-partition: grouped by the partition key as well, so one row per (key and) partition;
 *  - an ORDER BY over the hinted query becomes a per-partition sort (no range exchange).
 * The marker stays in place until analysis ends (see DropUnusedFullWindowHint).
 */
object ApplyFullWindowHint extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = plan.resolveOperatorsUp {
    case h @ FullWindowHint(child) if child.resolved && hasPlainAggregate(child) =>
      h.copy(child = perPartition(child))
    // the marker stays over the sort it made, for recovery (DropUnusedFullWindowHint)
    case s: Sort if s.resolved && s.child.isInstanceOf[FullWindowHint] =>
      FullWindowHint(FullWindowSortPartition(s.order, s.child.asInstanceOf[FullWindowHint].child))
  }

  private def hasPlainAggregate(plan: LogicalPlan): Boolean = plan match {
    case a: Aggregate => !FullWindowAggregates.isFullWindow(a)
    case p: Project => hasPlainAggregate(p.child)
    case f: Filter => hasPlainAggregate(f.child)
    case _ => false
  }

  private def perPartition(plan: LogicalPlan): LogicalPlan = plan match {
    case a: Aggregate => a.copy(groupingExpressions = a.groupingExpressions :+ FullWindowPartitionKey())
    case p: Project => p.copy(child = perPartition(p.child))
    case f: Filter => f.copy(child = perPartition(f.child))
    case other => other
  }
}
