package org.apache.spark.sql.fullwindow.execution.sort

import org.apache.spark.sql.fullwindow.execution.ColumnarSort._
import org.apache.spark.sql.fullwindow.execution.sort.KeyWords.{baseWord, Word}
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.array.LongArray
import org.apache.spark.unsafe.memory.MemoryBlock
import org.apache.spark.unsafe.types.UTF8String
import org.apache.spark.util.collection.Sorter
import org.apache.spark.util.collection.unsafe.sort.{RadixSort, RecordPointerAndKeyPrefix, UnsafeSortDataFormat}

/**
 * The rows held, sorted: the sort array `a` of (first long, key word) records, in sorted order,
 * its second half free, and how to read it.
 *  - `carry`: each record's first long is the one non-key column's (`carryPayload`, -1: none)
 *    value instead of a row index, and the keys are decoded from its word, so output reads the
 *    sort array in order and gathers nothing. Only when one pack of value words holds every key,
 *    every key is integral without nulls and there is at most one other column, without nulls.
 *  - `keysInWord`: one pack of value words (`carryPack`) holds every key, every key integral
 *    without nulls, so output decodes the keys from the record's word (carry or not); a key
 *    with no word (one value) is its `keyMin` base word.
 *  - `recCarry`: the first long is the row's record address instead of its index.
 */
private[execution] final class SortedArray(
    val a: Array[Long],
    val carry: Boolean,
    val recCarry: Boolean,
    val keysInWord: Boolean,
    val carryPack: Seq[Word],
    val carryPayload: Int,
    val keyMin: Array[Long])

/**
 * The in-memory sort of the rows held (ColumnChunks), in the memory they reserved for it:
 * per key an unsigned word that folds sign, direction and null order (KeyWords), words packed
 * into 64-bit words, and (row index, word) records sorted with Spark's RadixSort: LSD over the
 * packed words, least significant first; each pass is stable, so equal keys keep their input
 * order. A string or binary key's word is its prefix (its first 8 bytes); where rows' words are
 * equal and such a key differs past them, the rows are then ordered by the key's bytes (Ties).
 */
private[execution] object InMemorySort {

  /** No sort array (nothing sorted, or released): a reader of it finds no row. */
  def unsorted(numKeys: Int): SortedArray =
    new SortedArray(null, false, false, false, Nil, -1, new Array[Long](numKeys))

  /**
   * Sorts the rows of `chunks` by `keys`; `allowCarry`: the carry layouts may be used (not for a
   * run written by row index).
   */
  def sort(chunks: ColumnChunks, keys: KeyWords, allowCarry: Boolean): SortedArray = {
    val n = chunks.numRows
    val a = new Array[Long]((4 * n).toInt)
    val keyCols = keys.keyCols
    val keyMin = new Array[Long](keyCols.length)
    if (n == 0) return new SortedArray(a, false, false, false, Nil, -1, keyMin)
    val numCols = chunks.layout.numCols
    val numVar = chunks.layout.numVar
    val all = keys.words(chunks, keyMin)
    val packs = KeyWords.packs(all)
    val others = (0 until numCols).filterNot(keyCols.contains)
    val keysInWord = keys.keysInWord(packs, all, chunks.colHasNull)
    val carry = allowCarry && keysInWord && others.length <= 1 &&
      others.forall(c => !chunks.colHasNull(c)) && numVar == 0
    // a record holds every column of its row, so the record carry needs no key in the word; with
    // more than one pass (addWord reads a row's keys by its index) the addresses come after
    val recCarry = allowCarry && numVar > 0
    // rows whose string or binary keys tie on their words are sorted by their bytes after the
    // radix passes (sortTies), which find them by row index
    val ties = keys.hasTies(chunks.pastPrefix)
    val addrFirst = recCarry && packs.length <= 1 && !ties
    val carryPack = if (packs.isEmpty) Nil else packs.head
    val carryPayload = if (others.isEmpty) -1 else others.head
    var j = 0
    val rows = n.toInt
    if (carry && carryPayload >= 0) {
      while (j < rows) { a(2 * j) = chunks.value(carryPayload, j); j += 1 }
    } else if (addrFirst) {
      while (j < rows) { a(2 * j) = chunks.records.addr(j); j += 1 }
    } else {
      while (j < rows) { a(2 * j) = j; j += 1 }
    }
    val la = new LongArray(MemoryBlock.fromLongArray(a))
    var p = 0
    while (p < packs.length) { // least significant first (LSD): each pass is stable
      // most significant first: each shifts what is there
      for (w <- packs(p)) keys.addWord(a, n, w, carry || addrFirst, chunks)
      val at = RadixSort.sortKeyPrefixArray(la, 0L, n, 0, 7, false, false)
      if (at != 0) System.arraycopy(a, at, a, 0, 2 * rows)
      if (p < packs.length - 1) { // clear the key slots for the next pack
        j = 0
        while (j < rows) { a(2 * j + 1) = 0L; j += 1 }
      }
      p += 1
    }
    if (ties) sortTies(a, rows, packs.length <= 1 && keys.varKeys.head == keyCols.length - 1, chunks, keys)
    if (recCarry && !addrFirst) {
      j = 0
      while (j < rows) { a(2 * j) = chunks.records.addr(a(2 * j)); j += 1 }
    }
    new SortedArray(a, carry, recCarry, keysInWord, carryPack, carryPayload, keyMin)
  }

  /**
   * After the radix passes, which order a string or binary key by its prefix word only: finds
   * each run of sorted rows whose keys up to the first string or binary one (`firstVar`) have
   * equal words (`wordIsKey`: the last pass's word, which then holds just those keys' words;
   * else key by key) and orders it by the keys' bytes (Ties.refine). The sort slot's first long
   * is each row's index; the sort array's free half is the scratch.
   */
  private def sortTies(a: Array[Long], rows: Int, wordIsKey: Boolean, chunks: ColumnChunks,
      keys: KeyWords): Unit = {
    val firstVar = keys.varKeys.head
    val keyCols = keys.keyCols
    val types = chunks.layout.types
    def sameWords(x: Int, y: Int): Boolean =
      if (wordIsKey) a(2 * x + 1) == a(2 * y + 1)
      else {
        val rx = a(2 * x)
        val ry = a(2 * y)
        var k = 0
        var same = true
        while (same && k <= firstVar) {
          val c = keyCols(k)
          val nx = chunks.isNull(c, rx)
          same = nx == chunks.isNull(c, ry) &&
            (nx || baseWord(types(c), chunks.value(c, rx)) == baseWord(types(c), chunks.value(c, ry)))
          k += 1
        }
        same
      }
    val ties = new Ties(a, rows, chunks, keys)
    var lo = 0
    while (lo < rows) {
      var hi = lo + 1
      while (hi < rows && sameWords(lo, hi)) hi += 1
      if (hi - lo > 1) ties.refine(lo, hi, 1)
      lo = hi
    }
  }
}

/**
 * Orders runs of the sort array `a` (of `rows` rows, sorted) whose rows tie on every key before
 * the first string or binary key and on that key's first 8 x `depth` bytes. A run of more than
 * SmallRun rows whose key is not null is radix-sorted (Spark's RadixSort, stable, in the array's
 * free half) by the key's next 8 bytes, and each run of equal such words again, one depth
 * further, until the key's values end; what is left (small runs, runs the key's values end in
 * with zero bytes or different lengths, later string keys that tie past their words) is sorted
 * by every key, those by their bytes, with Spark's TimSort (stable) where the keys' bytes
 * differ. Equal keys keep their order throughout.
 */
private final class Ties(a: Array[Long], rows: Int, chunks: ColumnChunks, keys: KeyWords) {
  private val SmallRun = 32
  private val layout = chunks.layout
  private val records = chunks.records
  private val varKeys = keys.varKeys
  private val k0 = varKeys.head
  private val c0 = keys.keyCols(k0)
  private val desc0 = keys.keyDesc(k0)
  private val laterVar = varKeys.length > 1
  private val la = new LongArray(MemoryBlock.fromLongArray(a))
  private val tim = new Sorter(new UnsafeSortDataFormat(
    new LongArray(new MemoryBlock(a, Platform.LONG_ARRAY_OFFSET + 16L * rows, 16L * rows))))
  private val byKeys = new java.util.Comparator[RecordPointerAndKeyPrefix] {
    override def compare(x: RecordPointerAndKeyPrefix, y: RecordPointerAndKeyPrefix): Int = {
      val xa = records.addr(x.recordPointer)
      val ya = records.addr(y.recordPointer)
      keys.compareRecords(layout, records.pageOf(xa), records.rowOf(xa), records.pageOf(ya),
        records.rowOf(ya))
    }
  }

  def refine(lo: Int, hi: Int, depth: Int): Unit = {
    val m = hi - lo
    if (m <= SmallRun || chunks.isNull(c0, a(2 * lo))) { sortIfDiffer(lo, hi); return }
    // the key's bytes [8 x depth, 8 x depth + 8) of each row as an unsigned word (zero padded,
    // flipped when descending) beside its index, sorted in the free half; a run of more than
    // half the rows, whose scratch the free half cannot hold, is sorted where it is, the rows
    // after it moved up to the free half's end meanwhile
    val from = 8 * depth
    val inPlace = 4L * m > 2L * rows
    val tmp = if (inPlace) 2 * lo else 2 * rows
    if (inPlace) System.arraycopy(a, 2 * hi, a, 2 * rows + 2 * hi, 2 * (rows - hi))
    var maxLen = 0
    var zeroEnd = false
    var i = 0
    while (i < m) {
      val row = a(2 * (lo + i))
      val addr = records.addr(row)
      val page = records.pageOf(addr)
      val at = records.rowOf(addr)
      val slot = layout.slot(page, at, c0)
      val len = slot.toInt
      val bytes = at + (slot >>> 32)
      // Spark's prefix of the bytes from there (big-endian, zero padded)
      val rest = len - from
      val w = if (rest <= 0) 0L else UTF8String.fromAddress(page, bytes + from, rest).getPrefix
      if (len > maxLen) maxLen = len
      if (len > 0 && Platform.getByte(page, bytes + len - 1) == 0) zeroEnd = true
      a(tmp + 2 * i) = row
      a(tmp + 2 * i + 1) = if (desc0) ~w else w
      i += 1
    }
    val at = RadixSort.sortKeyPrefixArray(la, tmp, m, 0, 7, false, false).toInt
    if (at != 2 * lo) System.arraycopy(a, at, a, 2 * lo, 2 * m)
    if (inPlace) System.arraycopy(a, 2 * rows + 2 * hi, a, 2 * hi, 2 * (rows - hi))
    // values that end within these bytes and end in no zero byte are equal when their words
    // are (as prefixIsValue); others go one depth further, or to the comparison sort
    val ended = maxLen <= from + 8
    if (ended && !zeroEnd && !laterVar) return
    var s = lo
    while (s < hi) {
      var e = s + 1
      while (e < hi && a(2 * e + 1) == a(2 * s + 1)) e += 1
      if (e - s > 1) { if (ended) sortIfDiffer(s, e) else refine(s, e, depth + 1) }
      s = e
    }
  }

  /** Sorts rows [lo, hi) by every key with TimSort where their string or binary keys differ. */
  private def sortIfDiffer(lo: Int, hi: Int): Unit = {
    var differ = false
    var j = lo + 1
    while (!differ && j < hi) { differ = !sameBytes(a(2 * lo), a(2 * j)); j += 1 }
    if (differ) tim.sort(la, lo, hi, byKeys)
  }

  /** Whether the rows at indices `x` and `y` have the same string and binary keys. */
  private def sameBytes(x: Long, y: Long): Boolean = {
    val xa = records.addr(x)
    val ya = records.addr(y)
    varKeys.forall { k =>
      val c = keys.keyCols(k)
      val nx = chunks.isNull(c, x)
      nx == chunks.isNull(c, y) && (nx || layout.compareBytes(records.pageOf(xa),
        records.rowOf(xa), records.pageOf(ya), records.rowOf(ya), c) == 0)
    }
  }
}
