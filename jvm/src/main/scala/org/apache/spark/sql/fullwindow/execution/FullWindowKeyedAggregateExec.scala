package org.apache.spark.sql.fullwindow.execution

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.fullwindow.FullWindowExplain

/**
 * The top of a keyed `aggregate(*columns)` whose aggregates combine before the exchange, planned
 * as Spark plans `groupBy(keys).agg(...)` (AggUtils): below it Spark's final aggregation, the
 * exchange by the keys, Spark's partial aggregation and [[FullWindowCombineInputExec]]. It
 * names the full-window step in plans and the Spark UI and counts the rows out (one per key);
 * the rows pass through untouched (in a code-generated stage, fused with the final aggregation).
 *
 * @param functions the aggregates, only to name them in explain()
 */
case class FullWindowKeyedAggregateExec(
    keys: Seq[Attribute],
    functions: Seq[AggregateExpression],
    child: SparkPlan) extends CountingPassThroughExec {

  override def nodeName: String = "FullWindowAggregate"
  override def simpleString(maxFields: Int): String = FullWindowExplain.line(nodeName, maxFields,
    "keys" -> keys, "functions" -> functions, "output" -> output, "combined" -> true)

  // the functions' inputs are the final aggregation's, not this node's (nor missing from it)
  override lazy val references: AttributeSet = AttributeSet(keys)

  override protected def countedMetric: String = "numOutputRows"
  override lazy val metrics: Map[String, SQLMetric] = Map(
    "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "number of output rows"))

  override protected def withNewChildInternal(newChild: SparkPlan): FullWindowKeyedAggregateExec =
    copy(child = newChild)
}
