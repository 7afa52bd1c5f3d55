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

  /** This map task's output placed under Spark's block resolver as it is, without computing or
   * writing anything (an output an earlier run kept); None: computed and written. */
  protected def restore(dep: ShuffleDependency[_, _, _], mapId: Long, mapIndex: Int,
      context: TaskContext): Option[MapStatus] = None

  override def write(rdd: RDD[_], dep: ShuffleDependency[_, _, _], mapId: Long,
      context: TaskContext, partition: Partition): MapStatus =
    restore(dep, mapId, partition.index, context).getOrElse {
      val status = super.write(rdd, dep, mapId, context, partition)
      afterWrite(dep, mapId, partition.index, context)
      status
    }
}
