package org.apache.spark.sql.fullwindow.execution

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Ascending, Attribute, AttributeSet, Expression, MutableProjection, NamedExpression, SortOrder}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.fullwindow.logical.FullWindowPartitionKey
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.fullwindow.shims.SparkShims
import org.apache.spark.sql.fullwindow.FullWindowExplain

/**
 * Aggregates each partition on its own, with Spark's aggregation iterator (every built-in
 * aggregate works, declarative or imperative such as collect_list): one output row per group per
 * non-empty partition, and no exchange. With grouping keys, the input is asked to be sorted by
 * them within each partition (Spark adds its spilling sort), so memory stays bounded; without
 * keys, the whole partition is one group and nothing is sorted.
 *
 * @param groupingExpressions the user's keys and the [[FullWindowPartitionKey]]
 * @param aggregateExpressions in Complete mode
 */
case class FullWindowAggregateExec(
    groupingExpressions: Seq[NamedExpression],
    aggregateExpressions: Seq[AggregateExpression],
    aggregateAttributes: Seq[Attribute],
    resultExpressions: Seq[NamedExpression],
    child: SparkPlan) extends UnaryExecNode {

  override def nodeName: String = "FullWindowAggregate"
  override def output: Seq[Attribute] = resultExpressions.map(_.toAttribute)
  override def producedAttributes: AttributeSet =
    AttributeSet(aggregateAttributes) ++ AttributeSet(resultExpressions.map(_.toAttribute)) --
      AttributeSet(groupingExpressions.map(_.toAttribute))
  override def outputPartitioning: Partitioning = child.outputPartitioning
  // like SortAggregate's line; the partition key (the same in every row) is said, not listed
  override def simpleString(maxFields: Int): String = FullWindowExplain.line(nodeName, maxFields,
    "perPartitionKeys" -> groupingExpressions.filterNot(FullWindowPartitionKey.contains),
    "functions" -> aggregateExpressions, "output" -> output)

  // The partition key is the same for every row of a partition: only the user's keys need order.
  override def requiredChildOrdering: Seq[Seq[SortOrder]] =
    Seq(groupingExpressions.filterNot(FullWindowPartitionKey.contains).map(e => SortOrder(e, Ascending)))

  override lazy val metrics: Map[String, SQLMetric] = FullWindowMetrics.rows(sparkContext) +
    ("aggTime" -> SQLMetrics.createTimingMetric(sparkContext, "time in aggregation"))

  override protected def doExecute(): RDD[InternalRow] = {
    val rowsIn = longMetric("numInputRows")
    val rowsOut = longMetric("numOutputRows")
    val aggTime = longMetric("aggTime")
    ChildRows(child).mapPartitionsWithIndexInternal { (index, rows) =>
      if (!rows.hasNext) {
        Iterator.empty // an empty partition has no window, hence no row
      } else {
        val counted = rows.map { r => rowsIn += 1; r }
        SparkShims.sortAggregationIterator(index, groupingExpressions, child.output, counted,
          aggregateExpressions, aggregateAttributes, resultExpressions, rowsOut, aggTime)
      }
    }
  }

  override protected def withNewChildInternal(newChild: SparkPlan): FullWindowAggregateExec =
    copy(child = newChild)
}
