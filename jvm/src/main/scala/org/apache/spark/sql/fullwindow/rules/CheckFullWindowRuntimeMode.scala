package org.apache.spark.sql.fullwindow.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.RowOrdering
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.fullwindow.{FullWindowConf, FullWindowErrors}
import org.apache.spark.sql.fullwindow.FullWindowConf.RuntimeMode
import org.apache.spark.sql.fullwindow.logical.{FullWindowOperator, FullWindowSortPartition}

/**
 * The one check every full-window operation passes at analysis, before any task runs:
 * no full window in STREAMING runtime mode or over a streaming input; and each operation's own
 * argument checks (e.g. sort keys must have an order).
 */
class CheckFullWindowRuntimeMode(session: SparkSession) extends (LogicalPlan => Unit) {
  override def apply(plan: LogicalPlan): Unit = plan.foreach {
    case op: FullWindowOperator =>
      val input = op.asInstanceOf[LogicalPlan]
      val conf = session.sessionState.conf
      // A stream has no end of input, whatever the configured mode says.
      val mode = FullWindowConf.effectiveMode(conf, input.isStreaming)
      if (input.isStreaming || mode == RuntimeMode.STREAMING) {
        val why =
          if (input.isStreaming) "its input is a streaming DataFrame"
          else s"${FullWindowConf.RuntimeModeKey}=STREAMING"
        throw FullWindowErrors.streaming(op.operationName, "STREAMING", why)
      }
      checkArguments(op)
    case _ =>
  }

  private def checkArguments(op: FullWindowOperator): Unit = op match {
    case s: FullWindowSortPartition =>
      s.order.foreach { o =>
        if (!RowOrdering.isOrderable(o.child.dataType)) {
          throw FullWindowErrors.notSortable(s.operationName, o.child.sql, o.child.dataType.sql)
        }
      }
    case _ =>
  }
}
