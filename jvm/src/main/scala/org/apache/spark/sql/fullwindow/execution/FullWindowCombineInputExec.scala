package org.apache.spark.sql.fullwindow.execution

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet, SortOrder}
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, ExprCode}
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{CodegenSupport, SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.fullwindow.FullWindowExplain

/**
 * A node that passes its child's rows through unchanged and counts them in one metric; in a
 * code-generated stage it adds one counter increment per row to the generated loop (no row is
 * copied or projected), otherwise it counts on the child's iterator.
 */
trait CountingPassThroughExec extends UnaryExecNode with CodegenSupport {
  /** The metric (of [[metrics]]) that counts the rows. */
  protected def countedMetric: String

  override def output: Seq[Attribute] = child.output
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def outputOrdering: Seq[SortOrder] = child.outputOrdering

  override def inputRDDs(): Seq[RDD[InternalRow]] = child.asInstanceOf[CodegenSupport].inputRDDs()

  override protected def doProduce(ctx: CodegenContext): String =
    child.asInstanceOf[CodegenSupport].produce(ctx, this)

  // counting reads no column: nothing needs evaluating before the parent's code
  override def usedInputs: AttributeSet = AttributeSet.empty

  override def doConsume(ctx: CodegenContext, input: Seq[ExprCode], row: ExprCode): String = {
    val counter = metricTerm(ctx, countedMetric)
    s"""
       |$counter.add(1);
       |${consume(ctx, input)}
     """.stripMargin
  }

  override protected def doExecute(): RDD[InternalRow] = {
    val counter = longMetric(countedMetric)
    child.execute().mapPartitionsInternal(_.map { r => counter += 1; r })
  }
}

/**
 * The map side of a keyed `aggregate(*columns)` that combines: sits under Spark's partial
 * aggregation and counts the records going into it, that is the operation's rows in before the
 * combine (the partial aggregate's own "number of output rows" is the rows after it, what
 * crosses the exchange). See [[FullWindowKeyedAggregateExec]].
 */
case class FullWindowCombineInputExec(keys: Seq[Attribute], child: SparkPlan)
    extends CountingPassThroughExec {

  override def nodeName: String = "FullWindowCombineInput"
  override def simpleString(maxFields: Int): String =
    FullWindowExplain.line(nodeName, maxFields, "keys" -> keys)

  override protected def countedMetric: String = "numInputRows"
  override lazy val metrics: Map[String, SQLMetric] = Map(
    "numInputRows" -> SQLMetrics.createMetric(sparkContext, "number of input rows (before the combine)"))

  override protected def withNewChildInternal(newChild: SparkPlan): FullWindowCombineInputExec =
    copy(child = newChild)
}
