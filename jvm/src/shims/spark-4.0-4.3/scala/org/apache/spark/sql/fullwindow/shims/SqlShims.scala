package org.apache.spark.sql.fullwindow.shims

import org.apache.spark.sql.{Column, Row, SparkSessionExtensions}
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.classic
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{BinaryType, DataType, StringType}

/** SQL API calls, Spark 4.x: the classic (JVM) Dataset and session live in `sql.classic`. */
trait SqlShims {
  /** The Dataset of a session running in this JVM (what Python's DataFrame wraps). */
  type Dataset[T] = classic.Dataset[T]
  type SparkSession = classic.SparkSession

  def ofRows(spark: SparkSession, plan: LogicalPlan): Dataset[Row] = classic.Dataset.ofRows(spark, plan)

  def column(e: Expression): Column = classic.ExpressionUtils.column(e)

  def expression(spark: SparkSession, c: Column): Expression = spark.expression(c)

  /** Registers the rule that turns fullwindow's SQL hint into a plan node. */
  def injectHintRule(ext: SparkSessionExtensions, rule: Rule[LogicalPlan]): Unit =
    ext.injectHintResolutionRule(_ => rule)

  /** Whether a hash aggregate can hold these aggregation buffers (no grouping keys). */
  def supportsHashAggregate(bufferAttributes: Seq[Attribute]): Boolean =
    Aggregate.supportsHashAggregate(bufferAttributes, Nil)

  /** `spark.sql.execution.arrow.maxBytesPerBatch`: Arrow batches end at this size too. */
  def arrowMaxBytesPerBatch(conf: SQLConf): Long = conf.arrowMaxBytesPerBatch

  val ArrowMaxBytesPerBatchKey: String = SQLConf.ARROW_EXECUTION_MAX_BYTES_PER_BATCH.key

  /**
   * Whether values of `dt` (a string or binary type) order as their bytes do: binary, and strings
   * whose collation orders by bytes without trimming (UTF8_BINARY); other collations do not.
   */
  def ordersByBytes(dt: DataType): Boolean = dt match {
    case s: StringType => s.supportsBinaryOrdering && !s.usesTrimCollation
    case BinaryType => true
    case _ => false
  }
}
