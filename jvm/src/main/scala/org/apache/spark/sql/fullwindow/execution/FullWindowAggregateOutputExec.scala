package org.apache.spark.sql.fullwindow.execution

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet, UnsafeProjection}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.fullwindow.FullWindowExplain

/**
 * The top of a key-less per-partition aggregate (`aggregate(*columns)`, or the SQL hint without
 * GROUP BY) that runs on Spark's code-generated hash aggregate: below it, one row per partition
 * carrying the results and the partition's row count, empty partitions already filtered out.
 * It names the step in plans, records the rows in and out, and drops the row count. It sees one
 * row per partition, so it costs nothing measurable.
 *
 * @param output the results, as the hash aggregate below computed them
 * @param functions the aggregates the hash aggregate below evaluates, only to name them in
 *                  explain(): they are not this node's input (hence not its references), so the
 *                  node never prints as missing input
 */
case class FullWindowAggregateOutputExec(
    output: Seq[Attribute],
    functions: Seq[AggregateExpression],
    rowCount: Attribute,
    child: SparkPlan) extends UnaryExecNode {

  override def nodeName: String = "FullWindowAggregate"
  override lazy val references: AttributeSet = AttributeSet(output) + rowCount
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def simpleString(maxFields: Int): String = FullWindowExplain.line(nodeName, maxFields,
    "perPartitionKeys" -> Nil, "functions" -> functions, "output" -> output)

  override lazy val metrics: Map[String, SQLMetric] = FullWindowMetrics.rows(sparkContext)

  override protected def doExecute(): RDD[InternalRow] = {
    val rowsIn = longMetric("numInputRows")
    val rowsOut = longMetric("numOutputRows")
    val countIndex = child.output.indexWhere(_.exprId == rowCount.exprId)
    child.execute().mapPartitionsInternal { rows =>
      val project = UnsafeProjection.create(output, child.output)
      rows.map { r =>
        rowsIn += r.getLong(countIndex)
        rowsOut += 1
        project(r)
      }
    }
  }

  override protected def withNewChildInternal(newChild: SparkPlan): FullWindowAggregateOutputExec =
    copy(child = newChild)
}
