package org.apache.spark.sql.fullwindow.execution.sort

import java.nio.file.Files

import scala.util.Random

import org.apache.spark.SparkConf
import org.apache.spark.executor.TaskMetrics
import org.apache.spark.memory.{TaskMemoryManager, UnifiedMemoryManager}
import org.apache.spark.serializer.{JavaSerializer, SerializerManager}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Ascending, BoundReference, Descending, GenericInternalRow, InterpretedOrdering, InterpretedUnsafeProjection, NullsFirst, NullsLast, SortOrder, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector
import org.apache.spark.sql.fullwindow.execution.ColumnarSort
import org.apache.spark.sql.types._
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarBatch}
import org.apache.spark.storage.DiskBlockManager
import org.apache.spark.unsafe.types.UTF8String

/**
 * Random inputs for the columnar sorter's parts, and what they are checked against: Spark's own
 * ordering of the same rows (InterpretedOrdering over SortOrders), applied by a stable sort.
 */
object SortTestData {

  /** Every key type the columnar sort takes. */
  val keyTypes: Seq[DataType] = Seq(BooleanType, ByteType, ShortType, IntegerType, LongType,
    FloatType, DoubleType, DateType, TimestampType, DecimalType(18, 2), DecimalType(9, 2),
    DecimalType(18, 0), StringType, BinaryType)

  /** A sort: the keys (column, descending, nulls first) over `schema`. */
  final case class Sort(schema: StructType, keys: Seq[(Int, Boolean, Boolean)]) {
    def types: Array[Int] = schema.map(f => ColumnarSort.typeCode(f.dataType)).toArray
    def keyCols: Array[Int] = keys.map(_._1).toArray
    def keyDesc: Array[Boolean] = keys.map(_._2).toArray
    def keyNullsFirst: Array[Boolean] = keys.map(_._3).toArray
    def order: Seq[SortOrder] = keys.map { case (c, desc, nullsFirst) =>
      SortOrder(BoundReference(c, schema(c).dataType, nullable = true),
        if (desc) Descending else Ascending, if (nullsFirst) NullsFirst else NullsLast, Seq.empty)
    }
    def keyWords: KeyWords = new KeyWords(types, keyCols, keyDesc, keyNullsFirst)
    /** The index of `rows` (by Spark's ordering, stable: equal keys keep their input order). */
    def reference(rows: IndexedSeq[InternalRow]): IndexedSeq[Int] = {
      val ord = new InterpretedOrdering(order)
      rows.indices.sortWith((x, y) => ord.compare(rows(x), rows(y)) < 0)
    }
  }

  private def pick[T](rnd: Random, xs: T*): T = xs(rnd.nextInt(xs.length))

  private val sharedPrefixes = Seq("customer", "customer-00", "", "zz", "customer\u0000")

  private def text(rnd: Random): String = rnd.nextInt(6) match {
    case 0 => ""
    case 1 => rnd.alphanumeric.take(rnd.nextInt(9)).mkString // at most 8 bytes: the word is the value
    case 2 => pick(rnd, sharedPrefixes: _*) + rnd.nextInt(1000) // sharing their first 8 bytes
    case 3 => "customer-" + ("0" * rnd.nextInt(3)) + rnd.nextInt(100) + pick(rnd, "", "\u0000", "\u0000\u0000")
    case 4 => pick(rnd, "é", "日本", "a", "ab", "\u0000", "a\u0000") * (1 + rnd.nextInt(12))
    case _ => "k" * (8 + rnd.nextInt(3)) + rnd.alphanumeric.take(rnd.nextInt(30)).mkString
  }

  /**
   * A value of `dt` (as an InternalRow holds it): edge values (extremes, NaN of two bit patterns,
   * -0.0, infinities), values of a narrow range (many equal keys) or any value.
   */
  def value(dt: DataType, rnd: Random, narrow: Boolean): Any = dt match {
    case BooleanType => rnd.nextBoolean()
    case ByteType =>
      if (narrow) (rnd.nextInt(4) - 2).toByte else pick(rnd, Byte.MinValue, Byte.MaxValue, (rnd.nextInt(256) - 128).toByte)
    case ShortType =>
      if (narrow) (rnd.nextInt(4) - 2).toShort else pick(rnd, Short.MinValue, Short.MaxValue, rnd.nextInt(65536).toShort)
    case IntegerType | DateType =>
      if (narrow) rnd.nextInt(5) - 2 else pick(rnd, Int.MinValue, Int.MaxValue, rnd.nextInt(), rnd.nextInt(1000))
    case LongType | TimestampType =>
      if (narrow) rnd.nextInt(7).toLong - 3
      else pick(rnd, Long.MinValue, Long.MaxValue, 0L, -1L, rnd.nextLong(), rnd.nextInt(100000).toLong)
    case FloatType =>
      if (narrow) pick(rnd, 0.0f, -0.0f, 1.5f, Float.NaN)
      else pick(rnd, Float.NaN, java.lang.Float.intBitsToFloat(0x7fc00123), -0.0f, 0.0f,
        Float.PositiveInfinity, Float.NegativeInfinity, Float.MinPositiveValue, Float.MaxValue,
        -Float.MaxValue, rnd.nextFloat() * 100 - 50, rnd.nextGaussian().toFloat)
    case DoubleType =>
      if (narrow) pick(rnd, 0.0, -0.0, 2.5, Double.NaN)
      else pick(rnd, Double.NaN, java.lang.Double.longBitsToDouble(0x7ff8000000000abcL), -0.0, 0.0,
        Double.PositiveInfinity, Double.NegativeInfinity, Double.MinPositiveValue, Double.MaxValue,
        -Double.MaxValue, rnd.nextDouble() * 1e6 - 5e5, rnd.nextGaussian())
    case d: DecimalType =>
      val max = BigInt(10).pow(d.precision) - 1
      val unscaled =
        if (narrow) BigInt(rnd.nextInt(5) - 2)
        else pick(rnd, max, -max, BigInt(0), BigInt(rnd.nextLong()) % max, BigInt(rnd.nextInt(100000) - 50000))
      Decimal(BigDecimal(unscaled, d.scale), d.precision, d.scale)
    case StringType =>
      UTF8String.fromString(if (narrow) pick(rnd, "a", "customer-1", "customer-2", "") else text(rnd))
    case BinaryType =>
      if (narrow) pick(rnd, Array[Byte](), Array[Byte](0), Array[Byte](1, 2, 3, 4, 5, 6, 7, 8, 9))
      else {
        val head = pick(rnd, Array.fill[Byte](8)(-1), Array.fill[Byte](8)(0), Array[Byte](), Array[Byte](127, -128))
        head ++ Array.fill(rnd.nextInt(12))(pick[Byte](rnd, 0, -1, 1, -128, 127, rnd.nextInt(256).toByte))
      }
  }

  /**
   * `n` rows of `schema` (as UnsafeRows, the form the sorter's row input and Spark's exchange
   * give), column by column each with nulls (a fraction `nullRate` of rows) or not; the last
   * column is the row's index, when `withId`.
   */
  def rows(schema: StructType, n: Int, rnd: Random, nullRate: Double = 0.1,
      withId: Boolean = true): IndexedSeq[UnsafeRow] = {
    val narrow = schema.fields.map(_ => rnd.nextInt(3) == 0)
    val nulls = schema.fields.map(_ => rnd.nextBoolean())
    val proj = project(schema)
    (0 until n).map { i =>
      val values = schema.fields.indices.map { c =>
        if (withId && c == schema.length - 1) i.toLong
        else if (nulls(c) && rnd.nextDouble() < nullRate) null
        else value(schema(c).dataType, rnd, narrow(c))
      }
      proj(new GenericInternalRow(values.toArray)).copy()
    }
  }

  /** Rows of `schema` to UnsafeRows, interpreted (no code generated for each random schema). */
  def project(schema: StructType): UnsafeProjection =
    InterpretedUnsafeProjection.createProjection(
      schema.fields.indices.map(c => BoundReference(c, schema(c).dataType, nullable = true)))

  /** `rows` as one ColumnarBatch of on-heap vectors (as a columnar scan gives them). */
  def batch(schema: StructType, rows: Seq[InternalRow]): ColumnarBatch = {
    val vectors = schema.fields.indices.map { c =>
      val dt = schema(c).dataType
      val v = new OnHeapColumnVector(math.max(rows.length, 1), dt)
      rows.indices.foreach { i =>
        val r = rows(i)
        if (r.isNullAt(c)) v.putNull(i)
        else dt match {
          case BooleanType => v.putBoolean(i, r.getBoolean(c))
          case ByteType => v.putByte(i, r.getByte(c))
          case ShortType => v.putShort(i, r.getShort(c))
          case IntegerType | DateType => v.putInt(i, r.getInt(c))
          case LongType | TimestampType => v.putLong(i, r.getLong(c))
          case FloatType => v.putFloat(i, r.getFloat(c))
          case DoubleType => v.putDouble(i, r.getDouble(c))
          case d: DecimalType => v.putDecimal(i, r.getDecimal(c, d.precision, d.scale), d.precision)
          case StringType => v.putByteArray(i, r.getUTF8String(c).getBytes)
          case BinaryType => v.putByteArray(i, r.getBinary(c))
        }
      }
      v: ColumnVector
    }
    val b = new ColumnarBatch(vectors.toArray)
    b.setNumRows(rows.length)
    b
  }

  /** A random sort: 1 to 3 keys of random types, a payload column or not, then the id. */
  def randomSort(rnd: Random): Sort = {
    val numKeys = 1 + rnd.nextInt(3)
    val keyFields = (0 until numKeys).map(k => StructField(s"k$k", keyTypes(rnd.nextInt(keyTypes.length))))
    val payload = if (rnd.nextBoolean()) Seq(StructField("p", pick(rnd, StringType, DecimalType(12, 3), DoubleType, IntegerType))) else Nil
    val schema = StructType(keyFields ++ payload :+ StructField("id", LongType))
    Sort(schema, (0 until numKeys).map(k => (k, rnd.nextBoolean(), rnd.nextBoolean())))
  }

  /** Whether two rows of `schema` hold the same values (floats by their bits, NaN one value). */
  def sameRow(schema: StructType, x: InternalRow, y: InternalRow): Boolean =
    schema.fields.indices.forall { c =>
      val dt = schema(c).dataType
      x.isNullAt(c) == y.isNullAt(c) && (x.isNullAt(c) || (dt match {
        case FloatType => java.lang.Float.floatToIntBits(x.getFloat(c)) == java.lang.Float.floatToIntBits(y.getFloat(c))
        case DoubleType => java.lang.Double.doubleToLongBits(x.getDouble(c)) == java.lang.Double.doubleToLongBits(y.getDouble(c))
        case BinaryType => java.util.Arrays.equals(x.getBinary(c), y.getBinary(c))
        case _ => x.get(c, dt) == y.get(c, dt)
      }))
    }

  /** A task's memory of `bytes` (execution may take it all), and a spill storage in a temp dir. */
  final class Memory(bytes: Long) {
    val dir = Files.createTempDirectory("fw-sort-test").toFile
    val conf = new SparkConf(false).set("spark.local.dir", dir.getPath)
    val manager = new UnifiedMemoryManager(conf, bytes, bytes / 2, 1)
    val tmm = new TaskMemoryManager(manager, 0)
    val metrics = new TaskMetrics
    val disk = new DiskBlockManager(conf, true, false)
    val storage = RunStorage(disk, new SerializerManager(new JavaSerializer(conf), conf), metrics)
    def close(): Unit = {
      disk.stop()
      org.apache.spark.network.util.JavaUtils.deleteRecursively(dir)
    }
  }
}
