package org.apache.spark.sql.fullwindow.execution

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{NullsFirst, SortOrder, SortPrefix, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.{SortPrefixUtils, UnsafeExternalRowSorter}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform
import org.apache.spark.util.collection.unsafe.sort.{PrefixComparator, PrefixComparators}
import org.apache.spark.util.collection.unsafe.sort.PrefixComparators.RadixSortSupport

/**
 * A 64-bit sort prefix built from several sort keys, for sorts whose first key is integral.
 *
 * Spark's prefix (SortExec) holds only the first key. When that key has few distinct values,
 * almost every comparison ties on the prefix and goes to the comparator over the full rows. Here
 * the prefix is the first 64 bits of a bit string that concatenates one code per key:
 *
 *  - an integral key (boolean, byte, short, int, long, date, timestamp, ANSI interval, decimal of
 *    precision <= 18) gets a self-delimiting, order-preserving, variable-length code of its
 *    difference to a base (the first non-null value this sorter sees for that key), so a key with
 *    values close together takes few bits and leaves the rest for the next key:
 *    8 bits of header (null first = 0x00; d < 0: 65 - L; d >= 0: 66 + L; null last = 0xFF, where
 *    L is the bit length of |d| (of -d-1 when d < 0), 0..64), then the L-1 bits of that magnitude
 *    below its leading one (inverted when d < 0). A descending key has its code inverted (the
 *    null codes are not, so nulls stay first or last). The difference is computed exactly
 *    (65-bit), so no value is ever "out of range";
 *  - the first other key gets the 64 bits of its Spark prefix, made unsigned ascending (sign bit
 *    flipped for a signed prefix, inverted when descending, Spark's null value kept). Nothing
 *    follows it: its code is not self-delimiting.
 *
 * Because the integral codes are prefix-free and strictly order-preserving, a string of codes
 * compares like the tuple of keys; a truncation to 64 bits keeps "prefix a < prefix b implies
 * row a < row b" (unsigned comparison). Equal prefixes are decided by the generated comparator
 * over the full rows, so correctness never depends on how much of the keys fits. The base is per
 * sorter, and one sorter's prefixes (in memory and in its spill files) are only compared with
 * each other, by the same comparator.
 *
 * Since the packed prefix usually tells almost all rows apart, PackedRowSorter can also radix-sort
 * by it (as SortExec does for one key the prefix decides) and then sort each run of equal
 * prefixes in full on the way out (TieFixingIterator); it chooses that or TimSort per partition
 * from the prefixes of the first rows.
 */
object PackedSortPrefix {

  /** Switch (default true) back to Spark's one-key prefix, for comparisons (README). */
  val EnabledKey = "spark.fullwindow.sort.packedPrefix"

  /** Packed prefixes compare as unsigned 64-bit integers, ascending. */
  val comparator: PrefixComparator = PrefixComparators.BINARY

  /** Whether a sort by these (bound or unbound) keys uses a packed prefix. */
  def applies(order: Seq[SortOrder], conf: SQLConf): Boolean =
    order.size >= 2 && isIntegral(order.head) && enabled(conf)

  private def enabled(conf: SQLConf): Boolean =
    conf.getConfString(EnabledKey, "true").trim.toLowerCase(java.util.Locale.ROOT) match {
      case "true" => true
      case "false" => false
      case other => throw org.apache.spark.sql.fullwindow.FullWindowErrors.badConf(
        EnabledKey, other, "true, false")
    }

  /** Keys whose Spark prefix is the exact value as a signed long. */
  private[execution] def isIntegral(o: SortOrder): Boolean = {
    val exactType = o.dataType match {
      case BooleanType | ByteType | ShortType | IntegerType | LongType | DateType |
           TimestampType | TimestampNTZType => true
      case _: YearMonthIntervalType | _: DayTimeIntervalType => true
      case d: DecimalType => d.precision <= Decimal.MAX_LONG_DIGITS
      case _ => false
    }
    exactType && (SortPrefixUtils.getPrefixComparator(o) match {
      case r: RadixSortSupport => r.sortSigned()
      case _ => false
    })
  }

  /** The same prefix for every row: the full ordering decides (a long run of equal prefixes). */
  object ConstantPrefix extends UnsafeExternalRowSorter.PrefixComputer {
    private val zero = new UnsafeExternalRowSorter.PrefixComputer.Prefix
    override def computePrefix(row: InternalRow): UnsafeExternalRowSorter.PrefixComputer.Prefix = zero
  }

  /** Computes packed prefixes for one sorter; keys must be bound to the sorted rows. */
  final class Computer(order: Seq[SortOrder]) extends UnsafeExternalRowSorter.PrefixComputer {
    // One slot per key that contributes bits: integral keys, then at most one other key.
    private val slots: Seq[SortOrder] = {
      val b = ArrayBuffer.empty[SortOrder]
      val it = order.iterator
      var open = true
      while (open && it.hasNext) {
        val o = it.next()
        if (isIntegral(o)) b += o
        else {
          open = false
          SortPrefixUtils.getPrefixComparator(o) match {
            case _: RadixSortSupport => b += o
            case _ => // no usable prefix (e.g. a collated string): the full comparator decides
          }
        }
      }
      b.toSeq
    }
    private val n = slots.size
    private val integral: Array[Boolean] = slots.map(isIntegral).toArray
    private val descending: Array[Boolean] = slots.map(o => !o.isAscending).toArray
    private val nullCode: Array[Long] = slots.map(o => if (o.nullOrdering == NullsFirst) 0L else 0xFFL).toArray
    private val signed: Array[Boolean] = slots.map(o => SortPrefixUtils.getPrefixComparator(o) match {
      case r: RadixSortSupport => r.sortSigned()
      case _ => false
    }).toArray
    private val nullValue: Array[Long] = slots.map(o => SortPrefix(o).nullValue).toArray
    private val base = new Array[Long](n)
    private val hasBase = new Array[Boolean](n)
    private val projection = UnsafeProjection.create(slots.map(SortPrefix(_)))
    private val out = new UnsafeExternalRowSorter.PrefixComputer.Prefix

    private var acc = 0L  // bits written so far, from the top
    private var used = 0  // how many

    /** Appends the low `len` bits of `bits` (1 <= len <= 64; higher bits zero) below those written. */
    private def append(bits: Long, len: Int): Unit = {
      val free = 64 - used
      if (len <= free) {
        acc |= bits << (free - len)
        used += len
      } else {
        acc |= bits >>> (len - free)
        used = 64
      }
    }

    private def appendIntegral(i: Int, v: Long): Unit = {
      if (!hasBase(i)) { base(i) = v; hasBase(i) = true }
      val b = base(i)
      var header = 0L
      var bits = 0L
      var len = 0
      if (v >= b) {
        val mag = v - b // exact as an unsigned 64-bit value
        val l = 64 - java.lang.Long.numberOfLeadingZeros(mag)
        header = 66L + l
        len = if (l > 1) l - 1 else 0
        bits = mag
      } else {
        val y = b - v - 1 // -(v - b) - 1, exact as an unsigned 64-bit value
        val l = 64 - java.lang.Long.numberOfLeadingZeros(y)
        header = 65L - l
        len = if (l > 1) l - 1 else 0
        bits = ~y
      }
      val mask = if (len == 0) 0L else -1L >>> (64 - len)
      bits &= mask
      if (descending(i)) {
        header ^= 0xFFL
        bits = ~bits & mask
      }
      append(header, 8)
      if (len > 0 && used < 64) append(bits, len)
    }

    override def computePrefix(row: InternalRow): UnsafeExternalRowSorter.PrefixComputer.Prefix = {
      val p = projection(row)
      acc = 0L
      used = 0
      var i = 0
      while (i < n && used < 64) {
        if (integral(i)) {
          if (p.isNullAt(i)) append(nullCode(i), 8) else appendIntegral(i, p.getLong(i))
        } else {
          var u = if (p.isNullAt(i)) nullValue(i) else p.getLong(i)
          if (signed(i)) u ^= Long.MinValue
          if (descending(i)) u = ~u
          append(u, 64)
        }
        i += 1
      }
      out.value = acc
      out.isNull = false // no radix sort, so the sorter does not keep nulls apart
      out
    }
  }
}

/**
 * The sorter of one partition with a packed prefix. It holds back the first rows (copies, up to
 * SampleRows or SampleBytes), computes their prefixes, then creates Spark's sorter and inserts
 * them:
 *  - with radix sort when no prefix value covers more than 1/MaxRunShare of those rows (and radix
 *    sort is enabled): records are radix-sorted by prefix, in memory and in each spill, and on the
 *    way out each run of equal prefixes is sorted with the full ordering (TieFixingIterator);
 *  - otherwise with TimSort, comparing prefixes and, on ties, the full rows, as SortExec does.
 * The first is the faster whenever prefix runs are short; when one prefix covers most rows
 * (e.g. a constant first key and strings sharing their first 8 bytes) the runs would all be
 * copied and sorted again, so the second is kept.
 */
final class PackedRowSorter(
    order: Seq[SortOrder], // bound to the rows
    newOrdering: () => Ordering[InternalRow],
    schema: StructType,
    pageSize: Long,
    radixAllowed: Boolean,
    onOutputDone: (Long, Long, Long) => Unit) // (run sort ns, run sorters' peak memory, bytes spilled)
  extends FullWindowRowSorter {

  import PackedRowSorter._

  private val computer = new PackedSortPrefix.Computer(order)
  private var sorter: UnsafeExternalRowSorter = _
  private var radix = false
  private var held = new Array[UnsafeRow](64)
  private var heldRows = 0
  private var heldBytes = 0L

  /** Whether the sorter radix-sorts (known once it exists). */
  def usesRadixSort: Boolean = radix

  override def insertRow(row: UnsafeRow): Unit = {
    if (sorter != null) {
      sorter.insertRow(row)
    } else {
      if (heldRows == held.length) held = java.util.Arrays.copyOf(held, heldRows * 2)
      held(heldRows) = row.copy()
      heldRows += 1
      heldBytes += row.getSizeInBytes
      if (heldRows >= SampleRows || heldBytes >= SampleBytes) start()
    }
  }

  private def longestRun(): Int = {
    val prefixes = new Array[Long](heldRows)
    var i = 0
    while (i < heldRows) { prefixes(i) = computer.computePrefix(held(i)).value; i += 1 }
    java.util.Arrays.sort(prefixes)
    var longest = 1
    var run = 1
    i = 1
    while (i < heldRows) {
      run = if (prefixes(i) == prefixes(i - 1)) run + 1 else 1
      if (run > longest) longest = run
      i += 1
    }
    longest
  }

  private def start(): Unit = {
    radix = radixAllowed && heldRows >= MinSampleRows && longestRun().toLong * MaxRunShare <= heldRows
    sorter = UnsafeExternalRowSorter.create(schema, newOrdering(), PackedSortPrefix.comparator,
      computer, pageSize, radix)
    var i = 0
    while (i < heldRows) { sorter.insertRow(held(i)); held(i) = null; i += 1 }
    held = null
  }

  override def sort(): Iterator[InternalRow] = {
    if (sorter == null) start()
    val sorted = sorter.sort()
    if (!radix) return sorted
    val spilledAtSort = TaskContext.get().taskMetrics().memoryBytesSpilled
    new TieFixingIterator(sorted, computer, newOrdering(), schema,
      () => UnsafeExternalRowSorter.create(schema, newOrdering(), PackedSortPrefix.comparator,
        PackedSortPrefix.ConstantPrefix, pageSize, false),
      (nanos, peak) => onOutputDone(nanos, peak,
        TaskContext.get().taskMetrics().memoryBytesSpilled - spilledAtSort))
  }

  override def getSortTimeNanos: Long = if (sorter == null) 0L else sorter.getSortTimeNanos
  override def getPeakMemoryUsage: Long = if (sorter == null) 0L else sorter.getPeakMemoryUsage
}

object PackedRowSorter {
  val SampleRows = 1024
  val SampleBytes: Long = 1L << 20
  val MinSampleRows = 64
  val MaxRunShare = 4
}

/**
 * Puts the output of a sorter that radix-sorted by packed prefix only in the full order: rows
 * come out in prefix order, and each run of equal prefixes is sorted with the full ordering before
 * it is emitted. A run of up to MaxHeldRows rows / MaxHeldBytes is copied and sorted on the heap;
 * a longer one goes through a spilling sorter of its own, so memory stays bounded whatever the
 * input. Rows of `sorted` are valid until its next next(); so are the rows this iterator returns.
 */
final class TieFixingIterator(
    sorted: Iterator[InternalRow],
    computer: PackedSortPrefix.Computer,
    ordering: Ordering[InternalRow],
    schema: StructType,
    newRunSorter: () => UnsafeExternalRowSorter,
    onDone: (Long, Long) => Unit) // (ns spent sorting runs, peak memory of run sorters)
  extends Iterator[InternalRow] {

  import TieFixingIterator._

  private var ahead: UnsafeRow = _
  private var aheadPrefix = 0L
  private var buffer = new Array[Byte](64)
  private val held = new UnsafeRow(schema.length)
  private var run = new Array[UnsafeRow](16)
  private var runSize = 0
  private var runPos = 0
  private var external: Iterator[InternalRow] = Iterator.empty
  private var runNanos = 0L
  private var runPeakMemory = 0L
  private var finished = false

  advance()

  private def advance(): Unit = {
    if (sorted.hasNext) {
      ahead = sorted.next().asInstanceOf[UnsafeRow]
      aheadPrefix = computer.computePrefix(ahead).value
    } else {
      ahead = null
    }
  }

  /** Copies `row` into `held`: the sorter's row is only valid until its next next(). */
  private def hold(row: UnsafeRow): UnsafeRow = {
    val size = row.getSizeInBytes
    if (buffer.length < size) buffer = new Array[Byte](math.max(size, buffer.length * 2))
    Platform.copyMemory(row.getBaseObject, row.getBaseOffset, buffer, Platform.BYTE_ARRAY_OFFSET, size)
    held.pointTo(buffer, Platform.BYTE_ARRAY_OFFSET, size)
    held
  }

  override def hasNext: Boolean = {
    val more = runPos < runSize || external.hasNext || ahead != null
    if (!more && !finished) {
      finished = true
      onDone(runNanos, runPeakMemory)
    }
    more
  }

  override def next(): InternalRow = {
    if (runPos < runSize) {
      val r = run(runPos)
      run(runPos) = null
      runPos += 1
      return r
    }
    if (external.hasNext) return external.next()
    if (ahead == null) throw new NoSuchElementException
    val prefix = aheadPrefix
    val first = hold(ahead)
    advance()
    if (ahead == null || aheadPrefix != prefix) {
      first
    } else {
      sortRun(prefix)
      next()
    }
  }

  private def add(row: UnsafeRow): Unit = {
    if (runSize == run.length) run = java.util.Arrays.copyOf(run, runSize * 2)
    run(runSize) = row
    runSize += 1
  }

  /** Sorts the run of rows with this prefix: `held`, then the rows from `ahead` on. */
  private def sortRun(prefix: Long): Unit = {
    val start = System.nanoTime()
    runSize = 0
    runPos = 0
    add(held.copy())
    var bytes = held.getSizeInBytes.toLong
    while (ahead != null && aheadPrefix == prefix && runSize < MaxHeldRows && bytes < MaxHeldBytes) {
      add(ahead.copy())
      bytes += ahead.getSizeInBytes
      advance()
    }
    if (ahead != null && aheadPrefix == prefix) {
      // a long run: a spilling sorter of its own (its prefixes all tie: the full ordering decides)
      val runSorter = newRunSorter()
      var i = 0
      while (i < runSize) { runSorter.insertRow(run(i)); run(i) = null; i += 1 }
      runSize = 0
      while (ahead != null && aheadPrefix == prefix) { runSorter.insertRow(ahead); advance() }
      external = runSorter.sort()
      runPeakMemory = math.max(runPeakMemory, runSorter.getPeakMemoryUsage)
    } else {
      java.util.Arrays.sort[UnsafeRow](run, 0, runSize, ordering)
    }
    runNanos += System.nanoTime() - start
  }
}

object TieFixingIterator {
  val MaxHeldRows = 4096
  val MaxHeldBytes: Long = 4L << 20
}
