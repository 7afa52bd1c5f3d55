package org.apache.spark.sql.fullwindow.execution.sort

import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.fullwindow.execution.ColumnarSort
import org.apache.spark.sql.fullwindow.execution.ColumnarSorter
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

/**
 * The in-memory sort (the radix passes over the key words, then the tie sort of string and
 * binary keys) against Spark's ordering of the same rows, applied by a stable sort: random keys
 * of every type the columnar sort takes, with nulls, NaN, -0.0, extremes, many equal keys and
 * strings that share their first 8 bytes; and the key words it sorts by.
 */
class InMemorySortSuite extends AnyFunSuite {
  import SortTestData._

  /** The rows held in new chunks (appended row by row or as one batch), with room to spare. */
  private def held(sort: Sort, rows: IndexedSeq[UnsafeRow], asBatch: Boolean): ColumnChunks = {
    val chunks = new ColumnChunks(sort.types, sort.keyCols, _ => true)
    if (asBatch) assert(chunks.append(batch(sort.schema, rows)))
    else rows.foreach(r => assert(chunks.appendRow(r)))
    chunks
  }

  private def sortedIndex(sorted: SortedArray, n: Int): IndexedSeq[Int] =
    (0 until n).map(j => sorted.a(2 * j).toInt)

  test("the radix passes and the tie sort order rows as Spark does, stably, for every key type") {
    val rnd = new Random(45)
    var trials = 0
    var withTies = 0
    while (trials < 250) {
      val sort = randomSort(rnd)
      val n = pick(rnd, 1, 2, 40, 300, 1500)
      val rows = SortTestData.rows(sort.schema, n, rnd)
      val chunks = held(sort, rows, asBatch = rnd.nextBoolean())
      val keys = sort.keyWords
      if (keys.hasTies(chunks.pastPrefix)) withTies += 1
      val sorted = InMemorySort.sort(chunks, keys, allowCarry = false)
      val expected = sort.reference(rows)
      val got = sortedIndex(sorted, n)
      assert(got == expected, s"$sort, $n rows: first difference at ${got.zip(expected).indexWhere(p => p._1 != p._2)}")
      trials += 1
    }
    assert(withTies > 15, "too few trials had string keys past their prefix")
  }

  test("every key type alone, both directions and null orders, narrow and wide values") {
    val rnd = new Random(7)
    for (dt <- keyTypes; desc <- Seq(false, true); nullsFirst <- Seq(false, true)) {
      val sort = Sort(StructType(Seq(StructField("k", dt), StructField("id", LongType))), Seq((0, desc, nullsFirst)))
      val rows = SortTestData.rows(sort.schema, 700, rnd, nullRate = 0.2)
      val sorted = InMemorySort.sort(held(sort, rows, asBatch = false), sort.keyWords, allowCarry = false)
      assert(sortedIndex(sorted, rows.length) == sort.reference(rows), s"$dt desc=$desc nullsFirst=$nullsFirst")
    }
  }

  test("string keys sharing their first 8 bytes in long runs: the tie sort's radix depths") {
    val rnd = new Random(11)
    for (desc <- Seq(false, true); second <- Seq(false, true)) {
      val schema = StructType(Seq(StructField("s", StringType), StructField("t", StringType),
        StructField("id", LongType)))
      val keys = Seq((0, desc, false)) ++ (if (second) Seq((1, !desc, true)) else Nil)
      val sort = Sort(schema, keys)
      val proj = project(schema)
      val rows = (0 until 3000).map { i =>
        // runs of hundreds of rows tie on 8, 16 and 24 bytes; some end in zero bytes
        val s = "customer-" + "x" * rnd.nextInt(3) * 8 + rnd.nextInt(400) + (if (rnd.nextInt(10) == 0) "\u0000" else "")
        val t = if (rnd.nextInt(5) == 0) null else UTF8String.fromString("t" + rnd.nextInt(3))
        proj(InternalRow(UTF8String.fromString(s), t, i.toLong)).copy()
      }
      val chunks = held(sort, rows, asBatch = true)
      assert(sort.keyWords.hasTies(chunks.pastPrefix))
      val sorted = InMemorySort.sort(chunks, sort.keyWords, allowCarry = false)
      assert(sortedIndex(sorted, rows.length) == sort.reference(rows), s"desc=$desc second=$second")
    }
  }

  test("more rows than a chunk, one long key with every value equal to another's: stable") {
    val rnd = new Random(3)
    val sort = Sort(StructType(Seq(StructField("k", LongType), StructField("id", LongType))), Seq((0, false, false)))
    val rows = SortTestData.rows(sort.schema, ColumnChunks.ChunkRows + 5000, rnd, nullRate = 0.0)
    val sorted = InMemorySort.sort(held(sort, rows, asBatch = true), sort.keyWords, allowCarry = false)
    assert(sortedIndex(sorted, rows.length) == sort.reference(rows))
  }

  test("the sorted rows out of every layout (carry, keys decoded from the word, records)") {
    val rnd = new Random(5)
    val memory = new Memory(256L << 20)
    try {
      var trials = 0
      while (trials < 150) {
        val sort = if (trials % 3 == 0) {
          // integral keys without nulls and at most one other column: the carry layout
          val t = pick(rnd, LongType, IntegerType, ShortType, DateType, DecimalType(18, 2))
          Sort(StructType(Seq(StructField("k", t), StructField("j", ByteType), StructField("id", LongType))),
            Seq((0, rnd.nextBoolean(), rnd.nextBoolean()), (1, rnd.nextBoolean(), false)))
        } else randomSort(rnd)
        val rows = SortTestData.rows(sort.schema, pick(rnd, 1, 50, 900), rnd,
          nullRate = if (trials % 3 == 0) 0.0 else 0.1)
        val sorter = new ColumnarSorter(sort.types, sort.keyCols, sort.keyDesc, sort.keyNullsFirst,
          memory.tmm, memory.storage)
        if (rnd.nextBoolean()) assert(sorter.append(batch(sort.schema, rows)))
        else rows.foreach(r => assert(sorter.appendRow(r)))
        sorter.sort(allowCarry = true)
        val out = sorter.sortedRows().map(_.copy()).toIndexedSeq
        val expected = sort.reference(rows)
        assert(out.map(_.getLong(sort.schema.length - 1).toInt) == expected, s"$sort")
        out.foreach(r => assert(sameRow(sort.schema, r, rows(r.getLong(sort.schema.length - 1).toInt))))
        assert(memory.tmm.getMemoryConsumptionForThisTask == 0, "freed at the end of the output")
        trials += 1
      }
    } finally memory.close()
  }

  test("packed key words: the keys decode back from the word, and the word orders the rows") {
    val rnd = new Random(17)
    var packed = 0
    for (_ <- 0 until 300) {
      val numKeys = 1 + rnd.nextInt(4)
      val schema = StructType((0 until numKeys).map(k => StructField(s"k$k",
        pick(rnd, BooleanType, ByteType, ShortType, IntegerType, LongType, DateType, DecimalType(9, 2)))) :+
        StructField("id", LongType))
      val sort = Sort(schema, (0 until numKeys).map(k => (k, rnd.nextBoolean(), rnd.nextBoolean())))
      val rows = SortTestData.rows(schema, 200, rnd, nullRate = 0.0)
      val chunks = held(sort, rows, asBatch = false)
      val keys = sort.keyWords
      val keyMin = new Array[Long](numKeys)
      val all = keys.words(chunks, keyMin)
      val packs = KeyWords.packs(all)
      assert(packs.forall(_.map(_.width).sum <= 64))
      assert(packs.reverse.flatten == all, "packs keep the words' order, the least significant first")
      if (keys.keysInWord(packs, all, chunks.colHasNull) && packs.nonEmpty) {
        packed += 1
        val a = new Array[Long](4 * rows.length)
        packs.head.foreach(w => keys.addWord(a, rows.length, w, sequential = true, chunks))
        val pack = packs.head.reverse.toArray
        val decoded = new Array[Long](schema.length)
        // a key not in the word has one value: its min
        (0 until numKeys).filterNot(k => packs.head.exists(_.key == k)).foreach(k => decoded(k) = keyMin(k) ^ Long.MinValue)
        rows.indices.foreach { j =>
          keys.decode(a(2 * j + 1), pack, decoded)
          (0 until numKeys).foreach(k => assert(decoded(k) == chunks.value(k, j), s"row $j key $k of $schema"))
        }
        val order = sort.reference(rows)
        order.indices.drop(1).foreach { i =>
          assert(java.lang.Long.compareUnsigned(a(2 * order(i - 1) + 1), a(2 * order(i) + 1)) <= 0)
        }
      }
    }
    assert(packed > 200, "too few trials packed every key into one word")
  }

  test("prefix words: a value of at most 8 bytes not ending in a zero byte is its word") {
    val rnd = new Random(23)
    val values = (0 until 2000).map(_ => value(StringType, rnd, narrow = false).asInstanceOf[UTF8String]) ++
      Seq("", "a", "a\u0000", "abcdefgh", "abcdefgh\u0000", "abcdefghi", "\u0000").map(UTF8String.fromString)
    val exact = values.filter(KeyWords.prefixIsValue)
    assert(exact.exists(_.numBytes() == 8) && values.exists(v => !KeyWords.prefixIsValue(v)))
    for (x <- values.take(300); y <- values) {
      val wx = KeyWords.baseWord(ColumnarSort.Str, KeyWords.prefixWord(x))
      val wy = KeyWords.baseWord(ColumnarSort.Str, KeyWords.prefixWord(y))
      val byWord = java.lang.Long.compareUnsigned(wx, wy)
      // the word orders as the bytes do, where it tells the values apart
      if (byWord != 0) assert(Integer.signum(byWord) == Integer.signum(x.compareTo(y)), s"'$x' '$y'")
      if (KeyWords.prefixIsValue(x) && KeyWords.prefixIsValue(y)) assert((byWord == 0) == (x == y), s"'$x' '$y'")
    }
  }

  test("double words order as Spark SQL: -0.0 = 0.0, NaN (any bits) above +Inf") {
    val ds = Seq(Double.NegativeInfinity, -Double.MaxValue, -1.0, -Double.MinPositiveValue, -0.0, 0.0,
      Double.MinPositiveValue, 1.0, Double.MaxValue, Double.PositiveInfinity)
    ds.zip(ds.tail).foreach { case (x, y) =>
      val c = java.lang.Long.compareUnsigned(KeyWords.doubleWord(x), KeyWords.doubleWord(y))
      if (x == y) assert(c == 0, s"$x $y") else assert(c < 0, s"$x $y")
    }
    val nan = KeyWords.doubleWord(Double.NaN)
    assert(KeyWords.doubleWord(java.lang.Double.longBitsToDouble(0xfff8000000000001L)) == nan)
    assert(java.lang.Long.compareUnsigned(KeyWords.doubleWord(Double.PositiveInfinity), nan) < 0)
  }

  private def pick[T](rnd: Random, xs: T*): T = xs(rnd.nextInt(xs.length))
}
