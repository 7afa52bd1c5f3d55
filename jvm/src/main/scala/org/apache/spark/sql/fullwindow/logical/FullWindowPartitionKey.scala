package org.apache.spark.sql.fullwindow.logical

import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Expression, LeafExpression}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.types.{DataType, IntegerType}

/**
 * A grouping key meaning "the partition this row is in". An `Aggregate` grouped by it (plus any
 * user keys) is a per-partition aggregate: one full window per partition. The planner strategy
 * recognises it and plans no exchange.
 *
 * It is a deterministic leaf on purpose: the analyzer pulls nondeterministic grouping keys out
 * into a projection, which would hide it from the strategy. Were it ever evaluated it would still
 * be right, since it reads the running task's partition, as spark_partition_id() does.
 */
case class FullWindowPartitionKey() extends LeafExpression with CodegenFallback {
  override def foldable: Boolean = false
  override def nullable: Boolean = false
  override def dataType: DataType = IntegerType
  override def eval(input: InternalRow): Any = TaskContext.getPartitionId()
  override def prettyName: String = "full_window_partition"
  override def sql: String = "full_window_partition()"
}

object FullWindowPartitionKey {
  def isKey(e: Expression): Boolean = e.isInstanceOf[FullWindowPartitionKey]
  def contains(e: Expression): Boolean = e.exists(isKey)
}
