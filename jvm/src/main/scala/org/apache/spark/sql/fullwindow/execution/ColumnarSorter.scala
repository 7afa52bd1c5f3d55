package org.apache.spark.sql.fullwindow.execution

import java.io.{BufferedInputStream, BufferedOutputStream, DataInputStream, DataOutputStream, File, FileInputStream, FileOutputStream}

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.{SparkContext, SparkEnv, TaskContext}
import org.apache.spark.memory.{MemoryConsumer, MemoryMode, TaskMemoryManager}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Descending, NullsFirst, SortOrder, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.types._
import org.apache.spark.sql.execution.vectorized.WritableColumnVector
import org.apache.spark.sql.fullwindow.shims.SparkShims
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarBatch}
import org.apache.spark.storage.BlockId
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.array.LongArray
import org.apache.spark.unsafe.memory.MemoryBlock
import org.apache.spark.unsafe.types.UTF8String
import org.apache.spark.util.collection.Sorter
import org.apache.spark.util.collection.unsafe.sort.{RadixSort, RecordPointerAndKeyPrefix, UnsafeSortDataFormat}

/**
 * What the columnar sort handles (FullWindowColumnarSortExec, KeyedColumnarSort): every column
 * of a fixed-width primitive type, a string or a binary type (its bytes carried as they are);
 * every key a column of a fixed-width type, or of a binary or string type that orders by its
 * bytes (not a collated string: SparkShims.ordersByBytes).
 */
object ColumnarSort {
  // How a column is held (one long per value) and written back.
  final val Bool = 0
  final val Byte8 = 1
  final val Short16 = 2
  final val Int32 = 3   // int, date, year-month interval
  final val Long64 = 4  // long, timestamp, timestamp_ntz, day-time interval
  final val Float32 = 5
  final val Double64 = 6
  // Variable width: the row's bytes of each such column are held in byte pages (a key's first 8
  // bytes in a chunk too, as its prefix word)
  final val Str = 7     // any StringType (collated ones too: the bytes are copied verbatim)
  final val Bin = 8
  // A decimal of at most 18 digits: its unscaled long, as an UnsafeRow holds it (the column's
  // values share one scale, so they order as their unscaled longs do)
  final val Dec64 = 9

  @inline def isVarWidth(t: Int): Boolean = t == Str || t == Bin

  def typeCode(dt: DataType): Int = dt match {
    case BooleanType => Bool
    case ByteType => Byte8
    case ShortType => Short16
    case IntegerType | DateType => Int32
    case _: YearMonthIntervalType => Int32
    case LongType | TimestampType | TimestampNTZType => Long64
    case _: DayTimeIntervalType => Long64
    case FloatType => Float32
    case DoubleType => Double64
    case _: StringType => Str
    case BinaryType => Bin
    case d: DecimalType if d.precision <= Decimal.MAX_LONG_DIGITS => Dec64
    case _ => -1
  }

  /**
   * The column index of each key, when the columnar sort applies to `order` over `output`: every
   * column of a type it holds, every key a column of a fixed-width type or a string or binary one
   * that orders by its bytes.
   */
  def keyColumns(order: Seq[SortOrder], output: Seq[Attribute]): Option[Array[Int]] = {
    val types = output.map(a => typeCode(a.dataType))
    if (order.isEmpty || !types.forall(_ >= 0)) return None
    val idx = order.map { o =>
      o.child match {
        case a: Attribute => output.indexWhere(_.exprId == a.exprId)
        case _ => -1
      }
    }
    if (idx.forall(i => i >= 0 && (!isVarWidth(types(i)) || SparkShims.ordersByBytes(output(i).dataType)))) {
      Some(idx.toArray)
    } else None
  }

  /**
   * One word of the sort: a key's value (kind 0), its value with the null slot folded in (1),
   * or its null flag (2), spanning `width` bits; min and max of the key's base words (unsigned).
   */
  private[execution] final case class Word(key: Int, kind: Int, width: Int, min: Long, max: Long)

  /** What the columnar sort adds to a node's metrics. */
  def metrics(sc: SparkContext): Map[String, SQLMetric] = Map(
    "columnarSorts" -> SQLMetrics.createMetric(sc, "partitions sorted by columns"),
    "rowSortFallbacks" -> SQLMetrics.createMetric(sc, "partitions that fell back to the row sorter"),
    "columnarRuns" -> SQLMetrics.createMetric(sc, "sorted runs spilled by columns"))

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

  /**
   * Column `c` (not null) of `row` as the sorter holds it: one long (float bits as raw bits). A
   * row with a decimal column is an UnsafeRow (sortRows projects others), whose slot holds it.
   */
  @inline def getWord(row: InternalRow, c: Int, t: Int): Long = (t: @annotation.switch) match {
    case Bool => if (row.getBoolean(c)) 1L else 0L
    case Byte8 => row.getByte(c).toLong
    case Short16 => row.getShort(c).toLong
    case Int32 => row.getInt(c).toLong
    case Long64 | Dec64 => row.getLong(c)
    case Float32 => java.lang.Float.floatToRawIntBits(row.getFloat(c)).toLong
    case _ => java.lang.Double.doubleToRawLongBits(row.getDouble(c))
  }

  /**
   * Column `c` (not null, of type `t`: Str or Bin) of `row` as its bytes: no copy for an
   * UnsafeRow (a binary field is laid out as a string's) or a string.
   */
  @inline def getBytes(row: InternalRow, c: Int, t: Int): UTF8String =
    if (t == Str || row.isInstanceOf[UnsafeRow]) row.getUTF8String(c)
    else UTF8String.fromBytes(row.getBinary(c))

  /**
   * Decimal vector `v`'s (not null) value at `i` as its unscaled long: read as Spark's own
   * writable vectors hold it (an int up to 9 digits, else a long), other vectors (ORC's, a
   * source's own) through getDecimal.
   */
  @inline def decimalWord(v: ColumnVector, i: Int, dt: DecimalType): Long = v match {
    case _: WritableColumnVector =>
      if (dt.precision <= Decimal.MAX_INT_DIGITS) v.getInt(i).toLong else v.getLong(i)
    case _ => v.getDecimal(i, dt.precision, dt.scale).toUnscaledLong
  }

  /** Column `c` (not null, of type Str or Bin) of vector `v` at `i` as its bytes. */
  @inline def getBytes(v: ColumnVector, i: Int, t: Int): UTF8String =
    // a WritableColumnVector gives a binary value's bytes as it gives a string's (no copy)
    if (t == Str || v.isInstanceOf[WritableColumnVector]) v.getUTF8String(i)
    else UTF8String.fromBytes(v.getBinary(i))

  /** Rows (the row sorter's output, when the columnar sort fell back to it) as a RowSource. */
  final class RowsSource(rows: Iterator[InternalRow], types: Array[Int]) extends RowSource {
    private var row: InternalRow = _
    private var bytesCol = -1
    private var bytes: UTF8String = _
    def run: Int = 0
    def advance(): Boolean = rows.hasNext && { row = rows.next(); bytesCol = -1; true }
    def value(c: Int): Long = getWord(row, c, types(c))
    def isNull(c: Int): Boolean = row.isNullAt(c)
    private def bytesOf(c: Int): UTF8String = {
      if (c != bytesCol) { bytes = getBytes(row, c, types(c)); bytesCol = c }
      bytes
    }
    def bytesBase(c: Int): AnyRef = bytesOf(c).getBaseObject
    def bytesOffset(c: Int): Long = bytesOf(c).getBaseOffset
    def bytesLength(c: Int): Int = bytesOf(c).numBytes()
  }

  /** The schema of `output` (the row sorter's, and the Arrow batches' checks). */
  def schemaOf(output: Seq[Attribute]): StructType =
    StructType(output.map(a => StructField(a.name, a.dataType, a.nullable)))

  /**
   * Sorts one partition's `input` (batches or rows) by `order` over `output`'s columns: each unit
   * is `append`ed to a ColumnarSorter; when memory is refused the rows held become a sorted run
   * on disk and appending goes on; when it is refused with nothing held, the rows on disk and the
   * rest of the input go to the row sorter (RowSorters.create, spilling as it does; `insert` puts
   * a unit into it, giving its row count) instead. Returns the sorter, sorted, or the row
   * sorter's output; records `metric`s: sortTime, peakMemory, spillSize, numInputRows and
   * numOutputRows, and the optional numInputBatches, columnarSorts, columnarRuns and
   * rowSortFallbacks.
   */
  def sortPartition[T](
      input: Iterator[T],
      order: Seq[SortOrder],
      output: Seq[Attribute],
      types: Array[Int],
      keyCols: Array[Int],
      radixSortEnabled: Boolean,
      packedPrefix: Boolean,
      append: (ColumnarSorter, T) => Boolean,
      rowsOf: T => Long,
      insert: (T, FullWindowRowSorter) => Long,
      metrics: Map[String, SQLMetric],
      allowCarry: Boolean = true): Either[ColumnarSorter, Iterator[InternalRow]] = {
    val ctx = TaskContext.get()
    val sorter = new ColumnarSorter(types, keyCols, order.map(_.direction == Descending).toArray,
      order.map(_.nullOrdering == NullsFirst).toArray, ctx.taskMemoryManager())
    ctx.addTaskCompletionListener[Unit](_ => sorter.free())
    def add(name: String, v: Long): Unit = metrics.get(name).foreach(_ += v)
    sorter.onOutputSpill = bytes => { add("columnarRuns", 1); add("spillSize", bytes) }
    val spilledBefore = ctx.taskMetrics().memoryBytesSpilled
    var refused: Option[T] = None
    var units = 0L
    var rows = 0L
    while (refused.isEmpty && input.hasNext) {
      val u = input.next()
      units += 1
      // memory refused: the rows held become a sorted run on disk, and appending goes on;
      // refused with nothing held: the row sorter takes over
      if (!append(sorter, u) && (sorter.numRows == 0 || { sorter.spillRun(); !append(sorter, u) })) {
        refused = Some(u)
      } else rows += rowsOf(u)
    }
    val result = if (refused.isEmpty) {
      val start = System.nanoTime()
      sorter.sort(allowCarry)
      add("sortTime", (System.nanoTime() - start) / 1000000)
      add("peakMemory", sorter.peakMemory)
      add("columnarSorts", 1)
      add("columnarRuns", sorter.numRuns)
      ctx.taskMetrics().incPeakExecutionMemory(sorter.peakMemory)
      Left(sorter)
    } else {
      // what is held goes to disk first (so the row sorter can have the memory), then the row
      // sorter gets the rows on disk back, then the refused unit and the rest
      add("rowSortFallbacks", 1)
      if (sorter.numRows > 0) sorter.dump()
      add("columnarRuns", sorter.numRuns) // the runs spilled before it fell back
      val rowSorter = RowSorters.create(order, output, schemaOf(output), radixSortEnabled,
        packedPrefix, (sortNanos, peakMemory, spilled) => {
          add("sortTime", sortNanos / 1000000)
          add("peakMemory", peakMemory)
          add("spillSize", spilled)
        })
      rows = 0L
      sorter.replay { row => rowSorter.insertRow(row); rows += 1 }
      refused.foreach { u => rows += insert(u, rowSorter) }
      input.foreach { u => units += 1; rows += insert(u, rowSorter) }
      val sorted = rowSorter.sort()
      val peak = math.max(sorter.peakMemory, rowSorter.getPeakMemoryUsage)
      add("sortTime", rowSorter.getSortTimeNanos / 1000000)
      add("peakMemory", peak)
      ctx.taskMetrics().incPeakExecutionMemory(peak)
      Right(sorted)
    }
    add("numInputBatches", units)
    add("numInputRows", rows)
    add("numOutputRows", rows)
    add("spillSize", ctx.taskMetrics().memoryBytesSpilled - spilledBefore)
    result
  }

  /**
   * sortPartition over rows (the exchange's, or any row child's): each row appended on its own;
   * the row sorter of a fallback takes UnsafeRows as they come (others projected; with a decimal
   * column, before they are appended).
   */
  def sortRows(
      rows: Iterator[InternalRow],
      order: Seq[SortOrder],
      output: Seq[Attribute],
      types: Array[Int],
      keyCols: Array[Int],
      radixSortEnabled: Boolean,
      packedPrefix: Boolean,
      metrics: Map[String, SQLMetric],
      allowCarry: Boolean = true): Either[ColumnarSorter, Iterator[InternalRow]] = {
    val toRow = UnsafeProjection.create(output, output)
    val unsafe = (r: InternalRow) => r match {
      case u: UnsafeRow => u
      case other => toRow(other)
    }
    val insert = (r: InternalRow, rowSorter: FullWindowRowSorter) => {
      rowSorter.insertRow(unsafe(r))
      1L
    }
    // a decimal is read as the unscaled long in an UnsafeRow's slot (getWord): other rows projected
    val in = if (!types.contains(Dec64)) rows else rows.map(unsafe)
    sortPartition[InternalRow](in, order, output, types, keyCols, radixSortEnabled,
      packedPrefix, _.appendRow(_), _ => 1L, insert, metrics, allowCarry)
  }

  /** An unsigned word that orders doubles as Spark SQL does: -0.0 = 0.0, NaN above +Inf. */
  @inline def doubleWord(d: Double): Long = {
    val x = if (d == 0.0) 0.0 else d // -0.0 == 0.0; NaN != 0.0 keeps NaN
    val bits = java.lang.Double.doubleToLongBits(x) // canonical NaN
    bits ^ ((bits >> 63) | Long.MinValue)
  }
}

/**
 * One partition of the columnar sort: the input batches are copied into on-heap column chunks
 * (one long per value, a null flag chunk where a column has nulls), accounted to the task's
 * memory manager. sort() builds, per key, an unsigned word that folds sign, direction and null
 * order (range-reduced by the key's min and max so several keys pack into one word where their
 * ranges allow), and sorts (row index, word) records with Spark's RadixSort: LSD over the packed
 * words, least significant first; each pass is stable, so equal keys keep their input order.
 * The sorted rows are then written as UnsafeRows, gathering each column by row index.
 *
 * A string or binary key's word is its prefix (its first 8 bytes); where rows' words are equal
 * and such a key differs past them, sort() then orders those rows by the key's bytes (sortTies).
 *
 * With string or binary columns the rows are held row by row: each row's record
 * (its size, then the row laid out as an UnsafeRow of every column, keys too) lies in on-heap
 * byte pages of 1 MiB (a record larger than that in a page of its own), and a long a row gives
 * its page and offset; only the keys keep column chunks (to build the sort words). The pages are
 * accounted as the chunks are. The sort array carries each record's address (record carry), and
 * sortedRows() points an UnsafeRow at each sorted row's record instead of writing a new row.
 *
 * append reserves, with each chunk of rows, the sort array's share for them (32 bytes a row), so
 * sorting never asks for memory. When append is refused, spillRun() sorts the rows held, writes
 * them to a local temp file as a run (blocks of rows, column by column, through the serializer
 * manager: spill compression and encryption apply) and frees their memory; sortedRows() merges
 * the runs and the rows held by their keys (equal keys: the earlier run first, so the order stays
 * stable). When append is refused with nothing held, the caller falls back to the row sorter:
 * dump() writes what is held to disk in input order and replay() feeds every row on disk to it.
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
    tmm: TaskMemoryManager)
  extends MemoryConsumer(tmm, MemoryMode.ON_HEAP) {

  import ColumnarSort._

  private val ChunkBits = 16
  private val ChunkRows = 1 << ChunkBits
  private val Mask = ChunkRows - 1L
  private val numCols = types.length

  // a long per value of each fixed-width column (none for a string or binary one)
  private val values = Array.fill(numCols)(new ArrayBuffer[Array[Long]])
  private val nulls = Array.fill(numCols)(new ArrayBuffer[Array[Boolean]])
  private val colHasNull = new Array[Boolean](numCols)
  private var n = 0L
  private var held = 0L
  private var peak = 0L
  private var sortArray: Array[Long] = _
  private val runs = new ArrayBuffer[RunFile]
  private val keyMin = new Array[Long](keyCols.length)
  // Carry layout (set by sort): each record's first long is the one non-key column's value
  // instead of a row index, and the keys are decoded from its word, so output reads the sort
  // array in order and gathers nothing. Only when one pack of value words holds every key,
  // every key is integral without nulls and there is at most one other column, without nulls.
  private var carry = false
  // Keys in the word (set by sort): one pack of value words holds every key, every key integral
  // without nulls, so output decodes the keys from the record's word (carry or not)
  private var keysInWord = false
  private var carryPack: Seq[Word] = Nil
  private var carryPayload = -1
  private val reading = new ArrayBuffer[FileRun]
  private var spilledBytes = 0L

  // string and binary columns: each row's record (below) at addrs' long for the row: page
  // index << 32 | offset in the page
  private val varCols: Array[Int] = (0 until numCols).filter(c => isVarWidth(types(c))).toArray
  private val numVar = varCols.length
  private val varIndex: Array[Int] = {
    val a = Array.fill(numCols)(-1)
    varCols.indices.foreach(i => a(varCols(i)) = i)
    a
  }
  // with string or binary columns, the non-key fixed-width columns live in the record only (the
  // keys in chunks too), so that output reads one record a row
  private val isKey: Array[Boolean] = {
    val a = new Array[Boolean](numCols)
    keyCols.foreach(c => a(c) = true)
    a
  }
  private val recFixed: Array[Int] =
    if (numVar == 0) Array.empty
    else (0 until numCols).filter(c => !isKey(c) && !isVarWidth(types(c))).toArray
  private val recFixedIndex: Array[Int] = {
    val a = Array.fill(numCols)(-1)
    recFixed.indices.foreach(i => a(recFixed(i)) = i)
    a
  }
  // a column held in long chunks: a fixed-width one outside the record, or a key (a string or
  // binary key's chunk holds its prefix word)
  @inline private def inChunks(c: Int): Boolean =
    isKey(c) || (!isVarWidth(types(c)) && recFixedIndex(c) < 0)
  // the string or binary keys (their indices in keyCols), and per column whether such a key has,
  // since the columns were last released, had a value its prefix word does not tell apart
  // (prefixIsValue)
  private val varKeys: Array[Int] = keyCols.indices.filter(k => isVarWidth(types(keyCols(k)))).toArray
  private val pastPrefix = new Array[Boolean](numCols)
  // A record (with string or binary columns): an 8-byte header (the row's size in bytes), then
  // the row laid out as an UnsafeRow of every column (keys too): null bit set words, an 8-byte
  // slot per column (offset << 32 | size for a string or binary value, relative to the row's
  // start), the values' bytes each padded to 8 (the padding zero: pages are new arrays, written
  // once). So a sorted row is an UnsafeRow pointed at its record, not copied.
  private val RecHeader = 8
  private val bitsetBytes = ((numCols + 63) / 64) * 8
  private val fixedBytes = bitsetBytes + 8 * numCols
  // Record carry (set by sort): the sort array's first long of each record is the row's record
  // address instead of its index
  private var recCarry = false
  private val addrs = new ArrayBuffer[Array[Long]]
  private val PageBytes = 1 << 20
  private val pages = new ArrayBuffer[Array[Byte]]
  private var curPage = -1
  private var pagePos = PageBytes // no page open: the next record opens one
  private var numChunks = 0
  // what a chunk of rows reserves: a long per fixed-width value, one for the record's address,
  // the sort array's four longs
  private val chunkBytes: Long =
    ChunkRows * ((0 until numCols).count(inChunks) * 8L + (if (numVar > 0) 8L else 0L) + 32L)
  // append's scratch: each row's record size and each string or binary column's lengths
  private var recSize = new Array[Int](0)
  private var recPage = new Array[Array[Byte]](0)
  private var recRow = new Array[Long](0)
  private var recCursor = new Array[Int](0)
  private val varLens = Array.fill(numVar)(new Array[Int](0))
  private val rowBytes = new Array[UTF8String](numVar)

  private def addChunk(): Unit = {
    var c = 0
    while (c < numCols) {
      if (inChunks(c)) values(c) += new Array[Long](ChunkRows)
      c += 1
    }
    if (numVar > 0) addrs += new Array[Long](ChunkRows)
    numChunks += 1
  }

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

  /** The offset past the record at `at` of `base` (its header, then the row). */
  @inline private def recordEnd(base: AnyRef, at: Long): Long =
    at + RecHeader + roundUp8(Platform.getLong(base, at))

  @inline private def roundUp8(x: Long): Long = (x + 7) & ~7L

  /** Whether column `c` of the record row at `row` of `base` is null. */
  @inline private def recIsNull(base: AnyRef, row: Long, c: Int): Boolean =
    (Platform.getLong(base, row + 8L * (c >> 6)) & (1L << (c & 63))) != 0

  @inline private def setRecNull(base: AnyRef, row: Long, c: Int): Unit = {
    val w = row + 8L * (c >> 6)
    Platform.putLong(base, w, Platform.getLong(base, w) | (1L << (c & 63)))
  }

  /** Column `c` (fixed-width, not null) of the record row at `row` as the sorter holds it. */
  @inline private def recWord(base: AnyRef, row: Long, c: Int): Long = {
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
  @inline private def putRecWord(base: AnyRef, row: Long, c: Int, w: Long): Unit = {
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
  @inline private def recSlot(base: AnyRef, row: Long, c: Int): Long =
    Platform.getLong(base, row + bitsetBytes + 8L * c)

  @inline private def recordAddr(row: Long): Long =
    addrs((row >>> ChunkBits).toInt)((row & Mask).toInt)

  def numRows: Long = n
  def peakMemory: Long = peak
  def numRuns: Int = runs.length
  def bytesSpilled: Long = spilledBytes

  // the reader of the held rows, once output began (MemoryRun): spill() asks it
  private var reader: MemoryRun = _

  /** Told the memory freed each time the output's rest is spilled on request. */
  var onOutputSpill: Long => Unit = (_: Long) => ()

  override def spill(size: Long, trigger: MemoryConsumer): Long =
    if ((trigger eq this) || reader == null || held == 0) 0L
    else {
      val freed = reader.spillRest()
      if (freed > 0) onOutputSpill(freed)
      freed
    }

  /**
   * Whether, after sort(), every sorted row is held and found by its row index in the column
   * chunks (no run on disk, no carry layout, no string or binary column), so a reader may gather
   * the rows column by column ([[sortedIndices]], [[gather]], [[gatherNulls]]) instead of row by
   * row through [[sortedSource]]: a tight loop over one column lets the CPU overlap the memory
   * reads of many rows (the sorted order visits the held rows at random).
   */
  def heldByIndex: Boolean = runs.isEmpty && !carry && !recCarry && numVar == 0 && sortArray != null

  /** The row indices of the sorted positions [from, from + count) into `dst`. */
  def sortedIndices(from: Long, count: Int, dst: Array[Long]): Unit = {
    val a = sortArray
    var at = (2 * from).toInt
    var i = 0
    while (i < count) { dst(i) = a(at); at += 2; i += 1 }
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
    if (numVar > 0) need += recordSizes(batch, m)
    if (need > 0 && !reserve(need)) return false
    while (numChunks <= lastChunk) addChunk()
    c = 0
    while (c < numCols) {
      if (inChunks(c)) copyColumn(batch.column(c), c, m)
      c += 1
    }
    if (numVar > 0) copyRecords(batch, m)
    n += m
    true
  }

  /** Each row's record size and lengths (into recSize and varLens); the new pages' bytes. */
  private def recordSizes(batch: ColumnarBatch, m: Int): Long = {
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

  /** Copies each row's record (sized by recordSizes) into the pages, column by column. */
  private def copyRecords(batch: ColumnarBatch, m: Int): Unit = {
    var i = 0
    var pos = n
    while (i < m) {
      val a = place(recSize(i))
      addrs((pos >>> ChunkBits).toInt)((pos & Mask).toInt) = a
      val page = pages((a >>> 32).toInt)
      val at = Platform.BYTE_ARRAY_OFFSET + (a & 0xffffffffL)
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
          if (len < 0) setRecNull(page, row, c)
          else {
            val off = recCursor(i)
            Platform.putLong(page, row + bitsetBytes + 8L * c, (off.toLong << 32) | len)
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
          if (hasNull && v.isNullAt(i)) setRecNull(recPage(i), recRow(i), c)
          else putRecWord(recPage(i), recRow(i), c, vectorWord(v, i, t))
          i += 1
        }
      }
      c += 1
    }
    java.util.Arrays.fill(recPage.asInstanceOf[Array[AnyRef]], 0, m, null)
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
    if (numVar > 0 && !appendRecord(row, ch, off)) return false
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
        rowChunks(c)(off) = if (!isVarWidth(t)) ColumnarSort.getWord(row, c, t) else {
          val u = getBytes(row, c, t)
          if (!prefixIsValue(u)) pastPrefix(c) = true
          prefixWord(u)
        }
        if (colHasNull(c) && ch < nulls(c).length && nulls(c)(ch) != null) nulls(c)(ch)(off) = false
      }
      c += 1
    }
    n += 1
    true
  }

  /**
   * Copies `row`'s record into the pages (reserving a page it needs); false when refused. An
   * UnsafeRow of the same columns is already laid out as a record's row: its bytes are copied.
   */
  private def appendRecord(row: InternalRow, ch: Int, off: Int): Boolean = {
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
    val page = pages((a >>> 32).toInt)
    val at = Platform.BYTE_ARRAY_OFFSET + (a & 0xffffffffL)
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
          if (u == null) setRecNull(page, r, c)
          else {
            val len = u.numBytes()
            Platform.putLong(page, r + bitsetBytes + 8L * c, (cursor << 32) | len)
            Platform.copyMemory(u.getBaseObject, u.getBaseOffset, page, r + cursor, len)
            cursor += roundUp8(len)
            rowBytes(vi) = null
          }
        } else if (row.isNullAt(c)) setRecNull(page, r, c)
        else putRecWord(page, r, c, ColumnarSort.getWord(row, c, types(c)))
        c += 1
      }
    }
    true
  }

  // appendRow's chunk of each column
  private val rowChunks = new Array[Array[Long]](numCols)
  private var rowChunk = -1

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
              dst(off + i) = prefixWord(u)
              if (!prefixIsValue(u)) pastPrefix(c) = true
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

  @inline private def value(c: Int, row: Long): Long = {
    val k = recFixedIndex(c)
    if (k < 0) values(c)((row >>> ChunkBits).toInt)((row & Mask).toInt)
    else {
      val a = recordAddr(row)
      recWord(pages((a >>> 32).toInt), Platform.BYTE_ARRAY_OFFSET + (a & 0xffffffffL) + RecHeader, c)
    }
  }

  /** Column `c` (not null) of vector `v` at `i` as the sorter holds it (getWord's long). */
  @inline private def vectorWord(v: ColumnVector, i: Int, t: Int): Long = (t: @annotation.switch) match {
    case Bool => if (v.getBoolean(i)) 1L else 0L
    case Byte8 => v.getByte(i).toLong
    case Short16 => v.getShort(i).toLong
    case Int32 => v.getInt(i).toLong
    case Long64 => v.getLong(i)
    case Float32 => java.lang.Float.floatToRawIntBits(v.getFloat(i)).toLong
    case Dec64 => decimalWord(v, i, v.dataType.asInstanceOf[DecimalType])
    case _ => java.lang.Double.doubleToRawLongBits(v.getDouble(i))
  }

  @inline private def isNull(c: Int, row: Long): Boolean = colHasNull(c) && {
    val ch = (row >>> ChunkBits).toInt
    val nb = nulls(c)
    ch < nb.length && nb(ch) != null && nb(ch)((row & Mask).toInt)
  }

  /** The unsigned ascending base word of a key column's value. */
  @inline private def baseWord(t: Int, v: Long): Long = (t: @annotation.switch) match {
    case Float32 => doubleWord(java.lang.Float.intBitsToFloat(v.toInt).toDouble)
    case Double64 => doubleWord(java.lang.Double.longBitsToDouble(v))
    case _ => v ^ Long.MinValue
  }

  private def bitWidth(range: Long): Int = 64 - java.lang.Long.numberOfLeadingZeros(range)

  /** The words of the sort, most significant first. */
  private def words(): Seq[Word] = {
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
        if (isNull(c, i)) anyNull = true
        else {
          val w = baseWord(t, value(c, i))
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

  /** Adds word `w` of each record's row into the records' key slot (shifting what is there). */
  private def addWord(a: Array[Long], w: Word, sequential: Boolean): Unit = {
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
          if (isNull(c, row)) 0L
          else {
            val b = baseWord(t, value(c, row))
            if (desc) w.max - b else b - w.min
          }
        case 1 =>
          if (isNull(c, row)) nullFolded
          else {
            val b = baseWord(t, value(c, row))
            val u = if (desc) w.max - b else b - w.min
            if (nullsFirst) u + 1 else u
          }
        case _ => if (isNull(c, row) == nullsFirst) 0L else 1L
      }
      a(at + 1) = prev | word
      j += 1
    }
  }

  /**
   * Sorts what was appended, in the memory append reserved for it; `allowCarry`: the carry
   * layout may be used (not for a run written by row index).
   */
  def sort(allowCarry: Boolean = false): Unit = {
    val a = new Array[Long]((4 * n).toInt)
    sortArray = a
    carry = false
    recCarry = false
    keysInWord = false
    if (n == 0) return
    val all = words()
    // group consecutive words into packs of at most 64 bits, from the least significant end
    val packs = new ArrayBuffer[Seq[Word]]
    var cur = List.empty[Word]
    var bits = 0
    for (w <- all.reverse) {
      if (bits + w.width > 64) { packs += cur; cur = Nil; bits = 0 }
      cur = w :: cur
      bits += w.width
    }
    if (cur.nonEmpty) packs += cur
    val others = (0 until numCols).filterNot(keyCols.contains)
    keysInWord = packs.length <= 1 && keyCols.distinct.length == keyCols.length &&
      keyCols.forall(c => !colHasNull(c) && types(c) != Float32 && types(c) != Double64 &&
        !isVarWidth(types(c))) &&
      all.forall(_.kind == 0)
    carry = allowCarry && keysInWord && others.length <= 1 && others.forall(c => !colHasNull(c)) &&
      numVar == 0
    // a record holds every column of its row, so the record carry needs no key in the word; with
    // more than one pass (addWord reads a row's keys by its index) the addresses come after
    recCarry = allowCarry && numVar > 0
    // rows whose string or binary keys tie on their words are sorted by their bytes after the
    // radix passes (sortTies), which find them by row index
    val ties = varKeys.exists(k => pastPrefix(keyCols(k)))
    val addrFirst = recCarry && packs.length <= 1 && !ties
    carryPack = if (packs.isEmpty) Nil else packs.head
    carryPayload = if (others.isEmpty) -1 else others.head
    var j = 0
    val rows = n.toInt
    if (carry && carryPayload >= 0) {
      while (j < rows) { a(2 * j) = value(carryPayload, j); j += 1 }
    } else if (addrFirst) {
      while (j < rows) { a(2 * j) = recordAddr(j); j += 1 }
    } else {
      while (j < rows) { a(2 * j) = j; j += 1 }
    }
    val la = new LongArray(MemoryBlock.fromLongArray(a))
    var p = 0
    while (p < packs.length) { // least significant first (LSD): each pass is stable
      // most significant first: each shifts what is there
      for (w <- packs(p)) addWord(a, w, carry || addrFirst)
      val at = RadixSort.sortKeyPrefixArray(la, 0L, n, 0, 7, false, false)
      if (at != 0) System.arraycopy(a, at, a, 0, 2 * rows)
      if (p < packs.length - 1) { // clear the key slots for the next pack
        j = 0
        while (j < rows) { a(2 * j + 1) = 0L; j += 1 }
      }
      p += 1
    }
    if (ties) sortTies(a, rows, packs.length <= 1 && varKeys.head == keyCols.length - 1)
    if (recCarry && !addrFirst) {
      j = 0
      while (j < rows) { a(2 * j) = recordAddr(a(2 * j)); j += 1 }
    }
  }

  /**
   * After the radix passes, which order a string or binary key by its prefix word only: finds
   * each run of sorted rows whose keys up to the first string or binary one (`firstVar`) have
   * equal words (`wordIsKey`: the last pass's word, which then holds just those keys' words;
   * else key by key) and orders it by the keys' bytes (Ties.refine). The sort slot's first long
   * is each row's index; the sort array's free half is the scratch.
   */
  private def sortTies(a: Array[Long], rows: Int, wordIsKey: Boolean): Unit = {
    val firstVar = varKeys.head
    def sameWords(x: Int, y: Int): Boolean =
      if (wordIsKey) a(2 * x + 1) == a(2 * y + 1)
      else {
        val rx = a(2 * x)
        val ry = a(2 * y)
        var k = 0
        var same = true
        while (same && k <= firstVar) {
          val c = keyCols(k)
          val nx = isNull(c, rx)
          same = nx == isNull(c, ry) &&
            (nx || baseWord(types(c), value(c, rx)) == baseWord(types(c), value(c, ry)))
          k += 1
        }
        same
      }
    val ties = new Ties(a, rows)
    var lo = 0
    while (lo < rows) {
      var hi = lo + 1
      while (hi < rows && sameWords(lo, hi)) hi += 1
      if (hi - lo > 1) ties.refine(lo, hi, 1)
      lo = hi
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
  private final class Ties(a: Array[Long], rows: Int) {
    private val SmallRun = 32
    private val k0 = varKeys.head
    private val c0 = keyCols(k0)
    private val desc0 = keyDesc(k0)
    private val laterVar = varKeys.length > 1
    private val la = new LongArray(MemoryBlock.fromLongArray(a))
    private val tim = new Sorter(new UnsafeSortDataFormat(
      new LongArray(new MemoryBlock(a, Platform.LONG_ARRAY_OFFSET + 16L * rows, 16L * rows))))
    private val byKeys = new java.util.Comparator[RecordPointerAndKeyPrefix] {
      override def compare(x: RecordPointerAndKeyPrefix, y: RecordPointerAndKeyPrefix): Int =
        compareRecordKeys(recordAddr(x.recordPointer), recordAddr(y.recordPointer))
    }

    def refine(lo: Int, hi: Int, depth: Int): Unit = {
      val m = hi - lo
      if (m <= SmallRun || isNull(c0, a(2 * lo))) { sortIfDiffer(lo, hi); return }
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
        val addr = recordAddr(row)
        val page = recPageOf(addr)
        val at = recRowOf(addr)
        val slot = recSlot(page, at, c0)
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
      val xa = recordAddr(x)
      val ya = recordAddr(y)
      varKeys.forall { k =>
        val c = keyCols(k)
        val nx = isNull(c, x)
        nx == isNull(c, y) &&
          (nx || compareRecordBytes(recPageOf(xa), recRowOf(xa), recPageOf(ya), recRowOf(ya), c) == 0)
      }
    }
  }

  @inline private def recPageOf(addr: Long): Array[Byte] = pages((addr >>> 32).toInt)
  // the record's row (past its header) in its page, as Platform addresses it
  @inline private def recRowOf(addr: Long): Long = Platform.BYTE_ARRAY_OFFSET + (addr & 0xffffffffL) + RecHeader

  /** Compares column `c` (string or binary, not null) of two record rows by its bytes. */
  @inline private def compareRecordBytes(xPage: AnyRef, xRow: Long, yPage: AnyRef, yRow: Long,
      c: Int): Int = {
    val xs = recSlot(xPage, xRow, c)
    val ys = recSlot(yPage, yRow, c)
    compareBytes(xPage, xRow + (xs >>> 32), xs.toInt, yPage, yRow + (ys >>> 32), ys.toInt)
  }

  /** Compares the keys of two records (at addresses `x` and `y`) as the sort orders them. */
  private def compareRecordKeys(x: Long, y: Long): Int = {
    val xPage = recPageOf(x)
    val xRow = recRowOf(x)
    val yPage = recPageOf(y)
    val yRow = recRowOf(y)
    var k = 0
    while (k < keyCols.length) {
      val c = keyCols(k)
      val t = types(c)
      val nx = recIsNull(xPage, xRow, c)
      val ny = recIsNull(yPage, yRow, c)
      if (nx || ny) {
        if (!(nx && ny)) return if (nx == keyNullsFirst(k)) -1 else 1
      } else {
        val cmp = if (isVarWidth(t)) compareRecordBytes(xPage, xRow, yPage, yRow, c) else {
          java.lang.Long.compareUnsigned(baseWord(t, recWord(xPage, xRow, c)),
            baseWord(t, recWord(yPage, yRow, c)))
        }
        if (cmp != 0) return if (keyDesc(k)) -cmp else cmp
      }
      k += 1
    }
    0
  }

  /**
   * The rows held, in sorted order (after sort()), as a source of rows. In the carry layout the
   * sort array is all it reads; otherwise it gathers, GatherRows sorted rows at a time and column
   * by column (independent loads in a tight loop: their cache misses overlap), the columns held
   * in chunks (but keys decoded from the words), or with string or binary columns each row's
   * record (its address from the sort array in the record carry, else by row index; its cache
   * lines touched), from which every column is read.
   */
  private final class MemoryRun(val run: Int) extends Source {
    reader = this
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
      val freed = held
      val from = j + 1
      writeRun(n - from, r => sortArray((2 * (from + r)).toInt))
      tail = new FileRun(runs.last, run)
      freed
    }
    // with string or binary columns every column is read from the row's record
    private val records = numVar > 0
    private val decoded = new Array[Long](numCols)
    private val pack = carryPack.reverse.toArray // least significant first
    private val constKeys = keyCols.indices.filterNot(k => carryPack.exists(_.key == k)).toArray
    private val inWord = new Array[Boolean](numCols)
    private val decodeKeys = keysInWord && !records
    if (decodeKeys) {
      constKeys.foreach(k => decoded(keyCols(k)) = keyMin(k) ^ Long.MinValue)
      keyCols.foreach(c => inWord(c) = true)
    }
    private val GatherRows = 1024
    private val gatherCols =
      if (carry || records) Array.empty[Int]
      else (0 until numCols).filter(c => !inWord(c) && inChunks(c)).toArray
    private val gathered = new Array[Array[Long]](numCols)
    gatherCols.foreach(c => gathered(c) = new Array[Long](GatherRows))
    private val nullCols =
      if (carry || records) Array.empty[Int]
      else (0 until numCols).filter(c => colHasNull(c)).toArray
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
      val m = math.min(GatherRows.toLong, n - j).toInt
      sortedIndices(j, m, rowIdx) // row indices, or record addresses in the record carry
      var k = 0
      while (k < gatherCols.length) { // none with records
        val c = gatherCols(k)
        ColumnarSorter.this.gather(c, rowIdx, m, gathered(c))
        k += 1
      }
      k = 0
      while (k < nullCols.length) { gatherNulls(nullCols(k), rowIdx, m, gatheredNull(nullCols(k))); k += 1 }
      if (records) {
        var touch = 0
        var t = 0
        while (t < m) {
          val a = if (recCarry) rowIdx(t) else recordAddr(rowIdx(t))
          val page = pages((a >>> 32).toInt)
          val at = Platform.BYTE_ARRAY_OFFSET + (a & 0xffffffffL)
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
      if (j >= n) return false
      val at = (2 * j).toInt
      if (carry) {
        if (carryPayload >= 0) decoded(carryPayload) = sortArray(at)
      } else {
        i += 1
        if (i >= inBlock) gather()
      }
      if (decodeKeys) {
        var word = sortArray(at + 1)
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
      true
    }
    def value(c: Int): Long =
      if (tail != null) {
        if (onTail) tail.value(c)
        else if (records) recWord(current.record, Platform.BYTE_ARRAY_OFFSET, c)
        else current.values(c)
      }
      else if (carry || inWord(c)) decoded(c) // neither with records
      else if (records) recWord(recPages(i), recAt(i), c)
      else gathered(c)(i)
    def isNull(c: Int): Boolean =
      if (tail != null) {
        if (onTail) tail.isNull(c)
        else if (records) recIsNull(current.record, Platform.BYTE_ARRAY_OFFSET, c)
        else current.nulls(c)
      }
      else if (carry) false
      else if (records) recIsNull(recPages(i), recAt(i), c)
      else gatheredNull(c) != null && gatheredNull(c)(i)
    def bytesBase(c: Int): AnyRef = recordBase
    def bytesOffset(c: Int): Long = recordOffset + (recSlot(recordBase, recordOffset, c) >>> 32)
    def bytesLength(c: Int): Int = recSlot(recordBase, recordOffset, c).toInt
    def recordBase: AnyRef =
      if (tail == null) recPages(i) else if (onTail) tail.recordBase else current.record
    def recordOffset: Long =
      if (tail == null) recAt(i) else if (onTail) tail.recordOffset else Platform.BYTE_ARRAY_OFFSET
    def recordSize: Int =
      if (tail == null) recBytes(i) else if (onTail) tail.recordSize else current.record.length
  }

  /**
   * A source of this sorter's rows; with string or binary columns, the current row's record too:
   * its row's bytes (an UnsafeRow's) at `recordOffset` of `recordBase`, `recordSize` of them,
   * valid until the source advances.
   */
  private abstract class Source extends RowSource {
    def recordBase: AnyRef
    def recordOffset: Long
    def recordSize: Int
  }

  /**
   * The sorted rows (after sort()) as one source: the rows held, merged with the runs spilled
   * before when there are any. Frees everything once it has no more rows.
   */
  def sortedSource(): RowSource = source()

  private def source(): Source = {
    val sources: Seq[Source] = runs.indices.map(i => new FileRun(runs(i), i)) :+ new MemoryRun(runs.length)
    if (sources.length == 1) {
      val only = sources.head
      new Source {
        def run: Int = 0
        def advance(): Boolean = only.advance() || { free(); false }
        def value(c: Int): Long = only.value(c)
        def isNull(c: Int): Boolean = only.isNull(c)
        def bytesBase(c: Int): AnyRef = only.bytesBase(c)
        def bytesOffset(c: Int): Long = only.bytesOffset(c)
        def bytesLength(c: Int): Int = only.bytesLength(c)
        def recordBase: AnyRef = only.recordBase
        def recordOffset: Long = only.recordOffset
        def recordSize: Int = only.recordSize
      }
    } else {
      // k-way merge by the keys; equal keys: the earlier run first (runs follow input order)
      val heap = new java.util.PriorityQueue[Source](sources.length, new java.util.Comparator[Source] {
        override def compare(x: Source, y: Source): Int = {
          val c = compareKeys(x, y)
          if (c != 0) c else Integer.compare(x.run, y.run)
        }
      })
      sources.foreach(s => if (s.advance()) heap.add(s))
      new Source {
        private var top: Source = _
        def run: Int = 0
        def advance(): Boolean = {
          if (top != null && top.advance()) heap.add(top)
          top = heap.poll()
          top != null || { free(); false }
        }
        def value(c: Int): Long = top.value(c)
        def isNull(c: Int): Boolean = top.isNull(c)
        def bytesBase(c: Int): AnyRef = top.bytesBase(c)
        def bytesOffset(c: Int): Long = top.bytesOffset(c)
        def bytesLength(c: Int): Int = top.bytesLength(c)
        def recordBase: AnyRef = top.recordBase
        def recordOffset: Long = top.recordOffset
        def recordSize: Int = top.recordSize
      }
    }
  }

  /**
   * The sorted rows (after sort()); frees everything at the end. With string or binary columns
   * each row is one reused UnsafeRow pointed at the row's record (in the pages, or a run's block
   * buffer), not copied: valid until the next hasNext or next (a consumer copies what it keeps).
   * Otherwise each row is written into one reused UnsafeRow.
   */
  def sortedRows(): Iterator[UnsafeRow] = {
    val src = source()
    if (numVar > 0) {
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
          val row = writeRow(writer, src)
          ready = src.advance()
          row
        }
      }
    }
  }

  /** Compares the keys of two sources' current rows as the sort orders them. */
  private def compareKeys(x: RowSource, y: RowSource): Int = {
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

  private def writeRow(writer: UnsafeRowWriter, src: RowSource): UnsafeRow = {
    writer.reset()
    writer.zeroOutNullBytes()
    var c = 0
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

  // ---- runs on disk: blocks of up to BlockRows rows ----
  // A block: its row count; without string or binary columns, per column a null flag byte (and
  // the rows' null bytes when set) then the values (8 bytes each); with them, the byte count of
  // the rows' records, then the records (as held in the pages: every column of the row). A block
  // holds at most BlockBytes of records unless it is one row.

  private val BlockRows = 4096
  private val BlockBytes = 1 << 20

  /**
   * Sorts the rows held, writes them as a run to a local temp file and frees their memory, so
   * that appending can go on (a run is merged with the others on output).
   */
  def spillRun(): Unit = {
    sort(allowCarry = false)
    writeRun(n, j => sortArray((2 * j).toInt))
  }

  /**
   * Writes the rows held, in input order, to a local temp file and frees their memory, before
   * the row sorter of a fallback needs it; replay() reads them back with the runs.
   */
  def dump(): Unit = writeRun(n, j => j)

  /** Writes `count` held rows, the j-th at row index `rowAt(j)`, as a run; frees the held rows. */
  private def writeRun(count: Long, rowAt: Long => Long): Unit = {
    val env = SparkEnv.get
    val (block, file) = env.blockManager.diskBlockManager.createTempLocalBlock()
    runs += RunFile(block, file)
    val out = new DataOutputStream(new BufferedOutputStream(
      env.serializerManager.wrapStream(block, new FileOutputStream(file)), 1 << 16))
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
            val a = recordAddr(rowAt(j + i))
            val at = Platform.BYTE_ARRAY_OFFSET + (a & 0xffffffffL)
            val size = recordEnd(pages((a >>> 32).toInt), at) - at
            if (i > 0 && recordBytes + size > BlockBytes) stop = true
            else { recordBytes += size; i += 1 }
          }
          rows = i
          out.writeInt(rows)
          out.writeInt(recordBytes.toInt)
          i = 0
          while (i < rows) {
            val a = recordAddr(rowAt(j + i))
            val page = pages((a >>> 32).toInt)
            val at = Platform.BYTE_ARRAY_OFFSET + (a & 0xffffffffL)
            out.write(page, (a & 0xffffffffL).toInt, (recordEnd(page, at) - at).toInt)
            i += 1
          }
        } else {
          out.writeInt(rows)
          var c = 0
          while (c < numCols) {
            var i = 0
            if (colHasNull(c)) {
              out.writeBoolean(true)
              while (i < rows) { bytes(i) = if (isNull(c, rowAt(j + i))) 1 else 0; i += 1 }
              out.write(bytes, 0, rows)
            } else out.writeBoolean(false)
            i = 0
            while (i < rows) { vals(i) = value(c, rowAt(j + i)); i += 1 }
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
    val spilled = held
    releaseColumns()
    val tm = TaskContext.get().taskMetrics()
    tm.incMemoryBytesSpilled(spilled)
    tm.incDiskBytesSpilled(file.length())
    spilledBytes += file.length()
  }

  /**
   * One run file read back a block at a time (buffers outside the accounted memory: small); with
   * string or binary columns, every column from the current row's record in the block.
   */
  private final class FileRun(file: RunFile, val run: Int) extends Source {
    private val in = new DataInputStream(new BufferedInputStream(
      SparkEnv.get.serializerManager.wrapStream(file.block, new FileInputStream(file.file)), 1 << 16))
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
    reading += this

    def advance(): Boolean = {
      pos += 1
      if (pos < rows) {
        if (numVar > 0) current = recordEnd(records, current)
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
      if (numVar > 0) recWord(records, current + RecHeader, c) else vals(c)(pos)
    def isNull(c: Int): Boolean =
      if (numVar > 0) recIsNull(records, current + RecHeader, c) else hasNul(c) && nuls(c)(pos)
    def bytesBase(c: Int): AnyRef = records
    def bytesOffset(c: Int): Long =
      current + RecHeader + (recSlot(records, current + RecHeader, c) >>> 32)
    def bytesLength(c: Int): Int = recSlot(records, current + RecHeader, c).toInt
    def recordBase: AnyRef = records
    def recordOffset: Long = current + RecHeader
    def recordSize: Int = Platform.getLong(records, current).toInt
    def close(): Unit = if (open) { in.close(); open = false }
  }

  /** Feeds every row written to disk (runs, then the dump), run by run, to `insert`. */
  def replay(insert: UnsafeRow => Unit): Unit = {
    val writer = new UnsafeRowWriter(numCols)
    val row = new UnsafeRow(numCols)
    runs.indices.foreach { i =>
      val src = new FileRun(runs(i), i)
      try {
        while (src.advance()) {
          if (numVar > 0) {
            row.pointTo(src.recordBase, src.recordOffset, src.recordSize)
            insert(row)
          } else insert(writeRow(writer, src))
        }
      } finally src.close()
      runs(i).file.delete()
    }
    runs.clear()
  }

  private def releaseColumns(): Unit = {
    values.foreach(_.clear())
    nulls.foreach(_.clear())
    addrs.clear()
    pages.clear()
    curPage = -1
    pagePos = PageBytes
    numChunks = 0
    java.util.Arrays.fill(colHasNull, false)
    java.util.Arrays.fill(pastPrefix, false)
    sortArray = null
    java.util.Arrays.fill(rowChunks.asInstanceOf[Array[AnyRef]], null)
    rowChunk = -1
    n = 0
    if (held > 0) { freeMemory(held); held = 0 }
  }

  /** Frees everything (idempotent): at the end of the output and when the task completes. */
  def free(): Unit = {
    reader = null
    releaseColumns()
    reading.foreach(_.close())
    reading.clear()
    runs.foreach(_.file.delete())
    runs.clear()
  }
}

/**
 * A source of rows in order, read column by column: the current row after advance(). A
 * fixed-width column's value is `value` (one long), a string or binary column's (not null) is
 * the `bytesLength` bytes at `bytesOffset` of `bytesBase` (Platform's addressing: null base and
 * an address, or an object and an offset in it).
 */
private[execution] trait RowSource {
  def run: Int
  def advance(): Boolean
  def value(c: Int): Long
  def isNull(c: Int): Boolean
  def bytesBase(c: Int): AnyRef
  def bytesOffset(c: Int): Long
  def bytesLength(c: Int): Int
}

private[execution] final case class RunFile(block: BlockId, file: File)
