package org.apache.spark.sql.fullwindow.recovery

import java.io.{File, IOException}
import java.nio.channels.FileChannel
import java.nio.file.{Files, StandardCopyOption, StandardOpenOption}

import org.apache.hadoop.fs.{FileSystem, FSDataOutputStream, Path, RawLocalFileSystem, StreamCapabilities, Syncable}

/**
 * Makes a committed file durable before anything names it: its content is synced, it is renamed
 * to its final name, and on a local file system the directory holding that name is synced too
 * (a rename lives in the directory, which fsync of the file does not cover). On other Hadoop file
 * systems the content is synced through the stream (`hsync`) before it is closed, and the rename
 * is a name-node operation that is durable when it returns (HDFS). On an object store (its output
 * streams are abortable: nothing of an object is visible before `close`, and `close` makes all
 * of it durable) a committed file is written under its final name directly, without a rename
 * the store does not have, and aborted when its task fails ([[direct]]). Called where a committed
 * file is put into place; the task-finished event naming it is written only after the task ends.
 */
object DurableCommit {

  /** Syncs `out` (the stream `temp` was written through) to storage where it can be: a stream
    * that does not report `hsync` (an object store's, durable at `close`) is left alone. */
  def sync(out: java.io.OutputStream): Unit = out match {
    case s: Syncable with StreamCapabilities =>
      if (s.hasCapability(StreamCapabilities.HSYNC)) s.hsync()
    case s: Syncable => s.hsync()
    case _ =>
  }

  /**
   * A new file at `p` written in place on an object store: its name is unique (attempt id and a
   * random part), so the store's checks that nothing is there (S3A: a HEAD and a LIST before
   * each create) are skipped where it allows (`fs.s3a.create.performance`); one upload, at close.
   */
  def createInPlace(fs: FileSystem, p: Path): FSDataOutputStream =
    fs.createFile(p).overwrite(true).opt("fs.s3a.create.performance", true).build()

  /** Whether committed files under `p` are written in place (see the class comment). */
  def direct(fs: FileSystem, p: Path): Boolean =
    localFile(fs, p).isEmpty &&
      (try fs.hasPathCapability(p, RecoveryStorage.AbortableStream) catch { case _: Exception => false })

  /** Renames the written and closed file `temp` to `target`, durably. */
  def rename(fs: FileSystem, temp: Path, target: Path): Unit = localFile(fs, temp) match {
    case Some(tmp) =>
      val dest = localFile(fs, target).get
      force(tmp, directory = false)
      Files.move(tmp.toPath, dest.toPath, StandardCopyOption.ATOMIC_MOVE)
      force(dest.getParentFile, directory = true)
    case None =>
      if (!fs.rename(temp, target)) {
        throw new IOException(s"fullwindow recovery: could not rename $temp to $target")
      }
  }

  /** Copies the local file `local` to `temp` on `fs`, synced before it is closed (aborted, where
    * the stream can be, when the copy fails). */
  def copyFromLocal(fs: FileSystem, local: File, temp: Path, inPlace: Boolean = false): Unit = {
    val out = if (inPlace) createInPlace(fs, temp) else fs.create(temp, true)
    try {
      Files.copy(local.toPath, out)
      sync(out)
    } catch {
      case e: Throwable =>
        RecoveryStorage.abort(out)
        throw e
    }
    out.close()
  }

  /** The local file behind `p` when `fs` is the (raw) local file system. */
  def localFile(fs: FileSystem, p: Path): Option[File] = fs match {
    case r: RawLocalFileSystem => Some(r.pathToFile(p))
    case _ => None
  }

  /** fsync of a file's content, or of a directory's entries. */
  def force(f: File, directory: Boolean): Unit = {
    val ch = FileChannel.open(f.toPath,
      if (directory) StandardOpenOption.READ else StandardOpenOption.WRITE)
    try ch.force(true) finally ch.close()
  }
}
