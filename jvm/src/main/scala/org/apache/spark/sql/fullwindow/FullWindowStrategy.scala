package org.apache.spark.sql.fullwindow

import org.apache.spark.sql.catalyst.expressions.aggregate.Complete
import org.apache.spark.sql.catalyst.planning.PhysicalAggregation
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, LogicalPlan}
import org.apache.spark.sql.execution.{SparkPlan, SparkStrategy}
import org.apache.spark.sql.fullwindow.execution.{FullWindowAggregateExec, FullWindowPythonPartitionExec, FullWindowSortPartitionExec}
import org.apache.spark.sql.fullwindow.logical.{FullWindowPartitionKey, FullWindowPythonPartition, FullWindowSortPartition}

/** Plans fullwindow's logical nodes. None of them asks for an exchange of its own. */
object FullWindowStrategy extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case FullWindowSortPartition(order, child) =>
      FullWindowSortPartitionExec(order, planLater(child)) :: Nil

    case FullWindowPythonPartition(operation, func, output, child) =>
      FullWindowPythonPartitionExec(operation, func, output, planLater(child)) :: Nil

    // An aggregate grouped by the partition key: one window per partition (per user key).
    case a: Aggregate if FullWindowAggregates.isPerPartition(a) => a match {
      case PhysicalAggregation(grouping, aggregates, results, child) =>
        val complete = aggregates.map(_.copy(mode = Complete))
        FullWindowAggregateExec(grouping, complete, complete.map(_.resultAttribute), results,
          planLater(child)) :: Nil
      case _ => Nil
    }

    case _ => Nil
  }
}

object FullWindowAggregates {
  /** True for an Aggregate that fullwindow made per-partition (grouped by the partition key). */
  def isPerPartition(a: Aggregate): Boolean =
    a.groupingExpressions.exists(FullWindowPartitionKey.isKey)
}
