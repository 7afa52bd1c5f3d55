package org.apache.spark.sql.fullwindow.logical

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

/**
 * Marks a logical node as a full-window operation: it emits only at the end of its input, so it
 * must not run on a stream. The runtime-mode check rule covers every node with this trait.
 */
trait FullWindowOperator { self: LogicalPlan =>
  /** The user-facing name of the operation, as errors and explain() show it. */
  def operationName: String

  /** The operation the user called, as errors name it: `operationName` but for a step that
   *  runs inside another operation. */
  def userOperation: String = operationName
}
