package org.apache.spark.sql.fullwindow.logical

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Expression, LeafExpression}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.types.{DataType, IntegerType}

/**
 * A grouping key marking a keyed `aggregate(*columns)` whose aggregates combine before the
 * exchange: an `Aggregate` grouped by the user's keys and this marker is planned as Spark plans a
 * `groupBy(keys).agg(...)` (partial aggregation, exchange by the keys, final aggregation), with
 * the full-window step named around it (see FullWindowStrategy). The planner drops the marker.
 *
 * Like [[FullWindowPartitionKey]] it is a deterministic, non-foldable leaf, so the optimizer
 * neither folds it away nor pulls it out of the grouping. It evaluates to a constant: were it
 * ever evaluated as a grouping key (by a plan that kept it), it would split no group.
 */
case class FullWindowCombineKey() extends LeafExpression with CodegenFallback {
  override def foldable: Boolean = false
  override def nullable: Boolean = false
  override def dataType: DataType = IntegerType
  override def eval(input: InternalRow): Any = 0
  override def prettyName: String = "full_window_keyed"
  override def sql: String = "full_window_keyed()"
}

object FullWindowCombineKey {
  def isKey(e: Expression): Boolean = e.isInstanceOf[FullWindowCombineKey]
  def contains(e: Expression): Boolean = e.exists(isKey)
}
