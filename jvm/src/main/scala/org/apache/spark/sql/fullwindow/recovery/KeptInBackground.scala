package org.apache.spark.sql.fullwindow.recovery

import java.io.File
import java.nio.file.{Files, StandardCopyOption}
import java.util.UUID
import java.util.concurrent.{LinkedBlockingQueue, ThreadFactory, ThreadPoolExecutor, TimeUnit}

import scala.util.control.NonFatal

import org.apache.spark.{SparkContext, SparkEnv}
import org.apache.spark.internal.Logging
import org.apache.spark.rpc.{RpcEndpointRef, RpcEnv, ThreadSafeRpcEndpoint}
import org.apache.spark.util.RpcUtils

/**
 * Keeping a map output on a store other than this machine's file system (HDFS, an object store)
 * without the task waiting for the store: the task hard-links its shuffle files into a staging
 * folder of the executor's local directories (at once; the links keep the files from Spark's
 * shuffle clean-up) and ends; a thread of the executor then writes them to the store (synced,
 * renamed, or written in place: [[CommittedShuffleInput.place]]) and tells the driver. The
 * driver records the task-finished event only when it has both: the task's successful end (its
 * listener, which also adds what only the driver knows) and the finished upload (this endpoint,
 * or a direct call where the executor is the driver's own). An upload that fails, an executor
 * lost before its upload ends, or a shuffle reset meanwhile only costs a later run that map
 * task: it is never recorded.
 */
object KeptInBackground extends Logging {
  val EndpointName = "fullwindow-recovery-kept"

  /** Uploads at once per executor: a store's latency, not its bandwidth, bounds one upload. */
  private val Threads = 2

  private lazy val pool: ThreadPoolExecutor = {
    val factory: ThreadFactory = (r: Runnable) => {
      val t = new Thread(r, "fullwindow-recovery-upload")
      t.setDaemon(true)
      t
    }
    val p = new ThreadPoolExecutor(Threads, Threads, 30, TimeUnit.SECONDS,
      new LinkedBlockingQueue[Runnable](), factory)
    p.allowCoreThreadTimeOut(true)
    p
  }

  /**
   * Hard-links (copies, where a link cannot be made) each of `files` into a staging folder of
   * this executor's local directories; an absent file stays absent (None).
   */
  def stage(files: Seq[File]): Seq[Option[File]] = {
    val env = SparkEnv.get
    val dir = new File(env.blockManager.diskBlockManager.localDirs.head, "fullwindow-keep")
    Files.createDirectories(dir.toPath)
    files.map { f =>
      if (!f.exists()) None
      else {
        val staged = new File(dir, UUID.randomUUID().toString + "-" + f.getName)
        try Files.createLink(staged.toPath, f.toPath)
        catch {
          case _: java.io.IOException | _: UnsupportedOperationException =>
            Files.copy(f.toPath, staged.toPath, StandardCopyOption.REPLACE_EXISTING)
        }
        Some(staged)
      }
    }
  }

  /**
   * Runs `upload` on an upload thread, then reports to the driver what it returned (the event's
   * JSON, without what the driver adds) for the task `key` of `vertex`, or that it failed.
   * `staged` are deleted once it ends.
   */
  def submit(key: String, vertex: String, staged: Seq[File])(upload: => String): Unit =
    pool.execute { () =>
      val json =
        try Some(upload)
        catch {
          case NonFatal(e) =>
            logWarning(s"fullwindow recovery: could not keep a map output of $vertex in the " +
              "background; a later run will compute it again", e)
            None
        } finally staged.foreach(f => try Files.deleteIfExists(f.toPath) catch { case NonFatal(_) => })
      deliver(message(key, vertex, json))
    }

  /** What a finished upload tells the driver: the task, its vertex, and the event or nothing. */
  def message(key: String, vertex: String, json: Option[String]): String =
    s"$key\t$vertex\t${json.getOrElse("")}"

  private def parse(msg: String): (String, String, Option[String]) = {
    val a = msg.indexOf('\t')
    val b = msg.indexOf('\t', a + 1)
    val json = msg.substring(b + 1)
    (msg.substring(0, a), msg.substring(a + 1, b), if (json.isEmpty) None else Some(json))
  }

  @volatile private var driver: (RpcEnv, RpcEndpointRef) = _

  private def deliver(msg: String): Unit = {
    val env = SparkEnv.get
    try {
      if (env == null || env.executorId == SparkContext.DRIVER_IDENTIFIER) received(msg)
      else {
        val known = driver
        val ref =
          if (known != null && (known._1 eq env.rpcEnv)) known._2
          else {
            val r = RpcUtils.makeDriverRef(EndpointName, env.conf, env.rpcEnv)
            driver = (env.rpcEnv, r)
            r
          }
        ref.send(msg)
      }
    } catch {
      case NonFatal(e) =>
        logWarning("fullwindow recovery: could not tell the driver of a map output kept in " +
          "the background; a later run will compute it again", e)
    }
  }

  private def received(msg: String): Unit = {
    val (key, vertex, json) = parse(msg)
    FullWindowRecoveryListener.uploaded(key, vertex, json)
  }

  /** The driver's endpoint for the executors' finished uploads. */
  private class Endpoint(override val rpcEnv: RpcEnv) extends ThreadSafeRpcEndpoint {
    override def receive: PartialFunction[Any, Unit] = {
      case msg: String => received(msg)
    }
  }

  /** Sets the endpoint up in `sc`'s driver (once per context). */
  def setUp(sc: SparkContext): Unit =
    try sc.env.rpcEnv.setupEndpoint(EndpointName, new Endpoint(sc.env.rpcEnv))
    catch { case _: IllegalArgumentException => }  // there already
}
