package org.apache.spark.sql.fullwindow.recovery

import java.io.{BufferedInputStream, BufferedOutputStream, DataInputStream, DataOutputStream, EOFException, FileNotFoundException, InputStream}
import java.util.zip.{CRC32, CheckedOutputStream}

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, LocalFileSystem, Path}

import org.apache.spark.{SparkConf, SparkContext, SparkEnv}
import org.apache.spark.io.CompressionCodec
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.StructType
import org.apache.spark.util.{SerializableConfiguration, ThreadUtils}

/**
 * The file format of a committed partition: a 4-byte magic "FWR2" and the name of the Spark
 * compression codec (`spark.io.compression.codec` of the run that wrote it, as `writeUTF`), then,
 * compressed with that codec, each row as its UnsafeRow bytes prefixed by their length and a
 * length of -1 as end marker. Files of earlier versions ("FWR1") hold the same rows uncompressed
 * right after the magic. The file names its own codec, so a later run with another codec setting
 * still reads it; the codec also goes into the task-finished event. The CRC32 and size of the
 * whole file as stored go into the task-finished event; a file whose CRC or size does not match
 * is not used.
 */
object CommittedRows {
  val Magic: Int = 0x46575231 // "FWR1": uncompressed
  val CompressedMagic: Int = 0x46575232 // "FWR2": codec name, then compressed rows
  private val BufferSize = 1 << 16

  final case class Committed(path: String, rows: Long, bytes: Long, crc: Long, codec: String)

  /** Spark's conf where this runs (the executor's or the driver's). */
  private def sparkConf: SparkConf = Option(SparkEnv.get).map(_.conf).getOrElse(new SparkConf)

  /** The compression codec committed files are written with: Spark's own setting. */
  def codecName(conf: SparkConf): String = CompressionCodec.getCodecName(conf)

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
   * Passes `rows` through while writing them to a temporary file next to `finalPath` (on an
   * object store: to `finalPath` itself, see [[DurableCommit.direct]]); once they are all
   * consumed the file is closed and renamed to `finalPath` and `onCommit` is called.
   * `onDiscard` cleans up a temporary file left by a task that did not get to the end.
   */
  class CommittingIterator(
      rows: Iterator[InternalRow],
      schema: StructType,
      finalPath: String,
      hadoopConf: Configuration,
      onCommit: Committed => Unit) extends Iterator[InternalRow] {

    private val target = new Path(finalPath)
    private val fs = fileSystem(target, hadoopConf)
    // an object store's file is written in place: it becomes visible only whole, at close
    private val direct = DurableCommit.direct(fs, target)
    private val temp = if (direct) target else new Path(target.getParent, "." + target.getName + ".tmp")
    private val crc = new CRC32
    private val conf = sparkConf
    private val codec = codecName(conf)
    private val raw = if (direct) DurableCommit.createInPlace(fs, temp) else fs.create(temp, true)
    // closing the row stream finishes the compressed stream (its end mark) but leaves `raw` open,
    // to be synced and closed after it
    private val counted = new CountingStream(raw)
    private val checked = new CheckedOutputStream(counted, crc)
    private val out = {
      val header = new DataOutputStream(checked)
      header.writeInt(CompressedMagic)
      header.writeUTF(codec)
      header.flush()
      new DataOutputStream(new BufferedOutputStream(
        CompressionCodec.createCodec(conf, codec).compressedOutputStream(checked), BufferSize))
    }
    private val project = UnsafeProjection.create(schema)
    private val writeBuffer = new Array[Byte](4096)
    private var count = 0L
    private var done = false

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
      out.close() // the codec's end mark; `raw` stays open
      DurableCommit.sync(raw)
      raw.close()
      if (!direct) DurableCommit.rename(fs, temp, target)
      onCommit(Committed(target.toString, count, counted.count, crc.getValue, codec))
    }

    /** Drops the temporary file when the task ends without having committed. */
    def discard(): Unit = if (!done) {
      done = true
      try out.close() catch { case _: Throwable => } // `raw` stays open
      if (direct) RecoveryStorage.abort(raw) // nothing of it becomes visible
      else {
        try raw.close() catch { case _: Throwable => }
        try fs.delete(temp, false) catch { case _: Throwable => }
      }
    }
  }

  /** Counts what goes through to `under`; closing it does not close `under`. */
  private class CountingStream(under: java.io.OutputStream) extends java.io.FilterOutputStream(under) {
    var count = 0L
    override def write(b: Int): Unit = { under.write(b); count += 1 }
    override def write(b: Array[Byte], off: Int, len: Int): Unit = { under.write(b, off, len); count += len }
    override def flush(): Unit = under.flush()
    override def close(): Unit = under.flush()
  }

  /** The rows of a committed file (verified beforehand), read lazily; closes at the end. */
  def read(path: String, numFields: Int, hadoopConf: Configuration): Iterator[InternalRow] = {
    val p = new Path(path)
    val file = new DataInputStream(new BufferedInputStream(fileSystem(p, hadoopConf).open(p), BufferSize))
    val in = try file.readInt() match {
      case Magic => file
      case CompressedMagic =>
        val codec = file.readUTF()
        new DataInputStream(new BufferedInputStream(
          CompressionCodec.createCodec(sparkConf, codec).compressedInputStream(file), BufferSize))
      case _ =>
        throw new java.io.IOException(s"fullwindow recovery: $path is not a committed partition file")
    } catch {
      case e: Throwable => file.close(); throw e
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

  /** Threads that verify committed files at once in one process: the work is reading and
    * checksumming files (I/O bound on remote file systems), independent per file. */
  private val VerifyThreads = 8

  /**
   * For each file `(path, bytes, crc)`, whether it is intact (see `verify`; an I/O error is "not
   * intact"); the answers are in the order given. The driver checks metadata only: one listing
   * per directory the files are in gives their existence and length. The bytes are read and
   * checksummed where executors run: in a Spark job over the files whose length is right, several
   * files per task (with a local master the executors are this JVM: the same check runs here, on
   * threads, without the cost of a job). Nothing the driver reads grows with the committed bytes.
   */
  def verifyAll(files: Seq[(String, Long, Long)], sc: SparkContext): Seq[Boolean] = {
    val hadoopConf = sc.hadoopConfiguration
    val sized = lengthsMatch(files, hadoopConf)
    val toCheck = files.indices.filter(sized)
    val crcOk = new Array[Boolean](files.size)
    if (toCheck.nonEmpty) {
      if (sc.isLocal) {
        def intact(i: Int): Boolean = crcMatches(files(i)._1, files(i)._3, hadoopConf)
        val answers =
          if (toCheck.size <= 1) toCheck.map(intact)
          else ThreadUtils.parmap(toCheck, "fullwindow-verify", math.min(toCheck.size, VerifyThreads))(intact)
        toCheck.zip(answers).foreach { case (i, ok) => crcOk(i) = ok }
      } else {
        val conf = sc.broadcast(new SerializableConfiguration(hadoopConf))
        val items = toCheck.map(i => (i, files(i)._1, files(i)._3))
        val slices = math.min(items.size, math.max(1, sc.defaultParallelism * 2))
        val before = sc.getLocalProperty(SparkContext.SPARK_JOB_DESCRIPTION)
        sc.setLocalProperty(SparkContext.SPARK_JOB_DESCRIPTION,
          s"fullwindow recovery: check the CRC32 of ${items.size} committed files")
        try {
          sc.parallelize(items, slices).mapPartitions { it =>
            val hc = conf.value.value
            it.map { case (i, path, crc) => (i, crcMatches(path, crc, hc)) }
          }.collect().foreach { case (i, ok) => crcOk(i) = ok }
        } finally {
          sc.setLocalProperty(SparkContext.SPARK_JOB_DESCRIPTION, before)
          conf.destroy()
        }
      }
    }
    files.indices.map(crcOk)
  }

  /** For each file `(path, bytes, _)`, whether it exists with exactly `bytes` bytes: one listing
    * of each directory holding some of them (a directory that cannot be listed: each file on its
    * own). Reads no file. */
  def lengthsMatch(files: Seq[(String, Long, Long)], hadoopConf: Configuration): Seq[Boolean] = {
    val byDir = files.indices.groupBy(i => new Path(files(i)._1).getParent)
    val ok = new Array[Boolean](files.size)
    byDir.foreach { case (dir, idx) =>
      val fs = fileSystem(dir, hadoopConf)
      val lengths: Option[Map[String, Long]] =
        try Some(fs.listStatus(dir).iterator.map(s => s.getPath.getName -> s.getLen).toMap)
        catch {
          case _: FileNotFoundException => Some(Map.empty)
          case _: java.io.IOException => None
        }
      idx.foreach { i =>
        val p = new Path(files(i)._1)
        ok(i) = lengths match {
          case Some(m) => m.get(p.getName).contains(files(i)._2) // names within one listing
          case None =>
            try fs.getFileStatus(p).getLen == files(i)._2
            catch { case _: java.io.IOException => false }
        }
      }
    }
    ok.toSeq
  }

  /** Whether the file at `path` has CRC32 `crc` (a file that cannot be read: false). */
  def crcMatches(path: String, crc: Long, hadoopConf: Configuration): Boolean = {
    val p = new Path(path)
    try {
      val in: InputStream = fileSystem(p, hadoopConf).open(p)
      try crcOf(in) == crc finally in.close()
    } catch {
      case _: java.io.IOException => false
    }
  }

  /** True when the file at `path` exists with exactly `bytes` bytes and CRC32 `crc`. */
  def verify(path: String, bytes: Long, crc: Long, hadoopConf: Configuration): Boolean = {
    val p = new Path(path)
    val fs = fileSystem(p, hadoopConf)
    if (!fs.exists(p) || fs.getFileStatus(p).getLen != bytes) return false
    val in: InputStream = fs.open(p)
    try crcOf(in) == crc catch {
      case _: EOFException => false
    } finally in.close()
  }

  /** The CRC32 of what is left in `in`, read to its end. */
  private def crcOf(in: InputStream): Long = {
    val c = new CRC32
    val buf = new Array[Byte](BufferSize)
    var n = in.read(buf)
    while (n >= 0) { c.update(buf, 0, n); n = in.read(buf) }
    c.getValue
  }
}
