package org.apache.spark.sql.fullwindow.execution

import org.apache.spark.{SparkContext, TaskContext}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Descending, NullsFirst, SortOrder, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.types._
import org.apache.spark.sql.execution.vectorized.WritableColumnVector
import org.apache.spark.sql.fullwindow.execution.sort.RunStorage
import org.apache.spark.sql.fullwindow.shims.SparkShims
import org.apache.spark.sql.vectorized.ColumnVector
import org.apache.spark.unsafe.types.UTF8String

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

  /** What the columnar sort adds to a node's metrics. */
  def metrics(sc: SparkContext): Map[String, SQLMetric] = Map(
    "columnarSorts" -> SQLMetrics.createMetric(sc, "partitions sorted by columns"),
    "rowSortFallbacks" -> SQLMetrics.createMetric(sc, "partitions that fell back to the row sorter"),
    "columnarRuns" -> SQLMetrics.createMetric(sc, "sorted runs spilled by columns"))

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

  /** Column `c` (not null) of vector `v` at `i` as the sorter holds it (getWord's long). */
  @inline def vectorWord(v: ColumnVector, i: Int, t: Int): Long = (t: @annotation.switch) match {
    case Bool => if (v.getBoolean(i)) 1L else 0L
    case Byte8 => v.getByte(i).toLong
    case Short16 => v.getShort(i).toLong
    case Int32 => v.getInt(i).toLong
    case Long64 => v.getLong(i)
    case Float32 => java.lang.Float.floatToRawIntBits(v.getFloat(i)).toLong
    case Dec64 => decimalWord(v, i, v.dataType.asInstanceOf[DecimalType])
    case _ => java.lang.Double.doubleToRawLongBits(v.getDouble(i))
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
      order.map(_.nullOrdering == NullsFirst).toArray, ctx.taskMemoryManager(), RunStorage.ofTask())
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
