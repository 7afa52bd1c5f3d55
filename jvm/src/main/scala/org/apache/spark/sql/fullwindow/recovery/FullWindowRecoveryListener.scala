package org.apache.spark.sql.fullwindow.recovery

import java.util.concurrent.ConcurrentLinkedQueue

import scala.jdk.CollectionConverters._

import org.apache.spark.{SparkContext, Success}
import org.apache.spark.scheduler.{SparkListener, SparkListenerTaskEnd}

/**
 * Recovery's driver-side listener (registered by the Python package when
 * `spark.fullwindow.recovery.enabled=true`). It turns the commit records that full-window tasks
 * report through the `fullwindow.recovery.commit` accumulator into compact task-finished events,
 * for successful task attempts only (a failed or killed attempt's commit is never reported), and
 * queues them, with the vertex-initialized events the commit operators post when they start, for
 * the Python side to drain into the durable event store.
 */
class FullWindowRecoveryListener extends SparkListener {
  override def onTaskEnd(end: SparkListenerTaskEnd): Unit = {
    if (end.reason != Success || end.taskInfo == null) return
    val info = end.taskInfo
    info.accumulables.foreach { acc =>
      if (acc.name.contains(FullWindowRecoveryListener.AccumulatorName)) {
        acc.update.foreach {
          case list: java.util.List[_] =>
            list.asScala.foreach { entry =>
              val m = end.taskMetrics
              val metrics =
                if (m == null) "{}"
                else s"""{"executorRunTime":${m.executorRunTime},"recordsRead":${m.inputMetrics.recordsRead},""" +
                  s""""shuffleRecordsRead":${m.shuffleReadMetrics.recordsRead},""" +
                  s""""peakExecutionMemory":${m.peakExecutionMemory}}"""
              // entry is a JSON object without its closing brace: add what only the driver knows
              FullWindowRecoveryListener.post(
                s"""$entry,"attempt":${info.attemptNumber},"taskId":${info.taskId},""" +
                  s""""stageId":${end.stageId},"stageAttempt":${end.stageAttemptId},""" +
                  s""""executor":"${FullWindowRecoveryListener.escape(info.executorId)}",""" +
                  s""""metrics":$metrics}""")
            }
          case _ =>
        }
      }
    }
  }
}

object FullWindowRecoveryListener {
  val AccumulatorName = "fullwindow.recovery.commit"

  private val queue = new ConcurrentLinkedQueue[String]()
  @volatile private var registeredWith: SparkContext = _

  /** Notified whenever an event is queued (see [[awaitEvents]]). */
  private val queued = new Object

  def post(eventJson: String): Unit = {
    queue.add(eventJson)
    queued.synchronized(queued.notifyAll())
  }

  /**
   * Waits up to `timeoutMs` until an event is queued; true if one is. The events stay queued
   * for [[drain]]: the Python side drains under its own lock, so that no event is ever held by
   * a thread that has not yet handed it to its job (a long poll instead of a timer: an idle
   * driver makes one call a second, and an event is drained as soon as it is posted).
   */
  def awaitEvents(timeoutMs: Long): Boolean = {
    val deadline = System.nanoTime() + timeoutMs * 1000000L
    queued.synchronized {
      while (queue.isEmpty) {
        val left = (deadline - System.nanoTime()) / 1000000L
        if (left <= 0) return false
        queued.wait(left)
      }
    }
    true
  }

  /**
   * Posts a vertex-initialized event: vertex `fingerprint` of job `jobDir` starts with
   * `numPartitions` partitions laid out as `layout` (`reads`: what each shuffle read of its stage
   * reads), `recovered` of them read back, committed upstream operations `inputs`.
   */
  def postVertexInitialized(fingerprint: String, operator: String, numPartitions: Int,
      layout: String, reads: Seq[String], jobDir: String, recovered: Int,
      inputs: Seq[String], extraJson: String = ""): Unit = {
    def list(xs: Seq[String]) = xs.map(x => "\"" + escape(x) + "\"").mkString("[", ",", "]")
    post(s"""{"type":"vertexInitialized","fingerprint":"${escape(fingerprint)}",""" +
      s""""operator":"${escape(operator)}","numPartitions":$numPartitions,""" +
      s""""layout":"${escape(layout)}","reads":${list(reads)},"job":"${escape(jobDir)}",""" +
      s""""recovered":$recovered,"inputs":${list(inputs)}$extraJson,""" +
      s""""time":${System.currentTimeMillis()}}""")
  }

  /** Registers the listener with `sc` once. */
  def register(sc: SparkContext): Unit = synchronized {
    if (registeredWith ne sc) {
      sc.addSparkListener(new FullWindowRecoveryListener)
      registeredWith = sc
    }
  }

  def isRegistered(sc: SparkContext): Boolean = registeredWith eq sc

  /** Waits (up to `timeoutMs`) for the listener bus to deliver the events posted so far. */
  def waitForListenerBus(sc: SparkContext, timeoutMs: Long): Unit =
    try sc.listenerBus.waitUntilEmpty(timeoutMs) catch { case _: Throwable => }

  /** Every queued event, oldest first, removed from the queue. */
  def drain(): Array[String] = {
    val out = Array.newBuilder[String]
    var e = queue.poll()
    while (e != null) { out += e; e = queue.poll() }
    out.result()
  }

  def escape(s: String): String =
    if (s == null) "" else s.flatMap {
      case '"' => "\\\""
      case '\\' => "\\\\"
      case c if c < ' ' => f"\\u${c.toInt}%04x"
      case c => c.toString
    }
}
