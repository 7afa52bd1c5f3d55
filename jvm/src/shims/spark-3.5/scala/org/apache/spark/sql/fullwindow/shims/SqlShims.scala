package org.apache.spark.sql.fullwindow.shims

import org.apache.spark.sql.{Column, Row, SparkSessionExtensions}
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{BinaryType, DataType, StringType}

/** SQL API calls, Spark 3.5: one Dataset and session class (no `sql.classic` package). */
trait SqlShims {
  type Dataset[T] = org.apache.spark.sql.Dataset[T]
  type SparkSession = org.apache.spark.sql.SparkSession

  def ofRows(spark: SparkSession, plan: LogicalPlan): Dataset[Row] =
    org.apache.spark.sql.Dataset.ofRows(spark, plan)

  def column(e: Expression): Column = new Column(e)

  def expression(spark: SparkSession, c: Column): Expression = c.expr

  /**
   * Spark 3.5 has no hint-resolution hook; its analyzer drops unknown hints only after the
   * Resolution batch (`Remove Unresolved Hints`), so a resolution rule still sees the hint.
   */
  def injectHintRule(ext: SparkSessionExtensions, rule: Rule[LogicalPlan]): Unit =
    ext.injectResolutionRule(_ => rule)

  def supportsHashAggregate(bufferAttributes: Seq[Attribute]): Boolean =
    Aggregate.supportsHashAggregate(bufferAttributes)

  /** Spark 3.5's Arrow batches have no byte limit, only a row limit. */
  def arrowMaxBytesPerBatch(conf: SQLConf): Long = Long.MaxValue

  val ArrowMaxBytesPerBatchKey: String = "spark.sql.execution.arrow.maxBytesPerBatch"

  /** Whether values of `dt` (a string or binary type) order as their bytes do: 3.5 has no collations. */
  def ordersByBytes(dt: DataType): Boolean = dt match {
    case _: StringType | BinaryType => true
    case _ => false
  }
}
