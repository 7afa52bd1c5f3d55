package org.apache.spark.sql.fullwindow.recovery

import java.io.{File, IOException}
import java.nio.channels.FileChannel
import java.nio.file.{Files, StandardCopyOption, StandardOpenOption}

import org.apache.hadoop.fs.{FileSystem, Path, RawLocalFileSystem, Syncable}

/**
 * Makes a committed file durable before anything names it: its content is synced, it is renamed
 * to its final name, and on a local file system the directory holding that name is synced too
 * (a rename lives in the directory, which fsync of the file does not cover). On other Hadoop file
 * systems the content is synced through the stream (`hsync`) before it is closed, and the rename
 * is a name-node operation that is durable when it returns (HDFS). Called where a committed file
 * is renamed into place; the task-finished event naming it is written only after the task ends.
 */
object DurableCommit {

  /** Syncs `out` (the stream `temp` was written through) to storage where it can be. */
  def sync(out: java.io.OutputStream): Unit = out match {
    case s: Syncable => s.hsync()
    case _ =>
  }

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

  /** Copies the local file `local` to `temp` on `fs`, synced before it is closed. */
  def copyFromLocal(fs: FileSystem, local: File, temp: Path): Unit = {
    val out = fs.create(temp, true)
    try {
      Files.copy(local.toPath, out)
      out.hsync()
    } finally out.close()
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
