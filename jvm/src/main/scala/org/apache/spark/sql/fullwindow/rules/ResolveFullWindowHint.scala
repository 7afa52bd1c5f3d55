package org.apache.spark.sql.fullwindow.rules

import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnresolvedHint}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.fullwindow.FullWindowErrors
import org.apache.spark.sql.fullwindow.logical.FullWindowHint

/** Turns `/*+ FULL_WINDOW_PARTITION */` into a resolved [[FullWindowHint]] marker. */
object ResolveFullWindowHint extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = plan.resolveOperatorsUp {
    case h: UnresolvedHint if h.name.equalsIgnoreCase(FullWindowHint.Name) =>
      if (h.parameters.nonEmpty) {
        throw FullWindowErrors.invalidArgument(FullWindowHint.Name,
          s"the hint takes no parameters, got ${h.parameters.mkString(", ")}")
      }
      FullWindowHint(h.child)
  }
}
