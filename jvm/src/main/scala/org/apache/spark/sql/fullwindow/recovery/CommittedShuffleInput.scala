package org.apache.spark.sql.fullwindow.recovery

import java.io.{BufferedInputStream, DataInputStream, File, FileInputStream, IOException, InputStream}
import java.nio.file.{Files, StandardCopyOption}
import java.util.zip.CRC32

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import org.apache.spark.{ShuffleDependency, SparkConf, SparkEnv, TaskContext}
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.network.util.LimitedInputStream
import org.apache.spark.scheduler.MapStatus
import org.apache.spark.shuffle.{IndexShuffleBlockResolver, ShuffleWriteMetricsReporter}
import org.apache.spark.shuffle.sort.SortShuffleManager
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.UnsafeRowSerializer
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLShuffleWriteMetricsReporter}
import org.apache.spark.sql.fullwindow.shims.{CommitAfterShuffleWrite, SparkShims}
import org.apache.spark.storage.ShuffleBlockId
import org.apache.spark.util.{CollectionAccumulator, SerializableConfiguration}

/**
 * A committed shuffle input of a full-window operation, as recorded by an earlier run: the map
 * outputs (Spark's shuffle data and index files, copied or hard-linked under the operation's
 * directory) of input `input` (the `input`-th shuffle read in the operation's stage), all
 * `numMaps` of them, for `numPartitions` shuffle partitions, written with shuffle codec `codec`.
 * `readPart` is how the earlier run's stage read them (its layout part, e.g. `stage(12)` or
 * `read(200:0-5,5-9,...)`), empty when not recorded.
 */
case class CommittedInput(
    input: Int,
    numPartitions: Int,
    numMaps: Int,
    codec: String,
    readPart: String,
    data: Seq[String],
    index: Seq[String])

object CommittedShuffleInput {
  /** Turns committing the shuffle input of full-window operations off (on by default). */
  val EnabledKey = "spark.fullwindow.recovery.commitShuffleInput"

  /** The vertex fingerprint of input `input` of the operation `fingerprint`. */
  def vertexOf(fingerprint: String, input: Int): String = s"$fingerprint/input$input"

  /**
   * What a reader of Spark's shuffle files must agree on with their writer, or None when the
   * files cannot be read by another application (encrypted with this application's key).
   */
  def codecOf(conf: SparkConf): Option[String] =
    if (conf.getBoolean("spark.io.encryption.enabled", false)) None
    else Some(s"compress=${conf.getBoolean("spark.shuffle.compress", true)};" +
      s"codec=${conf.get("spark.io.compression.codec", "lz4")}")

  /**
   * The coalesced ranges of shuffle partitions a recorded layout part reads: one per shuffle
   * partition for a whole stage (`stage(n)` / `exchange(n)`, or nothing recorded), the ranges of
   * a coalescing read (`read(n:a-b,...)`); None for skew splits or other counts than `n`.
   */
  def rangesOf(readPart: String, n: Int): Option[Seq[(Int, Int)]] = {
    val Whole = """(?:stage|exchange)\((\d+)\)""".r
    val Read = """read\((\d+):(.*)\)""".r
    val Range = """(\d+)-(\d+)""".r
    readPart match {
      case "" => Some((0 until n).map(i => (i, i + 1)))
      case Whole(m) if m.toInt == n => Some((0 until n).map(i => (i, i + 1)))
      case Read(m, specs) if m.toInt == n =>
        val ranges = specs.split(",").toSeq.map {
          case Range(s, e) if s.toInt < e.toInt && e.toInt <= n => Some((s.toInt, e.toInt))
          case _ => None
        }
        if (ranges.nonEmpty && ranges.forall(_.isDefined)) Some(ranges.flatten) else None
      case _ => None
    }
  }

  /** The partition offsets (numPartitions + 1 longs) in a shuffle index file. */
  def readOffsets(path: String, numPartitions: Int, hadoopConf: Configuration): Array[Long] = {
    val p = new Path(path)
    val in = new DataInputStream(new BufferedInputStream(CommittedRows.fileSystem(p, hadoopConf).open(p)))
    try Array.fill(numPartitions + 1)(in.readLong()) finally in.close()
  }

  /**
   * The rows of one kept map output (data file `data`, index file `index`, `numPartitions`
   * shuffle partitions, rows of `numFields` fields), as the `(shuffle partition, row)` pairs
   * its map task gave the shuffle writer; rows copied (the writer may buffer them).
   */
  def readMap(data: String, index: String, numPartitions: Int, numFields: Int,
      hadoopConf: Configuration, context: TaskContext): Iterator[Product2[Int, InternalRow]] = {
    // read when the rows are: a kept map output placed as it is (restore) never reads them
    lazy val offsets = readOffsets(index, numPartitions, hadoopConf)
    val serializer = new UnsafeRowSerializer(numFields).newInstance()
    val serializerManager = SparkEnv.get.serializerManager
    var open: InputStream = null
    context.addTaskCompletionListener[Unit] { _ => if (open != null) open.close() }
    (0 until numPartitions).iterator.filter(j => offsets(j + 1) > offsets(j)).flatMap { j =>
      if (open != null) open.close()
      val path = new Path(data)
      val in = CommittedRows.fileSystem(path, hadoopConf).open(path)
      in.seek(offsets(j))
      open = serializerManager.wrapStream(ShuffleBlockId(0, 0, j),
        new BufferedInputStream(new LimitedInputStream(in, offsets(j + 1) - offsets(j)), 1 << 16))
      serializer.deserializeStream(open).asKeyValueIterator.map { kv =>
        (j, kv._2.asInstanceOf[InternalRow].copy())
      }
    }
  }

  /**
   * Places the map output an earlier run kept (data file `data`, index file `index`) as map
   * `mapId` of shuffle `shuffleId` under Spark's block resolver, as it is: hard-linked when it is
   * on the executor's local file system, else copied to it; nothing is read row by row or
   * written again. The map output's status, with each partition's length from the index file.
   * Fails (nothing placed) when the data file's size is not the index file's last offset.
   */
  def restore(resolver: IndexShuffleBlockResolver, shuffleId: Int, mapId: Long,
      numPartitions: Int, data: String, index: String, hadoopConf: Configuration,
      metrics: ShuffleWriteMetricsReporter): MapStatus = {
    val offsets = readOffsets(index, numPartitions, hadoopConf)
    val lengths = Array.tabulate(numPartitions)(j => offsets(j + 1) - offsets(j))
    val target = resolver.getDataFile(shuffleId, mapId)
    val tmp = new File(target.getParentFile,
      s".${target.getName}.${java.util.UUID.randomUUID().toString.take(8)}.kept")
    val src = new Path(data)
    val fs = CommittedRows.fileSystem(src, hadoopConf)
    try {
      DurableCommit.localFile(fs, src) match {
        case Some(local) =>
          try Files.createLink(tmp.toPath, local.toPath)
          catch {
            case _: IOException | _: UnsupportedOperationException =>
              Files.copy(local.toPath, tmp.toPath, StandardCopyOption.REPLACE_EXISTING)
          }
        case None =>
          val in = fs.open(src)
          try Files.copy(in, tmp.toPath, StandardCopyOption.REPLACE_EXISTING) finally in.close()
      }
      if (tmp.length() != offsets(numPartitions)) {
        throw new IOException(s"kept map output $data has ${tmp.length()} bytes, its index " +
          s"$index says ${offsets(numPartitions)}")
      }
      resolver.writeMetadataFileAndCommit(shuffleId, mapId, lengths, Array.emptyLongArray, tmp)
    } finally {
      if (tmp.exists()) tmp.delete()  // placed already (renamed), or a failed attempt's
    }
    metrics.incBytesWritten(offsets(numPartitions))  // its records are not counted: unknown
    MapStatus(SparkEnv.get.blockManager.shuffleServerId, lengths, mapId)
  }

  /** A placed file: its qualified path, size and CRC32, and, when it was hard-linked at its
    * final name without being synced ([[place]]'s `unsyncedLink`), that local file. */
  final case class Placed(path: String, bytes: Long, crc: Long, unsynced: Option[File] = None)

  /**
   * Places the local file `local` (absent: an empty file) at `target` under the recovery
   * directory: hard-linked when that is on the same local file system, copied otherwise; written
   * under a temporary name first, then renamed (on an object store: copied in place, visible only
   * whole). Returns its size and CRC32.
   *
   * With `unsyncedLink`, a file that can be hard-linked is linked at its final name directly (a
   * link shows the whole, closed file at once: no temporary name is needed) and not synced: the
   * caller has the driver sync it and its directory before any event names it
   * ([[FullWindowRecoveryListener.afterSync]]), so that the task does not wait on the disk.
   */
  def place(local: File, target: Path, hadoopConf: Configuration,
      unsyncedLink: Boolean = false): Placed = {
    val (bytes, crc) = checksum(local)
    val fs = CommittedRows.fileSystem(target, hadoopConf)
    val temp = new Path(target.getParent, "." + target.getName + ".tmp")
    val linked = DurableCommit.localFile(fs, target).filter { dest =>
      unsyncedLink && local.exists() && {
        Files.createDirectories(dest.toPath.getParent)
        try { Files.createLink(dest.toPath, local.toPath); true }
        catch { case _: IOException | _: UnsupportedOperationException => false }
      }
    }
    if (linked.isDefined) return Placed(fs.makeQualified(target).toString, bytes, crc, linked)
    DurableCommit.localFile(fs, temp) match {
      case Some(tmpFile) =>
        val tmp = tmpFile.toPath
        Files.createDirectories(tmp.getParent)
        Files.deleteIfExists(tmp)
        if (!local.exists()) Files.createFile(tmp)
        else {
          try Files.createLink(tmp, local.toPath)
          catch {
            case _: IOException | _: UnsupportedOperationException =>
              Files.copy(local.toPath, tmp, StandardCopyOption.REPLACE_EXISTING)
          }
        }
        DurableCommit.rename(fs, temp, target)
      case None if DurableCommit.direct(fs, target) =>
        if (local.exists()) DurableCommit.copyFromLocal(fs, local, target, inPlace = true)
        else DurableCommit.createInPlace(fs, target).close()
      case None =>
        if (local.exists()) DurableCommit.copyFromLocal(fs, local, temp)
        else fs.create(temp, true).close()
        DurableCommit.rename(fs, temp, target)
    }
    Placed(fs.makeQualified(target).toString, bytes, crc)
  }

  /** Whether the local file `local` can be hard-linked at `target`: `target` is a path of
    * this machine's file system, on the same file store (device) as `local`. */
  def linkable(local: File, target: Path, hadoopConf: Configuration): Boolean =
    DurableCommit.localFile(CommittedRows.fileSystem(target, hadoopConf), target).exists { dest =>
      try {
        var dir = dest.getAbsoluteFile.toPath.getParent
        while (dir != null && !Files.exists(dir)) dir = dir.getParent
        dir != null && Files.getFileStore(dir) == Files.getFileStore(local.toPath)
      } catch { case _: IOException | _: SecurityException => false }
    }

  private def checksum(f: File): (Long, Long) = {
    val c = new CRC32
    if (!f.exists()) return (0L, c.getValue)
    val in: InputStream = new FileInputStream(f)
    try {
      val buf = new Array[Byte](1 << 16)
      var total = 0L
      var n = in.read(buf)
      while (n >= 0) { c.update(buf, 0, n); total += n; n = in.read(buf) }
      (total, c.getValue)
    } finally in.close()
  }
}

/**
 * Writes a shuffle map task's output as Spark does, then commits it under `inputDir` for a later
 * run of the same job (see [[CommittedShuffleInput.place]]) and reports it through the recovery
 * accumulator as a task-finished event of the input's vertex. A failed commit only costs the
 * later run its reuse: it is logged, the task still succeeds.
 */
class CommittingShuffleWriteProcessor(
    writeMetrics: Map[String, SQLMetric],
    vertex: String,
    layout: String,
    inputDir: String,
    jobDirJson: String,
    conf: Broadcast[SerializableConfiguration],
    acc: CollectionAccumulator[String],
    operator: String = "shuffle input",
    extraJson: String = "",
    keptMaps: Map[Int, (String, String)] = Map.empty) extends CommitAfterShuffleWrite {

  override def createMetricsReporter(context: TaskContext): ShuffleWriteMetricsReporter =
    new SQLShuffleWriteMetricsReporter(context.taskMetrics().shuffleWriteMetrics, writeMetrics)

  /** A map output an earlier run kept (`keptMaps`) is placed as it is (see
   * [[CommittedShuffleInput.restore]]); where that fails, its rows are written again. */
  override protected def restore(
      dep: ShuffleDependency[_, _, _],
      mapId: Long,
      mapIndex: Int,
      context: TaskContext): Option[MapStatus] = keptMaps.get(mapIndex).flatMap {
    case (data, index) =>
      SparkShims.shuffleManagerFor(SparkEnv.get, dep) match {
        case sort: SortShuffleManager =>
          try Some(CommittedShuffleInput.restore(sort.shuffleBlockResolver, dep.shuffleId, mapId,
            dep.partitioner.numPartitions, data, index, conf.value.value,
            createMetricsReporter(context)))
          catch {
            case NonFatal(e) =>
              logWarning(s"fullwindow recovery: could not place the kept map output " +
                s"$mapIndex of $vertex as it is; its rows are written again", e)
              None
          }
        case _ => None
      }
  }

  override protected def afterWrite(
      dep: ShuffleDependency[_, _, _],
      mapId: Long,
      mapIndex: Int,
      context: TaskContext): Unit = {
    if (keptMaps.contains(mapIndex)) return  // written from its kept output: kept already
    SparkShims.shuffleManagerFor(SparkEnv.get, dep) match {
      case sort: SortShuffleManager =>
        val resolver = sort.shuffleBlockResolver
        try {
          val index = resolver.getIndexFile(dep.shuffleId, mapId)
          if (index.exists()) {
            val started = System.nanoTime()
            val name = f"map-$mapIndex%05d-${context.taskAttemptId()}%d-" +
              java.util.UUID.randomUUID().toString.take(8)
            val dir = inputDir.stripSuffix("/")
            val hadoopConf = conf.value.value
            val dataFile = resolver.getDataFile(dep.shuffleId, mapId)
            val dataTarget = new Path(s"$dir/$name.data")
            val indexTarget = new Path(s"$dir/$name.index")
            val esc = FullWindowRecoveryListener.escape _
            def event(data: CommittedShuffleInput.Placed, idx: CommittedShuffleInput.Placed,
                commitMs: Long, extra: String): String =
              s"""{"type":"taskFinished","fingerprint":"${esc(vertex)}",""" +
                s""""operator":"${esc(operator)}","partition":$mapIndex,"layout":"${esc(layout)}",""" +
                s""""job":"$jobDirJson","path":"${esc(data.path)}","bytes":${data.bytes},""" +
                s""""checksum":${data.crc},"indexPath":"${esc(idx.path)}",""" +
                s""""indexBytes":${idx.bytes},"indexChecksum":${idx.crc},""" +
                // how long the task spent keeping its output (what a slow store costs a task)
                s""""commitMs":$commitMs$extra$extraJson"""
            if (CommittedShuffleInput.linkable(index, dataTarget, hadoopConf)) {
              // hard links are synced by the driver before it records the event (the task
              // does not wait on the disk); a copy is synced here
              val data = CommittedShuffleInput.place(dataFile, dataTarget, hadoopConf,
                unsyncedLink = true)
              val idx = CommittedShuffleInput.place(index, indexTarget, hadoopConf,
                unsyncedLink = true)
              acc.add(FullWindowRecoveryListener.afterSync(data.unsynced.toSeq ++ idx.unsynced,
                event(data, idx, (System.nanoTime() - started) / 1000000, "")))
            } else {
              // another store (HDFS, an object store, a local mount of another file system):
              // written by an upload thread of this executor after the task ends, recorded by
              // the driver once both have ended
              val staged = KeptInBackground.stage(Seq(dataFile, index))
              val key = s"${context.taskAttemptId()}"
              val commitMs = (System.nanoTime() - started) / 1000000
              KeptInBackground.submit(key, vertex, staged.flatten) {
                val began = System.nanoTime()
                // a file absent when staged (an empty output) is kept as an empty file
                val data = CommittedShuffleInput.place(staged.head.getOrElse(dataFile),
                  dataTarget, hadoopConf)
                val idx = CommittedShuffleInput.place(staged(1).getOrElse(index), indexTarget,
                  hadoopConf)
                event(data, idx, commitMs,
                  s""","uploadMs":${(System.nanoTime() - began) / 1000000}""")
              }
              acc.add(FullWindowRecoveryListener.keptInBackground(key, vertex))
            }
          }
        } catch {
          case NonFatal(e) =>
            logWarning(s"fullwindow recovery: could not commit map output " +
              s"$mapIndex of $vertex; a later run will compute this input again", e)
        }
      case _ =>
    }
  }
}
