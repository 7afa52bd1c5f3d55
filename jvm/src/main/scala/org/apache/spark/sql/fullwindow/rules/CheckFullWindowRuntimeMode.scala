package org.apache.spark.sql.fullwindow.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Attribute, PythonUDAF, RowOrdering}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, LogicalPlan}
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.fullwindow.{FullWindowAggregates, FullWindowConf, FullWindowErrors}
import org.apache.spark.sql.fullwindow.FullWindowConf.RuntimeMode
import org.apache.spark.sql.fullwindow.logical.{FullWindowCoGroup, FullWindowKeyedPythonPartition, FullWindowOperator, FullWindowSortPartition, KeyedRunningPython}

/**
 * The one check every full-window operation passes at analysis, before any task runs:
 * no full window in STREAMING runtime mode or over a streaming input; and each operation's own
 * argument checks (e.g. sort keys must have an order, coGroup sides must have keys of the same
 * types). The running keyed reduce of STREAMING mode is not a full window and passes in that
 * mode, but it too refuses an unbounded input.
 */
class CheckFullWindowRuntimeMode(session: SparkSession) extends (LogicalPlan => Unit) {
  override def apply(plan: LogicalPlan): Unit = plan.foreach { node =>
    operationOf(node).foreach { operation =>
      val conf = session.sessionState.conf
      // A stream has no end of input, whatever the configured mode says.
      val mode = FullWindowConf.effectiveMode(conf, node.isStreaming)
      if (node.isStreaming || mode == RuntimeMode.STREAMING) {
        val why =
          if (node.isStreaming) "its input is a streaming DataFrame"
          else s"${FullWindowConf.RuntimeModeKey}=STREAMING"
        throw FullWindowErrors.streaming(operation, "STREAMING", why)
      }
      checkArguments(operation, node)
    }
    node match {
      case r: KeyedRunningPython if r.isStreaming =>
        throw FullWindowErrors.streamingRunning(s"keyed ${r.operation}")
      case r: KeyedRunningPython => checkKeys(s"keyed ${r.operation}", r.keys)
      case _ =>
    }
  }

  private def checkKeys(operation: String, keys: Seq[Attribute]): Unit = keys.foreach { k =>
    if (!RowOrdering.isOrderable(k.dataType)) {
      throw FullWindowErrors.notSortable(operation, k.name, k.dataType.sql)
    }
  }

  /** The user-facing operation a node is, if it is a full-window one. */
  private def operationOf(node: LogicalPlan): Option[String] = node match {
    case op: FullWindowOperator => Some(op.userOperation)
    case a: Aggregate if FullWindowAggregates.isFullWindow(a) => Some("aggregate")
    case _ => None
  }

  private def checkArguments(operation: String, node: LogicalPlan): Unit = node match {
    case s: FullWindowSortPartition =>
      s.order.foreach { o =>
        if (!RowOrdering.isOrderable(o.child.dataType)) {
          throw FullWindowErrors.notSortable(operation, o.child.sql, o.child.dataType.sql)
        }
      }
    case k: FullWindowKeyedPythonPartition => checkKeys(operation, k.keys)
    case c: FullWindowCoGroup =>
      checkKeys(operation, c.leftKeys)
      checkKeys(operation, c.rightKeys)
      val sameTypes = c.leftKeys.length == c.rightKeys.length &&
        c.leftKeys.zip(c.rightKeys).forall { case (l, r) => DataTypeUtils.sameType(l.dataType, r.dataType) }
      if (!sameTypes) {
        def show(keys: Seq[Attribute]) = keys.map(k => s"${k.name} ${k.dataType.sql}").mkString(", ")
        throw FullWindowErrors.keyTypeMismatch(operation, show(c.leftKeys), show(c.rightKeys))
      }
    case a: Aggregate =>
      a.aggregateExpressions.foreach(_.foreach {
        case ae: AggregateExpression if ae.isDistinct =>
          throw FullWindowErrors.invalidArgument(operation,
            s"${ae.sql}: DISTINCT aggregates are not supported in a full window; " +
              "aggregate a collect_set instead, e.g. F.size(F.collect_set(col))")
        case ae: AggregateExpression if ae.aggregateFunction.isInstanceOf[PythonUDAF] =>
          throw FullWindowErrors.invalidArgument(operation,
            s"${ae.sql}: pandas aggregate UDFs are not supported here; pass an " +
              "AggregateFunction to aggregate(func, schema) instead")
        case _ =>
      })
    case _ =>
  }
}
