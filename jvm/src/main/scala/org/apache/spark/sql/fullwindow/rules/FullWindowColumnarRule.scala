package org.apache.spark.sql.fullwindow.rules

import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{ColumnarRule, ColumnarToRowExec, SortExec, SparkPlan}
import org.apache.spark.sql.fullwindow.FullWindowConf
import org.apache.spark.sql.fullwindow.execution.{ColumnarSort, FullWindowAggregateExec, FullWindowCoGroupExec, FullWindowColumnarSortExec, FullWindowPythonPartitionExec, FullWindowSortPartitionExec, PythonArrowEval}

/**
 * Puts the columnar sort (FullWindowColumnarSortExec) in place of sortPartition's row sort over
 * Spark's own ColumnarToRowExec, once transitions are inserted and before whole-stage code
 * generation, when `spark.fullwindow.sort.columnar.enabled` (default true) and every column and
 * key qualifies (ColumnarSort.keyColumns: fixed-width, binary or byte-ordered string keys);
 * likewise in place of the SortExec EnsureRequirements puts under a FullWindowAggregate with keys
 * (the keyed `aggregate(*columns)`) and under each side of a FullWindowCoGroup (there without
 * the carry layouts: the side sorted first must be able to give its memory back while the
 * other sorts), over the exchange's rows or a columnar child. A ColumnarToRowExec put back above the columnar
 * child by a later pass of the transitions (adaptive execution) is taken out again. Other
 * plugins' columnar-to-row nodes (Gluten, Comet, RAPIDS) keep the row sort. A non-keyed Python
 * node right over sortPartition's columnar sort gets its Arrow batches filled from the sort's
 * columns (`columnarInput`) when they are bounded in rows (PythonArrowEval.batchRows).
 */
object FullWindowColumnarRule extends ColumnarRule {

  private def sparksOwn(p: SparkPlan): Boolean = p.getClass == classOf[ColumnarToRowExec]

  private object Rewrite extends Rule[SparkPlan] {
    override def apply(plan: SparkPlan): SparkPlan =
      if (!FullWindowConf.columnarSortEnabled(conf)) plan
      else plan.transformUp {
        case s: FullWindowSortPartitionExec if sparksOwn(s.child) && s.child.children.head.supportsColumnar &&
            ColumnarSort.keyColumns(s.sortOrder, s.output).isDefined =>
          FullWindowColumnarSortExec(s.sortOrder, s.child.children.head)
        case s: FullWindowColumnarSortExec if sparksOwn(s.child) =>
          s.copy(child = s.child.children.head)
        case a: FullWindowAggregateExec => a.copy(child = byColumns(a.child, spillOnRequest = false))
        case p: FullWindowPythonPartitionExec if !p.columnarInput && (p.child match {
              case s: FullWindowColumnarSortExec => !s.spillOnRequest
              case _ => false
            }) && PythonArrowEval.batchRows(conf, p.pandas, p.child.schema) > 0 =>
          p.copy(columnarInput = true)
        case g: FullWindowCoGroupExec =>
          g.copy(left = byColumns(g.left, spillOnRequest = true),
            right = byColumns(g.right, spillOnRequest = true))
      }

    /** The columnar sort in place of a local SortExec whose columns and keys qualify. */
    private def byColumns(plan: SparkPlan, spillOnRequest: Boolean): SparkPlan = plan match {
      case s: SortExec if !s.global &&
          ColumnarSort.keyColumns(s.sortOrder, s.output).isDefined =>
        val input = if (sparksOwn(s.child) && s.child.children.head.supportsColumnar) {
          s.child.children.head
        } else s.child
        FullWindowColumnarSortExec(s.sortOrder, input, "FullWindowColumnarSort", spillOnRequest)
      case other => other
    }
  }

  override def postColumnarTransitions: Rule[SparkPlan] = Rewrite
}
