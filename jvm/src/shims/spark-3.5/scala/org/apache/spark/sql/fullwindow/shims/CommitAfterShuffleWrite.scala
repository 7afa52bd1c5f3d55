package org.apache.spark.sql.fullwindow.shims

import org.apache.spark.{Partition, ShuffleDependency, TaskContext}
import org.apache.spark.rdd.RDD
import org.apache.spark.scheduler.MapStatus
import org.apache.spark.shuffle.ShuffleWriteProcessor

/**
 * A shuffle write processor that writes a map task's output as Spark does, then hands it to
 * [[afterWrite]]. Spark 3.5's `write` takes the map task's RDD and partition.
 */
abstract class CommitAfterShuffleWrite extends ShuffleWriteProcessor {
  protected def afterWrite(dep: ShuffleDependency[_, _, _], mapId: Long, mapIndex: Int,
      context: TaskContext): Unit

  override def write(rdd: RDD[_], dep: ShuffleDependency[_, _, _], mapId: Long,
      context: TaskContext, partition: Partition): MapStatus = {
    val status = super.write(rdd, dep, mapId, context, partition)
    afterWrite(dep, mapId, partition.index, context)
    status
  }
}
