package org.apache.spark.sql.fullwindow.recovery

import java.io.{BufferedInputStream, BufferedOutputStream, DataInputStream, DataOutputStream, EOFException, InputStream}
import java.util.zip.{CRC32, CheckedOutputStream}

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, LocalFileSystem, Path}

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.StructType
import org.apache.spark.util.ThreadUtils

/**
 * The file format of a committed partition: a 4-byte magic, then each row as its UnsafeRow bytes
 * prefixed by their length, then a length of -1 as end marker. The CRC32 and size of the whole
 * file go into the task-finished event; a file whose CRC or size does not match is not used.
 */
object CommittedRows {
  val Magic: Int = 0x46575231 // "FWR1"
  private val BufferSize = 1 << 16

  final case class Committed(path: String, rows: Long, bytes: Long, crc: Long)

  /**
   * The file system of a committed file; for a local directory the raw one: Hadoop's local file
   * system would checksum every byte a second time (its `.crc` side files) on top of the CRC32
   * these files carry in their events.
   */
  def fileSystem(p: Path, hadoopConf: Configuration): FileSystem = p.getFileSystem(hadoopConf) match {
    case local: LocalFileSystem => local.getRaw
    case fs => fs
  }

  /**
   * Passes `rows` through while writing them to a temporary file next to `finalPath`; once they
   * are all consumed the file is closed and renamed to `finalPath` and `onCommit` is called.
   * `onDiscard` cleans up a temporary file left by a task that did not get to the end.
   */
  class CommittingIterator(
      rows: Iterator[InternalRow],
      schema: StructType,
      finalPath: String,
      hadoopConf: Configuration,
      onCommit: Committed => Unit) extends Iterator[InternalRow] {

    private val target = new Path(finalPath)
    private val temp = new Path(target.getParent, "." + target.getName + ".tmp")
    private val fs = fileSystem(target, hadoopConf)
    private val crc = new CRC32
    private val raw = fs.create(temp, true)
    private val counted = new CountingStream(raw)
    private val out = new DataOutputStream(new BufferedOutputStream(
      new CheckedOutputStream(counted, crc), BufferSize))
    private val project = UnsafeProjection.create(schema)
    private val writeBuffer = new Array[Byte](4096)
    private var count = 0L
    private var done = false
    out.writeInt(Magic)

    override def hasNext: Boolean = {
      val more = rows.hasNext
      if (!more && !done) finish()
      more
    }

    override def next(): InternalRow = {
      val row = rows.next()
      val u = project(row)
      out.writeInt(u.getSizeInBytes)
      u.writeToStream(out, writeBuffer)
      count += 1
      row
    }

    private def finish(): Unit = {
      done = true
      out.writeInt(-1)
      out.flush()
      DurableCommit.sync(raw)
      out.close()
      DurableCommit.rename(fs, temp, target)
      onCommit(Committed(target.toString, count, counted.count, crc.getValue))
    }

    /** Drops the temporary file when the task ends without having committed. */
    def discard(): Unit = if (!done) {
      done = true
      try out.close() catch { case _: Throwable => }
      try fs.delete(temp, false) catch { case _: Throwable => }
    }
  }

  private class CountingStream(under: java.io.OutputStream) extends java.io.FilterOutputStream(under) {
    var count = 0L
    override def write(b: Int): Unit = { under.write(b); count += 1 }
    override def write(b: Array[Byte], off: Int, len: Int): Unit = { under.write(b, off, len); count += len }
    override def flush(): Unit = under.flush()
    override def close(): Unit = under.close()
  }

  /** The rows of a committed file (verified beforehand), read lazily; closes at the end. */
  def read(path: String, numFields: Int, hadoopConf: Configuration): Iterator[InternalRow] = {
    val p = new Path(path)
    val in = new DataInputStream(new BufferedInputStream(fileSystem(p, hadoopConf).open(p), BufferSize))
    if (in.readInt() != Magic) {
      in.close()
      throw new java.io.IOException(s"fullwindow recovery: $path is not a committed partition file")
    }
    new Iterator[InternalRow] {
      private var nextLen = in.readInt()
      override def hasNext: Boolean = {
        if (nextLen < 0) in.close()
        nextLen >= 0
      }
      override def next(): InternalRow = {
        if (nextLen < 0) throw new NoSuchElementException
        val bytes = new Array[Byte](nextLen)
        in.readFully(bytes)
        val row = new UnsafeRow(numFields)
        row.pointTo(bytes, nextLen)
        nextLen = in.readInt()
        row
      }
    }
  }

  /** Threads that verify committed files at once: the work is reading and checksumming files
    * (I/O bound on remote file systems), independent per file. */
  private val VerifyThreads = 8

  /** For each file `(path, bytes, crc)`, whether it is intact (see `verify`; an I/O error is
    * "not intact"), checked several files at a time; the answers are in the order given. */
  def verifyAll(files: Seq[(String, Long, Long)], hadoopConf: Configuration): Seq[Boolean] = {
    def intact(f: (String, Long, Long)): Boolean =
      try verify(f._1, f._2, f._3, hadoopConf) catch { case _: java.io.IOException => false }
    if (files.size <= 1) files.map(intact)
    else ThreadUtils.parmap(files, "fullwindow-verify", math.min(files.size, VerifyThreads))(intact)
  }

  /** True when the file at `path` exists with exactly `bytes` bytes and CRC32 `crc`. */
  def verify(path: String, bytes: Long, crc: Long, hadoopConf: Configuration): Boolean = {
    val p = new Path(path)
    val fs = fileSystem(p, hadoopConf)
    if (!fs.exists(p) || fs.getFileStatus(p).getLen != bytes) return false
    val in: InputStream = fs.open(p)
    try {
      val c = new CRC32
      val buf = new Array[Byte](BufferSize)
      var n = in.read(buf)
      while (n >= 0) { c.update(buf, 0, n); n = in.read(buf) }
      c.getValue == crc
    } catch {
      case _: EOFException => false
    } finally in.close()
  }
}
