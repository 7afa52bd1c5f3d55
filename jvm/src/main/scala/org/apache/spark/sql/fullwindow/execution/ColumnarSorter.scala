package org.apache.spark.sql.fullwindow.execution

import org.apache.spark.memory.{MemoryConsumer, MemoryMode, TaskMemoryManager}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.fullwindow.execution.sort._
import org.apache.spark.sql.vectorized.ColumnarBatch

/**
 * One partition of the columnar sort, a memory consumer of its task; its parts live in
 * execution/sort:
 *  - ColumnChunks (with RecordPages and RecordLayout): the rows held, in input order: on-heap
 *    column chunks (one long per value, a null flag chunk where a column has nulls), and with
 *    string or binary columns each row's record (the row laid out as an UnsafeRow of every
 *    column) in byte pages, only the keys keeping column chunks (to build the sort words); all
 *    accounted to the task's memory manager.
 *  - KeyWords: per key an unsigned word that folds sign, direction and null order, range-reduced
 *    by the key's min and max so several keys pack into one word where their ranges allow; a
 *    string or binary key's word is its prefix (its first 8 bytes).
 *  - InMemorySort: sort() sorts (row index, word) records with Spark's RadixSort (LSD over the
 *    packed words, each pass stable, so equal keys keep their input order); where rows' words
 *    are equal and a string or binary key differs past them, it then orders those rows by the
 *    key's bytes (Ties). With string or binary columns the sort array carries each record's
 *    address (record carry).
 *  - SortedRuns: sorted runs on disk and the merge of the runs and the rows held by their keys
 *    (equal keys: the earlier run first, so the order stays stable).
 *  - MemoryRun and SortedReader: the sorted rows held, gathered column by column, or pointed at
 *    in their records; out as UnsafeRows (sortedRows), a RowSource (sortedSource) or, for the
 *    Arrow batches, column by column by index (heldByIndex, sortedIndices, gather, gatherNulls).
 *
 * append reserves, with each chunk of rows, the sort array's share for them (32 bytes a row), so
 * sorting never asks for memory. When append is refused, spillRun() sorts the rows held, writes
 * them to a local temp file as a run (blocks of rows, column by column, through the serializer
 * manager: spill compression and encryption apply) and frees their memory. When append is
 * refused with nothing held, the caller falls back to the row sorter: dump() writes what is held
 * to disk in input order and replay() feeds every row on disk to it.
 *
 * While it appends, this consumer does not spill on request (spill returns 0): it writes runs
 * when its own memory is refused. Once its output is being read, another consumer of the same
 * task (the other side's sort of a coGroup) that needs memory makes it write the rows not read
 * yet to disk as one run, read on from there, and free their memory (the row the reader is on
 * stays with the reader, its string and binary bytes copied); not in the carry layouts (sort
 * without `allowCarry` where that matters).
 */
final class ColumnarSorter(
    types: Array[Int],
    keyCols: Array[Int],
    keyDesc: Array[Boolean],
    keyNullsFirst: Array[Boolean],
    tmm: TaskMemoryManager,
    storage: RunStorage)
  extends MemoryConsumer(tmm, MemoryMode.ON_HEAP) {

  private var held = 0L
  private var peak = 0L
  private val keys = new KeyWords(types, keyCols, keyDesc, keyNullsFirst)
  private val chunks = new ColumnChunks(types, keyCols, reserve)
  private val runs = new SortedRuns(chunks.layout, storage)
  // the rows held, sorted (by sort(); null once released)
  private var sorted: SortedArray = _
  // the reader of the held rows, once output began (MemoryRun): spill() asks it
  private var reader: MemoryRun = _

  def numRows: Long = chunks.numRows
  def peakMemory: Long = peak
  def numRuns: Int = runs.numRuns
  def bytesSpilled: Long = runs.bytesSpilled

  /** Told the memory freed each time the output's rest is spilled on request. */
  var onOutputSpill: Long => Unit = (_: Long) => ()

  override def spill(size: Long, trigger: MemoryConsumer): Long =
    if ((trigger eq this) || reader == null || held == 0) 0L
    else {
      val freed = reader.spillRest()
      if (freed > 0) onOutputSpill(freed)
      freed
    }

  private def reserve(bytes: Long): Boolean = {
    val got = acquireMemory(bytes)
    if (got < bytes) {
      if (got > 0) freeMemory(got)
      false
    } else {
      held += got
      peak = math.max(peak, held)
      true
    }
  }

  /** Appends the batch's rows; false (nothing appended) when memory is refused. */
  def append(batch: ColumnarBatch): Boolean = chunks.append(batch)

  /**
   * Appends one row (the keyed Python forms: rows from the shuffle); false (nothing appended)
   * when memory is refused.
   */
  def appendRow(row: InternalRow): Boolean = chunks.appendRow(row)

  /**
   * Sorts what was appended, in the memory append reserved for it; `allowCarry`: the carry
   * layout may be used (not for a run written by row index).
   */
  def sort(allowCarry: Boolean = false): Unit =
    sorted = InMemorySort.sort(chunks, keys, allowCarry)

  /**
   * Whether, after sort(), every sorted row is held and found by its row index in the column
   * chunks (no run on disk, no carry layout, no string or binary column), so a reader may gather
   * the rows column by column ([[sortedIndices]], [[gather]], [[gatherNulls]]) instead of row by
   * row through [[sortedSource]]: a tight loop over one column lets the CPU overlap the memory
   * reads of many rows (the sorted order visits the held rows at random).
   */
  def heldByIndex: Boolean = runs.isEmpty && sorted != null && !sorted.carry && !sorted.recCarry &&
    chunks.layout.numVar == 0

  /** The row indices of the sorted positions [from, from + count) into `dst`. */
  def sortedIndices(from: Long, count: Int, dst: Array[Long]): Unit =
    SortedReader.sortedIndices(sorted.a, from, count, dst)

  /** Column `c`'s words (as the sorter holds them) of the rows `rows(0 until count)`. */
  def gather(c: Int, rows: Array[Long], count: Int, dst: Array[Long]): Unit =
    chunks.gather(c, rows, count, dst)

  /** Column `c`'s null flags of the rows `rows(0 until count)`; false when it has no nulls. */
  def gatherNulls(c: Int, rows: Array[Long], count: Int, dst: Array[Boolean]): Boolean =
    chunks.gatherNulls(c, rows, count, dst)

  /**
   * The sorted rows (after sort()) as one source: the rows held, merged with the runs spilled
   * before when there are any. Frees everything once it has no more rows.
   */
  def sortedSource(): RowSource = source()

  private def source(): SortedSource = {
    val order = if (sorted != null) sorted else InMemorySort.unsorted(keyCols.length)
    val memory = new MemoryRun(runs.numRuns, chunks, order, keys, runs, writeRun)
    reader = memory
    SortedRuns.merge(runs.all() :+ memory, keys, () => free())
  }

  /**
   * The sorted rows (after sort()); frees everything at the end. With string or binary columns
   * each row is one reused UnsafeRow pointed at the row's record (in the pages, or a run's block
   * buffer), not copied: valid until the next hasNext or next (a consumer copies what it keeps).
   * Otherwise each row is written into one reused UnsafeRow.
   */
  def sortedRows(): Iterator[UnsafeRow] = SortedReader.rows(source(), types)

  /**
   * Sorts the rows held, writes them as a run to a local temp file and frees their memory, so
   * that appending can go on (a run is merged with the others on output).
   */
  def spillRun(): Unit = {
    sort(allowCarry = false)
    val a = sorted.a
    writeRun(chunks.numRows, j => a((2 * j).toInt))
  }

  /**
   * Writes the rows held, in input order, to a local temp file and frees their memory, before
   * the row sorter of a fallback needs it; replay() reads them back with the runs.
   */
  def dump(): Unit = writeRun(chunks.numRows, j => j)

  /**
   * Writes `count` held rows, the j-th at row index `rowAt(j)`, as a run; frees the held rows:
   * the memory freed.
   */
  private def writeRun(count: Long, rowAt: Long => Long): Long = {
    val spilled = held
    runs.write(chunks, count, rowAt, spilled)
    releaseColumns()
    spilled
  }

  /** Feeds every row written to disk (runs, then the dump), run by run, to `insert`. */
  def replay(insert: UnsafeRow => Unit): Unit = runs.replay(insert)

  private def releaseColumns(): Unit = {
    chunks.release()
    sorted = null
    if (held > 0) { freeMemory(held); held = 0 }
  }

  /** Frees everything (idempotent): at the end of the output and when the task completes. */
  def free(): Unit = {
    reader = null
    releaseColumns()
    runs.free()
  }
}
