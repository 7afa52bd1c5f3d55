package org.apache.spark.sql.fullwindow.execution.sort

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.fullwindow.execution.ColumnarSort._
import org.apache.spark.sql.vectorized.ColumnarBatch
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.types.UTF8String

/**
 * The records of the rows held, with string or binary columns (RecordLayout): each row's record
 * lies in on-heap byte pages of 1 MiB (a record larger than that in a page of its own), and a
 * long a row gives (its address: page index << 32 | offset in the page), kept in chunks of
 * ColumnChunks.ChunkRows rows as the columns are. New pages are reserved with `reserve` (false:
 * refused) before they are written; the address chunks are reserved by ColumnChunks with its
 * chunks.
 */
private[execution] final class RecordPages(val layout: RecordLayout, reserve: Long => Boolean) {
  import ColumnChunks.{ChunkBits, ChunkRows, Mask}
  import RecordLayout._
  import layout.{fixedBytes, numCols, numVar, types, varCols, varIndex}

  private val addrs = new ArrayBuffer[Array[Long]]
  private val PageBytes = 1 << 20
  private val pages = new ArrayBuffer[Array[Byte]]
  private var curPage = -1
  private var pagePos = PageBytes // no page open: the next record opens one
  // the batch appends' scratch: each row's record size, page, row offset and write cursor, and
  // each string or binary column's lengths; appendRow's: the row's string and binary values
  private var recSize = new Array[Int](0)
  private var recPage = new Array[Array[Byte]](0)
  private var recRow = new Array[Long](0)
  private var recCursor = new Array[Int](0)
  private val varLens = Array.fill(numVar)(new Array[Int](0))
  private val rowBytes = new Array[UTF8String](numVar)

  /** Adds the address chunk of the next ChunkRows rows. */
  def addChunk(): Unit = addrs += new Array[Long](ChunkRows)

  /** The address of row `row`'s record. */
  @inline def addr(row: Long): Long = addrs((row >>> ChunkBits).toInt)((row & Mask).toInt)

  /** The page of the record at `addr`. */
  @inline def pageOf(addr: Long): Array[Byte] = pages((addr >>> 32).toInt)

  /** The record at `addr` (its header) in its page, as Platform addresses it. */
  @inline def atOf(addr: Long): Long = Platform.BYTE_ARRAY_OFFSET + (addr & 0xffffffffL)

  /** The record's row (past its header) in its page, as Platform addresses it. */
  @inline def rowOf(addr: Long): Long = atOf(addr) + RecHeader

  /** The bytes of new pages that records of `sizes` (the first `m`) need, placed in order. */
  private def pageBytesFor(sizes: Array[Int], m: Int): Long = {
    var pos = pagePos
    var need = 0L
    var i = 0
    while (i < m) {
      val s = sizes(i)
      if (s > PageBytes) need += s
      else {
        if (pos + s > PageBytes) { need += PageBytes; pos = 0 }
        pos += s
      }
      i += 1
    }
    need
  }

  /** Places a record of `s` bytes (its pages reserved by pageBytesFor): its address. */
  private def place(s: Int): Long = {
    if (s > PageBytes) {
      pages += new Array[Byte](s)
      (pages.length - 1).toLong << 32
    } else {
      if (pagePos + s > PageBytes) {
        pages += new Array[Byte](PageBytes)
        curPage = pages.length - 1
        pagePos = 0
      }
      val a = (curPage.toLong << 32) | pagePos
      pagePos += s
      a
    }
  }

  /**
   * Each of the batch's `m` rows' record size and string and binary lengths (kept for
   * copyBatch); the bytes of the new pages they need.
   */
  def sizeBatch(batch: ColumnarBatch, m: Int): Long = {
    if (recSize.length < m) {
      recSize = new Array[Int](m)
      recPage = new Array[Array[Byte]](m)
      recRow = new Array[Long](m)
      recCursor = new Array[Int](m)
      var vi = 0
      while (vi < numVar) { varLens(vi) = new Array[Int](m); vi += 1 }
    }
    java.util.Arrays.fill(recSize, 0, m, RecHeader + fixedBytes)
    var vi = 0
    while (vi < numVar) {
      val c = varCols(vi)
      val t = types(c)
      val v = batch.column(c)
      val hasNull = v.hasNull
      val lens = varLens(vi)
      var i = 0
      while (i < m) {
        if (hasNull && v.isNullAt(i)) lens(i) = -1
        else {
          val len = getBytes(v, i, t).numBytes()
          lens(i) = len
          recSize(i) += roundUp8(len).toInt
        }
        i += 1
      }
      vi += 1
    }
    pageBytesFor(recSize, m)
  }

  /**
   * Copies the batch's rows' records (sized by sizeBatch, their pages reserved) into the pages,
   * column by column, as rows `first` onwards.
   */
  def copyBatch(batch: ColumnarBatch, m: Int, first: Long): Unit = {
    var i = 0
    var pos = first
    while (i < m) {
      val a = place(recSize(i))
      addrs((pos >>> ChunkBits).toInt)((pos & Mask).toInt) = a
      val page = pageOf(a)
      val at = atOf(a)
      Platform.putLong(page, at, (recSize(i) - RecHeader).toLong)
      recPage(i) = page
      recRow(i) = at + RecHeader
      recCursor(i) = fixedBytes
      i += 1
      pos += 1
    }
    var c = 0
    while (c < numCols) {
      val v = batch.column(c)
      val t = types(c)
      val vi = varIndex(c)
      if (vi >= 0) {
        val lens = varLens(vi)
        i = 0
        while (i < m) {
          val page = recPage(i)
          val row = recRow(i)
          val len = lens(i)
          if (len < 0) layout.setNull(page, row, c)
          else {
            val off = recCursor(i)
            layout.putSlot(page, row, c, off.toLong, len)
            if (len > 0) {
              val u = getBytes(v, i, t)
              Platform.copyMemory(u.getBaseObject, u.getBaseOffset, page, row + off, len)
              recCursor(i) = off + roundUp8(len).toInt
            }
          }
          i += 1
        }
      } else {
        val hasNull = v.hasNull
        i = 0
        while (i < m) {
          if (hasNull && v.isNullAt(i)) layout.setNull(recPage(i), recRow(i), c)
          else layout.putWord(recPage(i), recRow(i), c, vectorWord(v, i, t))
          i += 1
        }
      }
      c += 1
    }
    java.util.Arrays.fill(recPage.asInstanceOf[Array[AnyRef]], 0, m, null)
  }

  /**
   * Copies `row`'s record into the pages (reserving a page it needs) as the row at `off` of
   * chunk `ch`; false when refused. An UnsafeRow of the same columns is already laid out as a
   * record's row: its bytes are copied.
   */
  def appendRow(row: InternalRow, ch: Int, off: Int): Boolean = {
    if (recSize.length < 1) recSize = new Array[Int](1)
    val unsafe = row match {
      case u: UnsafeRow if u.numFields == numCols => u
      case _ => null
    }
    var size = 0L
    if (unsafe != null) size = unsafe.getSizeInBytes
    else {
      size = fixedBytes
      var vi = 0
      while (vi < numVar) {
        val c = varCols(vi)
        rowBytes(vi) = if (row.isNullAt(c)) null else getBytes(row, c, types(c))
        if (rowBytes(vi) != null) size += roundUp8(rowBytes(vi).numBytes())
        vi += 1
      }
    }
    if (RecHeader + roundUp8(size) > Int.MaxValue) return false
    recSize(0) = (RecHeader + roundUp8(size)).toInt
    val need = pageBytesFor(recSize, 1)
    if (need > 0 && !reserve(need)) return false
    val a = place(recSize(0))
    addrs(ch)(off) = a
    val page = pageOf(a)
    val at = atOf(a)
    Platform.putLong(page, at, size)
    val r = at + RecHeader
    if (unsafe != null) {
      Platform.copyMemory(unsafe.getBaseObject, unsafe.getBaseOffset, page, r, size)
    } else {
      var cursor = fixedBytes.toLong
      var c = 0
      while (c < numCols) {
        val vi = varIndex(c)
        if (vi >= 0) {
          val u = rowBytes(vi)
          if (u == null) layout.setNull(page, r, c)
          else {
            val len = u.numBytes()
            layout.putSlot(page, r, c, cursor, len)
            Platform.copyMemory(u.getBaseObject, u.getBaseOffset, page, r + cursor, len)
            cursor += roundUp8(len)
            rowBytes(vi) = null
          }
        } else if (row.isNullAt(c)) layout.setNull(page, r, c)
        else layout.putWord(page, r, c, getWord(row, c, types(c)))
        c += 1
      }
    }
    true
  }

  /** Forgets every record and page (their memory is freed by the owner). */
  def release(): Unit = {
    addrs.clear()
    pages.clear()
    curPage = -1
    pagePos = PageBytes
  }
}
