package org.apache.spark.sql.fullwindow.execution.sort

import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.{SparkConf, SparkEnv, TaskContext, TaskContextImpl}
import org.apache.spark.executor.TaskMetrics
import org.apache.spark.memory.{MemoryConsumer, MemoryMode}
import org.apache.spark.serializer.{JavaSerializer, SerializerManager}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{AttributeReference, UnsafeRow}
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.fullwindow.execution.{ColumnarSort, ColumnarSorter}
import org.apache.spark.sql.types._

/**
 * Sorted runs on disk and their merge, against a reference merge (a stable sort of the runs'
 * rows one run after the other: equal keys from the earlier run first); and a sorter under a
 * tiny memory budget (a task memory manager over a small unified memory manager, no Spark job):
 * it spills sorted runs, merges them with the rows held, spills the rest of its output when
 * another consumer asks, and falls back to the row sorter when memory is refused with nothing
 * held.
 */
class SortedRunsSuite extends AnyFunSuite {
  import SortTestData._

  private def ids(rows: Iterator[UnsafeRow], idCol: Int): IndexedSeq[Int] =
    rows.map(_.getLong(idCol).toInt).toIndexedSeq

  test("the merge of sorted runs equals a stable sort of the runs one after the other") {
    val rnd = new Random(29)
    val memory = new Memory(1L << 30)
    try {
      for (trial <- 0 until 30) {
        val sort = randomSort(rnd)
        // runs of one block or more (a block holds BlockRows rows)
        val sizes = Seq.fill(1 + rnd.nextInt(4))(rnd.nextInt(300)) ++
          (if (trial % 10 == 0) Seq(SortedRuns.BlockRows + rnd.nextInt(500)) else Nil)
        val all = SortTestData.rows(sort.schema, sizes.sum, rnd)
        val chunks = new ColumnChunks(sort.types, sort.keyCols, _ => true)
        val runs = new SortedRuns(chunks.layout, memory.storage)
        val keys = sort.keyWords
        var from = 0
        sizes.foreach { m =>
          chunks.release()
          all.slice(from, from + m).foreach(r => assert(chunks.appendRow(r)))
          val sorted = InMemorySort.sort(chunks, keys, allowCarry = false)
          runs.write(chunks, m, j => sorted.a((2 * j).toInt), 0L)
          from += m
        }
        assert(runs.numRuns == sizes.length)
        var ended = false
        val merged = SortedRuns.merge(runs.all(), keys, () => ended = true)
        val got = ids(SortedReader.rows(merged, sort.types), sort.schema.length - 1)
        assert(ended)
        assert(got == sort.reference(all), s"$sort, runs of $sizes rows")
        runs.free()
      }
    } finally memory.close()
  }

  test("a block of records is cut at its byte size, and read back whole") {
    val memory = new Memory(1L << 30)
    try {
      val schema = StructType(Seq(StructField("k", IntegerType), StructField("s", StringType), StructField("id", LongType)))
      val sort = Sort(schema, Seq((0, true, false)))
      val big = "x" * 600 // 4,096 rows of it are more than a block's 1 MiB
      val proj = project(schema)
      val rows = (0 until 6000).map(i => proj(
        InternalRow(i % 7, org.apache.spark.unsafe.types.UTF8String.fromString(big + i), i.toLong)).copy())
      val chunks = new ColumnChunks(sort.types, sort.keyCols, _ => true)
      rows.foreach(r => assert(chunks.appendRow(r)))
      val sorted = InMemorySort.sort(chunks, sort.keyWords, allowCarry = false)
      val runs = new SortedRuns(chunks.layout, memory.storage)
      runs.write(chunks, rows.length, j => sorted.a((2 * j).toInt), 0L)
      val out = SortedReader.rows(SortedRuns.merge(runs.all(), sort.keyWords, () => ()), sort.types).map(_.copy()).toIndexedSeq
      assert(out.map(_.getLong(2).toInt) == sort.reference(rows))
      out.foreach(r => assert(sameRow(schema, r, rows(r.getLong(2).toInt))))
      runs.free()
    } finally memory.close()
  }

  /** Appends `rows` in batches of `batchRows` as sortPartition does: spilling a run when refused. */
  private def appendAll(sorter: ColumnarSorter, schema: StructType, rows: IndexedSeq[UnsafeRow],
      batchRows: Int): Boolean =
    rows.grouped(batchRows).forall { part =>
      val b = batch(schema, part)
      sorter.append(b) || (sorter.numRows > 0 && { sorter.spillRun(); sorter.append(b) })
    }

  test("under a tiny memory budget: sorted runs spilled, merged with the rows held") {
    val rnd = new Random(31)
    for (withStrings <- Seq(false, true)) {
      // a chunk of rows reserves 65,536 x (8 per column held in chunks, 8 for a record's
      // address, 32 for the sort) bytes: 3.5 MiB here; records take pages of 1 MiB
      val memory = new Memory(if (withStrings) 8L << 20 else 4L << 20)
      try {
        val schema = StructType(Seq(StructField("k", if (withStrings) StringType else LongType),
          StructField("v", DoubleType), StructField("id", LongType)))
        val sort = Sort(schema, Seq((0, false, true), (1, true, false)))
        val rows = SortTestData.rows(schema, 100000, rnd, nullRate = 0.05)
        val sorter = new ColumnarSorter(sort.types, sort.keyCols, sort.keyDesc, sort.keyNullsFirst,
          memory.tmm, memory.storage)
        assert(appendAll(sorter, schema, rows, 5000))
        assert(sorter.numRuns >= 1 && sorter.numRows > 0, "the budget makes it spill a run, and hold the rest")
        assert(sorter.bytesSpilled > 0 && memory.metrics.diskBytesSpilled == sorter.bytesSpilled)
        assert(memory.metrics.memoryBytesSpilled > 0)
        assert(sorter.peakMemory <= (if (withStrings) 8L << 20 else 4L << 20))
        sorter.sort(allowCarry = true)
        assert(ids(sorter.sortedRows(), 2) == sort.reference(rows))
        assert(memory.tmm.getMemoryConsumptionForThisTask == 0)
        assert(memory.dir.listFiles().forall(d => !d.isDirectory || d.list().forall(s => new java.io.File(d, s).list().isEmpty)),
          "the runs are deleted")
      } finally memory.close()
    }
  }

  test("while its output is read, another consumer's request spills the rest, read on from disk") {
    val rnd = new Random(37)
    val memory = new Memory(8L << 20)
    try {
      val schema = StructType(Seq(StructField("k", IntegerType), StructField("v", LongType),
        StructField("w", LongType), StructField("id", LongType)))
      val sort = Sort(schema, Seq((0, false, false)))
      val rows = SortTestData.rows(schema, 40000, rnd, nullRate = 0.1)
      val sorter = new ColumnarSorter(sort.types, sort.keyCols, sort.keyDesc, sort.keyNullsFirst,
        memory.tmm, memory.storage)
      var spilledOnRequest = 0L
      sorter.onOutputSpill = bytes => spilledOnRequest += bytes
      assert(appendAll(sorter, schema, rows, 4000))
      assert(sorter.numRuns == 0)
      sorter.sort(allowCarry = false)
      val out = sorter.sortedRows()
      val first = out.take(1000).map(_.getLong(3).toInt).toIndexedSeq
      val other = new MemoryConsumer(memory.tmm, MemoryMode.ON_HEAP) {
        override def spill(size: Long, trigger: MemoryConsumer): Long = 0L
      }
      val got = other.acquireMemory(6L << 20)
      assert(got == (6L << 20) && spilledOnRequest > 0 && sorter.numRuns == 1)
      val rest = out.map(_.getLong(3).toInt).toIndexedSeq
      assert(first ++ rest == sort.reference(rows))
      other.freeMemory(got)
    } finally memory.close()
  }

  test("refused with nothing held: the rows on disk come back for the row sorter (replay)") {
    val rnd = new Random(41)
    val memory = new Memory(4L << 20) // a chunk of 2 columns: 3 MiB
    try {
      val schema = StructType(Seq(StructField("k", LongType), StructField("id", LongType)))
      val sort = Sort(schema, Seq((0, false, false)))
      val rows = SortTestData.rows(schema, ColumnChunks.ChunkRows + 3000, rnd)
      val sorter = new ColumnarSorter(sort.types, sort.keyCols, sort.keyDesc, sort.keyNullsFirst,
        memory.tmm, memory.storage)
      assert(sorter.append(batch(schema, rows.take(2000))))
      // the rest needs two chunks: refused, and again once the rows held are a run
      val rest = batch(schema, rows.drop(2000))
      assert(!sorter.append(rest))
      sorter.spillRun()
      assert(!sorter.append(rest) && sorter.numRows == 0 && sorter.numRuns == 1)
      val back = scala.collection.mutable.ArrayBuffer[Int]()
      sorter.replay(r => back += r.getLong(1).toInt)
      assert(back == sort.reference(rows.take(2000)), "the run, sorted")
      sorter.free()
      assert(memory.tmm.getMemoryConsumptionForThisTask == 0)
    } finally memory.close()
  }

  test("sortRows falls back to Spark's row sorter when a chunk of rows is refused") {
    val rnd = new Random(43)
    // 10 long columns: a chunk reserves 65,536 x 112 bytes = 7 MiB, more than the task may have
    val memory = new Memory(4L << 20)
    val conf = new SparkConf(false).set("spark.buffer.pageSize", "1m").set("spark.testing.memory", (64L << 20).toString)
      .set("spark.testing.reservedMemory", "0")
    val serializers = new SerializerManager(new JavaSerializer(conf), conf)
    val env = new SparkEnv("driver", null, new JavaSerializer(conf), new JavaSerializer(conf), serializers,
      null, null, null, null, null, null, conf)
    env.initializeMemoryManager(1)
    val ctx = new TaskContextImpl(0, 0, 0, 0L, 0, 1, memory.tmm, new java.util.Properties, null,
      TaskMetrics.empty, 1, Map.empty)
    SparkEnv.set(env)
    TaskContext.setTaskContext(ctx)
    try {
      val schema = StructType((0 until 9).map(c => StructField(s"c$c", LongType)) :+ StructField("id", LongType))
      val output = schema.map(f => AttributeReference(f.name, f.dataType)())
      val sort = Sort(schema, Seq((3, true, true), (0, false, false)))
      val rows = SortTestData.rows(schema, 6000, rnd)
      val order = sort.order.zip(sort.keyCols).map { case (o, c) => o.copy(child = output(c)) }
      val metrics = Seq("sortTime", "peakMemory", "spillSize", "numInputRows", "numOutputRows",
        "numInputBatches", "columnarSorts", "columnarRuns", "rowSortFallbacks").map(_ -> new SQLMetric("sum", 0L)).toMap
      val result = ColumnarSort.sortRows(rows.iterator, order, output, sort.types, sort.keyCols,
        radixSortEnabled = true, packedPrefix = true, metrics)
      assert(result.isRight, "fell back")
      assert(metrics("rowSortFallbacks").value == 1 && metrics("columnarSorts").value == 0)
      assert(metrics("numInputRows").value == rows.length && metrics("numOutputRows").value == rows.length)
      // Spark's sorter orders rows as the reference does; equal keys in an order of its own
      val out = result.toOption.get.map(_.copy()).toIndexedSeq
      val ord = new org.apache.spark.sql.catalyst.expressions.InterpretedOrdering(sort.order)
      assert(out.map(_.getLong(9).toInt).sorted == rows.indices)
      out.sliding(2).foreach(p => assert(ord.compare(p(0), p(1)) <= 0))
    } finally {
      ctx.markTaskCompleted(None)
      TaskContext.unset()
      SparkEnv.set(null)
      memory.close()
    }
  }
}
