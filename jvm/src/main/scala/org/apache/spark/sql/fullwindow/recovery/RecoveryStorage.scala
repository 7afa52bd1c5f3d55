package org.apache.spark.sql.fullwindow.recovery

import java.io.{ByteArrayOutputStream, FileNotFoundException, IOException, InputStream}
import java.nio.charset.StandardCharsets
import java.util.Locale

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{Abortable, EtagSource, FileAlreadyExistsException, FileSystem, FSDataOutputStream, Path, StreamCapabilities}

import org.apache.spark.util.ThreadUtils

/**
 * What recovery needs of the file system under its directory, and the few operations it does
 * there beyond reading and listing, for the Python runtime (which calls these through py4j) and
 * for committed files:
 *
 *  - '''durable event writes''': appending to a file and syncing it (`hsync`, reported by the
 *    file system's output streams: HDFS), or, on a store without append and sync, writing each
 *    flush as an object of its own with create-if-absent;
 *  - '''create-if-absent''': a create that exactly one of two racing writers wins: the store's
 *    conditional create (`fs.option.create.conditional.overwrite`, S3's `If-None-Match: *`), or
 *    `create(path, overwrite = false)` on a file system with a namespace that syncs (HDFS: the
 *    name node decides);
 *  - '''a renewable lease''': setting a file's modification time (`setTimes`, checked by doing
 *    it), or overwriting it only while its ETag is unchanged
 *    (`fs.option.create.conditional.overwrite.etag`, S3's `If-Match`);
 *  - '''committed files''' written to a temporary name and renamed, or, where output streams
 *    are abortable (an object store: nothing is visible before `close`), written in place and
 *    aborted when the task fails.
 *
 * Each is decided from what the file system reports (path and stream capabilities) or does (a
 * probe), never from the URI scheme.
 */
object RecoveryStorage {
  val ConditionalCreate = "fs.option.create.conditional.overwrite"
  val ConditionalEtag = "fs.option.create.conditional.overwrite.etag"
  val AbortableStream = "fs.capability.outputstream.abortable"
  val Etags = "fs.capability.etags.available"

  private def resolve(path: String, conf: Configuration): (FileSystem, Path) = {
    val p = new Path(path)
    (CommittedRows.fileSystem(p, conf), p)
  }

  private def has(fs: FileSystem, p: Path, capability: String): Boolean =
    try fs.hasPathCapability(p, capability) catch { case NonFatal(_) => false }

  /** Whether streams `fs` writes under `p` can be synced to storage (`hsync`). */
  private def streamsSync(fs: FileSystem, probe: Path): Boolean = {
    val out = fs.create(probe, true)
    try out.hasCapability(StreamCapabilities.HSYNC)
    finally {
      try out.close() catch { case NonFatal(_) => }
      try fs.delete(probe, false) catch { case NonFatal(_) => }
    }
  }

  /** Whether `setTimes` on a file under `p` changes what its status reports. */
  private def setTimesWorks(fs: FileSystem, probe: Path): Boolean = {
    val out = fs.create(probe, true)
    out.close()
    try {
      val target = 946684800000L // 2000-01-01: unlike any time a file is written
      fs.setTimes(probe, target, -1)
      fs.getFileStatus(probe).getModificationTime == target
    } catch {
      case NonFatal(_) => false
    } finally {
      try fs.delete(probe, false) catch { case NonFatal(_) => }
    }
  }

  /**
   * What the file system of directory `dir` (created if missing) gives recovery, as
   * `key=value` lines: `events` (`append`, `objects` or `none`), `create` (`conditional`,
   * `exclusive` or `none`), `lease` (`mtime`, `etag` or `none`), `commit` (`rename` or `direct`),
   * `scheme`, `filesystem` (its class) and `hadoop` (the Hadoop client version). Probes with
   * small files under `dir`, deleted afterwards.
   */
  def describe(dir: String, conf: Configuration): String = {
    val (fs, d) = resolve(dir, conf)
    fs.mkdirs(d)
    val tag = java.util.UUID.randomUUID().toString.take(8)
    val conditional = has(fs, d, ConditionalCreate)
    val etagOverwrite = conditional && has(fs, d, ConditionalEtag) && has(fs, d, Etags)
    val syncs = streamsSync(fs, new Path(d, s".probe-sync-$tag"))
    val events = if (syncs) "append" else if (conditional) "objects" else "none"
    val create = if (conditional) "conditional" else if (syncs) "exclusive" else "none"
    val lease =
      if (setTimesWorks(fs, new Path(d, s".probe-times-$tag"))) "mtime"
      else if (etagOverwrite) "etag"
      else "none"
    val commit = if (has(fs, d, AbortableStream)) "direct" else "rename"
    Seq(s"events=$events", s"create=$create", s"lease=$lease", s"commit=$commit",
      s"scheme=${Option(fs.getUri.getScheme).getOrElse("")}", s"filesystem=${fs.getClass.getName}",
      s"hadoop=${org.apache.hadoop.util.VersionInfo.getVersion}").mkString("\n")
  }

  /** Whether `err` (or a cause) says that a conditional write lost: the object exists, or its
    * ETag no longer matches (HTTP 412). */
  private def lostRace(err: Throwable): Boolean = {
    var e = err
    var depth = 0
    while (e != null && depth < 10) {
      if (e.isInstanceOf[FileAlreadyExistsException]) return true
      val name = e.getClass.getName
      val text = String.valueOf(e.getMessage).toLowerCase(Locale.ROOT)
      if (name.endsWith("RemoteFileChangedException") || text.contains("precondition") ||
          text.contains("412") || text.contains("already exists")) return true
      e = e.getCause
      depth += 1
    }
    false
  }

  private def writeAll(out: FSDataOutputStream, data: Array[Byte]): Unit = {
    try {
      out.write(data)
      DurableCommit.sync(out)
    } catch {
      case NonFatal(e) =>
        abort(out)
        throw e
    }
    out.close()
  }

  /** Aborts `out` where it can be (nothing of it becomes visible), else closes it. */
  def abort(out: java.io.OutputStream): Unit = {
    out match {
      case a: FSDataOutputStream => a.getWrappedStream match {
        case w: Abortable => try w.abort() catch { case NonFatal(_) => }
        case _ =>
      }
      case _ =>
    }
    try out.close() catch { case NonFatal(_) => }
  }

  /**
   * Creates `path` holding `data` if nothing is there, atomically with respect to other writers
   * (see [[describe]]: `create=conditional` or `exclusive`): true when this call created it,
   * false when another writer's object or file is there. A write that failed in a way that
   * leaves its outcome open is settled by reading back: `data` should be unique to the writer.
   */
  def createIfAbsent(path: String, data: Array[Byte], conf: Configuration): Boolean = {
    val (fs, p) = resolve(path, conf)
    val conditional = has(fs, p, ConditionalCreate)
    try {
      val out =
        if (conditional) fs.createFile(p).overwrite(false).must(ConditionalCreate, true).build()
        else fs.create(p, false)
      writeAll(out, data)
      true
    } catch {
      case NonFatal(e) =>
        // a retried request may have written ours before it was refused: ours if it reads back;
        // another writer's (or one being written: HDFS's AlreadyBeingCreatedException) if
        // something else is there; a failure of its own if nothing is
        val there = readOrNull(fs, p)
        if (java.util.Arrays.equals(there, data)) true
        else if (lostRace(e) || there != null || exists(fs, p)) false
        else throw e
    }
  }

  /** The ETag of `path` (null when it is missing or the store keeps none). */
  def etag(path: String, conf: Configuration): String = {
    val (fs, p) = resolve(path, conf)
    try fs.getFileStatus(p) match {
      case e: EtagSource => Option(e.getEtag).filter(_.nonEmpty).orNull
      case _ => null
    } catch {
      case _: FileNotFoundException => null
    }
  }

  /**
   * Replaces `path`'s content with `data` if its ETag is still `etag` (S3's `If-Match`): the new
   * ETag, or null when the object changed or vanished since (another writer won).
   */
  def overwriteIfMatch(path: String, data: Array[Byte], etag: String,
      conf: Configuration): String = {
    val (fs, p) = resolve(path, conf)
    try {
      val out = fs.createFile(p).overwrite(true).must(ConditionalEtag, etag).build()
      writeAll(out, data)
    } catch {
      case NonFatal(e) if lostRace(e) || e.isInstanceOf[FileNotFoundException] => return null
    }
    // only the writer that holds the current ETag overwrites, so the object's ETag now is ours
    this.etag(path, conf)
  }

  private def exists(fs: FileSystem, p: Path): Boolean =
    try fs.exists(p) catch { case NonFatal(_) => false }

  private def readOrNull(fs: FileSystem, p: Path): Array[Byte] =
    try readFully(fs.open(p)) catch { case NonFatal(_) => null }

  private def readFully(in: InputStream): Array[Byte] = {
    try {
      val out = new ByteArrayOutputStream()
      val buf = new Array[Byte](1 << 16)
      var n = in.read(buf)
      while (n >= 0) { out.write(buf, 0, n); n = in.read(buf) }
      out.toByteArray
    } finally in.close()
  }

  /** Reads several files at once (I/O bound on an object store: one request each); a missing or
    * unreadable file is null. */
  def readAll(paths: Array[String], conf: Configuration): Array[Array[Byte]] = {
    def one(path: String): Array[Byte] = {
      val (fs, p) = resolve(path, conf)
      try readFully(fs.open(p)) catch { case _: IOException => null }
    }
    if (paths.length <= 1) paths.map(one)
    else ThreadUtils.parmap(paths.toSeq, "fullwindow-read", math.min(paths.length, 16))(one).toArray
  }

  /** The names and lengths of the entries of directory `dir`, one `name TAB length` line each
    * (none when it is missing): one listing. */
  def list(dir: String, conf: Configuration): String = {
    val (fs, d) = resolve(dir, conf)
    try fs.listStatus(d).map(s => s"${s.getPath.getName}\t${s.getLen}").sorted.mkString("\n")
    catch { case _: FileNotFoundException => "" }
  }

  def utf8(s: String): Array[Byte] = s.getBytes(StandardCharsets.UTF_8)
}
