package org.apache.spark.sql.fullwindow.shims

import org.apache.spark.{ShuffleDependency, SparkEnv}
import org.apache.spark.shuffle.ShuffleManager
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec

/** Shuffle calls, Spark 4.3: a shuffle manager per dependency, pipelined exchanges. */
trait ShuffleShims {
  /** The shuffle manager that writes `dep`'s map outputs. */
  def shuffleManagerFor(env: SparkEnv, dep: ShuffleDependency[_, _, _]): ShuffleManager =
    env.shuffleManagerFor(dep)

  /** The shuffle manager of ordinary (blocking, map-then-reduce) shuffles. */
  def blockingShuffleManager(env: SparkEnv): ShuffleManager = env.blockingShuffleManager

  /** Whether the exchange's map and reduce sides run at once (no map outputs to commit). */
  def isPipelined(e: ShuffleExchangeExec): Boolean = e.pipelined
}
