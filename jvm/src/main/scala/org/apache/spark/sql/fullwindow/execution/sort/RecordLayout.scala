package org.apache.spark.sql.fullwindow.execution.sort

import org.apache.spark.sql.fullwindow.execution.ColumnarSort._
import org.apache.spark.unsafe.Platform

/**
 * How a row with string or binary columns is held: as a record, an 8-byte header (the row's size
 * in bytes), then the row laid out as an UnsafeRow of every column (keys too): null bit set
 * words, an 8-byte slot per column (offset << 32 | size for a string or binary value, relative to
 * the row's start), the values' bytes each padded to 8 (the padding zero: pages are new arrays,
 * written once). So a sorted row is an UnsafeRow pointed at its record, not copied. A record row
 * is addressed as Platform addresses memory: a base object and the row's offset in it (past the
 * header).
 */
private[execution] final class RecordLayout(val types: Array[Int]) {
  import RecordLayout._

  val numCols: Int = types.length
  /** The string and binary columns, and each column's index among them (-1: none). */
  val varCols: Array[Int] = (0 until numCols).filter(c => isVarWidth(types(c))).toArray
  val numVar: Int = varCols.length
  val varIndex: Array[Int] = {
    val a = Array.fill(numCols)(-1)
    varCols.indices.foreach(i => a(varCols(i)) = i)
    a
  }
  val bitsetBytes: Int = ((numCols + 63) / 64) * 8
  /** A row's bytes before its values' bytes: the null bits and the slots. */
  val fixedBytes: Int = bitsetBytes + 8 * numCols

  /** The offset past the record at `at` of `base` (its header, then the row). */
  @inline def recordEnd(base: AnyRef, at: Long): Long =
    at + RecHeader + roundUp8(Platform.getLong(base, at))

  /** Whether column `c` of the record row at `row` of `base` is null. */
  @inline def isNull(base: AnyRef, row: Long, c: Int): Boolean =
    (Platform.getLong(base, row + 8L * (c >> 6)) & (1L << (c & 63))) != 0

  @inline def setNull(base: AnyRef, row: Long, c: Int): Unit = {
    val w = row + 8L * (c >> 6)
    Platform.putLong(base, w, Platform.getLong(base, w) | (1L << (c & 63)))
  }

  /** Column `c` (fixed-width, not null) of the record row at `row` as the sorter holds it. */
  @inline def word(base: AnyRef, row: Long, c: Int): Long = {
    val at = row + bitsetBytes + 8L * c
    (types(c): @annotation.switch) match {
      case Bool => if (Platform.getBoolean(base, at)) 1L else 0L
      case Byte8 => Platform.getByte(base, at).toLong
      case Short16 => Platform.getShort(base, at).toLong
      case Int32 | Float32 => Platform.getInt(base, at).toLong
      case _ => Platform.getLong(base, at)
    }
  }

  /** Writes word `w` of column `c` (fixed-width) into its slot of the (zeroed) record row at `row`. */
  @inline def putWord(base: AnyRef, row: Long, c: Int, w: Long): Unit = {
    val at = row + bitsetBytes + 8L * c
    (types(c): @annotation.switch) match {
      case Bool => Platform.putBoolean(base, at, w != 0L)
      case Byte8 => Platform.putByte(base, at, w.toByte)
      case Short16 => Platform.putShort(base, at, w.toShort)
      case Int32 | Float32 => Platform.putInt(base, at, w.toInt)
      case _ => Platform.putLong(base, at, w)
    }
  }

  /** The slot (offset << 32 | size) of column `c` (string or binary) of the record row at `row`. */
  @inline def slot(base: AnyRef, row: Long, c: Int): Long =
    Platform.getLong(base, row + bitsetBytes + 8L * c)

  /** Sets the slot of column `c` (string or binary) of the record row at `row`. */
  @inline def putSlot(base: AnyRef, row: Long, c: Int, offset: Long, size: Int): Unit =
    Platform.putLong(base, row + bitsetBytes + 8L * c, (offset << 32) | size)

  /** Compares column `c` (string or binary, not null) of two record rows by its bytes. */
  @inline def compareBytes(xPage: AnyRef, xRow: Long, yPage: AnyRef, yRow: Long, c: Int): Int = {
    val xs = slot(xPage, xRow, c)
    val ys = slot(yPage, yRow, c)
    KeyWords.compareBytes(xPage, xRow + (xs >>> 32), xs.toInt, yPage, yRow + (ys >>> 32), ys.toInt)
  }
}

private[execution] object RecordLayout {
  /** A record's header: the row's size in bytes. */
  final val RecHeader = 8

  @inline def roundUp8(x: Long): Long = (x + 7) & ~7L
}
