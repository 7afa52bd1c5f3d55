package org.apache.spark.sql.fullwindow.shims

import org.apache.spark.{ShuffleDependency, TaskContext}
import org.apache.spark.scheduler.MapStatus
import org.apache.spark.shuffle.ShuffleWriteProcessor

/**
 * A shuffle write processor that writes a map task's output as Spark does, then hands it to
 * [[afterWrite]]. Spark 4.x's `write` takes the map task's input rows and map index.
 */
abstract class CommitAfterShuffleWrite extends ShuffleWriteProcessor {
  protected def afterWrite(dep: ShuffleDependency[_, _, _], mapId: Long, mapIndex: Int,
      context: TaskContext): Unit

  /** This map task's output placed under Spark's block resolver as it is, without computing or
   * writing anything (an output an earlier run kept); None: computed and written. */
  protected def restore(dep: ShuffleDependency[_, _, _], mapId: Long, mapIndex: Int,
      context: TaskContext): Option[MapStatus] = None

  override def write(inputs: Iterator[_], dep: ShuffleDependency[_, _, _], mapId: Long,
      mapIndex: Int, context: TaskContext): MapStatus =
    restore(dep, mapId, mapIndex, context).getOrElse {
      val status = super.write(inputs, dep, mapId, mapIndex, context)
      afterWrite(dep, mapId, mapIndex, context)
      status
    }
}
