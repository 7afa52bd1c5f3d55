package org.apache.spark.sql.fullwindow.shims

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, MutableProjection, NamedExpression}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.execution.aggregate.SortBasedAggregationIterator
import org.apache.spark.sql.execution.metric.SQLMetric

/** Aggregation calls, up to Spark 4.1: the iterator keeps no time, `aggTime` stays 0. */
trait AggregationShims {
  /** Spark's sort-based aggregation iterator over one partition. */
  def sortAggregationIterator(
      partIndex: Int,
      groupingExpressions: Seq[NamedExpression],
      valueAttributes: Seq[Attribute],
      input: Iterator[InternalRow],
      aggregateExpressions: Seq[AggregateExpression],
      aggregateAttributes: Seq[Attribute],
      resultExpressions: Seq[NamedExpression],
      numOutputRows: SQLMetric,
      aggTime: SQLMetric): SortBasedAggregationIterator =
    new SortBasedAggregationIterator(partIndex, groupingExpressions, valueAttributes, input,
      aggregateExpressions, aggregateAttributes, 0, resultExpressions,
      (exprs: Seq[Expression], schema: Seq[Attribute]) => MutableProjection.create(exprs, schema),
      numOutputRows)
}
