package org.apache.spark.sql.fullwindow

import org.apache.spark.sql.execution.SparkStrategy
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.fullwindow.execution.FullWindowSortPartitionExec
import org.apache.spark.sql.fullwindow.logical.FullWindowSortPartition

/** Plans fullwindow's logical nodes. None of them asks for an exchange of its own. */
object FullWindowStrategy extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case FullWindowSortPartition(order, child) =>
      FullWindowSortPartitionExec(order, planLater(child)) :: Nil
    case _ => Nil
  }
}
