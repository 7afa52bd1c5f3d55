package org.apache.spark.sql.fullwindow.recovery

import java.io.File
import java.util.concurrent.{ConcurrentLinkedQueue, LinkedBlockingQueue}

import scala.collection.mutable
import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.spark.{SparkContext, Success}
import org.apache.spark.internal.Logging
import org.apache.spark.scheduler.{SparkListener, SparkListenerExecutorRemoved, SparkListenerTaskEnd}

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
              // what only the driver knows, closing the task's JSON object
              val known = s""","attempt":${info.attemptNumber},"taskId":${info.taskId},""" +
                s""""stageId":${end.stageId},"stageAttempt":${end.stageAttemptId},""" +
                s""""executor":"${FullWindowRecoveryListener.escape(info.executorId)}",""" +
                s""""metrics":$metrics}"""
              FullWindowRecoveryListener.inBackground(entry.toString) match {
                case Some((key, vertex)) =>
                  FullWindowRecoveryListener.taskEnded(key, vertex, known, info.executorId)
                case None =>
                  // entry is a JSON object without its closing brace (after the local files
                  // the driver syncs before the event, if any)
                  val (unsynced, json) = FullWindowRecoveryListener.unsyncedFiles(entry.toString)
                  FullWindowRecoveryListener.post(json + known, unsynced)
              }
            }
          case _ =>
        }
      }
    }
  }

  /** An executor lost: the uploads it had not finished never end (their map tasks run again
    * after a crash), so a flush does not wait for them. */
  override def onExecutorRemoved(removed: SparkListenerExecutorRemoved): Unit =
    FullWindowRecoveryListener.executorLost(removed.executorId)
}

object FullWindowRecoveryListener {
  val AccumulatorName = "fullwindow.recovery.commit"

  private val queue = new ConcurrentLinkedQueue[String]()
  @volatile private var registeredWith: SparkContext = _

  /** Notified whenever an event is queued (see [[awaitEvents]]). */
  private val queued = new Object

  /**
   * Queues `eventJson` for the Python side, after syncing `syncFirst` (files on the driver's
   * local file system that a task placed without syncing them, see [[afterSync]]): their
   * content, then their directories' entries, on a thread of its own, so that no task waits on
   * the disk. Every event keeps its order: while an event waits for its files, the events posted
   * after it wait behind it. An event whose files cannot be synced (not on this machine's file
   * system) is dropped with a warning: its map output is not kept, and a later run computes it.
   */
  def post(eventJson: String, syncFirst: Seq[File] = Nil): Unit = {
    val direct = order.synchronized {
      if (unsyncedEvents == 0 && syncFirst.isEmpty) true
      else {
        unsyncedEvents += 1
        toSync.add((eventJson, syncFirst))
        if (syncer == null) syncer = startSyncer()
        false
      }
    }
    if (direct) {
      queue.add(eventJson)
      queued.synchronized(queued.notifyAll())
    }
  }

  /** Guards [[unsyncedEvents]]: the events handed to the sync thread and not yet queued. */
  private val order = new Object
  private var unsyncedEvents = 0
  private val toSync = new LinkedBlockingQueue[(String, Seq[File])]()
  @volatile private var syncer: Thread = _

  private def startSyncer(): Thread = {
    val t = new Thread(() => syncLoop(), "fullwindow-recovery-sync")
    t.setDaemon(true)
    t.start()
    t
  }

  /** Takes every waiting event, syncs their files (each once) and then their directories (each
   * once), and queues the events in order. */
  private def syncLoop(): Unit = while (true) {
    val batch = new java.util.ArrayList[(String, Seq[File])]()
    batch.add(toSync.take())
    toSync.drainTo(batch)
    try syncAndQueue(batch)
    catch {
      case NonFatal(e) =>  // never leave the events counted as waiting (flush waits for them)
        Log.warn(s"fullwindow recovery: ${batch.size} events dropped, their files not synced " +
          s"(${e.getMessage})")
    } finally {
      order.synchronized {
        unsyncedEvents -= batch.size
        order.notifyAll()
      }
      queued.synchronized(queued.notifyAll())
    }
  }

  private def syncAndQueue(batch: java.util.List[(String, Seq[File])]): Unit = {
    val failed = mutable.Set.empty[File]
    val dirs = mutable.LinkedHashSet.empty[File]
    batch.asScala.foreach { case (_, files) =>
      files.foreach { f =>
        try {
          DurableCommit.force(f, directory = false)
          dirs += f.getAbsoluteFile.getParentFile
        } catch {
          case NonFatal(e) =>
            failed += f
            Log.warn(s"fullwindow recovery: could not sync the kept file $f on the driver; " +
              s"its map output is not kept (${e.getMessage})")
        }
      }
    }
    val failedDirs = dirs.filter { d =>
      try { DurableCommit.force(d, directory = true); false }
      catch {
        case NonFatal(e) =>
          Log.warn(s"fullwindow recovery: could not sync directory $d on the driver; " +
            s"the map outputs in it are not kept (${e.getMessage})")
          true
      }
    }
    order.synchronized {  // queued before the count drops (see post's order)
      batch.asScala.foreach { case (json, files) =>
        if (!files.exists(f => failed(f) || failedDirs(f.getAbsoluteFile.getParentFile))) {
          queue.add(json)
        }
      }
    }
  }

  // Map outputs kept in the background (KeptInBackground), by task: the driver-known end of the
  // event of a task that ended before its upload did, and the event of an upload that ended
  // before the driver saw its task end (None: the upload failed); each with its vertex
  private val awaitingUpload = mutable.Map.empty[String, (String, String)]
  private val uploadingOn = mutable.Map.empty[String, String]  // task key -> its executor
  private val uploadedFirst = mutable.Map.empty[String, (String, Option[String])]

  private val BackgroundMark = "background\t"  // a JSON entry starts with "{"

  /** What a task reports for its map output kept in the background: its key and vertex. */
  def keptInBackground(key: String, vertex: String): String = s"$BackgroundMark$key\t$vertex"

  /** The key and vertex of a task's report made by [[keptInBackground]]. */
  def inBackground(entry: String): Option[(String, String)] =
    if (!entry.startsWith(BackgroundMark)) None
    else {
      val rest = entry.substring(BackgroundMark.length)
      val t = rest.indexOf('\t')
      Some((rest.substring(0, t), rest.substring(t + 1)))
    }

  /** The task `key`, which keeps a map output of `vertex` in the background, ended
    * successfully; `known` closes its event. */
  private[recovery] def taskEnded(key: String, vertex: String, known: String,
      executor: String = ""): Unit = {
    val ready = order.synchronized {
      uploadedFirst.remove(key) match {
        case Some((_, json)) => json.map(_ + known)
        case None =>
          awaitingUpload(key) = (vertex, known)
          uploadingOn(key) = executor
          None
      }
    }
    ready.foreach(post(_))
  }

  /** The upload of task `key`'s map output of `vertex` ended: `json` is its event (without
    * the driver's part), None if it failed. */
  private[recovery] def uploaded(key: String, vertex: String, json: Option[String]): Unit = {
    val ready = order.synchronized {
      uploadingOn.remove(key)
      val r = awaitingUpload.remove(key) match {
        case Some((_, known)) => json.map(_ + known)
        case None =>
          uploadedFirst(key) = (vertex, json)
          None
      }
      if (awaitingUpload.isEmpty) order.notifyAll()
      r
    }
    ready.foreach(post(_))
  }

  /** Drops the background keeps of `vertex` not recorded yet: it is computed again whole (its
    * kept outputs reset), so an upload of its earlier computation must not be recorded after
    * the reset. */
  def forgetInBackground(vertex: String): Unit = order.synchronized {
    val dropped = awaitingUpload.collect { case (k, (v, _)) if v == vertex => k }
    awaitingUpload --= dropped
    uploadingOn --= dropped
    uploadedFirst --= uploadedFirst.collect { case (k, (v, _)) if v == vertex => k }
    order.notifyAll()
  }

  /** Drops the uploads executor `id` had not finished: it is gone. */
  private[recovery] def executorLost(id: String): Unit = order.synchronized {
    val lost = uploadingOn.collect { case (k, e) if e == id => k }
    awaitingUpload --= lost
    uploadingOn --= lost
    order.notifyAll()
  }

  /** Waits up to `timeoutMs` until no ended task's map output is still being kept in the
    * background; true if none is. */
  def awaitUploads(timeoutMs: Long): Boolean = {
    val deadline = System.nanoTime() + timeoutMs * 1000000L
    order.synchronized {
      while (awaitingUpload.nonEmpty) {
        val left = (deadline - System.nanoTime()) / 1000000L
        if (left <= 0) return false
        order.wait(left)
      }
    }
    true
  }

  /** Waits until every event posted so far is queued (its files synced or found missing). */
  def awaitSynced(): Unit = order.synchronized {
    while (unsyncedEvents > 0) order.wait(1000)
  }

  private object Log extends Logging {
    def warn(msg: String): Unit = logWarning(msg)
  }

  private val UnsyncedMark = "unsynced\t"  // a JSON entry starts with "{"

  /**
   * What a task reports for an event whose local files it placed without syncing them: the
   * files, then the event's JSON (the driver syncs them before it records the event, see
   * [[post]]).
   */
  def afterSync(files: Seq[File], entry: String): String =
    if (files.isEmpty) entry
    else UnsyncedMark + files.map(_.getAbsolutePath).mkString("\t") + "\n" + entry

  /** The files and the JSON of a task's report (see [[afterSync]]). */
  def unsyncedFiles(entry: String): (Seq[File], String) =
    if (!entry.startsWith(UnsyncedMark)) (Nil, entry)
    else {
      val nl = entry.indexOf('\n')
      (entry.substring(UnsyncedMark.length, nl).split('\t').toSeq.map(new File(_)),
        entry.substring(nl + 1))
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
      KeptInBackground.setUp(sc)
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
