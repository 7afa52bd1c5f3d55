"""The keyed Python forms sorted by columns (jvm .../execution/KeyedColumnarSort.scala): when
every input column is a fixed-width primitive and every sort key a column, the keyed node asks
for no SortExec; it appends the exchange's rows to the columnar sorter, radix-sorts them and
fills the Arrow batches sent to Python straight from the sorted columns.

Checked here, over Parquet input: every keyed form gives what it gives with the switch off (the
row path: SortExec, then Spark's Arrow writer), down to the batches each key's records come in;
null keys, one key (most partitions empty), many keys, NaN and -0.0; the running reduce's
second sort key (input position); string and binary columns beside the key (the same Arrow
stream), string and binary keys (words tied past 8 bytes, with other keys, under every form, the
column aggregate and both coGroup sides), batches ended by the byte limit; the plan has no `Sort [` under the node, and has it
with the switch off; a partition larger than the execution memory is sorted in runs
spilled to disk, and rows too wide for any run fall back to the row sorter. One session, with a
small execution memory pool, for the whole module."""
from __future__ import annotations

import hashlib
import json

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark.sql import Row
from pyspark.sql import functions as F

import fullwindow
from conftest import SMALL_MEMORY, get_session
from fullwindow import AggregateFunction, EndOfStreamWindows
from helpers import executed_plan
from helpers import fixed_width_parquet as _write, with_decimals, with_strings as _with_strings

KEY = "spark.fullwindow.sort.columnar.enabled"
# A pool of (2 GiB heap - 300 MiB) x 0.01 = 17.5 MiB, shared by the 2 tasks of a stage: each
# chunk of 65,536 rows reserves 65,536 x (8 x columns + 32) bytes.
ROWS = 20_000
BIG_ROWS = 600_000

OUT = "k long, n long, sizes string, digest string"


def _digest(rows) -> str:
    return hashlib.sha1(repr(sorted(map(repr, rows))).encode()).hexdigest()


def _batches_summary(batches):
    """A key's Arrow batches: its row count, the sizes of the batches, a digest of its rows."""
    n, sizes, rows = 0, [], []
    for b in batches:
        n += b.num_rows
        sizes.append(b.num_rows)
        rows.extend(tuple(d.values()) for d in b.to_pylist())
    return n, json.dumps(sizes), _digest(rows)


def per_key_arrow(key, batches):
    """Per key: its row count, the sizes of the batches it came in, a digest of its rows."""
    n, sizes, digest = _batches_summary(batches)
    yield pa.RecordBatch.from_pydict(
        {"k": [key], "n": [n], "sizes": [sizes], "digest": [digest]},
        schema=pa.schema([("k", pa.int64()), ("n", pa.int64()), ("sizes", pa.string()),
                          ("digest", pa.string())]))


def per_key_pandas(key, frames):
    import pandas as pd

    n, sizes, rows = 0, [], []
    for pdf in frames:
        n += len(pdf)
        sizes.append(len(pdf))
        # a frame's int column with a null is float: digest what no frame boundary changes
        rows.extend((int(v), None if pd.isna(i) else int(i), repr(float(x)), bool(b), str(d),
                     int(t), int(s_), repr(float(f)))
                    for v, i, x, b, d, t, s_, f in zip(pdf["v"], pdf["i"], pdf["x"], pdf["b"],
                                                       pdf["d"], pdf["t"], pdf["s"], pdf["f"]))
    yield pd.DataFrame({"k": [key], "n": [n], "sizes": [json.dumps(sizes)],
                        "digest": [_digest(rows)]})


def per_key_rows(key, rows):
    seen = [tuple(r) for r in rows]
    yield (key, len(seen), "", _digest(seen))


class SumX(AggregateFunction):
    """Count, and a sum of x that no order of the key's rows changes (x * 7 is integral)."""

    def create_accumulator(self):
        return [0, 0.0]

    def add(self, value, acc):
        acc[0] += 1
        acc[1] += 0.0 if value.x is None or value.x != value.x else round(value.x * 7)
        return acc

    def get_result(self, acc):
        return (acc[0], acc[1])

    def merge(self, a, b):
        return [a[0] + b[0], a[1] + b[1]]


def add_v(a, b):
    return Row(k=a.k, v=a.v + b.v, i=b.i, x=b.x, b=b.b, d=b.d)


@pytest.fixture(scope="module")
def spark():
    s = get_session(SMALL_MEMORY)
    yield s
    for key in (KEY, "spark.sql.execution.arrow.maxRecordsPerBatch",
                "spark.fullwindow.runtimeMode"):
        s.conf.unset(key)


@pytest.fixture(scope="module")
def many(spark, tmp_path_factory):
    return _write(spark, str(tmp_path_factory.mktemp("keyed_columnar") / "many"), ROWS, 500)


@pytest.fixture(scope="module")
def one(spark, tmp_path_factory):
    return _write(spark, str(tmp_path_factory.mktemp("keyed_columnar") / "one"), ROWS, 1)


FORMS = {
    "arrow": (lambda df: df.keyBy("k").fullWindowPartition().mapPartitionInArrow(per_key_arrow, OUT),
              "FullWindowKeyedMapPartitionInArrow"),
    "pandas": (lambda df: df.keyBy("k").fullWindowPartition().mapPartitionInPandas(per_key_pandas, OUT),
               "FullWindowKeyedMapPartitionInPandas"),
    "rows": (lambda df: df.keyBy("k").fullWindowPartition().mapPartition(per_key_rows, OUT),
             "FullWindowKeyedMapPartition"),
    "aggregate": (lambda df: df.keyBy("k").fullWindowPartition().aggregate(
        SumX(), "n long, s double"), "FullWindowKeyedAggregate"),
}


def _both(spark, make):
    """make()'s plan and rows with the columnar sort (the default), then with the switch off."""
    out = []
    for on in ("true", "false"):
        spark.conf.set(KEY, on)
        try:
            df = make()
            rows = sorted((tuple(r) for r in df.collect()), key=repr)
            out.append((executed_plan(df), rows, df))
        finally:
            spark.conf.unset(KEY)
    return out


def _same(a, b) -> bool:
    return [repr(r) for r in a] == [repr(r) for r in b]  # NaN equals itself


def _check_plans(columnar_plan, row_plan, node):
    assert f"{node} " in columnar_plan and "columnar=true" in columnar_plan, columnar_plan
    assert "Sort [" not in columnar_plan, columnar_plan
    assert "columnar=true" not in row_plan and "Sort [k#" in row_plan, row_plan


@pytest.mark.parametrize("batch", [None, "7"])
@pytest.mark.parametrize("form", sorted(FORMS))
def test_same_results_and_batches_as_the_row_sort(spark, many, form, batch):
    make, node = FORMS[form]
    if batch:
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", batch)
    # every record through the sorts compared here (an aggregate with merge would combine first)
    spark.conf.set("spark.fullwindow.combine.enabled", "false")
    try:
        (cplan, cols, cdf), (rplan, rows, rdf) = _both(spark, lambda: make(many))
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
        spark.conf.unset("spark.fullwindow.combine.enabled")
    _check_plans(cplan, rplan, node)
    assert _same(cols, rows)
    assert len(cols) == 501  # 500 keys and null
    m = fullwindow.operator_metrics(cdf)
    assert m[f"{node}.columnarSorts"] >= 1 and m[f"{node}.rowSortFallbacks"] == 0, m
    assert m[f"{node}.numInputRows"] == ROWS, m
    # the same Arrow stream, byte for byte in size
    sent = fullwindow.operator_metrics(rdf)[f"{node}.pythonDataSent"]
    assert m[f"{node}.pythonDataSent"] == sent > 0, (m, sent)
    if form in ("arrow", "pandas"):
        assert any(r[0] is None for r in cols)
        if batch:  # keys span batches, batches hold several keys: the same cuts either way
            assert any(len(json.loads(r[2])) > 1 for r in cols)


@pytest.mark.parametrize("form", ["arrow", "pandas"])
def test_one_key_and_empty_partitions(spark, one, form):
    make, node = FORMS[form]
    (cplan, cols, _), (rplan, rows, _) = _both(spark, lambda: make(one))
    _check_plans(cplan, rplan, node)
    assert _same(cols, rows) and [(r[0], r[1]) for r in cols] == [(7, ROWS)]


def test_running_reduce_keeps_input_order(spark, many):
    # the running reduce sorts by the key, then the input position: a second sort key
    spark.conf.set("spark.fullwindow.runtimeMode", "STREAMING")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "5")
    try:
        (cplan, cols, _), (rplan, rows, _) = _both(
            spark, lambda: many.select("k", "v", "i", "x", "b", "d").keyBy("k").reduce(add_v))
    finally:
        spark.conf.unset("spark.fullwindow.runtimeMode")
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    assert "KeyedRunningReduce" in cplan and "columnar=true" in cplan and "Sort [" not in cplan
    assert "Sort [" in rplan
    assert _same(cols, rows) and len(cols) == ROWS


@pytest.fixture()
def per_partition_aggregate(spark):
    """aggregate(*columns) as it plans with the combine switched off: every record exchanged by
    key, sorted by it (by columns here), aggregated per partition (by default it combines
    before the exchange and sorts nothing: tests/test_keyed_combine_columns.py)."""
    spark.conf.set("spark.fullwindow.combine.enabled", "false")
    yield
    spark.conf.unset("spark.fullwindow.combine.enabled")


def test_aggregate_columns_sort_by_columns(spark, many, per_partition_aggregate):
    # the keyed aggregate(*columns) runs Spark's aggregation iterator over rows sorted by key:
    # the columnar sort takes the place of the SortExec under it
    def make():
        return many.keyBy("k").fullWindowPartition().aggregate(
            F.count("*").alias("n"), F.sum("v").alias("sv"), F.max("x").alias("mx"),
            F.sort_array(F.collect_list("i")).alias("is_"))

    (cplan, cols, cdf), (rplan, rows, _) = _both(spark, make)
    assert "FullWindowColumnarSort " in cplan and "columnar=true" in cplan, cplan
    assert "Sort [" not in cplan and "Sort [k#" in rplan, rplan
    assert _same(cols, rows) and len(cols) == 501 and sum(r[1] for r in cols) == ROWS
    m = fullwindow.operator_metrics(cdf)
    assert m["FullWindowColumnarSort.columnarSorts"] >= 1, m
    assert m["FullWindowColumnarSort.numInputRows"] == ROWS, m


def test_aggregate_columns_with_a_string_column_sort_by_columns(spark, many, per_partition_aggregate):
    df = many.withColumn("s", F.when(F.col("v") % 7 == 0, None).otherwise(
        F.concat(F.lit("é"), F.col("v").cast("string"))))

    def make():
        return df.keyBy("k").fullWindowPartition().aggregate(
            F.count("s").alias("n"), F.max("s").alias("hi"), F.min(F.length("s")).alias("lo"))

    (cplan, cols, _), (rplan, rows, _) = _both(spark, make)
    assert "FullWindowColumnarSort " in cplan and "Sort [" not in cplan, cplan
    assert "Sort [k#" in rplan and _same(cols, rows) and len(cols) == 501


def per_key_pandas_strings(key, frames):
    import pandas as pd

    n, sizes, rows = 0, [], []
    for pdf in frames:
        n += len(pdf)
        sizes.append(len(pdf))
        rows.extend((int(v), None if s is None else str(s), None if b is None else bytes(b))
                    for v, s, b in zip(pdf["v"], pdf["s"], pdf["bin"]))
    yield pd.DataFrame({"k": [key], "n": [n], "sizes": [json.dumps(sizes)],
                        "digest": [_digest(rows)]})


STRING_FORMS = {
    "arrow": FORMS["arrow"],
    "pandas": (lambda df: df.keyBy("k").fullWindowPartition().mapPartitionInPandas(
        per_key_pandas_strings, OUT), "FullWindowKeyedMapPartitionInPandas"),
    "rows": FORMS["rows"],
}


@pytest.mark.parametrize("form", sorted(STRING_FORMS))
def test_string_and_binary_columns_sort_by_columns(spark, many, form):
    # string and binary columns beside the key: the same batches as Spark's Arrow writer makes
    # after its Sort (the same cuts; within a key rows come in shuffle order, so a batch holding
    # the end of one key and the start of the next pads its buffers differently)
    make, node = STRING_FORMS[form]
    df = _with_strings(many)
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "64")
    try:
        (cplan, cols, cdf), (rplan, rows, rdf) = _both(spark, lambda: make(df))
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    _check_plans(cplan, rplan, node)
    assert _same(cols, rows) and len(cols) == 501
    m = fullwindow.operator_metrics(cdf)
    assert m[f"{node}.columnarSorts"] >= 1 and m[f"{node}.rowSortFallbacks"] == 0, m
    sent = fullwindow.operator_metrics(rdf)[f"{node}.pythonDataSent"]
    assert abs(m[f"{node}.pythonDataSent"] - sent) < sent / 1000, (m, sent)


OUT_KEY = "key string, n long, sizes string, digest string"


def per_key_arrow_any(key, batches):
    """per_key_arrow for any key type: the key's repr."""
    n, sizes, digest = _batches_summary(batches)
    yield pa.RecordBatch.from_pydict({"key": [repr(key)], "n": [n], "sizes": [sizes], "digest": [digest]})


def per_key_rows_any(key, rows):
    seen = [tuple(r) for r in rows]
    yield (repr(key), len(seen), "", _digest(seen))


def _with_string_keys(df):
    """`df` with string keys sk (sharing a 9-byte prefix, so the sort's 8-byte words tie and
    the bytes decide; nulls) and sk2 (up to 8 bytes, a zero byte at the end of some), and a
    binary key bk (zero bytes)."""
    return (df.withColumn("sk", F.when(F.col("k").isNull(), None)
                          .otherwise(F.concat(F.lit("customer-"), F.col("k").cast("string"))))
            .withColumn("sk2", F.when(F.col("k") % 3 == 0, F.concat(F.lit("é"), F.col("k").cast("string"), F.lit("\x00")))
                        .otherwise(F.col("k").cast("string")))
            .withColumn("bk", F.unhex(F.format_string("00%04x00", F.col("k")))))


KEYED_BY_STRINGS = {
    "arrow": (lambda df, keys: df.keyBy(*keys).fullWindowPartition().mapPartitionInArrow(
        per_key_arrow_any, OUT_KEY), "FullWindowKeyedMapPartitionInArrow"),
    "rows": (lambda df, keys: df.keyBy(*keys).fullWindowPartition().mapPartition(
        per_key_rows_any, OUT_KEY), "FullWindowKeyedMapPartition"),
}


@pytest.mark.parametrize("keys", [["sk"], ["bk"], ["sk2", "i"], ["b", "sk"], ["d9"], ["d18", "k"]])
@pytest.mark.parametrize("form", sorted(KEYED_BY_STRINGS))
def test_string_binary_and_decimal_keys_sort_by_columns(spark, many, form, keys):
    # string and binary keys: the node sorts by columns (the keys' prefix words, ties broken by
    # their bytes) and every key gets its rows, in the batches the row sort gives; decimals of
    # up to 18 digits (keys, and columns beside the others) as their unscaled longs, sent as
    # Arrow's decimal128
    make, node = KEYED_BY_STRINGS[form]
    df = with_decimals(_with_string_keys(many))
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "64")
    try:
        (cplan, cols, cdf), (rplan, rows, rdf) = _both(spark, lambda: make(df, keys))
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    assert f"{node} " in cplan and "columnar=true" in cplan and "Sort [" not in cplan, cplan
    assert "columnar=true" not in rplan and "Sort [" in rplan, rplan
    assert _same(cols, rows) and sum(r[1] for r in cols) == ROWS and len(cols) >= 50
    m = fullwindow.operator_metrics(cdf)
    assert m[f"{node}.columnarSorts"] >= 1 and m[f"{node}.rowSortFallbacks"] == 0, m


def test_wide_decimal_keeps_the_sort(spark, many):
    # a decimal of more than 18 digits is no long: the keyed node keeps the Sort under it
    make, _ = KEYED_BY_STRINGS["arrow"]
    wide = with_decimals(many).withColumn("w", F.col("d18").cast("decimal(20,2)"))
    plan = executed_plan(make(wide, ["d9"]))
    assert "columnar=true" not in plan and "Sort [" in plan, plan


def test_aggregate_columns_by_a_decimal_key_sort_by_columns(spark, many, tmp_path, per_partition_aggregate):
    path = str(tmp_path / "dec")
    with_decimals(many).write.parquet(path)
    df = spark.read.parquet(path)

    def make():
        return df.keyBy("d9").fullWindowPartition().aggregate(
            F.count("*").alias("n"), F.sum("d18").alias("total"), F.max("d18").alias("hi"))

    (cplan, cols, _), (rplan, rows, _) = _both(spark, make)
    assert "FullWindowColumnarSort " in cplan and "Sort [" not in cplan, cplan
    assert "Sort [d9#" in rplan and _same(cols, rows) and len(cols) > 100
    assert sum(r[1] for r in cols) == ROWS


def test_aggregate_columns_by_a_string_key_sort_by_columns(spark, many, per_partition_aggregate):
    df = _with_string_keys(many)

    def make():
        return df.keyBy("sk").fullWindowPartition().aggregate(
            F.count("*").alias("n"), F.sum("v").alias("sv"), F.max("bk").alias("hi"))

    (cplan, cols, _), (rplan, rows, _) = _both(spark, make)
    assert "FullWindowColumnarSort " in cplan and "Sort [" not in cplan, cplan
    assert "Sort [sk#" in rplan and _same(cols, rows) and len(cols) == 501


def batch_string_bytes(key, batches):
    """Per batch (one key: a batch is never split): its rows and the bytes of its strings."""
    for b in batches:
        yield pa.RecordBatch.from_pydict(
            {"rows": [b.num_rows], "bytes": [pc.sum(pc.binary_length(b.column("s"))).as_py() or 0]},
            schema=pa.schema([("rows", pa.int64()), ("bytes", pa.int64())]))


def test_byte_limit_ends_batches(spark, one):
    # maxBytesPerBatch (4.0 on) ends a batch before maxRecordsPerBatch rows, as Spark's Arrow
    # writer does: with 1,000-byte strings and a 20,000-byte limit, about 20 rows a batch
    if spark.version < "4.0":
        pytest.skip("spark.sql.execution.arrow.maxBytesPerBatch is Spark 4.0's")
    df = one.withColumn("s", F.repeat(F.lit("x"), 1000))
    spark.conf.set("spark.sql.execution.arrow.maxBytesPerBatch", "20000")
    try:
        (cplan, cols, cdf), (_, rows, _) = _both(spark, lambda: df.keyBy("k").fullWindowPartition()
                                                  .mapPartitionInArrow(batch_string_bytes,
                                                                       "rows long, bytes long"))
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxBytesPerBatch")
    assert "columnar=true" in cplan, cplan
    assert sum(r[0] for r in cols) == sum(r[0] for r in rows) == ROWS
    # every batch ends once its data reach the limit: never more than a row past it
    assert all(1 <= r[0] <= 21 and r[1] < 21_000 for r in cols), cols
    assert max(r[0] for r in cols) >= 19, cols
    # Spark's own writer cuts the same place within a row or two (it counts validity bits)
    assert abs(max(r[0] for r in cols) - max(r[0] for r in rows)) <= 2, (cols[:3], rows[:3])


def batch_rows(key, batches):
    for b in batches:
        yield pa.RecordBatch.from_pydict({"rows": [b.num_rows]},
                                         schema=pa.schema([("rows", pa.int64())]))


def test_byte_limit_ends_batches_of_fixed_width_rows(spark, one):
    # 9 fixed-width columns (31 bytes of values a row) and a 1,000-byte limit: Spark's writer
    # ends a batch after about 30 rows, and the batches gathered column by column end alike
    if spark.version < "4.0":
        pytest.skip("spark.sql.execution.arrow.maxBytesPerBatch is Spark 4.0's")
    spark.conf.set("spark.sql.execution.arrow.maxBytesPerBatch", "1000")
    try:
        (cplan, cols, cdf), (_, rows, _) = _both(spark, lambda: one.keyBy("k").fullWindowPartition()
                                                  .mapPartitionInArrow(batch_rows, "rows long"))
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxBytesPerBatch")
    assert "columnar=true" in cplan, cplan
    assert sum(r[0] for r in cols) == sum(r[0] for r in rows) == ROWS
    assert 20 <= max(r[0] for r in cols) <= 40, cols[:5]
    assert abs(max(r[0] for r in cols) - max(r[0] for r in rows)) <= 4, (cols[:3], rows[:3])


def test_larger_than_memory_sorts_in_runs(spark, tmp_path_factory):
    # 600,000 rows of 9 columns in one partition (one task: the whole pool is its own): each
    # chunk of 65,536 rows reserves 6.8 MB, so the pool holds two, and sorted runs go to
    # disk and are merged
    df = _write(spark, str(tmp_path_factory.mktemp("keyed_columnar") / "big"), BIG_ROWS, 3000)
    make, node = FORMS["arrow"]
    spark.conf.set("spark.sql.shuffle.partitions", "1")
    try:
        (cplan, cols, cdf), (_, rows, _) = _both(spark, lambda: make(df))
    finally:
        spark.conf.unset("spark.sql.shuffle.partitions")
    assert "columnar=true" in cplan
    assert _same(cols, rows) and sum(r[1] for r in cols) == BIG_ROWS
    m = fullwindow.operator_metrics(cdf)
    assert m[f"{node}.columnarRuns"] >= 2 and m[f"{node}.spillSize"] > 0, m
    assert m[f"{node}.rowSortFallbacks"] == 0, m


def test_rows_too_wide_for_memory_fall_back_to_the_row_sorter(spark, tmp_path):
    # 40 long columns: one chunk of rows would need 23 MB, more than the whole pool
    path = str(tmp_path / "wide")
    spark.range(0, 50_000, 1, 2).select(
        (F.col("id") % 97).alias("k"), *[(F.col("id") + j).alias(f"v{j}") for j in range(39)],
    ).write.parquet(path)
    df = spark.read.parquet(path)

    def make():
        return df.keyBy("k").fullWindowPartition().mapPartitionInArrow(sum_v0, "k long, n long, s long")

    (cplan, cols, cdf), (_, rows, _) = _both(spark, make)
    assert "columnar=true" in cplan and _same(cols, rows) and len(cols) == 97
    m = fullwindow.operator_metrics(cdf)
    assert m["FullWindowKeyedMapPartitionInArrow.rowSortFallbacks"] >= 1, m


def sum_v0(key, batches):
    n = s = 0
    for b in batches:
        n += b.num_rows
        s += pc.sum(b.column("v0")).as_py() or 0
    yield pa.RecordBatch.from_pydict({"k": [key], "n": [n], "s": [s]})


def string_lengths(key, batches):
    n = s = 0
    for b in batches:
        n += b.num_rows
        s += pc.sum(pc.utf8_length(b.column("s"))).as_py() or 0
    yield pa.RecordBatch.from_pydict({"k": [key[0]], "n": [n], "s": [s]})


def test_string_rows_of_keys_too_wide_for_memory_fall_back_to_the_row_sorter(spark, tmp_path):
    # 40 long keys (the keys stay in column chunks: one chunk would need 23 MB, more than the
    # whole pool) and a string column: the Arrow batches are filled from the row sorter's rows
    path = str(tmp_path / "wide_keys")
    spark.range(0, 20_000, 1, 2).select(
        *[((F.col("id") % 97) + j).alias(f"k{j}") for j in range(40)],
        F.when(F.col("id") % 10 == 0, None).otherwise(
            F.concat(F.lit("ü"), F.col("id").cast("string"))).alias("s"),
    ).write.parquet(path)
    df = spark.read.parquet(path)

    def make():
        return df.keyBy(*[f"k{j}" for j in range(40)]).fullWindowPartition().mapPartitionInArrow(
            string_lengths, "k long, n long, s long")

    (cplan, cols, cdf), (_, rows, _) = _both(spark, make)
    assert "columnar=true" in cplan and _same(cols, rows) and len(cols) == 97
    assert sum(r[1] for r in cols) == 20_000 and sum(r[2] for r in cols) > 80_000
    m = fullwindow.operator_metrics(cdf)
    assert m["FullWindowKeyedMapPartitionInArrow.rowSortFallbacks"] >= 1, m


def per_key_sides(key, lefts, rights):
    ls = [tuple(r) for r in lefts]
    rs = [tuple(r) for r in rights]
    yield (key, len(ls), len(rs), _digest(ls + [None] + rs))


@pytest.mark.parametrize("left_rows", [250_000, 600_000])
def test_cogroup_sorts_both_sides_by_columns(spark, left_rows):
    # One partition, 3 long columns a side: a chunk of 65,536 rows reserves 3.7 MB of the
    # 17.5 MiB pool. The first side sorted holds its rows while the merge reads them (250,000:
    # all of them, in 4 chunks, leaving less than a chunk free; 600,000: its last ones, after
    # runs on disk); the other side's sort then needs memory, which makes the first write the
    # rows it has not handed over yet to disk (else the other side could not hold one chunk and
    # would fall back to the row sorter).
    left = spark.range(0, left_rows, 1, 2).select(
        (F.xxhash64("id") % 5000).alias("k"), F.col("id").alias("v"), (F.col("id") * 3).alias("w"))
    right = spark.range(0, 600_000, 1, 2).select(
        (F.xxhash64(F.col("id") + 7) % 5000).alias("k"), F.col("id").alias("v"),
        F.when(F.col("id") % 17 == 0, None).otherwise(F.col("id") * 5).alias("w"))

    _cogroup_in_one_partition(spark, left, right, left_rows, 600_000)


def _cogroup_in_one_partition(spark, left, right, left_rows, right_rows, key_type="long"):
    """Both sides' sorts on columns in one task, as the row sorts give, the first spilling."""
    def make():
        return left.keyBy("k").coGroup(right.keyBy("k")).window(EndOfStreamWindows.get()).apply(
            per_key_sides, f"k {key_type}, nl long, nr long, digest string")

    spark.conf.set("spark.sql.shuffle.partitions", "1")
    try:
        (cplan, cols, cdf), (rplan, rows, _) = _both(spark, make)
    finally:
        spark.conf.unset("spark.sql.shuffle.partitions")
    assert cplan.count("FullWindowColumnarSort ") == 2 and "Sort [" not in cplan, cplan
    assert rplan.count("Sort [k#") == 2, rplan
    assert _same(cols, rows) and len(cols) == 9999
    assert sum(r[1] for r in cols) == left_rows and sum(r[2] for r in cols) == right_rows
    m = fullwindow.operator_metrics(cdf)
    assert m["FullWindowColumnarSort.columnarRuns"] >= 1, m
    assert m["FullWindowColumnarSort.rowSortFallbacks"] == 0, m


def test_cogroup_sides_with_strings_sort_by_columns(spark):
    # One partition; the left side (140,000 rows: keys and record addresses in 3 chunks of
    # 3.1 MB, ~8 MB of records, UnsafeRows with a string each) holds its rows while the merge
    # reads them, and leaves the right side's sort less than a chunk and a page: the left writes
    # the rows it has not handed over yet to disk, strings included (when it cannot, the right
    # side falls back to the row sorter: checked by making spillRest return 0 with records)
    left = spark.range(0, 140_000, 1, 2).select(
        (F.xxhash64("id") % 5000).alias("k"), F.col("id").alias("v"),
        F.when(F.col("id") % 13 == 0, None).otherwise(
            F.concat(F.lit("ä"), F.col("id").cast("string"))).alias("s"))
    right = spark.range(0, 300_000, 1, 2).select(
        (F.xxhash64(F.col("id") + 7) % 5000).alias("k"), F.col("id").alias("v"),
        F.unhex(F.hex(F.col("id") * 3)).alias("b"))
    _cogroup_in_one_partition(spark, left, right, 140_000, 300_000)


def test_cogroup_by_a_string_key_sorts_both_sides_by_columns(spark):
    # string keys sharing a 9-byte prefix (their 8-byte words all tie: the bytes order them) on
    # both sides of a coGroup in one partition, the first side spilling on request as above
    def side(n, salt):
        h = F.xxhash64(F.col("id") + salt) % 5000
        return spark.range(0, n, 1, 2).select(
            F.format_string("customer-%d", h).alias("k"), F.col("id").alias("v"),
            F.when(F.col("id") % 13 == 0, None).otherwise(F.col("id") * 3).alias("w"))

    _cogroup_in_one_partition(spark, side(200_000, 0), side(300_000, 7), 200_000, 300_000,
                              key_type="string")
