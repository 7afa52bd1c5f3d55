package org.apache.spark.sql.fullwindow.shims

import org.apache.spark.{ShuffleDependency, SparkEnv}
import org.apache.spark.shuffle.ShuffleManager
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec

/** Shuffle calls, Spark 3.5 to 4.2: one shuffle manager writes every shuffle, none pipelined. */
trait ShuffleShims {
  def shuffleManagerFor(env: SparkEnv, dep: ShuffleDependency[_, _, _]): ShuffleManager =
    env.shuffleManager

  def blockingShuffleManager(env: SparkEnv): ShuffleManager = env.shuffleManager

  def isPipelined(e: ShuffleExchangeExec): Boolean = false
}
