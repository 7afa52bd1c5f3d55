"""How records are batched on their way to the Python worker. The Python execs skip Spark's
per-row batch-size measurement when it cannot end a batch (every column fixed-width and
maxRecordsPerBatch rows under spark.sql.execution.arrow.maxBytesPerBatch); a byte limit that can
be reached must still cut batches, as in Spark."""
from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

import fullwindow  # noqa: F401
from conftest import get_session

BYTES_KEY = "spark.sql.execution.arrow.maxBytesPerBatch"
RECORDS_KEY = "spark.sql.execution.arrow.maxRecordsPerBatch"


@pytest.fixture(scope="module")
def spark():
    s = get_session()
    yield s
    s.conf.unset(BYTES_KEY)
    s.conf.unset(RECORDS_KEY)


def _batch_sizes(batches):
    yield pa.RecordBatch.from_pydict({"n": [b.num_rows for b in batches]},
                                     schema=pa.schema([("n", pa.int64())]))


def _keyed_batch_sizes(key, batches):
    yield pa.RecordBatch.from_pydict({"n": [b.num_rows for b in batches]},
                                     schema=pa.schema([("n", pa.int64())]))


def _fixed_width(spark, rows=30_000):
    return spark.range(0, rows, 1, 1).select(
        F.col("id").alias("a"), (F.col("id") * 2).alias("b"), (F.col("id") / 3).alias("x"))


def _unreachable(spark, df, records, max_bytes):
    jvm = spark.sparkContext._jvm
    return jvm.org.apache.spark.sql.fullwindow.execution.PythonArrowEval.byteLimitUnreachable(
        df._jdf.schema(), records, max_bytes)


def test_byte_limit_reachability(spark):
    fixed = _fixed_width(spark, 10)
    assert _unreachable(spark, fixed, 10_000, 256 * 1024 * 1024)
    # three 8-byte columns + 4 validity bytes = 28 bytes a row: 10,000 rows reach 100 kB
    assert not _unreachable(spark, fixed, 10_000, 100_000)
    assert not _unreachable(spark, fixed, 0, 256 * 1024 * 1024)        # rows unbounded
    assert not _unreachable(spark, fixed, 10_000, 2 ** 31 - 1)         # nothing to skip
    text = fixed.select("a", F.col("a").cast("string").alias("s"))
    assert not _unreachable(spark, text, 10_000, 256 * 1024 * 1024)   # variable width
    nested = fixed.select("a", F.array("a", "b").alias("arr"))
    assert not _unreachable(spark, nested, 10_000, 256 * 1024 * 1024)
    dec = fixed.select(F.col("a").cast("decimal(38,2)").alias("d"))
    assert _unreachable(spark, dec, 10_000, 1_000_000)                 # 16 + 2 bytes a row
    assert not _unreachable(spark, dec, 100_000, 1_000_000)


def test_record_limit_cuts_batches_when_byte_check_is_skipped(spark):
    spark.conf.set(RECORDS_KEY, "7000")
    spark.conf.unset(BYTES_KEY)
    sizes = [r.n for r in _fixed_width(spark).fullWindowPartition()
             .mapPartitionInArrow(_batch_sizes, "n long").collect()]
    assert sizes == [7000, 7000, 7000, 7000, 2000]


@pytest.mark.parametrize("keyed", [False, True])
def test_reachable_byte_limit_still_cuts_batches(spark, keyed):
    try:
        spark.conf.get(BYTES_KEY)
    except Exception:  # noqa: BLE001  (a key the session does not know: Spark 3.5)
        pytest.skip(f"this Spark line has no {BYTES_KEY}")
    spark.conf.set(RECORDS_KEY, "10000")
    spark.conf.set(BYTES_KEY, "16384")   # a few hundred rows of 3 longs/doubles
    try:
        df = _fixed_width(spark)
        if keyed:
            out = (df.withColumn("k", F.lit(1)).keyBy("k").fullWindowPartition()
                   .mapPartitionInArrow(_keyed_batch_sizes, "n long"))
        else:
            out = df.fullWindowPartition().mapPartitionInArrow(_batch_sizes, "n long")
        sizes = [r.n for r in out.collect()]
    finally:
        spark.conf.unset(BYTES_KEY)
    assert sum(sizes) == 30_000
    assert max(sizes) < 2000, sizes
    assert len(sizes) > 15


def _identity(batches):
    yield from batches


def _keyed_identity(key, batches):
    yield from batches


@pytest.mark.parametrize("keyed", [False, True])
def test_rows_of_every_kind_arrive_intact_in_exact_batches(spark, keyed):
    """With no byte limit, batches are cut by rows only (by fullwindow's own evaluation, which
    puts every input row into the struct column through one refilled wrapper row): variable-width,
    nested, decimal and null values all arrive as they were, in batches of exactly
    maxRecordsPerBatch rows."""
    spark.conf.set(RECORDS_KEY, "700")
    spark.conf.set(BYTES_KEY, str(2 ** 31 - 1))
    try:
        df = spark.range(0, 3000, 1, 2).select(
            (F.col("id") % 3).alias("k"),
            F.when(F.col("id") % 7 == 0, None).otherwise(F.concat(F.lit("s"), F.col("id")))
            .alias("s"),
            F.array(F.col("id"), F.col("id") * 2).alias("arr"),
            (F.col("id") / 8).cast("decimal(20,3)").alias("d"),
            F.struct(F.col("id").alias("i"), F.lit("x").alias("t")).alias("st"))
        if keyed:
            out = df.keyBy("k").fullWindowPartition().mapPartitionInArrow(_keyed_identity,
                                                                          df.schema)
            sizes = (df.keyBy("k").fullWindowPartition()
                     .mapPartitionInArrow(_keyed_batch_sizes, "n long"))
        else:
            out = df.fullWindowPartition().mapPartitionInArrow(_identity, df.schema)
            sizes = df.fullWindowPartition().mapPartitionInArrow(_batch_sizes, "n long")
        got = sorted((tuple(r) for r in out.collect()), key=lambda t: t[2][0])  # arr[0] = id
        want = sorted((tuple(r) for r in df.collect()), key=lambda t: t[2][0])
        batch_sizes = [r.n for r in sizes.collect()]
    finally:
        spark.conf.unset(BYTES_KEY)
        spark.conf.unset(RECORDS_KEY)
    assert got == want
    assert sum(batch_sizes) == 3000 and max(batch_sizes) == 700
    if not keyed:  # two partitions of 1,500 rows: 700, 700, 100 each
        assert sorted(batch_sizes) == [100, 100, 700, 700, 700, 700]
