package org.apache.spark.sql.fullwindow.shims

import org.apache.spark.{ShuffleDependency, SparkEnv}
import org.apache.spark.api.python.{ChainedPythonFunctions, PythonEvalType}
import org.apache.spark.shuffle.ShuffleManager
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, MutableProjection, NamedExpression, PythonUDF}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.execution.aggregate.SortBasedAggregationIterator
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.execution.python.{ArrowPythonRunner, MapInBatchEvaluatorFactory}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.StructType

/**
 * The calls that differ between Spark lines, as Spark 4.3 makes them. Every line's folder
 * (jvm/src/shims/spark-<line>) has an object of this name with the same methods.
 */
object SparkShims {
  /** The shuffle manager that writes `dep`'s map outputs. */
  def shuffleManagerFor(env: SparkEnv, dep: ShuffleDependency[_, _, _]): ShuffleManager =
    env.shuffleManagerFor(dep)

  /** The shuffle manager of ordinary (blocking, map-then-reduce) shuffles. */
  def blockingShuffleManager(env: SparkEnv): ShuffleManager = env.blockingShuffleManager

  /** Whether the exchange's map and reduce sides run at once (no map outputs to commit). */
  def isPipelined(e: ShuffleExchangeExec): Boolean = e.pipelined

  /** Spark's mapInArrow evaluation of `udf` (SQL_MAP_ARROW_ITER_UDF) over rows of `inputSchema`. */
  def mapInArrowFactory(
      output: Seq[Attribute],
      udf: PythonUDF,
      inputSchema: StructType,
      conf: SQLConf,
      pythonMetrics: Map[String, SQLMetric],
      jobArtifactUUID: Option[String]): MapInBatchEvaluatorFactory =
    new MapInBatchEvaluatorFactory(
      output,
      Seq((ChainedPythonFunctions(Seq(udf.func)), udf.resultId.id)),
      inputSchema,
      udf.dataType,
      conf.arrowMaxRecordsPerBatch,
      PythonEvalType.SQL_MAP_ARROW_ITER_UDF,
      conf.sessionLocalTimeZone,
      conf.arrowUseLargeVarTypes,
      ArrowPythonRunner.getPythonRunnerConfMap(conf),
      pythonMetrics,
      jobArtifactUUID,
      None)

  /** Spark's sort-based aggregation iterator. */
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
      numOutputRows, aggTime)
}
