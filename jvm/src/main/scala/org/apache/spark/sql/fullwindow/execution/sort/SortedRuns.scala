package org.apache.spark.sql.fullwindow.execution.sort

import java.io.{BufferedInputStream, BufferedOutputStream, DataInputStream, DataOutputStream, File, FileInputStream, FileOutputStream}

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.{SparkEnv, TaskContext}
import org.apache.spark.executor.TaskMetrics
import org.apache.spark.serializer.SerializerManager
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter
import org.apache.spark.sql.fullwindow.execution.RowSource
import org.apache.spark.storage.{BlockId, DiskBlockManager}
import org.apache.spark.unsafe.Platform

private[execution] final case class RunFile(block: BlockId, file: File)

/**
 * Where runs go: local temp blocks of `disk`, written and read through `serializers` (spill
 * compression and encryption apply), counted in `metrics` (memory and disk bytes spilled); each
 * looked up when first needed (a sort that writes no run needs none of them).
 */
private[execution] final class RunStorage(
    disk0: () => DiskBlockManager,
    serializers0: () => SerializerManager,
    metrics0: () => TaskMetrics) {
  lazy val disk: DiskBlockManager = disk0()
  lazy val serializers: SerializerManager = serializers0()
  lazy val metrics: TaskMetrics = metrics0()
}

private[execution] object RunStorage {
  def apply(disk: DiskBlockManager, serializers: SerializerManager, metrics: TaskMetrics): RunStorage =
    new RunStorage(() => disk, () => serializers, () => metrics)

  /** The running task's: its executor's disk block manager and serializer manager, its metrics. */
  def ofTask(): RunStorage = {
    val ctx = TaskContext.get()
    new RunStorage(() => SparkEnv.get.blockManager.diskBlockManager, () => SparkEnv.get.serializerManager,
      () => ctx.taskMetrics())
  }
}

/**
 * A source of sorted rows; with string or binary columns, the current row's record too: its
 * row's bytes (an UnsafeRow's) at `recordOffset` of `recordBase`, `recordSize` of them, valid
 * until the source advances.
 */
private[execution] abstract class SortedSource extends RowSource {
  def recordBase: AnyRef
  def recordOffset: Long
  def recordSize: Int
}

/**
 * The sorted runs on disk of one columnar sort, in `storage`, and their merge. A run is blocks of
 * up to BlockRows rows: a block is its row count; without string or binary columns, per column a
 * null flag byte (and the rows' null bytes when set) then the values (8 bytes each); with them,
 * the byte count of the rows' records, then the records (as held in the pages: every column of
 * the row). A block holds at most BlockBytes of records unless it is one row. The run ends with a
 * block of no rows.
 */
private[execution] final class SortedRuns(layout: RecordLayout, storage: RunStorage) {
  import SortedRuns._
  import layout.{numCols, numVar}

  private val runs = new ArrayBuffer[RunFile]
  private val reading = new ArrayBuffer[FileRun]
  private var spilledBytes = 0L

  def numRuns: Int = runs.length
  def isEmpty: Boolean = runs.isEmpty
  /** The bytes written to disk. */
  def bytesSpilled: Long = spilledBytes

  /**
   * Writes `count` rows held in `chunks`, the j-th at row index `rowAt(j)`, as a new run; counts
   * its bytes and `heldBytes` (the memory its rows held) as spilled.
   */
  def write(chunks: ColumnChunks, count: Long, rowAt: Long => Long, heldBytes: Long): Unit = {
    val (block, file) = storage.disk.createTempLocalBlock()
    runs += RunFile(block, file)
    val out = new DataOutputStream(new BufferedOutputStream(
      storage.serializers.wrapStream(block, new FileOutputStream(file)), 1 << 16))
    val records = chunks.records
    val bytes = new Array[Byte](BlockRows * 8)
    val vals = new Array[Long](BlockRows)
    try {
      var j = 0L
      while (j < count) {
        var rows = math.min(BlockRows.toLong, count - j).toInt
        if (numVar > 0) { // cut the block at BlockBytes of records
          var recordBytes = 0L
          var i = 0
          var stop = false
          while (i < rows && !stop) {
            val a = records.addr(rowAt(j + i))
            val at = records.atOf(a)
            val size = layout.recordEnd(records.pageOf(a), at) - at
            if (i > 0 && recordBytes + size > BlockBytes) stop = true
            else { recordBytes += size; i += 1 }
          }
          rows = i
          out.writeInt(rows)
          out.writeInt(recordBytes.toInt)
          i = 0
          while (i < rows) {
            val a = records.addr(rowAt(j + i))
            val page = records.pageOf(a)
            val at = records.atOf(a)
            out.write(page, (a & 0xffffffffL).toInt, (layout.recordEnd(page, at) - at).toInt)
            i += 1
          }
        } else {
          out.writeInt(rows)
          var c = 0
          while (c < numCols) {
            var i = 0
            if (chunks.colHasNull(c)) {
              out.writeBoolean(true)
              while (i < rows) { bytes(i) = if (chunks.isNull(c, rowAt(j + i))) 1 else 0; i += 1 }
              out.write(bytes, 0, rows)
            } else out.writeBoolean(false)
            i = 0
            while (i < rows) { vals(i) = chunks.value(c, rowAt(j + i)); i += 1 }
            Platform.copyMemory(vals, Platform.LONG_ARRAY_OFFSET, bytes, Platform.BYTE_ARRAY_OFFSET,
              rows * 8L)
            out.write(bytes, 0, rows * 8)
            c += 1
          }
        }
        j += rows
      }
      out.writeInt(0)
    } finally out.close()
    storage.metrics.incMemoryBytesSpilled(heldBytes)
    storage.metrics.incDiskBytesSpilled(file.length())
    spilledBytes += file.length()
  }

  /** The `i`-th run (0: the first written), read from its start as source number `run`. */
  def open(i: Int, run: Int): FileRun = {
    val r = new FileRun(runs(i), run, layout, storage.serializers)
    reading += r
    r
  }

  /** Every run, in the order written. */
  def all(): Seq[FileRun] = runs.indices.map(i => open(i, i))

  /** Feeds every row on disk, run by run, to `insert`, and deletes the runs. */
  def replay(insert: UnsafeRow => Unit): Unit = {
    val writer = new UnsafeRowWriter(numCols)
    val row = new UnsafeRow(numCols)
    runs.indices.foreach { i =>
      val src = open(i, i)
      try {
        while (src.advance()) {
          if (numVar > 0) {
            row.pointTo(src.recordBase, src.recordOffset, src.recordSize)
            insert(row)
          } else insert(SortedReader.writeRow(writer, src, layout.types))
        }
      } finally src.close()
      runs(i).file.delete()
    }
    runs.clear()
  }

  /** Closes every run being read and deletes every run (idempotent). */
  def free(): Unit = {
    reading.foreach(_.close())
    reading.clear()
    runs.foreach(_.file.delete())
    runs.clear()
  }
}

private[execution] object SortedRuns {
  final val BlockRows = 4096
  final val BlockBytes = 1 << 20

  /**
   * The sorted `sources` as one: a k-way merge by `keys`, equal keys from the earlier source
   * first (the sources are in input order); `onEnd` once it has no more rows.
   */
  def merge(sources: Seq[SortedSource], keys: KeyWords, onEnd: () => Unit): SortedSource = {
    if (sources.length == 1) {
      val only = sources.head
      new Merged {
        current = only
        def advance(): Boolean = only.advance() || { onEnd(); false }
      }
    } else {
      val heap = new java.util.PriorityQueue[SortedSource](sources.length,
        new java.util.Comparator[SortedSource] {
          override def compare(x: SortedSource, y: SortedSource): Int = {
            val c = keys.compare(x, y)
            if (c != 0) c else Integer.compare(x.run, y.run)
          }
        })
      sources.foreach(s => if (s.advance()) heap.add(s))
      new Merged {
        def advance(): Boolean = {
          if (current != null && current.advance()) heap.add(current)
          current = heap.poll()
          current != null || { onEnd(); false }
        }
      }
    }
  }

  /** The merge's rows: the `current` source's current row. */
  private abstract class Merged extends SortedSource {
    protected var current: SortedSource = _
    def run: Int = 0
    def value(c: Int): Long = current.value(c)
    def isNull(c: Int): Boolean = current.isNull(c)
    def bytesBase(c: Int): AnyRef = current.bytesBase(c)
    def bytesOffset(c: Int): Long = current.bytesOffset(c)
    def bytesLength(c: Int): Int = current.bytesLength(c)
    def recordBase: AnyRef = current.recordBase
    def recordOffset: Long = current.recordOffset
    def recordSize: Int = current.recordSize
  }
}

/**
 * One run file read back a block at a time (buffers outside the accounted memory: small); with
 * string or binary columns, every column from the current row's record in the block.
 */
private[execution] final class FileRun(file: RunFile, val run: Int, layout: RecordLayout,
    serializers: SerializerManager) extends SortedSource {
  import RecordLayout.RecHeader
  import SortedRuns.BlockRows
  import layout.{numCols, numVar}

  private val in = new DataInputStream(new BufferedInputStream(
    serializers.wrapStream(file.block, new FileInputStream(file.file)), 1 << 16))
  private val bytes = new Array[Byte](if (numVar > 0) 0 else BlockRows * 8)
  private val vals = Array.fill(if (numVar > 0) 0 else numCols)(new Array[Long](BlockRows))
  private val nuls = Array.fill(if (numVar > 0) 0 else numCols)(new Array[Boolean](BlockRows))
  private val hasNul = new Array[Boolean](numCols)
  private var rows = 0
  private var pos = 0
  private var open = true
  // the block's records, the current row's record at `current` (Platform's offset)
  private var records = new Array[Byte](if (numVar > 0) 1 << 16 else 0)
  private var current = 0L

  def advance(): Boolean = {
    pos += 1
    if (pos < rows) {
      if (numVar > 0) current = layout.recordEnd(records, current)
      return true
    }
    if (!open) return false
    rows = in.readInt()
    pos = 0
    if (rows == 0) { in.close(); open = false; return false }
    if (numVar > 0) {
      val size = in.readInt()
      // the last block's rows are no longer valid (the reader moved on from them)
      if (records.length < size) records = new Array[Byte](math.max(size, 2 * records.length))
      in.readFully(records, 0, size)
      current = Platform.BYTE_ARRAY_OFFSET
    } else {
      var c = 0
      while (c < numCols) {
        hasNul(c) = in.readBoolean()
        if (hasNul(c)) {
          in.readFully(bytes, 0, rows)
          var i = 0
          while (i < rows) { nuls(c)(i) = bytes(i) != 0; i += 1 }
        }
        in.readFully(bytes, 0, rows * 8)
        Platform.copyMemory(bytes, Platform.BYTE_ARRAY_OFFSET, vals(c), Platform.LONG_ARRAY_OFFSET,
          rows * 8L)
        c += 1
      }
    }
    true
  }
  def value(c: Int): Long =
    if (numVar > 0) layout.word(records, current + RecHeader, c) else vals(c)(pos)
  def isNull(c: Int): Boolean =
    if (numVar > 0) layout.isNull(records, current + RecHeader, c) else hasNul(c) && nuls(c)(pos)
  def bytesBase(c: Int): AnyRef = records
  def bytesOffset(c: Int): Long =
    current + RecHeader + (layout.slot(records, current + RecHeader, c) >>> 32)
  def bytesLength(c: Int): Int = layout.slot(records, current + RecHeader, c).toInt
  def recordBase: AnyRef = records
  def recordOffset: Long = current + RecHeader
  def recordSize: Int = Platform.getLong(records, current).toInt
  def close(): Unit = if (open) { in.close(); open = false }
}
