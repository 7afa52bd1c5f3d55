package org.apache.spark.sql.fullwindow.rules

import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{ColumnarRule, ColumnarToRowExec, SparkPlan}
import org.apache.spark.sql.fullwindow.FullWindowConf
import org.apache.spark.sql.fullwindow.execution.{ColumnarSort, FullWindowColumnarSortExec, FullWindowSortPartitionExec}

/**
 * Puts the columnar sort (FullWindowColumnarSortExec) in place of sortPartition's row sort over
 * Spark's own ColumnarToRowExec, once transitions are inserted and before whole-stage code
 * generation, when `spark.fullwindow.sort.columnar.enabled` (default true) and every column and
 * key qualifies (ColumnarSort.keyColumns: fixed-width keys; string and binary columns allowed). A ColumnarToRowExec put back above the columnar
 * child by a later pass of the transitions (adaptive execution) is taken out again. Other
 * plugins' columnar-to-row nodes (Gluten, Comet, RAPIDS) keep the row sort.
 */
object FullWindowColumnarRule extends ColumnarRule {

  private def sparksOwn(p: SparkPlan): Boolean = p.getClass == classOf[ColumnarToRowExec]

  private object Rewrite extends Rule[SparkPlan] {
    override def apply(plan: SparkPlan): SparkPlan =
      if (!FullWindowConf.columnarSortEnabled(conf)) plan
      else plan.transformUp {
        case s: FullWindowSortPartitionExec if sparksOwn(s.child) && s.child.children.head.supportsColumnar &&
            ColumnarSort.keyColumns(s.sortOrder, s.output, varWidth = true).isDefined =>
          FullWindowColumnarSortExec(s.sortOrder, s.child.children.head)
        case s: FullWindowColumnarSortExec if sparksOwn(s.child) =>
          s.copy(child = s.child.children.head)
      }
  }

  override def postColumnarTransitions: Rule[SparkPlan] = Rewrite
}
