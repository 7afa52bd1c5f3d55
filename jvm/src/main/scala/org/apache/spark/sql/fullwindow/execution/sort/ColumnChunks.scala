package org.apache.spark.sql.fullwindow.execution.sort

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.fullwindow.execution.ColumnarSort._
import org.apache.spark.sql.types.DecimalType
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarBatch}
import org.apache.spark.unsafe.Platform

/**
 * The rows held by a columnar sort, in input order: on-heap column chunks of ChunkRows rows, one
 * long per value (as ColumnarSort.getWord gives it), a null flag chunk where a column has nulls.
 * With string or binary columns the rows are held row by row as records too (RecordPages): only
 * the keys keep column chunks (a string or binary key's chunk holds its prefix word), and the
 * non-key fixed-width columns live in the record only, so that output reads one record a row.
 * Memory is reserved with `reserve` (false: refused) before it is used: with each chunk of rows,
 * the sort array's share for them too (32 bytes a row), so sorting never asks for memory.
 */
private[execution] final class ColumnChunks(
    types: Array[Int],
    keyCols: Array[Int],
    reserve: Long => Boolean) {

  import ColumnChunks._

  val layout = new RecordLayout(types)
  val records = new RecordPages(layout, reserve)
  private val numCols = types.length
  private val numVar = layout.numVar

  // a long per value of each column held in chunks
  private val values = Array.fill(numCols)(new ArrayBuffer[Array[Long]])
  private val nulls = Array.fill(numCols)(new ArrayBuffer[Array[Boolean]])
  /** Per column, whether a row held has it null. */
  val colHasNull = new Array[Boolean](numCols)
  /**
   * Per column (a string or binary key), whether since the rows were last released a value of
   * it had bytes its prefix word does not tell apart (KeyWords.prefixIsValue).
   */
  val pastPrefix = new Array[Boolean](numCols)
  private var n = 0L
  private var numChunks = 0

  private val isKey: Array[Boolean] = {
    val a = new Array[Boolean](numCols)
    keyCols.foreach(c => a(c) = true)
    a
  }
  // the non-key fixed-width columns held in the records only (with string or binary columns)
  private val recFixedIndex: Array[Int] = {
    val recFixed =
      if (numVar == 0) Array.empty[Int]
      else (0 until numCols).filter(c => !isKey(c) && !isVarWidth(types(c))).toArray
    val a = Array.fill(numCols)(-1)
    recFixed.indices.foreach(i => a(recFixed(i)) = i)
    a
  }
  /**
   * Whether column `c` is held in long chunks: a fixed-width one outside the record, or a key (a
   * string or binary key's chunk holds its prefix word).
   */
  @inline def inChunks(c: Int): Boolean =
    isKey(c) || (!isVarWidth(types(c)) && recFixedIndex(c) < 0)
  // what a chunk of rows reserves: a long per value held in chunks, one for the record's
  // address, the sort array's four longs
  private val chunkBytes: Long =
    ChunkRows * ((0 until numCols).count(inChunks) * 8L + (if (numVar > 0) 8L else 0L) + 32L)
  // appendRow's chunk of each column
  private val rowChunks = new Array[Array[Long]](numCols)
  private var rowChunk = -1

  def numRows: Long = n

  private def addChunk(): Unit = {
    var c = 0
    while (c < numCols) {
      if (inChunks(c)) values(c) += new Array[Long](ChunkRows)
      c += 1
    }
    if (numVar > 0) records.addChunk()
    numChunks += 1
  }

  /** Appends the batch's rows; false (nothing appended) when memory is refused. */
  def append(batch: ColumnarBatch): Boolean = {
    val m = batch.numRows()
    if (m == 0) return true
    val firstChunk = (n >>> ChunkBits).toInt
    val lastChunk = ((n + m - 1) >>> ChunkBits).toInt
    val newChunks = math.max(0, lastChunk + 1 - numChunks)
    var need = newChunks.toLong * chunkBytes
    var c = 0
    while (c < numCols) {
      if (inChunks(c) && batch.column(c).hasNull) {
        var ch = firstChunk
        while (ch <= lastChunk) {
          if (ch >= nulls(c).length || nulls(c)(ch) == null) need += ChunkRows
          ch += 1
        }
      }
      c += 1
    }
    if (lastChunk.toLong * ChunkRows * 4 > Int.MaxValue - ChunkRows * 8L) return false
    if (numVar > 0) need += records.sizeBatch(batch, m)
    if (need > 0 && !reserve(need)) return false
    while (numChunks <= lastChunk) addChunk()
    c = 0
    while (c < numCols) {
      if (inChunks(c)) copyColumn(batch.column(c), c, m)
      c += 1
    }
    if (numVar > 0) records.copyBatch(batch, m, n)
    n += m
    true
  }

  /**
   * Appends one row (the keyed Python forms: rows from the shuffle); false (nothing appended)
   * when memory is refused. A row refused half-written leaves the slot past the last row dirty,
   * which the next append overwrites (the caller spills or dumps first, which forgets it).
   */
  def appendRow(row: InternalRow): Boolean = {
    val ch = (n >>> ChunkBits).toInt
    val off = (n & Mask).toInt
    if (ch != rowChunk) {
      if (ch >= numChunks) {
        if (ch.toLong * ChunkRows * 4 > Int.MaxValue - ChunkRows * 8L) return false
        if (!reserve(chunkBytes)) return false
        addChunk()
      }
      var c = 0
      while (c < numCols) {
        if (inChunks(c)) rowChunks(c) = values(c)(ch)
        c += 1
      }
      rowChunk = ch
    }
    if (numVar > 0 && !records.appendRow(row, ch, off)) return false
    var c = 0
    while (c < numCols) {
      if (!inChunks(c)) {} // in the record only
      else if (row.isNullAt(c)) {
        while (nulls(c).length <= ch) nulls(c) += null
        if (nulls(c)(ch) == null) {
          if (!reserve(ChunkRows)) return false
          nulls(c)(ch) = new Array[Boolean](ChunkRows)
        }
        nulls(c)(ch)(off) = true
        colHasNull(c) = true
      } else {
        val t = types(c)
        rowChunks(c)(off) = if (!isVarWidth(t)) getWord(row, c, t) else {
          val u = getBytes(row, c, t)
          if (!KeyWords.prefixIsValue(u)) pastPrefix(c) = true
          KeyWords.prefixWord(u)
        }
        if (colHasNull(c) && ch < nulls(c).length && nulls(c)(ch) != null) nulls(c)(ch)(off) = false
      }
      c += 1
    }
    n += 1
    true
  }

  private def copyColumn(v: ColumnVector, c: Int, m: Int): Unit = {
    val t = types(c)
    val hasNull = v.hasNull
    var r = 0
    var pos = n
    while (r < m) {
      val ch = (pos >>> ChunkBits).toInt
      val off = (pos & Mask).toInt
      val len = math.min(m - r, ChunkRows - off)
      val dst = if (inChunks(c)) values(c)(ch) else null
      var i = 0
      if (dst != null) (t: @annotation.switch) match {
        case Bool => while (i < len) { dst(off + i) = if (v.getBoolean(r + i)) 1L else 0L; i += 1 }
        case Byte8 => while (i < len) { dst(off + i) = v.getByte(r + i).toLong; i += 1 }
        case Short16 => while (i < len) { dst(off + i) = v.getShort(r + i).toLong; i += 1 }
        case Int32 => while (i < len) { dst(off + i) = v.getInt(r + i).toLong; i += 1 }
        case Long64 => while (i < len) { dst(off + i) = v.getLong(r + i); i += 1 }
        case Float32 =>
          while (i < len) { dst(off + i) = java.lang.Float.floatToRawIntBits(v.getFloat(r + i)).toLong; i += 1 }
        case Double64 =>
          while (i < len) { dst(off + i) = java.lang.Double.doubleToRawLongBits(v.getDouble(r + i)); i += 1 }
        case Dec64 =>
          val dt = v.dataType.asInstanceOf[DecimalType]
          while (i < len) {
            if (!(hasNull && v.isNullAt(r + i))) dst(off + i) = decimalWord(v, r + i, dt)
            i += 1
          }
        case _ => // a string or binary key: its prefix word (its bytes go to the records)
          while (i < len) {
            if (!(hasNull && v.isNullAt(r + i))) {
              val u = getBytes(v, r + i, t)
              dst(off + i) = KeyWords.prefixWord(u)
              if (!KeyWords.prefixIsValue(u)) pastPrefix(c) = true
            }
            i += 1
          }
      }
      if (hasNull) {
        while (nulls(c).length <= ch) nulls(c) += null
        var nb = nulls(c)(ch)
        if (nb == null) { nb = new Array[Boolean](ChunkRows); nulls(c)(ch) = nb }
        i = 0
        while (i < len) {
          if (v.isNullAt(r + i)) { nb(off + i) = true; colHasNull(c) = true }
          i += 1
        }
      }
      r += len
      pos += len
    }
  }

  /** Column `c` (not null) of the row at index `row` as the sorter holds it. */
  @inline def value(c: Int, row: Long): Long = {
    val k = recFixedIndex(c)
    if (k < 0) values(c)((row >>> ChunkBits).toInt)((row & Mask).toInt)
    else {
      val a = records.addr(row)
      layout.word(records.pageOf(a), records.rowOf(a), c)
    }
  }

  /** Whether column `c` of the row at index `row` is null. */
  @inline def isNull(c: Int, row: Long): Boolean = colHasNull(c) && {
    val ch = (row >>> ChunkBits).toInt
    val nb = nulls(c)
    ch < nb.length && nb(ch) != null && nb(ch)((row & Mask).toInt)
  }

  /** Column `c`'s words (as the sorter holds them) of the rows `rows(0 until count)`. */
  def gather(c: Int, rows: Array[Long], count: Int, dst: Array[Long]): Unit = {
    val chunks = values(c).toArray
    var i = 0
    while (i < count) {
      val row = rows(i)
      dst(i) = chunks((row >>> ChunkBits).toInt)((row & Mask).toInt)
      i += 1
    }
  }

  /** Column `c`'s null flags of the rows `rows(0 until count)`; false when it has no nulls. */
  def gatherNulls(c: Int, rows: Array[Long], count: Int, dst: Array[Boolean]): Boolean =
    colHasNull(c) && {
      var i = 0
      while (i < count) { dst(i) = isNull(c, rows(i)); i += 1 }
      true
    }

  /** Forgets every row held (their memory is freed by the owner). */
  def release(): Unit = {
    values.foreach(_.clear())
    nulls.foreach(_.clear())
    records.release()
    numChunks = 0
    java.util.Arrays.fill(colHasNull, false)
    java.util.Arrays.fill(pastPrefix, false)
    java.util.Arrays.fill(rowChunks.asInstanceOf[Array[AnyRef]], null)
    rowChunk = -1
    n = 0
  }
}

private[execution] object ColumnChunks {
  final val ChunkBits = 16
  final val ChunkRows = 1 << ChunkBits
  final val Mask = ChunkRows - 1L
}
