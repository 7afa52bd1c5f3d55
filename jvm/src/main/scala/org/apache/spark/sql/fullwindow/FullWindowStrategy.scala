package org.apache.spark.sql.fullwindow

import org.apache.spark.sql.catalyst.expressions.{Alias, AttributeSet, GreaterThan, Literal, NamedExpression}
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, Complete, Count}
import org.apache.spark.sql.catalyst.optimizer.NormalizeFloatingNumbers
import org.apache.spark.sql.catalyst.planning.PhysicalAggregation
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, LogicalPlan}
import org.apache.spark.sql.execution.{FilterExec, SparkPlan, SparkStrategy}
import org.apache.spark.sql.execution.aggregate.{AggUtils, HashAggregateExec}
import org.apache.spark.sql.catalyst.expressions.{Ascending, SortOrder}
import org.apache.spark.sql.fullwindow.execution.{FullWindowAggregateExec, FullWindowAggregateOutputExec, FullWindowCombineInputExec, FullWindowKeyedAggregateExec, FullWindowCommitExec, FullWindowRecoveredScanExec, FullWindowCoGroupExec, FullWindowKeyedPythonExec, FullWindowPythonPartitionExec, KeyedPython, FullWindowSortPartitionExec}
import org.apache.spark.sql.fullwindow.logical.{FullWindowCoGroup, FullWindowCombineKey, FullWindowCommit, FullWindowRecoveredScan, FullWindowKeyedPythonPartition, FullWindowPartitionKey, FullWindowPythonPartition, FullWindowSortPartition, KeyedRunningPython}
import org.apache.spark.sql.fullwindow.shims.SparkShims
import org.apache.spark.sql.internal.SQLConf

/**
 * Plans fullwindow's logical nodes. The non-keyed ones ask for no exchange; the keyed ones ask
 * for their input clustered by key (EnsureRequirements adds the exchange and the sorts).
 */
object FullWindowStrategy extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case FullWindowSortPartition(order, child) =>
      FullWindowSortPartitionExec(order, planLater(child)) :: Nil

    case FullWindowPythonPartition(operation, func, pandas, output, child) =>
      FullWindowPythonPartitionExec(operation, func, pandas, output, planLater(child)) :: Nil

    case FullWindowKeyedPythonPartition(operation, keys, func, pandas, output, child) =>
      val order = keys.map(SortOrder(_, Ascending))
      FullWindowKeyedPythonExec("FullWindowKeyed" + operation.capitalize, keys, order, func,
        pandas, output, planLater(child),
        KeyedPython.columnarSort(order, child.output, pandas, SQLConf.get)) :: Nil

    case KeyedRunningPython(operation, keys, order, func, output, child) =>
      FullWindowKeyedPythonExec("KeyedRunning" + operation.capitalize, keys, order, func,
        pandas = false, output, planLater(child),
        KeyedPython.columnarSort(order, child.output, pandas = false, SQLConf.get)) :: Nil

    case FullWindowCoGroup(leftKeys, rightKeys, func, pandas, output, left, right) =>
      FullWindowCoGroupExec(leftKeys, rightKeys, func, pandas, output, planLater(left),
        planLater(right)) :: Nil

    // A keyed aggregate(*columns) that combines: planned as Spark plans groupBy(keys).agg(...)
    // (partial aggregation, exchange by the keys, final aggregation), the marker dropped
    case a: Aggregate if FullWindowAggregates.isKeyedCombine(a) => a match {
      case PhysicalAggregation(grouping, aggregates, results, child) =>
        val keys = grouping.filterNot(FullWindowCombineKey.contains)
        // keyedAggregate leaves the marker out of the output; a plan that still outputs it
        // keeps grouping by it (a constant: it splits no group)
        val used = AttributeSet(results.flatMap(_.references))
        val groupBy = grouping.filter(g => !FullWindowCombineKey.contains(g) || used.contains(g.toAttribute))
        // what Spark's Aggregation strategy does before AggUtils: group by normalized floating
        // point keys (-0.0 and 0.0, and all NaNs, are one group), keeping each key's id
        val normalized = groupBy.map { k =>
          NormalizeFloatingNumbers.normalize(k) match {
            case n: NamedExpression => n
            case other => Alias(other, k.name)(exprId = k.exprId)
          }
        }
        val input = FullWindowCombineInputExec(keys.map(_.toAttribute), planLater(child))
        val combined = AggUtils.planAggregateWithoutDistinct(normalized, aggregates, results, input)
        combined.map(FullWindowKeyedAggregateExec(keys.map(_.toAttribute), aggregates, _)).toList
      case _ => Nil
    }

    // An aggregate grouped by the partition key: one window per partition (per user key).
    case a: Aggregate if FullWindowAggregates.isPerPartition(a) => a match {
      case PhysicalAggregation(grouping, aggregates, results, child) =>
        val complete = aggregates.map(_.copy(mode = Complete))
        val userKeys = grouping.filterNot(FullWindowPartitionKey.contains)
        val resultsUseOnlyAggregates = results.forall(
          _.references.subsetOf(AttributeSet(complete.map(_.resultAttribute))))
        val hashable = SparkShims.supportsHashAggregate(
          complete.flatMap(_.aggregateFunction.aggBufferAttributes))
        if (userKeys.isEmpty && resultsUseOnlyAggregates && hashable) {
          // The whole partition is one group: Spark's code-generated hash aggregate with no keys
          // and no required distribution, plus a row count that drops empty partitions.
          val rows = AggregateExpression(Count(Literal(1)), Complete, isDistinct = false)
          val all = complete :+ rows
          val rowCount = Alias(rows.resultAttribute, "__fullwindow_rows")()
          val hash = HashAggregateExec(None, isStreaming = false, None, Nil, all,
            all.map(_.resultAttribute), 0, results :+ rowCount, planLater(child))
          FullWindowAggregateOutputExec(results.map(_.toAttribute), complete, rowCount.toAttribute,
            FilterExec(GreaterThan(rowCount.toAttribute, Literal(0L)), hash)) :: Nil
        } else {
          FullWindowAggregateExec(grouping, complete, complete.map(_.resultAttribute), results,
            planLater(child)) :: Nil
        }
      case _ => Nil
    }

    // Recovery (only ever in a plan when spark.fullwindow.recovery.enabled is true)
    case FullWindowCommit(fingerprint, operation, dir, recorded, layout, recovered, child,
        commitInputs, inputs) =>
      FullWindowCommitExec(fingerprint, operation, dir, recorded, layout, recovered,
        planLater(child), commitInputs, inputs) :: Nil

    case FullWindowRecoveredScan(fingerprint, operation, paths, _, output) =>
      FullWindowRecoveredScanExec(fingerprint, operation, paths, output) :: Nil

    case _ => Nil
  }
}

object FullWindowAggregates {
  /** True for an Aggregate that fullwindow made per-partition (grouped by the partition key). */
  def isPerPartition(a: Aggregate): Boolean =
    a.groupingExpressions.exists(FullWindowPartitionKey.isKey)

  /** True for a keyed aggregate(*columns) that combines before the exchange. */
  def isKeyedCombine(a: Aggregate): Boolean =
    a.groupingExpressions.exists(FullWindowCombineKey.isKey)

  /** True for either kind of full-window aggregate. */
  def isFullWindow(a: Aggregate): Boolean = isPerPartition(a) || isKeyedCombine(a)
}
