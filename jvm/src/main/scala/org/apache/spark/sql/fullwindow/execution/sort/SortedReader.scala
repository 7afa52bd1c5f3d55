package org.apache.spark.sql.fullwindow.execution.sort

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter
import org.apache.spark.sql.fullwindow.execution.ColumnarSort._
import org.apache.spark.sql.fullwindow.execution.RowSource
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.types.UTF8String

/**
 * The rows held (`chunks`), in sorted order (`sorted`), as source number `run`. In the carry
 * layout the sort array is all it reads; otherwise it gathers, GatherRows sorted rows at a time
 * and column by column (independent loads in a tight loop: their cache misses overlap), the
 * columns held in chunks (but keys decoded from the words), or with string or binary columns
 * each row's record (its address from the sort array in the record carry, else by row index; its
 * cache lines touched), from which every column is read.
 *
 * spillRest() writes the rows not read yet as a run, with `writeRest` (the count of rows and
 * the row index of each: it writes them to `runs` and frees the rows held, giving the memory
 * freed), and reads on from there.
 */
private[execution] final class MemoryRun(
    val run: Int,
    chunks: ColumnChunks,
    sorted: SortedArray,
    keys: KeyWords,
    runs: SortedRuns,
    writeRest: (Long, Long => Long) => Long) extends SortedSource {
  import RecordLayout.RecHeader

  private val layout = chunks.layout
  private val heldRecords = chunks.records
  private val numCols = layout.numCols
  private val keyCols = keys.keyCols
  private val sortArray = sorted.a
  private val carry = sorted.carry
  private val recCarry = sorted.recCarry
  private var j = -1L
  // once spilled (spillRest): the current row's columns, then the rows after it from `tail`
  private var tail: FileRun = _
  private var onTail = false
  // the row the reader is on when the rest is spilled: its values, or its record
  private object current {
    val values = new Array[Long](numCols)
    val nulls = new Array[Boolean](numCols)
    var record: Array[Byte] = _
  }

  /**
   * Writes the held rows after the current one as a run, to be read from there, and frees the
   * held rows (the current row's values, or its record, are copied aside); the memory freed
   * (0: nothing to spill, or a carry layout, which does not spill: the sort array holds no row
   * index to write the run by).
   */
  def spillRest(): Long = {
    val n = chunks.numRows
    if (carry || recCarry || tail != null || j + 1 >= n) return 0L
    if (j >= 0) {
      if (records) {
        current.record = new Array[Byte](recBytes(i))
        Platform.copyMemory(recPages(i), recAt(i), current.record, Platform.BYTE_ARRAY_OFFSET,
          recBytes(i))
      } else {
        var c = 0
        while (c < numCols) { current.values(c) = value(c); current.nulls(c) = isNull(c); c += 1 }
      }
    }
    val from = j + 1
    val freed = writeRest(n - from, r => sortArray((2 * (from + r)).toInt))
    tail = runs.open(runs.numRuns - 1, run)
    freed
  }
  // with string or binary columns every column is read from the row's record
  private val records = layout.numVar > 0
  private val decoded = new Array[Long](numCols)
  private val pack = sorted.carryPack.reverse.toArray // least significant first
  private val constKeys = keyCols.indices.filterNot(k => sorted.carryPack.exists(_.key == k)).toArray
  private val inWord = new Array[Boolean](numCols)
  private val decodeKeys = sorted.keysInWord && !records
  if (decodeKeys) {
    constKeys.foreach(k => decoded(keyCols(k)) = sorted.keyMin(k) ^ Long.MinValue)
    keyCols.foreach(c => inWord(c) = true)
  }
  private val GatherRows = 1024
  private val gatherCols =
    if (carry || records) Array.empty[Int]
    else (0 until numCols).filter(c => !inWord(c) && chunks.inChunks(c)).toArray
  private val gathered = new Array[Array[Long]](numCols)
  gatherCols.foreach(c => gathered(c) = new Array[Long](GatherRows))
  private val nullCols =
    if (carry || records) Array.empty[Int]
    else (0 until numCols).filter(c => chunks.colHasNull(c)).toArray
  private val gatheredNull = new Array[Array[Boolean]](numCols)
  nullCols.foreach(c => gatheredNull(c) = new Array[Boolean](GatherRows))
  private val rowIdx = new Array[Long](if (carry) 0 else GatherRows)
  // each gathered row's record: its page, the row's offset in it (Platform's) and size
  private val recPages = new Array[Array[Byte]](if (records) GatherRows else 0)
  private val recAt = new Array[Long](if (records) GatherRows else 0)
  private val recBytes = new Array[Int](if (records) GatherRows else 0)
  private var i = 0
  private var inBlock = 0
  private var touched = 0 // the bytes gather reads only to bring a record's lines into cache

  private def gather(): Unit = {
    val m = math.min(GatherRows.toLong, chunks.numRows - j).toInt
    SortedReader.sortedIndices(sortArray, j, m, rowIdx) // row indices, or record addresses in the record carry
    var k = 0
    while (k < gatherCols.length) { // none with records
      val c = gatherCols(k)
      chunks.gather(c, rowIdx, m, gathered(c))
      k += 1
    }
    k = 0
    while (k < nullCols.length) { chunks.gatherNulls(nullCols(k), rowIdx, m, gatheredNull(nullCols(k))); k += 1 }
    if (records) {
      var touch = 0
      var t = 0
      while (t < m) {
        val a = if (recCarry) rowIdx(t) else heldRecords.addr(rowIdx(t))
        val page = heldRecords.pageOf(a)
        val at = heldRecords.atOf(a)
        val size = Platform.getLong(page, at).toInt
        recPages(t) = page
        recAt(t) = at + RecHeader
        recBytes(t) = size
        // the record's other cache lines: loaded here, where the misses of the block's rows
        // overlap, rather than one at a time by the row's reader
        val end = at + RecHeader + size
        var q = at + 64
        while (q < end) { touch += Platform.getByte(page, q); q += 64 }
        touch += Platform.getByte(page, end - 1)
        t += 1
      }
      touched = touch
    }
    inBlock = m
    i = 0
  }

  def advance(): Boolean = {
    if (tail != null) { onTail = true; return tail.advance() }
    j += 1
    if (j >= chunks.numRows) return false
    val at = (2 * j).toInt
    if (carry) {
      if (sorted.carryPayload >= 0) decoded(sorted.carryPayload) = sortArray(at)
    } else {
      i += 1
      if (i >= inBlock) gather()
    }
    if (decodeKeys) keys.decode(sortArray(at + 1), pack, decoded)
    true
  }
  def value(c: Int): Long =
    if (tail != null) {
      if (onTail) tail.value(c)
      else if (records) layout.word(current.record, Platform.BYTE_ARRAY_OFFSET, c)
      else current.values(c)
    }
    else if (carry || inWord(c)) decoded(c) // neither with records
    else if (records) layout.word(recPages(i), recAt(i), c)
    else gathered(c)(i)
  def isNull(c: Int): Boolean =
    if (tail != null) {
      if (onTail) tail.isNull(c)
      else if (records) layout.isNull(current.record, Platform.BYTE_ARRAY_OFFSET, c)
      else current.nulls(c)
    }
    else if (carry) false
    else if (records) layout.isNull(recPages(i), recAt(i), c)
    else gatheredNull(c) != null && gatheredNull(c)(i)
  def bytesBase(c: Int): AnyRef = recordBase
  def bytesOffset(c: Int): Long = recordOffset + (layout.slot(recordBase, recordOffset, c) >>> 32)
  def bytesLength(c: Int): Int = layout.slot(recordBase, recordOffset, c).toInt
  def recordBase: AnyRef =
    if (tail == null) recPages(i) else if (onTail) tail.recordBase else current.record
  def recordOffset: Long =
    if (tail == null) recAt(i) else if (onTail) tail.recordOffset else Platform.BYTE_ARRAY_OFFSET
  def recordSize: Int =
    if (tail == null) recBytes(i) else if (onTail) tail.recordSize else current.record.length
}

/** The sorted rows out of a source: as UnsafeRows, or (KeyedColumnarSort) by index. */
private[execution] object SortedReader {

  /** The row indices of the sorted positions [from, from + count) of `sortArray` into `dst`. */
  def sortedIndices(sortArray: Array[Long], from: Long, count: Int, dst: Array[Long]): Unit = {
    var at = (2 * from).toInt
    var i = 0
    while (i < count) { dst(i) = sortArray(at); at += 2; i += 1 }
  }

  /**
   * The rows of `src` (columns of `types`) as UnsafeRows. With string or binary columns each row
   * is one reused UnsafeRow pointed at the row's record (in the pages, or a run's block buffer),
   * not copied: valid until the next hasNext or next (a consumer copies what it keeps).
   * Otherwise each row is written into one reused UnsafeRow.
   */
  def rows(src: SortedSource, types: Array[Int]): Iterator[UnsafeRow] = {
    val numCols = types.length
    if (types.exists(isVarWidth)) {
      val row = new UnsafeRow(numCols)
      new Iterator[UnsafeRow] {
        // the source advances when the next row is asked for, not before: the row given last
        // points into its record
        private var state = 0 // 0: not advanced, 1: a row, 2: no more
        override def hasNext: Boolean = {
          if (state == 0) state = if (src.advance()) 1 else 2
          state == 1
        }
        override def next(): UnsafeRow = {
          if (!hasNext) throw new NoSuchElementException
          state = 0
          row.pointTo(src.recordBase, src.recordOffset, src.recordSize)
          row
        }
      }
    } else {
      val writer = new UnsafeRowWriter(numCols)
      new Iterator[UnsafeRow] {
        private var ready = src.advance()
        override def hasNext: Boolean = ready
        override def next(): UnsafeRow = {
          val row = writeRow(writer, src, types)
          ready = src.advance()
          row
        }
      }
    }
  }

  /** Writes the current row of `src` (columns of `types`) with `writer`. */
  def writeRow(writer: UnsafeRowWriter, src: RowSource, types: Array[Int]): UnsafeRow = {
    writer.reset()
    writer.zeroOutNullBytes()
    var c = 0
    val numCols = types.length
    while (c < numCols) {
      if (src.isNull(c)) writer.setNullAt(c)
      else if (isVarWidth(types(c))) {
        // a binary value is laid out in an UnsafeRow as a string's bytes are
        val base = src.bytesBase(c)
        val off = src.bytesOffset(c)
        val len = src.bytesLength(c)
        base match {
          case b: Array[Byte] => writer.write(c, b, (off - Platform.BYTE_ARRAY_OFFSET).toInt, len)
          case _ => writer.write(c, UTF8String.fromAddress(base, off, len))
        }
      } else {
        val v = src.value(c)
        (types(c): @annotation.switch) match {
          case Bool => writer.write(c, v != 0L)
          case Byte8 => writer.write(c, v.toByte)
          case Short16 => writer.write(c, v.toShort)
          case Int32 => writer.write(c, v.toInt)
          case Long64 | Dec64 => writer.write(c, v) // a decimal's slot is its unscaled long
          case Float32 => writer.write(c, java.lang.Float.intBitsToFloat(v.toInt))
          case Double64 => writer.write(c, java.lang.Double.longBitsToDouble(v))
        }
      }
      c += 1
    }
    writer.getRow
  }
}
