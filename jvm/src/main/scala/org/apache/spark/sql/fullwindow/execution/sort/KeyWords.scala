package org.apache.spark.sql.fullwindow.execution.sort

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.fullwindow.execution.ColumnarSort._
import org.apache.spark.sql.fullwindow.execution.RowSource
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.types.UTF8String

/**
 * The words a key's values sort by, one unsigned long each (KeyWords.baseWord): a fixed-width
 * key's value with its sign, NaN and -0.0 folded in; a string or binary key's first 8 bytes
 * (prefixWord), with a flag per column (ColumnChunks.pastPrefix) when a value's word does not tell
 * it apart (prefixIsValue), so the sort knows it has ties to fix (hasTies).
 */
private[execution] object KeyWords {
  /**
   * One word of the sort: a key's value (kind 0), its value with the null slot folded in (1),
   * or its null flag (2), spanning `width` bits; min and max of the key's base words (unsigned).
   */
  final case class Word(key: Int, kind: Int, width: Int, min: Long, max: Long)

  /** An unsigned word that orders doubles as Spark SQL does: -0.0 = 0.0, NaN above +Inf. */
  @inline def doubleWord(d: Double): Long = {
    val x = if (d == 0.0) 0.0 else d // -0.0 == 0.0; NaN != 0.0 keeps NaN
    val bits = java.lang.Double.doubleToLongBits(x) // canonical NaN
    bits ^ ((bits >> 63) | Long.MinValue)
  }

  /**
   * The chunk word of a string or binary key's value: its first 8 bytes big-endian (zero padded),
   * Spark's prefix, flipped so that baseWord gives the prefix back as an unsigned word.
   */
  @inline def prefixWord(bytes: UTF8String): Long = bytes.getPrefix ^ Long.MinValue

  /**
   * Whether the prefix word tells `bytes` apart from every other value that passes this test: at
   * most 8 bytes, the last one not zero (the zero padding then cannot hide a difference).
   */
  @inline def prefixIsValue(bytes: UTF8String): Boolean = {
    val len = bytes.numBytes()
    len == 0 || (len <= 8 && Platform.getByte(bytes.getBaseObject, bytes.getBaseOffset + len - 1) != 0)
  }

  /** Compares two string or binary values by their bytes, unsigned, as Spark orders them. */
  @inline def compareBytes(xBase: AnyRef, xOffset: Long, xLength: Int, yBase: AnyRef, yOffset: Long,
      yLength: Int): Int =
    UTF8String.fromAddress(xBase, xOffset, xLength).compareTo(UTF8String.fromAddress(yBase, yOffset, yLength))

  /** The unsigned ascending base word of a key column's value (as the sorter holds it). */
  @inline def baseWord(t: Int, v: Long): Long = (t: @annotation.switch) match {
    case Float32 => doubleWord(java.lang.Float.intBitsToFloat(v.toInt).toDouble)
    case Double64 => doubleWord(java.lang.Double.longBitsToDouble(v))
    case _ => v ^ Long.MinValue
  }

  private def bitWidth(range: Long): Int = 64 - java.lang.Long.numberOfLeadingZeros(range)

  /**
   * Groups `all` (most significant first) into packs of at most 64 bits, from the least
   * significant end: each pack is one radix sort's word.
   */
  def packs(all: Seq[Word]): Seq[Seq[Word]] = {
    val packs = new ArrayBuffer[Seq[Word]]
    var cur = List.empty[Word]
    var bits = 0
    for (w <- all.reverse) {
      if (bits + w.width > 64) { packs += cur; cur = Nil; bits = 0 }
      cur = w :: cur
      bits += w.width
    }
    if (cur.nonEmpty) packs += cur
    packs.toSeq
  }
}

/**
 * The keys of one sort (`keyCols` of columns of `types`, each descending or not, nulls first or
 * not) as words: each key's word range-reduced by its min and max over the rows held, so that
 * several keys pack into one 64-bit word where their ranges allow; and the keys' order, on two
 * sources' rows (the merge) or two records (the tie sort).
 */
private[execution] final class KeyWords(
    types: Array[Int],
    val keyCols: Array[Int],
    val keyDesc: Array[Boolean],
    val keyNullsFirst: Array[Boolean]) {

  import KeyWords._

  /** The string or binary keys (their indices in keyCols). */
  val varKeys: Array[Int] = keyCols.indices.filter(k => isVarWidth(types(keyCols(k)))).toArray

  /**
   * The words of the sort over the rows held in `chunks`, most significant first; each key's min
   * base word into `keyMin`.
   */
  def words(chunks: ColumnChunks, keyMin: Array[Long]): Seq[Word] = {
    val n = chunks.numRows
    val out = new ArrayBuffer[Word]
    var k = 0
    while (k < keyCols.length) {
      val c = keyCols(k)
      val t = types(c)
      var min = -1L // unsigned
      var max = 0L
      var nonNull = 0L
      var anyNull = false
      var i = 0L
      while (i < n) {
        if (chunks.isNull(c, i)) anyNull = true
        else {
          val w = baseWord(t, chunks.value(c, i))
          if (java.lang.Long.compareUnsigned(w, min) < 0) min = w
          if (java.lang.Long.compareUnsigned(w, max) > 0) max = w
          nonNull += 1
        }
        i += 1
      }
      if (nonNull == 0) { min = 0L; max = 0L }
      keyMin(k) = min
      val range = max - min
      if (!anyNull || nonNull == 0) {
        if (range != 0) out += Word(k, 0, bitWidth(range), min, max)
      } else if (range != -1L) {
        out += Word(k, 1, bitWidth(range + 1), min, max)
      } else {
        out += Word(k, 2, 1, min, max)
        out += Word(k, 0, 64, min, max)
      }
      k += 1
    }
    out.toSeq
  }

  /**
   * Whether one pack of value words (`packs`, of the words `all`) holds every key, each integral
   * and without nulls (`colHasNull`): then a reader decodes the keys from a record's word.
   */
  def keysInWord(packs: Seq[Seq[Word]], all: Seq[Word], colHasNull: Array[Boolean]): Boolean =
    packs.length <= 1 && keyCols.distinct.length == keyCols.length &&
      keyCols.forall(c => !colHasNull(c) && types(c) != Float32 && types(c) != Double64 &&
        !isVarWidth(types(c))) &&
      all.forall(_.kind == 0)

  /**
   * Whether rows' string or binary keys may tie on their words and differ past them: a value of
   * such a key had bytes its prefix word does not tell apart (`pastPrefix`, per column).
   */
  def hasTies(pastPrefix: Array[Boolean]): Boolean = varKeys.exists(k => pastPrefix(keyCols(k)))

  /**
   * Adds word `w` of each of the `n` records' rows (held in `chunks`) into the records' key slot
   * of `a` (shifting what is there); `sequential`: record j is row j (its first long is not a
   * row index).
   */
  def addWord(a: Array[Long], n: Long, w: Word, sequential: Boolean, chunks: ColumnChunks): Unit = {
    val c = keyCols(w.key)
    val t = types(c)
    val desc = keyDesc(w.key)
    val nullsFirst = keyNullsFirst(w.key)
    val shift = if (w.width == 64) 0 else w.width
    val nullFolded = if (nullsFirst) 0L else w.max - w.min + 1
    var j = 0L
    while (j < n) {
      val at = (2 * j).toInt
      val row = if (sequential) j else a(at)
      val prev = if (shift == 0) 0L else a(at + 1) << shift
      val word = (w.kind: @annotation.switch) match {
        case 0 =>
          if (chunks.isNull(c, row)) 0L
          else {
            val b = baseWord(t, chunks.value(c, row))
            if (desc) w.max - b else b - w.min
          }
        case 1 =>
          if (chunks.isNull(c, row)) nullFolded
          else {
            val b = baseWord(t, chunks.value(c, row))
            val u = if (desc) w.max - b else b - w.min
            if (nullsFirst) u + 1 else u
          }
        case _ => if (chunks.isNull(c, row) == nullsFirst) 0L else 1L
      }
      a(at + 1) = prev | word
      j += 1
    }
  }

  /**
   * Decodes the keys of `pack` (least significant first) from `word` into `decoded` (each as the
   * sorter holds it), when the keys are in the word (keysInWord).
   */
  @inline def decode(word0: Long, pack: Array[Word], decoded: Array[Long]): Unit = {
    var word = word0
    var p = 0
    while (p < pack.length) {
      val w = pack(p)
      val part = if (w.width == 64) word else word & ((1L << w.width) - 1)
      word = if (w.width == 64) 0L else word >>> w.width
      val base = if (keyDesc(w.key)) w.max - part else part + w.min
      decoded(keyCols(w.key)) = base ^ Long.MinValue
      p += 1
    }
  }

  /** Compares the keys of two sources' current rows as the sort orders them. */
  def compare(x: RowSource, y: RowSource): Int = {
    var k = 0
    while (k < keyCols.length) {
      val c = keyCols(k)
      val nx = x.isNull(c)
      val ny = y.isNull(c)
      if (nx || ny) {
        if (!(nx && ny)) return if (nx == keyNullsFirst(k)) -1 else 1
      } else {
        val t = types(c)
        val cmp = if (isVarWidth(t)) {
          compareBytes(x.bytesBase(c), x.bytesOffset(c), x.bytesLength(c), y.bytesBase(c),
            y.bytesOffset(c), y.bytesLength(c))
        } else java.lang.Long.compareUnsigned(baseWord(t, x.value(c)), baseWord(t, y.value(c)))
        if (cmp != 0) return if (keyDesc(k)) -cmp else cmp
      }
      k += 1
    }
    0
  }

  /**
   * Compares the keys of two record rows (`xRow` of `xPage`, `yRow` of `yPage`, laid out by
   * `layout`) as the sort orders them.
   */
  def compareRecords(layout: RecordLayout, xPage: AnyRef, xRow: Long, yPage: AnyRef,
      yRow: Long): Int = {
    var k = 0
    while (k < keyCols.length) {
      val c = keyCols(k)
      val t = types(c)
      val nx = layout.isNull(xPage, xRow, c)
      val ny = layout.isNull(yPage, yRow, c)
      if (nx || ny) {
        if (!(nx && ny)) return if (nx == keyNullsFirst(k)) -1 else 1
      } else {
        val cmp = if (isVarWidth(t)) layout.compareBytes(xPage, xRow, yPage, yRow, c) else {
          java.lang.Long.compareUnsigned(baseWord(t, layout.word(xPage, xRow, c)),
            baseWord(t, layout.word(yPage, yRow, c)))
        }
        if (cmp != 0) return if (keyDesc(k)) -cmp else cmp
      }
      k += 1
    }
    0
  }
}
