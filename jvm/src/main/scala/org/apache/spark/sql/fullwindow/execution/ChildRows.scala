package org.apache.spark.sql.fullwindow.execution

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.{InputAdapter, SortExec, SparkPlan, WholeStageCodegenExec}

/**
 * The rows of the child of a fullwindow node that asks for sorted input. A child that is a
 * code-generated stage holding nothing but a local sort (the SortExec EnsureRequirements puts
 * under a keyed, coGroup or per-key aggregate node, over an exchange) is run as that SortExec
 * alone: the stage would hand each sorted row over through its output buffer (an append to a
 * linked list and a call back into the stage per row, ~9% of the JVM time of a keyed pandas
 * form at a few large keys, benchmarks/notes/keyed.md), while the sort's own execute() returns
 * its sorter's iterator. It is the path Spark itself takes when whole-stage code generation is
 * off or fails to compile, with the same sorter and the same metrics on the same Sort node;
 * only the stage's own timing metric stays empty. A sort whose input is generated in the same
 * stage (no exchange below it) keeps the stage, which then saves the sort's input iterator.
 */
object ChildRows {
  def apply(child: SparkPlan): RDD[InternalRow] = child match {
    case WholeStageCodegenExec(sort: SortExec) if sort.child.isInstanceOf[InputAdapter] =>
      sort.execute()
    case other => other.execute()
  }
}
