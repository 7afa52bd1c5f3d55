package org.apache.spark.sql.fullwindow.rules

import org.apache.spark.SparkEnv
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{ColumnarRule, SparkPlan}
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec
import org.apache.spark.sql.fullwindow.recovery.{CommittedShuffleInput, JobShuffles}

/**
 * Whole-job recovery (`spark.fullwindow.recovery.scope=job`): every plain shuffle of the query
 * becomes a shuffle vertex of the job ([[JobShuffles.keep]]): read back when an earlier run
 * kept all its map outputs, else computed (only its missing map tasks, for a stable shuffle
 * partly kept) with each map task's output kept. A query-stage preparation rule for adaptive
 * plans (after `CommitFullWindowInputs`, whose input exchanges it leaves to it); bottom-up, so
 * that each exchange's fingerprint sees the exchanges under it as already decided.
 */
object KeepJobShuffles extends Rule[SparkPlan] {
  override def apply(plan: SparkPlan): SparkPlan = {
    // a query without a shuffle has nothing to keep: it runs whether or not the job's runtime
    // has started (a Spark Connect client asks the server's version before it starts recovery)
    if (!plan.exists(_.isInstanceOf[ShuffleExchangeExec])) return plan
    val job = JobShuffles.activeJob(conf).getOrElse(return plan)
    val codec = CommittedShuffleInput.codecOf(SparkEnv.get.conf).getOrElse(return plan)
    plan.transformUp {
      case e: ShuffleExchangeExec => JobShuffles.keep(e, job, codec)
    }
  }
}

/**
 * [[KeepJobShuffles]] for plans without adaptive execution
 * (`spark.sql.adaptive.enabled=false`): applied once the physical plan is prepared (before
 * whole-stage code generation and exchange reuse). Under adaptive execution the stage
 * preparation rule does it (this one would see each stage alone).
 */
object KeepJobShufflesColumnar extends ColumnarRule {
  private object NonAdaptive extends Rule[SparkPlan] {
    override def apply(plan: SparkPlan): SparkPlan =
      if (conf.adaptiveExecutionEnabled) plan else KeepJobShuffles(plan)
  }
  override def preColumnarTransitions: Rule[SparkPlan] = NonAdaptive
}
