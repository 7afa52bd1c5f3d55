package org.apache.spark.sql.fullwindow.execution

import java.io.DataOutputStream
import java.nio.channels.Channels

import scala.jdk.CollectionConverters._

import org.apache.arrow.vector.{BaseFixedWidthVector, BaseLargeVariableWidthVector, BaseVariableWidthVector, FieldVector, VectorSchemaRoot, VectorUnloader}
import org.apache.arrow.vector.complex.StructVector
import org.apache.arrow.vector.ipc.WriteChannel
import org.apache.arrow.vector.ipc.message.MessageSerializer

import org.apache.spark.{SparkContext, TaskContext}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, SortOrder}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.unsafe.Platform

/**
 * A Python node's Arrow input filled from a columnar sort: each partition, sorted (`sorted`: the
 * ColumnarSorter, or the row sorter's rows after a fallback), is read out as [[ArrowChunks]]:
 * Arrow batches filled straight from the sorted columns, which the line's Arrow Python runner
 * (MapInArrowShim.runner) writes in place of rows it would put into the batch one by one with
 * Spark's ArrowWriter. Created on the driver over the sorted rows' columns (`output`, of the
 * types of ColumnarSort), with the session's Arrow byte limit per batch (`maxBatchBytes`:
 * `spark.sql.execution.arrow.maxBytesPerBatch` where the line has it).
 */
abstract class ColumnarArrowInput(output: Seq[Attribute], maxBatchBytes: Long) extends Serializable {

  protected final val types: Array[Int] = output.map(a => ColumnarSort.typeCode(a.dataType)).toArray

  // Arrow bytes a row takes in its fixed-width columns' data buffers
  private val fixedRowBytes: Long =
    output.map(a => PythonArrowEval.fixedWidth(a.dataType).getOrElse(0L)).sum

  /** The partition's `input` sorted, as Arrow batches of at most `batchRows` rows. */
  def chunks(context: TaskContext, input: Iterator[InternalRow], batchRows: Int,
      dataSent: SQLMetric): ArrowChunks = new ArrowChunks(context, () => source(sorted(input)),
    types, fixedRowBytes, batchRows, maxBatchBytes, dataSent, rowsSent, batchesFilled)

  /** The partition's `input` sorted (when the batches are first asked for). */
  protected def sorted(input: Iterator[InternalRow]): Either[ColumnarSorter, Iterator[InternalRow]]

  /** Where the rows sent are counted, if the node does not count its input rows itself. */
  protected def rowsSent: Option[SQLMetric] = None

  /** Where the batches filled are counted (the sort's `arrowBatches`: ArrowChunks.metrics). */
  protected def batchesFilled: Option[SQLMetric]

  /** Whether the node's input rows are counted here, as they are sent. */
  final def countsRows: Boolean = rowsSent.isDefined

  /** The sorter itself when its rows can be gathered column by column, else a row source. */
  private def source(sorted: Either[ColumnarSorter, Iterator[InternalRow]]): Either[ColumnarSorter, RowSource] =
    sorted.fold(s => if (s.heldByIndex) Left(s) else Right(s.sortedSource()),
      rows => Right(new ColumnarSort.RowsSource(rows, types)))
}

/**
 * The sort of a keyed Python form by columns (FullWindowKeyedPythonExec with `columnarSort`):
 * each partition's rows, as they come from the exchange, are appended to a ColumnarSorter (the
 * only step per row), sorted by `order` with Spark's RadixSort (runs on disk when memory is
 * refused, the row sorter when it is refused with nothing held, as for sortPartition), and read
 * out as [[ArrowChunks]]. Keys and columns as ColumnarSort.keyColumns takes them.
 */
final case class KeyedColumnarSort(
    order: Seq[SortOrder],
    output: Seq[Attribute],
    radixSortEnabled: Boolean,
    packedPrefix: Boolean,
    maxBatchBytes: Long,
    metrics: Map[String, SQLMetric]) extends ColumnarArrowInput(output, maxBatchBytes) {

  private val keyCols = ColumnarSort.keyColumns(order, output).getOrElse(
    throw new IllegalStateException(s"no columnar sort by $order over $output"))

  override protected def sorted(rows: Iterator[InternalRow]): Either[ColumnarSorter, Iterator[InternalRow]] =
    ColumnarSort.sortRows(rows, order, output, types, keyCols, radixSortEnabled, packedPrefix,
      metrics)

  override protected def batchesFilled: Option[SQLMetric] = metrics.get(ArrowChunks.BatchesMetric)
}

/**
 * The Arrow input of the non-keyed Python node over sortPartition's columnar sort
 * (FullWindowPythonPartitionExec with `columnarInput`): each partition comes as the sort node's
 * [[SortedPartition]] (FullWindowColumnarSortExec.executeSorted), which sorts it with the sort
 * node's settings and metrics when the first batch is asked for; the batches are then filled
 * from the sorter as the keyed forms' are, and no sorted row is written as an UnsafeRow. The
 * rows sent are counted in `rowsIn` (the node's input rows), the batches in `batches` (the sort
 * node's `arrowBatches`). Any other rows are read as they come.
 */
final case class SortedArrowInput(
    output: Seq[Attribute],
    maxBatchBytes: Long,
    rowsIn: SQLMetric,
    batches: SQLMetric) extends ColumnarArrowInput(output, maxBatchBytes) {

  override protected def sorted(input: Iterator[InternalRow]): Either[ColumnarSorter, Iterator[InternalRow]] =
    input match {
      case partition: SortedPartition => partition.sort()
      case rows => Right(rows)
    }

  override protected def rowsSent: Option[SQLMetric] = Some(rowsIn)
  override protected def batchesFilled: Option[SQLMetric] = Some(batches)
}

/**
 * A sorted partition as the Arrow input of a Python runner: batches of `batchRows` rows (the
 * last one shorter), the rows as one struct column (mapInArrow's layout), each batch filled
 * column by column into the root's vectors from the sorted rows (`sorted`, read on the first
 * batch) and written by [[writeNext]]. A batch also ends, as Spark's Arrow input ends one, once
 * its Arrow data reach `maxBytes` (at least one row a batch; Int.MaxValue or more: no limit):
 * a row counts `fixedRowBytes` (its fixed-width values), each string or binary value's bytes and
 * its offset.
 * As an iterator it only tells whether a batch is left: nothing reads rows from it. Stops once
 * the task is completed or killed (3.5's runner writes from a thread of its own, which must not
 * read a sorter the task has freed). For the types of ColumnarSort; the vectors are those
 * ArrowUtils.toArrowSchema gives them (strings and binary with 4- or 8-byte offsets). Adds the
 * bytes written to `dataSent` and, when given, the rows to `rowsSent` and the batches to
 * `batchesFilled`.
 */
final class ArrowChunks(
    context: TaskContext,
    sorted: () => Either[ColumnarSorter, RowSource],
    types: Array[Int],
    fixedRowBytes: Long,
    batchRows: Int,
    maxBytes: Long,
    dataSent: SQLMetric,
    rowsSent: Option[SQLMetric],
    batchesFilled: Option[SQLMetric]) extends Iterator[Iterator[InternalRow]] {

  import ColumnarSort._

  private var started = false
  // the sorted rows: all held by the sorter (gathered column by column from position `heldAt`),
  // or a source read row by row (runs merged from disk, the carry layout, the row sorter's rows)
  private var held: ColumnarSorter = _
  private var heldAt = 0L
  private var source: RowSource = _
  private var ready = false
  private lazy val positions = new Array[Long](batchRows)
  private lazy val words = new Array[Long](batchRows)
  private lazy val nullFlags = new Array[Boolean](batchRows)

  override def hasNext: Boolean = !context.isCompleted() && !context.isInterrupted() && {
    if (!started) {
      started = true
      sorted() match {
        case Left(sorter) => held = sorter; ready = sorter.numRows > 0
        case Right(rows) => source = rows; ready = rows.advance()
      }
    }
    ready
  }

  override def next(): Iterator[InternalRow] =
    throw new UnsupportedOperationException("Arrow chunks are written by writeNext")

  /** Fills the next batch into `root` and `write`s it to `dataOut`; false when no rows are left. */
  def writeNext(root: VectorSchemaRoot, dataOut: DataOutputStream, write: => Unit): Boolean = {
    if (!hasNext) return false
    val start = dataOut.size()
    val rows = fill(root)
    root.setRowCount(rows)
    write
    dataSent += dataOut.size() - start
    rowsSent.foreach(_ += rows)
    batchesFilled.foreach(_ += 1)
    true
  }

  private val varCols: Array[Int] = types.indices.filter(c => isVarWidth(types(c))).toArray
  private val offsetBytes = new Array[Int](types.length) // 4 or 8 for a string or binary column
  private val limited = maxBytes < Int.MaxValue
  // the rows of a batch when only fixed-width columns are filled: the fewest that reach maxBytes
  private val fixedBatch: Int =
    if (!limited || fixedRowBytes == 0) batchRows
    else math.max(1L, math.min(batchRows.toLong, (maxBytes + fixedRowBytes - 1) / fixedRowBytes)).toInt

  private def fill(root: VectorSchemaRoot): Int = {
    val struct = root.getVector(0).asInstanceOf[StructVector]
    while (struct.getValueCapacity < batchRows) struct.reAlloc()
    val vectors: Array[FieldVector] = struct.getChildrenFromFields.asScala.toArray
    val data = vectors.map {
      case v: BaseFixedWidthVector => v.getDataBufferAddress
      case _ => 0L // a string or binary column's: fillRows reads it, it moves as it grows
    }
    val valid = vectors.map(_.getValidityBufferAddress)
    val bitBytes = (batchRows + 7) / 8
    var c = 0
    while (c < types.length) {
      Platform.setMemory(valid(c), 0, bitBytes)
      if (types(c) == Bool) Platform.setMemory(data(c), 0, bitBytes)
      if (isVarWidth(types(c))) {
        offsetBytes(c) = if (vectors(c).isInstanceOf[BaseLargeVariableWidthVector]) 8 else 4
      }
      c += 1
    }
    val i = if (held != null) fillHeld(data, valid) else fillRows(vectors, data, valid)
    // the struct itself is never null
    setFirst(struct.getValidityBufferAddress, i)
    varCols.foreach { c =>
      vectors(c) match {
        case v: BaseVariableWidthVector => v.setLastSet(i - 1)
        case v: BaseLargeVariableWidthVector => v.setLastSet(i - 1)
      }
    }
    struct.setValueCount(i)
    i
  }

  /** The next batch gathered column by column from the sorter's held rows; its row count. */
  private def fillHeld(data: Array[Long], valid: Array[Long]): Int = {
    val rows = math.min(fixedBatch.toLong, held.numRows - heldAt).toInt
    held.sortedIndices(heldAt, rows, positions)
    var c = 0
    while (c < types.length) {
      if (!held.gatherNulls(c, positions, rows, nullFlags)) setFirst(valid(c), rows)
      else {
        var i = 0
        while (i < rows) { if (!nullFlags(i)) setBit(valid(c), i); i += 1 }
      }
      held.gather(c, positions, rows, words)
      val at = data(c)
      var i = 0
      (types(c): @annotation.switch) match {
        case Bool => while (i < rows) { if (words(i) != 0L) setBit(at, i); i += 1 }
        case Byte8 => while (i < rows) { Platform.putByte(null, at + i, words(i).toByte); i += 1 }
        case Short16 => while (i < rows) { Platform.putShort(null, at + 2L * i, words(i).toShort); i += 1 }
        case Int32 | Float32 => while (i < rows) { Platform.putInt(null, at + 4L * i, words(i).toInt); i += 1 }
        case Dec64 => while (i < rows) { putDecimal128(at, i, words(i)); i += 1 }
        case _ => Platform.copyMemory(words, Platform.LONG_ARRAY_OFFSET, null, at, 8L * rows)
      }
      c += 1
    }
    heldAt += rows
    ready = heldAt < held.numRows
    if (!ready) held.free()
    rows
  }

  /** The next batch read row by row from `source`; its row count. */
  private def fillRows(vectors: Array[FieldVector], data: Array[Long], valid: Array[Long]): Int = {
    // each string or binary column's next byte in its data buffer, and the buffer's end
    val pos = new Array[Long](types.length)
    val end = new Array[Long](types.length)
    varCols.foreach { c =>
      data(c) = vectors(c).getDataBuffer.memoryAddress()
      end(c) = vectors(c).getDataBuffer.capacity()
      putOffset(vectors(c), c, 0, 0L)
    }
    var bytes = 0L
    var c = 0
    var i = 0
    while (i < batchRows && ready && (!limited || bytes < maxBytes)) {
      c = 0
      while (c < types.length) {
        val t = types(c)
        if (!source.isNull(c)) {
          setBit(valid(c), i)
          if (isVarWidth(t)) {
            val len = source.bytesLength(c)
            if (pos(c) + len > end(c)) {
              val v = vectors(c)
              while (v.getDataBuffer.capacity() < pos(c) + len) v match {
                case w: BaseVariableWidthVector => w.reallocDataBuffer()
                case w: BaseLargeVariableWidthVector => w.reallocDataBuffer()
              }
              data(c) = v.getDataBuffer.memoryAddress()
              end(c) = v.getDataBuffer.capacity()
            }
            Platform.copyMemory(source.bytesBase(c), source.bytesOffset(c), null, data(c) + pos(c), len)
            pos(c) += len
            bytes += len
          } else {
            val v = source.value(c)
            val at = data(c)
            (t: @annotation.switch) match {
              case Bool => if (v != 0L) setBit(at, i)
              case Byte8 => Platform.putByte(null, at + i, v.toByte)
              case Short16 => Platform.putShort(null, at + 2L * i, v.toShort)
              case Int32 | Float32 => Platform.putInt(null, at + 4L * i, v.toInt)
              case Dec64 => putDecimal128(at, i, v)
              case _ => Platform.putLong(null, at + 8L * i, v)
            }
          }
        }
        if (isVarWidth(t)) { putOffset(vectors(c), c, i + 1, pos(c)); bytes += offsetBytes(c) }
        c += 1
      }
      bytes += fixedRowBytes
      i += 1
      ready = source.advance()
    }
    i
  }

  /**
   * Value `i` of an Arrow decimal vector (128-bit two's complement, little-endian) at `at`: the
   * unscaled long, its sign extended into the upper 8 bytes.
   */
  @inline private def putDecimal128(at: Long, i: Int, unscaled: Long): Unit = {
    Platform.putLong(null, at + 16L * i, unscaled)
    Platform.putLong(null, at + 16L * i + 8, unscaled >> 63)
  }

  /** Sets offset `i` of the string or binary column `c` (its vector `v`) to `at`. */
  @inline private def putOffset(v: FieldVector, c: Int, i: Int, at: Long): Unit = {
    val offsets = v.getOffsetBufferAddress
    if (offsetBytes(c) == 8) Platform.putLong(null, offsets + 8L * i, at)
    else Platform.putInt(null, offsets + 4L * i, at.toInt)
  }

  /** Sets the first `n` bits of the (zeroed) bitmap at `address`. */
  private def setFirst(address: Long, n: Int): Unit = {
    Platform.setMemory(address, 0xff.toByte, n / 8)
    if (n % 8 != 0) Platform.putByte(null, address + n / 8, ((1 << (n % 8)) - 1).toByte)
  }

  @inline private def setBit(address: Long, i: Int): Unit = {
    val at = address + (i >>> 3)
    Platform.putByte(null, at, (Platform.getByte(null, at) | (1 << (i & 7))).toByte)
  }
}

object ArrowChunks {
  /** The metric of a sort whose batches ArrowChunks fill (their number), in [[metrics]]. */
  val BatchesMetric = "arrowBatches"

  /** What a sort node that may feed ArrowChunks adds to its metrics. */
  def metrics(sc: SparkContext): Map[String, SQLMetric] = Map(
    BatchesMetric -> SQLMetrics.createMetric(sc, "sorted batches filled into Arrow"))

  /**
   * What a line's Arrow Python runner calls for each batch of its input (MapInArrowShim.runner):
   * when `input` is ArrowChunks, fills its next batch into `root` and `write`s it as the line
   * writes a batch; false when it has none left or `input` is rows (for the runner to write as
   * it does).
   */
  def writeNext(input: Iterator[Iterator[InternalRow]], root: VectorSchemaRoot,
      dataOut: DataOutputStream)(write: => Unit): Boolean = input match {
    case chunks: ArrowChunks => chunks.writeNext(root, dataOut, write)
    case _ => false
  }

  /**
   * Writes `root`'s batch through `unloader` to the stream given for this batch, as the runners
   * of 4.1 on do (they hand each batch a stream of its own, with their compression codec).
   */
  def serialize(unloader: VectorUnloader, dataOut: DataOutputStream): Unit = {
    val batch = unloader.getRecordBatch()
    try MessageSerializer.serialize(new WriteChannel(Channels.newChannel(dataOut)), batch)
    finally batch.close()
  }
}
