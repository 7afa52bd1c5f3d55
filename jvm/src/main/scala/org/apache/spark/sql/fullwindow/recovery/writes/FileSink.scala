package org.apache.spark.sql.fullwindow.recovery.writes

import java.io.FileNotFoundException
import java.nio.charset.StandardCharsets

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.hadoop.mapreduce.{JobContext, TaskAttemptContext}

import org.apache.spark.internal.Logging
import org.apache.spark.internal.io.{FileCommitProtocol, FileNameSpec}
import org.apache.spark.internal.io.FileCommitProtocol.TaskCommitMessage
import org.apache.spark.sql.catalyst.catalog.CatalogTable
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.command.CreateDataSourceTableAsSelectCommand
import org.apache.spark.sql.execution.datasources.{DataSource, FileFormat, InsertIntoHadoopFsRelationCommand}
import org.apache.spark.sql.execution.datasources.v2.FileDataSourceV2
import org.apache.spark.sql.fullwindow.recovery.DurableCommit
import org.apache.spark.sql.fullwindow.shims.SparkShims.SparkSession
import org.apache.spark.sql.internal.SQLConf

/**
 * Writes of the file sources (`DataFrameWriter.save` / `parquet` / `csv` / ..., `insertInto` and
 * `INSERT` into a table over files, `saveAsTable` and `CREATE TABLE ... AS SELECT` of a file
 * format), in every save mode, with `partitionBy` and dynamic partition overwrite.
 *
 * Their commit goes through [[FullWindowCommitProtocol]], which wraps the session's own commit
 * protocol and keeps markers in the target's `_fullwindow/` directory (hidden from Spark's
 * readers, as `_SUCCESS` is), named by the write's id: `started` when the Spark write job is set
 * up, `committing` (with the number of files it stages) just before the job commit publishes the
 * files, `committed` after. Every file the write job makes carries its job's UUID in its name, so:
 *
 *  - committed: a `committed` marker; or a `committing` one whose files are all published (the
 *    driver died inside the job commit's last step);
 *  - rollback (once the write holds its target): for each `started` / `committing` marker of
 *    a write of the job that never committed (whatever its identity: a dead run's, a failed
 *    one's), the files named with its UUID are deleted
 *    (published by a commit cut short, or left by a task commit that publishes directly), then
 *    what it staged (`_temporary`, its `.spark-staging-` directory), then the markers: the job
 *    commit of the write run again cannot publish a dead run's task outputs.
 */
final case class FileSink(plan: LogicalPlan, path: Path, mode: String, query: LogicalPlan,
    table: Option[CatalogTable]) extends WriteSink with Logging {
  override def kind: String = "files"
  override def target: String = path.toString

  private def markers(session: SparkSession): Seq[(String, Long)] =
    FileSink.listMarkers(new Path(path, FileSink.MarkerDir), session.sessionState.newHadoopConf())

  private def tableMissing(session: SparkSession): Boolean =
    table.exists(t => !session.sessionState.catalog.tableExists(t.identifier))

  override def committed(session: SparkSession, w: WriteCall): Boolean = {
    if (tableMissing(session)) return false  // CTAS: data committed, table never created
    val ids = w.ids.toSet
    val mine = markers(session).map(_._1).filter(n => FileSink.idOf(n).exists(ids))
    mine.exists(_.contains(".committed.")) || mine.exists(n =>
      n.contains(".committing.") && completed(session, n))
  }

  /** Whether the job commit of marker `committing` (`<id>.committing.<uuid>`) published every
    * file it staged (the driver died inside its last step): then its `committed` marker is
    * written now, as the commit would have. */
  private def completed(session: SparkSession, committing: String): Boolean = {
    val conf = session.sessionState.newHadoopConf()
    val dir = new Path(path, FileSink.MarkerDir)
    val id = FileSink.idOf(committing).get
    val uuid = committing.substring((id + ".committing.").length)
    val expected = try FileSink.readText(new Path(dir, committing), conf).trim.toLong
      catch { case NonFatal(_) => -1L }
    val done = expected >= 0 && FileSink.published(path, uuid, conf).size == expected
    if (done) FileSink.writeText(new Path(dir, s"$id.committed.$uuid"), expected.toString, conf)
    done
  }

  // what a dead run left is undone once the write holds its target ([[running]]): a write of
  // this session running into the same target meanwhile is not touched
  override def rollback(session: SparkSession, w: WriteCall): Unit = ()

  /**
   * Undoes what every write of this job into the target that never committed left there (a dead
   * run's, whatever its identity, this version's ids and the earlier ones numbered by start
   * order alike): called while this write holds the target, so no write of this driver runs into
   * it, and the job's lease keeps other drivers of the job out. The markers are listed again
   * here, not taken from [[committed]]'s listing: a write of this driver that ran into the target
   * in between (from another thread) must be seen committed, not started. A write whose job commit
   * published everything it staged is finished instead ([[completed]]), not undone.
   */
  private def undo(session: SparkSession, w: WriteCall): Unit = {
    val conf = session.sessionState.newHadoopConf()
    val dir = new Path(path, FileSink.MarkerDir)
    val fs = dir.getFileSystem(conf)
    val names = markers(session).map(_._1).filter(_.startsWith(w.jobPrefix))
    val byId = names.groupBy(n => FileSink.idOf(n).getOrElse(n))
    // a write id with a committed marker is no dead run's (its started / committing markers
    // stay beside it: the commit does not delete them, one request less each)
    val deadIds = byId.filter { case (_, ns) => !ns.exists(_.contains(".committed.")) }
      .filterNot { case (_, ns) => ns.exists(n => n.contains(".committing.") && completed(session, n)) }
    val dead = deadIds.values.flatten.toSeq
    val uuids = dead.flatMap(FileSink.uuidOf).distinct
    if (uuids.nonEmpty) {
      val files = uuids.flatMap(u => FileSink.published(path, u, conf))
      logWarning(s"fullwindow recovery: write ${w.number} of job ${w.jobId} (${w.identity}) to " +
        s"$path: an earlier run started ${deadIds.keys.toSeq.sorted.mkString(", ")} into this " +
        s"target (write job ${uuids.mkString(", ")}) and never committed it; removing what it " +
        s"left: ${files.size} published file(s) and its staged output")
      files.foreach(f => fs.delete(f, false))
      (Seq(new Path(path, "_temporary")) ++ uuids.map(u => new Path(path, s".spark-staging-$u")))
        .foreach(p => try fs.delete(p, true) catch { case NonFatal(_) => })
    }
    if (dead.nonEmpty && tableMissing(session)) {
      // a CTAS whose table was never created: its location holds only what the dead run wrote
      logWarning(s"fullwindow recovery: write ${w.number} of job ${w.jobId}: table " +
        s"${table.get.identifier} was never created; removing its location $path")
      fs.delete(path, true)
    }
    dead.foreach(n => fs.delete(new Path(dir, n), false))
  }

  override def prepare(session: SparkSession, w: WriteCall): (LogicalPlan, Map[String, String]) =
    (plan, Map.empty)

  override def running[T](session: SparkSession, w: WriteCall)(body: => T): T =
    FileSink.running(session, path, new Path(path, FileSink.MarkerDir).toString, w.id) {
      undo(session, w)
      body
    }
}

object FileSink {
  val MarkerDir = "_fullwindow"
  val ProtocolKey = "spark.sql.sources.commitProtocolClass"
  /** The commit protocol [[FullWindowCommitProtocol]] wraps (the session's own). */
  val InnerKey = "spark.fullwindow.recovery.write.innerCommitProtocol"

  /** A recovered write running now into `target`: where its markers go, and its id. */
  final case class Running(markerDir: String, writeId: String)

  // the recovered file writes running now, by target: the commit protocol of each finds its
  // own write there (two writes of one session from two threads keep apart; two into one
  // target run one after the other, as their `_temporary` would collide anyway)
  private val byTarget = new java.util.concurrent.ConcurrentHashMap[String, Running]()
  // per session conf: how many recovered file writes run now, and the protocol set before
  private val active = new java.util.IdentityHashMap[SQLConf, (Int, Option[String])]()

  private def key(target: String): String = new Path(target).toUri.normalize.toString.stripSuffix("/")

  /** The recovered write running into `target` now, if any. */
  def runningInto(target: String): Option[Running] = {
    val k = key(target)
    Option(byTarget.get(k)).orElse {
      // a target named without its scheme: matched by path
      val p = new Path(k).toUri.getPath
      val it = byTarget.entrySet().iterator()
      var found: Option[Running] = None
      while (found.isEmpty && it.hasNext) {
        val e = it.next()
        if (new Path(e.getKey).toUri.getPath == p) found = Some(e.getValue)
      }
      found
    }
  }

  /**
   * Runs `body` (write `writeId` into `target`) with [[FullWindowCommitProtocol]] as the
   * session's commit protocol: set by the first recovered file write of the session that runs,
   * put back by the last; each write's protocol finds its id by its target ([[runningInto]]).
   */
  def running[T](session: SparkSession, target: Path, markerDir: String, writeId: String)(
      body: => T): T = {
    val k = key(target.toString)
    val me = Running(markerDir, writeId)
    while (byTarget.putIfAbsent(k, me) != null) byTarget.synchronized(byTarget.wait(50))
    val conf = session.sessionState.conf
    try {
      enter(conf)
      try body finally leave(conf)
    } finally {
      byTarget.remove(k)
      byTarget.synchronized(byTarget.notifyAll())
    }
  }

  private val Ours = classOf[FullWindowCommitProtocol].getName
  private val SparkDefault =
    "org.apache.spark.sql.execution.datasources.SQLHadoopMapReduceCommitProtocol"

  private def enter(conf: SQLConf): Unit = active.synchronized {
    val (n, before) = Option(active.get(conf)).getOrElse((0, Option(conf.getConfString(ProtocolKey, null))))
    if (n == 0) {
      val current = conf.getConfString(ProtocolKey, SparkDefault)
      val inner = if (current == Ours) conf.getConfString(InnerKey, SparkDefault) else current
      conf.setConfString(InnerKey, inner)
      conf.setConfString(ProtocolKey, Ours)
    }
    active.put(conf, (n + 1, before))
  }

  private def leave(conf: SQLConf): Unit = active.synchronized {
    val (n, before) = active.get(conf)
    if (n > 1) active.put(conf, (n - 1, before))
    else {
      active.remove(conf)
      before.filter(_ != Ours) match {
        case Some(v) => conf.setConfString(ProtocolKey, v)
        case None => conf.unsetConf(ProtocolKey)
      }
      conf.unsetConf(InnerKey)
    }
  }

  def of(session: SparkSession, plan: LogicalPlan): Option[WriteSink] = plan match {
    case i: InsertIntoHadoopFsRelationCommand =>
      val mode = if (i.dynamicPartitionOverwrite) "overwriteDynamic" else i.mode.toString
      Some(FileSink(plan, qualify(session, i.outputPath), mode, i.query, None))
    case c: CreateDataSourceTableAsSelectCommand =>
      val table = c.table
      val format: Option[Class[_]] = table.provider.flatMap(p => try {
        Some[Class[_]](DataSource.lookupDataSource(p, session.sessionState.conf))
      } catch { case NonFatal(_) => None })
      if (!format.exists(f => classOf[FileFormat].isAssignableFrom(f) ||
          classOf[FileDataSourceV2].isAssignableFrom(f))) None
      else {
        val location = table.storage.locationUri.map(new Path(_))
          .getOrElse(new Path(session.sessionState.catalog.defaultTablePath(table.identifier)))
        Some(FileSink(plan, qualify(session, location), c.mode.toString, c.query, Some(table)))
      }
    case _ => None
  }

  private def qualify(session: SparkSession, p: Path): Path = {
    val fs = p.getFileSystem(session.sessionState.newHadoopConf())
    p.makeQualified(fs.getUri, fs.getWorkingDirectory)
  }

  private val States = Seq(".started.", ".committing.", ".committed.")

  /** The write id a marker names (`<id>.<state>.<uuid>`). */
  def idOf(marker: String): Option[String] =
    States.collectFirst { case s if marker.contains(s) => marker.substring(0, marker.lastIndexOf(s)) }

  /** The UUID of the write job a marker names (`<id>.<state>.<uuid>`). */
  def uuidOf(marker: String): Option[String] = {
    val states = Seq(".started.", ".committing.", ".committed.")
    states.collectFirst { case s if marker.contains(s) =>
      marker.substring(marker.lastIndexOf(s) + s.length) }
  }

  def listMarkers(dir: Path, conf: Configuration): Seq[(String, Long)] = {
    val fs = dir.getFileSystem(conf)
    try fs.listStatus(dir).toSeq.map(s => (s.getPath.getName, s.getLen))
    catch { case _: FileNotFoundException => Nil }
  }

  /** Files under `root` (staging directories and markers left out) named with `uuid`. */
  def published(root: Path, uuid: String, conf: Configuration): Seq[Path] = {
    def staged(p: Path): Boolean = {
      var q = p.getParent
      while (q != null && q != root) {
        val n = q.getName
        if (n == "_temporary" || n.startsWith(".spark-staging-") || n == MarkerDir) return true
        q = q.getParent
      }
      false
    }
    filesNamed(root, uuid, conf).filterNot(staged)
  }

  /** Every file under `dir` (recursively) whose name holds `uuid`. */
  def filesNamed(dir: Path, uuid: String, conf: Configuration): Seq[Path] = {
    val fs = dir.getFileSystem(conf)
    val out = Seq.newBuilder[Path]
    try {
      val it = fs.listFiles(dir, true)
      while (it.hasNext) {
        val s = it.next()
        if (s.getPath.getName.contains(uuid)) out += s.getPath
      }
    } catch { case _: FileNotFoundException => }
    out.result()
  }

  /** Writes `text` to `p` (replacing it); `durable`: synced to storage before it is closed
    * (the markers in a target are not: they are as durable as the files the same commit
    * publishes, which Hadoop's commit does not sync either). */
  def writeText(p: Path, text: String, conf: Configuration, durable: Boolean = false): Unit = {
    val fs = p.getFileSystem(conf)
    val out = fs.create(p, true)
    try {
      out.write(text.getBytes(StandardCharsets.UTF_8))
      if (durable) DurableCommit.sync(out)
    } finally out.close()
  }

  def readText(p: Path, conf: Configuration): String = {
    val fs = p.getFileSystem(conf)
    val in = fs.open(p)
    try new String(in.readAllBytes(), StandardCharsets.UTF_8) finally in.close()
  }
}

/**
 * The commit protocol of a recovered job's file writes: the session's own protocol (Spark's,
 * or one a user configured, such as S3A's committers), with the markers of [[FileSink]] written
 * around its job setup and commit, for the recovered write running into its target
 * ([[FileSink.runningInto]]). The session's protocol while any recovered file write of the session
 * runs ([[FileSink.running]]); with no recovered write into its target it is the inner one alone.
 */
class FullWindowCommitProtocol(jobId: String, path: String, dynamicPartitionOverwrite: Boolean)
  extends FileCommitProtocol with Serializable with Logging {

  // the recovered write running into this target (none: the inner protocol alone)
  private val (markerDir, writeId): (String, String) = FileSink.runningInto(path) match {
    case Some(r) => (r.markerDir, r.writeId)
    case None => (null, null)
  }

  private val inner: FileCommitProtocol = FileCommitProtocol.instantiate(
    SQLConf.get.getConfString(FileSink.InnerKey,
      "org.apache.spark.sql.execution.datasources.SQLHadoopMapReduceCommitProtocol"),
    jobId, path, dynamicPartitionOverwrite)

  private def marker(state: String): Path = new Path(markerDir, s"$writeId.$state.$jobId")

  override def setupJob(jobContext: JobContext): Unit = {
    inner.setupJob(jobContext)
    if (markerDir != null) FileSink.writeText(marker("started"), "", jobContext.getConfiguration)
  }

  override def commitJob(jobContext: JobContext, taskCommits: Seq[TaskCommitMessage]): Unit = {
    if (markerDir == null) return inner.commitJob(jobContext, taskCommits)
    val conf = jobContext.getConfiguration
    val root = new Path(path)
    val staged = Seq(new Path(root, "_temporary"), new Path(root, s".spark-staging-$jobId"))
      .flatMap(d => FileSink.filesNamed(d, jobId, conf)).map(_.getName).distinct.size
    FileSink.writeText(marker("committing"), staged.toString, conf)
    inner.commitJob(jobContext, taskCommits)
    FileSink.writeText(marker("committed"), staged.toString, conf)
  }

  override def abortJob(jobContext: JobContext): Unit = {
    inner.abortJob(jobContext)
    if (markerDir != null) {
      val p = marker("started")
      try p.getFileSystem(jobContext.getConfiguration).delete(p, false)
      catch { case NonFatal(_) => }
    }
  }

  override def setupTask(taskContext: TaskAttemptContext): Unit = inner.setupTask(taskContext)

  @deprecated("use newTaskTempFile(taskContext, dir, spec)", "3.3.0")
  override def newTaskTempFile(taskContext: TaskAttemptContext, dir: Option[String],
      ext: String): String = inner.newTaskTempFile(taskContext, dir, FileNameSpec("", ext))

  override def newTaskTempFile(taskContext: TaskAttemptContext, dir: Option[String],
      spec: FileNameSpec): String = inner.newTaskTempFile(taskContext, dir, spec)

  @deprecated("use newTaskTempFileAbsPath(taskContext, absoluteDir, spec)", "3.3.0")
  override def newTaskTempFileAbsPath(taskContext: TaskAttemptContext, absoluteDir: String,
      ext: String): String =
    inner.newTaskTempFileAbsPath(taskContext, absoluteDir, FileNameSpec("", ext))

  override def newTaskTempFileAbsPath(taskContext: TaskAttemptContext, absoluteDir: String,
      spec: FileNameSpec): String = inner.newTaskTempFileAbsPath(taskContext, absoluteDir, spec)

  override def commitTask(taskContext: TaskAttemptContext): TaskCommitMessage =
    inner.commitTask(taskContext)

  override def abortTask(taskContext: TaskAttemptContext): Unit = inner.abortTask(taskContext)

  override def deleteWithJob(fs: FileSystem, path: Path, recursive: Boolean): Boolean =
    inner.deleteWithJob(fs, path, recursive)

  override def onTaskCommit(taskCommit: TaskCommitMessage): Unit = inner.onTaskCommit(taskCommit)
}
