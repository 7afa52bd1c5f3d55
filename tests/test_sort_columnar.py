"""The columnar sort of sortPartition (jvm .../execution/FullWindowColumnarSortExec.scala,
ColumnarSorter.scala): over columnar input (here the Parquet vectorized reader) whose columns are
all fixed-width primitives, each partition's batches are copied into columns and sorted by
(key word, row index) with Spark's RadixSort, then written out as rows.

Checked here: the plan and the metrics say it ran; each partition's rows and order equal
sortWithinPartitions' on the same input over every primitive type, direction and null ordering,
with NaN, -0.0, infinities and the extremes of each type, on one, two and three keys; equal keys
keep their input order; string and binary columns beside the keys (nulls, empty values, multi-byte
UTF-8, a value larger than the sorter's 1 MiB byte page) are sorted on columns too, every
fixed-width type and more than 64 columns beside them read back from the rows' UnsafeRow bytes,
and rows a consumer keeps (copies) keep their values; string and binary keys (values past the
8-byte prefix word, zero bytes, multi-byte UTF-8, with other keys) sort exactly and stably, a
collated string key keeps the row sort; the switch turns it off; a partition larger than the execution
memory is sorted in runs spilled to disk and merged, still exact and stable (with string and
binary columns and keys too, and under the keyed aggregate over the exchange's rows); and rows too wide for any run fall back to the row sorter, after runs
holding strings when that is where memory ran out."""
from __future__ import annotations

import datetime as dt
import decimal
import math
import random
import struct

import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import (BinaryType, BooleanType, ByteType, DateType, DecimalType,
                               DoubleType, FloatType, IntegerType, LongType, ShortType,
                               StringType, StructField, StructType, TimestampType)

import fullwindow
from conftest import SMALL_MEMORY, get_session
from fullwindow import Order
from helpers import executed_plan, partitions

KEY = "spark.fullwindow.sort.columnar.enabled"
LMIN, LMAX = -2**63, 2**63 - 1

SCHEMA = StructType([
    StructField("id", LongType(), False),
    StructField("b", BooleanType()),
    StructField("y", ByteType()),
    StructField("s", ShortType()),
    StructField("i", IntegerType()),
    StructField("l", LongType()),
    StructField("l2", LongType()),
    StructField("d", DateType()),
    StructField("ts", TimestampType()),
    StructField("dbl", DoubleType()),
    StructField("f", FloatType()),
])
KEYS = [f.name for f in SCHEMA.fields[1:]]
_RANGE = {"y": (-2**7, 2**7 - 1), "s": (-2**15, 2**15 - 1), "i": (-2**31, 2**31 - 1),
          "l": (LMIN, LMAX), "l2": (LMIN, LMAX)}
_SPECIAL = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1.0, -1.0, 5e-324, -5e-324,
            1.7976931348623157e308, -1.7976931348623157e308]


def _f32(x: float) -> float:
    if math.isfinite(x) and abs(x) > 3.4e38:
        x = math.copysign(math.inf, x)
    return struct.unpack("f", struct.pack("f", x))[0]


def _value(rnd: random.Random, col: str):
    if rnd.random() < 0.1:
        return None
    if col in _RANGE:
        lo, hi = _RANGE[col]
        r = rnd.random()
        if r < 0.1:
            return rnd.choice([lo, lo + 1, hi, hi - 1, -1, 0, 1])
        if r < 0.3:
            return rnd.randint(lo, hi)
        return rnd.randint(-5, 5)  # ties, so that the next key decides
    if col == "b":
        return rnd.random() < 0.5
    if col == "d":
        if rnd.random() < 0.05:
            return rnd.choice([dt.date(1, 1, 1), dt.date(9999, 12, 31)])
        return dt.date(2024, 1, 1) + dt.timedelta(days=rnd.randint(-5, 5))
    if col == "ts":
        if rnd.random() < 0.05:
            return rnd.choice([dt.datetime(1000, 1, 1), dt.datetime(9000, 12, 31, 23, 59, 59)])
        return dt.datetime(2024, 1, 1) + dt.timedelta(seconds=rnd.randint(-3, 3))
    r = rnd.random()
    v = rnd.choice(_SPECIAL) if r < 0.3 else float(rnd.randint(-3, 3)) if r < 0.6 \
        else rnd.gauss(0, 1) * 10 ** rnd.randint(-30, 30)
    return _f32(v) if col == "f" else v


def _rows(seed: int, nparts: int, per_part: int) -> list[list[tuple]]:
    rnd = random.Random(seed)
    parts, rid = [], 0
    for _ in range(nparts):
        rows = []
        for j in range(per_part):
            vals = {c: _value(rnd, c) for c in KEYS}
            if j < 3:  # every partition holds the full range of l and a null in it
                vals["l"] = [LMIN, LMAX, None][j]
            rows.append((rid, *[vals[c] for c in KEYS]))
            rid += 1
        parts.append(rows)
    return parts


def _parquet(spark, path, parts, schema=SCHEMA):
    """Writes one Parquet file per part (rows in order) and reads it back: a columnar scan."""
    sc = spark.sparkContext
    # ancient dates and timestamps as they are (3.5's default refuses to write them)
    for conf in ("datetimeRebaseModeInWrite", "datetimeRebaseModeInRead",
                 "int96RebaseModeInWrite", "int96RebaseModeInRead"):
        spark.conf.set(f"spark.sql.parquet.{conf}", "CORRECTED")
    rdd = sc.parallelize(range(len(parts)), len(parts)).flatMap(lambda i: parts[i])
    spark.createDataFrame(rdd, schema).write.mode("overwrite").parquet(path)
    return spark.read.parquet(path)


@pytest.fixture(scope="module")
def data(spark, tmp_path_factory):
    spark.conf.unset(KEY)
    return _parquet(spark, str(tmp_path_factory.mktemp("columnar") / "prim"),
                    _rows(seed=11, nparts=3, per_part=700))


def _canon(parts):
    # repr: NaN equals itself and -0.0 differs from 0.0, so the comparison is exact
    return [[repr(r) for r in p] for p in parts]


def _columns(spec, tie_break=True):
    cols = [getattr(F.col(c), how)() for c, how in spec]
    return cols + [F.col("id").asc()] if tie_break else cols


def _to_arrow(df) -> pa.Table:
    if hasattr(df, "toArrow"):
        return df.toArrow()
    from pyspark.sql.pandas.types import to_arrow_schema  # 3.5

    return pa.Table.from_batches(df._collect_as_arrow(), schema=to_arrow_schema(df.schema))


_PID = "__partition_id"


def arrow_run(df) -> tuple[list[pa.Table], object]:
    """The rows of each partition of ``df``, in order, as Arrow tables, and the DataFrame that
    ran to give them: ``df`` with each row's partition id as a last column (no Python worker),
    collected through Arrow by one job and cut where the id changes (``fullwindow.operator_metrics``
    of the DataFrame returned reads that run: ``df``'s own nodes, and only that run).
    ``helpers.partitions`` hands every row to a Python worker and back as a Row; at the hundreds
    of thousands of rows the tests across runs sort, that was most of this module's time. The
    ids come with the rows, not from a job of their own (which sorted every input once more),
    nor from a ``groupBy("p").count()``: in the small-memory session its hash map could find the
    pool taken by the other task's sort (UNABLE_TO_ACQUIRE_MEMORY, seen under load)."""
    import pyarrow.compute as pc

    ran = df.select("*", F.spark_partition_id().alias(_PID))
    table = _to_arrow(ran)
    ids = table.column(table.num_columns - 1)
    table = table.remove_column(table.num_columns - 1)
    counts = {c["values"].as_py(): c["counts"].as_py() for c in pc.value_counts(ids)}
    parts, at = [], 0
    for p in range(max(counts, default=-1) + 1):
        n = counts.get(p, 0)
        # the rows come partition by partition: the slice holds partition p's rows, all of them
        assert n == 0 or pc.all(pc.equal(ids.slice(at, n), p)).as_py(), (p, at, n)
        parts.append(table.slice(at, n))
        at += n
    assert at == table.num_rows, (counts, table.num_rows)
    return parts, ran


def arrow_partitions(df) -> list[pa.Table]:
    """``arrow_run(df)``'s partitions."""
    return arrow_run(df)[0]


def _exact(table: pa.Table) -> list[pa.Array]:
    """``table``'s columns to compare exactly, as ``_canon``'s repr does: floating-point values
    by their bits (-0.0 is not 0.0), every NaN alike, nulls apart from every value."""
    out = []
    for col in table.columns:
        arr = col.combine_chunks()
        if pa.types.is_floating(arr.type):
            values = arr.fill_null(0).to_numpy(zero_copy_only=False)
            bits = values.view(np.int64 if values.dtype == np.float64 else np.int32).copy()
            bits[np.isnan(values)] = -1  # a NaN's bits: no number has them
            arr = pa.array(bits, mask=np.asarray(arr.is_null()))
        out.append(arr)
    return out


def _first_difference(got: pa.Table, want: pa.Table) -> str:
    g, w = got.to_pylist(), want.to_pylist()
    at = next((i for i, (a, b) in enumerate(zip(g, w)) if repr(a) != repr(b)),
              min(len(g), len(w)))
    return f"row {at}: {g[at] if at < len(g) else None!r} against {w[at] if at < len(w) else None!r}"


def assert_like_native(df, spec, tie_break=True, columnar=True):
    cols = _columns(spec, tie_break)
    ours = df.fullWindowPartition().sortPartition(cols)
    assert ("columnar=true" in executed_plan(ours)) == columnar, executed_plan(ours)
    got, ran = arrow_run(ours)
    # the run compared is ours' sort (the partition ids are read above it)
    assert ("columnar=true" in executed_plan(ran)) == columnar, executed_plan(ran)
    want = arrow_partitions(df.sortWithinPartitions(*cols))
    assert [p.num_rows for p in got] == [p.num_rows for p in want]
    for i, (g, w) in enumerate(zip(got, want)):
        assert all(a.equals(b) for a, b in zip(_exact(g), _exact(w))), \
            f"partition {i} differs from sortWithinPartitions for {spec}: {_first_difference(g, w)}"
    return ran  # the DataFrame that ran ours' sort: its operator_metrics read that run


def test_plan_and_metrics_show_the_columnar_sort(data):
    out = data.fullWindowPartition().sortPartition("l")
    plan = executed_plan(out)
    assert "FullWindowSortPartition" in plan and "columnar=true" in plan, plan
    assert "ColumnarToRow" not in plan, plan
    out.collect()
    m = fullwindow.operator_metrics(out)
    parts = data.rdd.getNumPartitions()
    assert m["FullWindowSortPartition.columnarSorts"] == parts, m
    assert m["FullWindowSortPartition.rowSortFallbacks"] == 0, m
    assert m["FullWindowSortPartition.numOutputRows"] == data.count(), m
    assert m["FullWindowSortPartition.numInputBatches"] >= parts, m


@pytest.mark.parametrize("how", ["asc", "desc", "asc_nulls_last", "desc_nulls_first"])
@pytest.mark.parametrize("col", KEYS)
def test_one_key_like_native(data, col, how):
    assert_like_native(data, [(col, how)])


@pytest.mark.parametrize("spec", [
    [("l", "asc"), ("l2", "desc")],
    [("i", "desc_nulls_first"), ("dbl", "asc_nulls_last")],
    [("y", "asc"), ("s", "desc"), ("f", "asc")],
    [("b", "desc"), ("d", "asc_nulls_last"), ("ts", "desc_nulls_first")],
    [("dbl", "desc"), ("l", "asc_nulls_last")],  # a full-range key with nulls after a double
    [("l", "desc_nulls_first"), ("l2", "asc"), ("i", "desc")],
])
def test_several_keys_like_native(data, spec):
    assert_like_native(data, spec)


def test_equal_keys_keep_input_order(data):
    # no tie-break on id: rows of equal keys come out in the order the scan read them
    read = partitions(data)
    for spec in ([("b", "asc")], [("y", "desc"), ("b", "asc_nulls_last")], [("dbl", "asc")]):
        ours = data.fullWindowPartition().sortPartition(_columns(spec, tie_break=False))
        for part, before in zip(partitions(ours), read):
            position = {r[0]: i for i, r in enumerate(before)}
            by_key: dict = {}
            for r in part:
                key = tuple(repr(r[SCHEMA.fieldNames().index(c)]) for c, _ in spec)
                if key == ("0.0",) or key == ("-0.0",):
                    key = ("0",)  # -0.0 and 0.0 are equal keys
                by_key.setdefault(key, []).append(position[r[0]])
            assert len(by_key) > 1
            for positions in by_key.values():
                assert positions == sorted(positions), spec
    # (Spark's sorter is not stable with nulls: it swaps null-keyed records to the front as
    # they arrive, so the order of equal keys is not compared with sortWithinPartitions here)


def test_plain_order_arguments_and_one_row(spark, data, tmp_path):
    ours = data.fullWindowPartition().sortPartition([("i", Order.DESCENDING), ("id", Order.ASCENDING)])
    want = data.sortWithinPartitions(F.col("i").desc(), F.col("id").asc())
    assert "columnar=true" in executed_plan(ours)
    assert _canon(partitions(ours)) == _canon(partitions(want))
    one = _parquet(spark, str(tmp_path / "one"), [[(1, True, 1, 1, 1, 1, 1, None, None, 1.0, 1.0)]])
    assert_like_native(one, [("l", "desc")])
    same = _parquet(spark, str(tmp_path / "same"),
                    [[(i, None, 3, 3, 3, 7, 7, None, None, 2.0, 2.0) for i in range(50)]])
    assert_like_native(same, [("l", "asc"), ("dbl", "desc")], tie_break=False)


def _bytes_columns(big_id: int, width: int = 40):
    """A string column (nulls, empty strings, multi-byte UTF-8, up to `width` + 12 characters, and
    at `big_id` a value of 1.4 MB, over the sorter's 1 MiB byte page) and a binary column (nulls,
    empty values, zero bytes)."""
    big = F.concat(F.expr("repeat('\u00fc', 700000)"), F.col("id").cast("string"))
    s = (F.when(F.col("id") % 11 == 0, None).when(F.col("id") % 7 == 0, F.lit(""))
         .when(F.col("id") == big_id, big)
         .otherwise(F.concat(F.lit("\u00e9\u65e5"),
                             F.expr(f"repeat('x', cast(id % {width} as int))"),
                             F.col("id").cast("string"))))
    b = (F.when(F.col("id") % 13 == 0, None)
         .when(F.col("id") % 5 == 0, F.expr("cast('' as binary)"))
         .otherwise(F.unhex(F.format_string("00%08xff00", F.col("id")))))
    return [s.alias("str"), b.alias("bin")]


def test_string_and_binary_columns_sort_on_columns(spark, data, tmp_path):
    path = str(tmp_path / "str")
    data.select("id", (F.col("id") % 7).alias("m"), F.xxhash64("id").alias("k"), "l", "i",
                *_bytes_columns(big_id=5), "dbl").write.parquet(path)
    df = spark.read.parquet(path)
    # keys or other fixed-width columns with nulls: the output gathers by row index
    for spec in ([("l", "asc")], [("i", "desc_nulls_first"), ("dbl", "asc")]):
        assert_like_native(df, spec)
    # keys without nulls in one word, other columns without nulls but strings: the sort array
    # carries each row's record (no ties left, so the order is exact without a tie-break)
    narrow = df.select("id", "m", "k", "str", "bin")
    assert_like_native(narrow, [("k", "desc")], tie_break=False)
    ours = assert_like_native(narrow, [("m", "asc"), ("id", "desc")], tie_break=False)
    m = fullwindow.operator_metrics(ours)
    assert m["FullWindowSortPartition.columnarSorts"] == df.rdd.getNumPartitions(), m
    assert m["FullWindowSortPartition.rowSortFallbacks"] == 0, m
    # string and binary keys sort on columns too (test_string_and_binary_keys_like_native)
    assert_like_native(df, [("str", "desc")])


STR_SCHEMA = StructType([
    StructField("id", LongType(), False),
    StructField("short", StringType()),   # at most 8 bytes: the prefix word is the value
    StructField("long", StringType()),    # 9 to 45 bytes sharing prefixes of 9 to 33 bytes
    StructField("few", StringType()),     # 5 long values: runs of equal keys
    StructField("bin", BinaryType()),     # zero bytes inside and at the end
    StructField("l", LongType()),         # full range with nulls: words in two packs
])
_PAD = ["", "a", "ab", "ab\x00", "ab\x00\x00", "\x00", "\u00e9", "\u00e9\u65e5", "\uffff",
        "\U0001f600", "zzzzzzzz", "zzzzzzzzz", "zzzzzzz\x00"]


def _str_value(rnd: random.Random, col: str, rid: int):
    if rnd.random() < 0.08:
        return None
    if col == "short":
        return rnd.choice(_PAD) if rnd.random() < 0.4 else "".join(
            rnd.choice("aAbz\u00e9") for _ in range(rnd.randint(0, 8 - 2)))
    if col == "long":
        r = rnd.random()
        if r < 0.2:
            return rnd.choice(_PAD) + "x" * rnd.randint(0, 9)
        stem = rnd.choice(["customer-", "customer_", "customer-\u00e9", "custome",
                           "https://example.com/\u00e9/items/"])  # ties past 3 words
        return stem + str(rnd.randint(0, 10 ** rnd.randint(0, 12))) + "\x00" * rnd.randint(0, 1)
    if col == "few":
        return rnd.choice(["region-north-00", "region-north-001", "region-north-0",
                           "region-south", "r\u00e9gion-est-00000000"])
    if col == "bin":
        return bytes(rnd.choice([0, 1, 255, 0x61]) for _ in range(rnd.randint(0, 12)))
    r = rnd.random()
    return rnd.choice([LMIN, LMAX, 0]) if r < 0.1 else rnd.randint(-3, 3)


@pytest.fixture(scope="module")
def str_keys(spark, tmp_path_factory):
    rnd = random.Random(7)
    cols = STR_SCHEMA.fieldNames()[1:]
    parts = [[(p * 2000 + j, *[_str_value(rnd, c, j) for c in cols]) for j in range(2000)]
             for p in range(3)]
    return _parquet(spark, str(tmp_path_factory.mktemp("columnar") / "strkeys"), parts, STR_SCHEMA)


@pytest.mark.parametrize("spec", [
    [("short", "asc")], [("short", "desc_nulls_first")],
    [("long", "asc")], [("long", "desc")], [("long", "asc_nulls_last")],
    [("bin", "asc")], [("bin", "desc_nulls_first")],
    [("few", "desc"), ("long", "asc")],          # two string keys, ties on the first
    [("l", "asc_nulls_last"), ("long", "desc")],  # after a long key: the words in two packs
    [("long", "desc"), ("l", "asc")],
    [("few", "asc"), ("bin", "desc"), ("short", "asc_nulls_last")],
])
def test_string_and_binary_keys_like_native(str_keys, spec):
    # the prefix word (a value's first 8 bytes) sorts, rows whose words tie but whose values differ
    # past them (longer values, values ending in zero bytes) are sorted by their bytes: the order
    # is exactly sortWithinPartitions' (binary order of UTF-8, unsigned bytes)
    ours = assert_like_native(str_keys, spec)
    m = fullwindow.operator_metrics(ours)
    assert m["FullWindowSortPartition.columnarSorts"] == str_keys.rdd.getNumPartitions(), m


def test_equal_string_keys_keep_input_order(str_keys):
    # rows of equal long keys are sorted by their bytes among rows whose prefixes tie, stably
    read = partitions(str_keys)
    for spec in ([("few", "asc")], [("few", "desc"), ("short", "asc")]):
        ours = str_keys.fullWindowPartition().sortPartition(_columns(spec, tie_break=False))
        assert "columnar=true" in executed_plan(ours)
        for part, before in zip(partitions(ours), read):
            position = {r[0]: i for i, r in enumerate(before)}
            by_key: dict = {}
            keys = [tuple(r[STR_SCHEMA.fieldNames().index(c)] for c, _ in spec) for r in part]
            for key, r in zip(keys, part):
                by_key.setdefault(key, []).append(position[r[0]])
            assert len(by_key) > 4
            for positions in by_key.values():
                assert positions == sorted(positions), spec


@pytest.mark.skipif(not hasattr(F, "collate"), reason="this Spark line has no collations")
def test_collated_string_key_keeps_the_row_sort(spark, tmp_path):
    # a collation that does not order by bytes (UTF8_LCASE: 'B' between 'a' and 'c') keeps
    # Spark's sorter, which orders by the collation
    path = str(tmp_path / "lcase")
    spark.createDataFrame([(i, s) for i, s in enumerate(["c", "B", "a", "A", "b", "C"])],
                          "id long, s string").select(
        "id", F.collate("s", "UTF8_LCASE").alias("s")).coalesce(1).write.parquet(path)
    df = spark.read.parquet(path)
    assert "UTF8_LCASE" in df.schema["s"].dataType.simpleString().upper()
    ours = assert_like_native(df, [("s", "asc")], columnar=False)
    assert [r.s.lower() for r in ours.collect()] == ["a", "a", "b", "b", "c", "c"]


def test_every_column_type_beside_strings(spark, data, tmp_path):
    # with a string or binary column each row is held as an UnsafeRow's bytes (every column, the
    # keys too) and output points a row at them: every fixed-width type with its nulls, NaN,
    # -0.0 and extremes is read back from those bytes; one pack of words (the sort array holds
    # record addresses from the start) and several (the addresses put in after the sort)
    path = str(tmp_path / "all")
    data.select("*", *_bytes_columns(big_id=9)).write.parquet(path)
    df = spark.read.parquet(path)
    for spec in ([("y", "asc")], [("l", "desc_nulls_first")], [("f", "asc"), ("b", "desc")],
                 [("ts", "desc"), ("s", "asc_nulls_last"), ("dbl", "desc")]):
        assert_like_native(df, spec)


DEC_SCHEMA = StructType([
    StructField("id", LongType(), False),
    StructField("d9", DecimalType(9, 2)),    # Spark's vectors hold it as an int
    StructField("d18", DecimalType(18, 4)),  # as a long
    StructField("l", LongType()),
    StructField("wide", DecimalType(20, 2)),  # past a long: the row sorter's
])


def _decimal(rnd: random.Random, digits: int, scale: int):
    if rnd.random() < 0.1:
        return None
    top = 10 ** digits - 1
    r = rnd.random()
    unscaled = (rnd.choice([-top, -top + 1, top, top - 1, -1, 0, 1]) if r < 0.1
                else rnd.randint(-top, top) if r < 0.4 else rnd.randint(-5, 5))
    return decimal.Decimal(unscaled).scaleb(-scale)


@pytest.fixture(scope="module")
def decimals(spark, tmp_path_factory):
    rnd = random.Random(5)
    parts = [[(p * 1000 + j, _decimal(rnd, 9, 2), _decimal(rnd, 18, 4), rnd.randint(-3, 3),
               _decimal(rnd, 20, 2)) for j in range(700)] for p in range(3)]
    df = _parquet(spark, str(tmp_path_factory.mktemp("columnar") / "dec"), parts, DEC_SCHEMA)
    path = str(tmp_path_factory.mktemp("columnar") / "dec_str")
    df.select("*", *_bytes_columns(big_id=9)).write.parquet(path)
    return df, spark.read.parquet(path)


@pytest.mark.parametrize("strings", [False, True])
@pytest.mark.parametrize("spec", [
    [("d9", "asc")],
    [("d18", "desc_nulls_first")],
    [("d9", "desc"), ("d18", "asc_nulls_last")],
    [("l", "asc"), ("d18", "desc")],
])
def test_decimal_columns_sort_on_columns(decimals, spec, strings):
    # decimals of up to 18 digits are held as their unscaled longs, as keys and beside them (in
    # the chunks, or in each row's record when there are strings): every order, nulls, ties and
    # each type's extremes come out as sortWithinPartitions gives them
    plain, with_strings = decimals
    df = (with_strings if strings else plain).drop("wide")
    assert_like_native(df, spec)
    # equal keys keep their input order. Spark's own sort does not keep it for decimal keys, so
    # the expected order is the input's, sorted stably in Python key by key (the last first)
    names = df.columns
    want = []
    for part in partitions(df):
        for col, how in reversed(spec):
            at, desc, nulls_first = names.index(col), how.startswith("desc"), how.endswith("first")
            nulls_first = nulls_first or how == "asc"
            # a null's key sorts before every value's under (reverse=desc) when nulls come first
            null_key, value_tag = ((0,), 1) if nulls_first != desc else ((1,), 0)
            part = sorted(part, key=lambda r: null_key if r[at] is None else (value_tag, r[at]),
                          reverse=desc)
        want.append(part)
    got = partitions(df.fullWindowPartition().sortPartition(_columns(spec, tie_break=False)))
    assert _canon(got) == _canon(want)


def test_orc_input_sorts_on_columns(spark, decimals, tmp_path):
    # the ORC vectorized reader's vectors are ORC's own (not Spark's writable ones): decimals are
    # read through getDecimal, the rest as from any vector
    plain, with_strings = decimals
    path = str(tmp_path / "orc")
    with_strings.drop("wide").write.orc(path)
    df = spark.read.orc(path)
    for spec in ([("d9", "desc")], [("d18", "asc_nulls_last"), ("l", "desc")], [("str", "asc")]):
        assert_like_native(df, spec)


def test_wide_decimal_keeps_the_row_sort(decimals):
    # a decimal of more than 18 digits is no long: a column of one keeps Spark's sorter
    plain, _ = decimals
    assert_like_native(plain, [("d18", "asc")], columnar=False)
    assert_like_native(plain.drop("wide"), [("d18", "asc")])


def test_more_than_64_columns_beside_strings(spark, tmp_path):
    # 70 columns: the rows' null bits take two words, with nulls in columns past the 64th (the
    # key among them)
    path = str(tmp_path / "cols70")
    h = F.xxhash64("id")
    cols = [F.col("id"), (h % 1000).alias("k")]
    for j in range(68):
        null = (F.col("id") + j) % (5 + j % 4) == 0
        value = (F.concat(F.lit("\u00e9"), F.expr(f"repeat('z', cast((id + {j}) % 20 as int))"))
                 if j % 3 == 0 else (h % (100 + j)) if j % 3 == 1 else (F.col("id") / (j + 1)))
        cols.append(F.when(null, None).otherwise(value).alias(f"c{j}"))
    spark.range(0, 6000, 1, 2).select(*cols).write.parquet(path)
    df = spark.read.parquet(path)
    assert_like_native(df, [("k", "desc")])
    assert_like_native(df, [("c67", "asc_nulls_first")])
    assert_like_native(df, [("c64", "desc_nulls_last"), ("c1", "asc")])


def test_rows_kept_by_the_consumer(spark, data, tmp_path):
    # a sorted row points into the sorter's pages: a consumer that keeps rows copies them
    # (Spark's contract), and each copy keeps its own row's values: a top-k over the sorted
    # rows (TakeOrderedAndProject keeps copies) and a cached sorted DataFrame
    path = str(tmp_path / "kept")
    data.select("id", F.xxhash64("id").alias("k"), "i", *_bytes_columns(big_id=17)).write.parquet(path)
    df = spark.read.parquet(path)
    ours = df.fullWindowPartition().sortPartition([F.col("k").desc()])
    order = [F.col("str").desc_nulls_last(), F.col("id")]
    top = ours.orderBy(*order).limit(25)
    assert "columnar=true" in executed_plan(top)
    assert _canon([top.collect()]) == _canon([df.orderBy(*order).limit(25).collect()])
    cached = ours.cache()
    try:
        assert cached.count() == df.count()
        assert _canon(partitions(cached)) == _canon(partitions(df.sortWithinPartitions(F.col("k").desc())))
    finally:
        cached.unpersist()


def test_switch_turns_it_off(spark, data):
    spark.conf.set(KEY, "false")
    try:
        assert_like_native(data, [("l", "desc"), ("dbl", "asc")], columnar=False)
        spark.conf.set(KEY, "maybe")
        with pytest.raises(Exception, match=KEY):
            executed_plan(data.fullWindowPartition().sortPartition("l"))
    finally:
        spark.conf.unset(KEY)
    assert_like_native(data, [("l", "desc"), ("dbl", "asc")])


@pytest.fixture(scope="module")
def narrow(spark, tmp_path_factory):
    """Narrow inputs with integral keys and no nulls: at most one column beside the keys, so the
    sort carries that column's value in the sort array and decodes the keys from their words."""
    path = str(tmp_path_factory.mktemp("columnar_narrow") / "narrow")
    h = F.xxhash64("id")
    spark.range(0, 30_000, 1, 3).select(
        F.when(F.col("id") == 5, F.lit(LMIN)).when(F.col("id") == 6, F.lit(LMAX))
        .otherwise(h).alias("k"),
        F.col("id").alias("v"),
        (h % 100).cast("int").alias("i"),
        (F.abs(h) % 7).cast("short").alias("s"),
        (h % 2 == 0).alias("b"),
        F.date_add(F.lit("2024-01-01").cast("date"), (h % 30).cast("int")).alias("d"),
        F.timestamp_seconds(F.abs(h) % 100000).alias("ts"),
        (F.col("id") / 3.0).alias("x"),
        F.lit(42).alias("c"),
    ).write.parquet(path)
    return spark.read.parquet(path)


@pytest.mark.parametrize("columns, spec", [
    (["k", "v"], [("k", "asc")]),
    (["k", "v"], [("k", "desc")]),
    (["v", "i", "s"], [("i", "desc"), ("s", "asc")]),
    (["b", "d"], [("b", "asc"), ("d", "desc")]),
    (["v", "c"], [("c", "asc")]),
    (["ts", "x"], [("ts", "desc")]),
    (["k", "v", "i"], [("i", "asc"), ("k", "desc")]),  # two packs: no carry
])
def test_narrow_inputs_like_native(narrow, columns, spec):
    # no nulls and no tie-break: both sorts are stable here, so the order is exact (columns in
    # the file's order: a reordering projection over the scan keeps the row sort)
    assert_like_native(narrow.select(*columns), spec, tie_break=False)


# A pool of (2 GiB heap - 300 MiB) x 0.01 = 17.5 MiB, shared by the 2 tasks of a stage.
RUN_ROWS = 600_000


@pytest.fixture(scope="module")
def small_memory(tmp_path_factory):
    spark = get_session(SMALL_MEMORY)
    path = str(tmp_path_factory.mktemp("columnar_runs") / "runs")
    h = F.xxhash64("id")
    spark.range(0, RUN_ROWS, 1, 2).select(
        "id",
        F.when(F.col("id") % 17 == 0, None).otherwise(h).alias("l"),  # full range, nulls
        F.when(F.col("id") % 13 == 0, None).otherwise((h % 50).cast("int")).alias("i"),
        F.when(F.col("id") % 19 == 0, None).when(F.col("id") % 11 == 0, F.lit(float("nan")))
        .when(F.col("id") % 7 == 0, F.lit(-0.0)).otherwise((h % 100) / 7.0).alias("dbl"),
        (h % 2 == 0).alias("b"),
    ).write.parquet(path)
    return spark, spark.read.parquet(path)


@pytest.mark.parametrize("spec", [
    [("l", "desc_nulls_first")],
    [("i", "asc"), ("dbl", "desc")],
    [("b", "asc_nulls_last"), ("dbl", "asc"), ("i", "desc")],
])
def test_partition_larger_than_memory_sorts_in_runs(small_memory, spec):
    # each chunk of 65,536 rows reserves 4.7 MB (5 longs and the sort array's 32 bytes a row):
    # 300,000 rows a partition do not fit a task's share, so sorted runs go to disk and are
    # merged; the result is still exactly sortWithinPartitions'
    _, df = small_memory
    ours = assert_like_native(df, spec)
    m = fullwindow.operator_metrics(ours)
    assert m["FullWindowSortPartition.columnarRuns"] >= 2, m
    assert m["FullWindowSortPartition.rowSortFallbacks"] == 0, m
    assert m["FullWindowSortPartition.spillSize"] > 0, m
    assert m["FullWindowSortPartition.numOutputRows"] == RUN_ROWS, m


def test_string_columns_across_runs(small_memory, tmp_path):
    # 100,000 rows a partition of two longs, a string (about 170 bytes on average) and a binary
    # column: over 20 MB a partition, more than the whole pool, so runs on disk carry the strings
    # (and the 1.4 MB value, a block of its own) even when a task runs alone (with its stage's
    # other task done or not yet started, a task may take the whole pool), merged exactly as
    # sortWithinPartitions sorts
    spark, _ = small_memory
    path = str(tmp_path / "str_runs")
    spark.range(0, 200_000, 1, 2).select(
        "id", F.xxhash64("id").alias("k"),
        *_bytes_columns(big_id=70_001, width=320)).write.parquet(path)
    # (k: no ties, so the order is exact without a tie-break)
    ours = assert_like_native(spark.read.parquet(path), [("k", "desc")], tie_break=False)
    m = fullwindow.operator_metrics(ours)
    assert m["FullWindowSortPartition.columnarRuns"] >= 2, m
    assert m["FullWindowSortPartition.rowSortFallbacks"] == 0, m


def test_keyed_aggregate_of_strings_across_runs(small_memory, tmp_path):
    # rows from the exchange (UnsafeRows: their bytes become the records as they are) with
    # string and binary columns, more than memory holds in one task: runs on disk carry the
    # records and are merged under the keyed aggregate; aggregates that keep strings and
    # binaries (max, collect_list) equal the row sort's
    spark, _ = small_memory
    path = str(tmp_path / "agg_str")
    spark.range(0, 200_000, 1, 2).select(
        "id", (F.xxhash64("id") % 3000).alias("k"), *_bytes_columns(big_id=70_001)).write.parquet(path)
    df = spark.read.parquet(path)
    got = []
    partitions_before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "1")
    spark.conf.set("spark.fullwindow.combine.enabled", "false")  # every record sorted per key
    try:
        for on in ("true", "false"):
            spark.conf.set(KEY, on)
            out = df.keyBy("k").fullWindowPartition().aggregate(
                F.count("*").alias("n"), F.max("str").alias("hi"),
                F.sort_array(F.collect_list("bin")).alias("bins"),
                F.sum(F.length("str")).alias("chars"))
            got.append(sorted((repr(tuple(r)) for r in out.collect())))
            plan = executed_plan(out)  # after the action: adaptive execution's final plan
            assert ("FullWindowColumnarSort " in plan) == (on == "true"), plan
            if on == "true":
                m = fullwindow.operator_metrics(out)
                assert m["FullWindowColumnarSort.columnarRuns"] >= 1, m
                assert m["FullWindowColumnarSort.rowSortFallbacks"] == 0, m
    finally:
        spark.conf.unset(KEY)
        spark.conf.unset("spark.fullwindow.combine.enabled")
        spark.conf.set("spark.sql.shuffle.partitions", partitions_before)
    assert len(got[0]) > 5900 and got[0] == got[1]


def test_string_keys_across_runs(small_memory, tmp_path):
    # 200,000 rows a partition keyed by strings sharing a 9-byte prefix (their words tie, their
    # bytes decide), more than a task's share: runs on disk merged by the keys' bytes
    spark, _ = small_memory
    path = str(tmp_path / "str_key_runs")
    spark.range(0, 400_000, 1, 2).select(
        "id",
        F.when(F.col("id") % 23 == 0, None)
        .otherwise(F.format_string("customer-%d", F.abs(F.xxhash64("id")) % 100_000)).alias("s"),
        (F.col("id") % 5).alias("m"),
    ).write.parquet(path)
    df = spark.read.parquet(path)
    for spec in ([("s", "desc")], [("m", "asc"), ("s", "asc_nulls_last")]):
        ours = assert_like_native(df, spec)
        m = fullwindow.operator_metrics(ours)
        assert m["FullWindowSortPartition.columnarRuns"] >= 2, m
        assert m["FullWindowSortPartition.rowSortFallbacks"] == 0, m


def test_decimal_keys_across_runs(small_memory, tmp_path):
    # decimal keys past a task's share: runs on disk (their unscaled longs) merged
    spark, _ = small_memory
    path = str(tmp_path / "dec_runs")
    h = F.xxhash64("id")
    spark.range(0, 300_000, 1, 2).select(
        "id",
        F.when(F.col("id") % 19 == 0, None).otherwise((h % 100_000 / 100).cast("decimal(9,2)")).alias("d9"),
        (h % 10 ** 13 / 10_000).cast("decimal(18,4)").alias("d18"),
    ).write.parquet(path)
    df = spark.read.parquet(path)
    for spec in ([("d18", "desc")], [("d9", "asc_nulls_last")]):
        ours = assert_like_native(df, spec)
        m = fullwindow.operator_metrics(ours)
        assert m["FullWindowSortPartition.columnarRuns"] >= 2, m
        assert m["FullWindowSortPartition.rowSortFallbacks"] == 0, m


def test_equal_keys_keep_input_order_across_runs(small_memory):
    _, df = small_memory
    read = arrow_partitions(df)
    ours = df.fullWindowPartition().sortPartition([("i", Order.ASCENDING)])
    got, ours = arrow_run(ours)
    assert [p.num_rows for p in got] == [p.num_rows for p in read]
    for part, before in zip(got, read):
        position = {r: i for i, r in enumerate(before.column("id").to_pylist())}
        by_key: dict = {}
        for rid, key in zip(part.column("id").to_pylist(), part.column("i").to_pylist()):
            by_key.setdefault(key, []).append(position[rid])
        assert len(by_key) > 50
        for positions in by_key.values():
            assert positions == sorted(positions)
    assert fullwindow.operator_metrics(ours)["FullWindowSortPartition.columnarRuns"] >= 2


FALLBACK_ROWS = 100_000


def test_rows_too_wide_for_memory_fall_back_to_the_row_sorter(small_memory, tmp_path):
    # 40 long columns: one chunk of rows would need 23 MB, more than the whole pool, so the
    # partition goes to the row sorter (which spills as sortWithinPartitions does)
    spark, _ = small_memory
    path = str(tmp_path / "wide")
    spark.range(0, FALLBACK_ROWS, 1, 2).select(
        ((F.col("id") * 2654435761) % 1000003).alias("k"),
        *[(F.col("id") + j).alias(f"v{j}") for j in range(39)],
    ).write.parquet(path)
    df = spark.read.parquet(path)
    ours = df.fullWindowPartition().sortPartition([("k", Order.DESCENDING)])
    assert "columnar=true" in executed_plan(ours)
    got, ours = arrow_run(ours)
    assert "columnar=true" in executed_plan(ours)
    assert sum(p.num_rows for p in got) == FALLBACK_ROWS
    for p in got:
        keys = p.column("k").to_pylist()
        assert keys == sorted(keys, reverse=True)
    assert sorted(v for p in got for v in p.column("v0").to_pylist()) == list(range(FALLBACK_ROWS))
    m = fullwindow.operator_metrics(ours)
    assert m["FullWindowSortPartition.rowSortFallbacks"] >= 1, m
    assert m["FullWindowSortPartition.numOutputRows"] == FALLBACK_ROWS, m


def test_fallback_after_runs_holding_strings(small_memory, tmp_path):
    # one partition (the task may take the whole 17.5 MiB pool): 60,000 rows of short strings,
    # then 8 rows of 3 MB strings in one batch; that batch's 24 MB of records is refused, the
    # rows held go to disk as a run, and it is refused again with nothing held: the row sorter
    # gets the run back (its strings read from disk) and the rest, still exactly sorted
    spark, _ = small_memory
    path = str(tmp_path / "fallback_str")
    big = (F.col("id") >= 50_000) & (F.col("id") < 50_008)
    spark.range(0, 60_000, 1, 1).select(
        "id", F.xxhash64("id").alias("k"),
        F.when(big, F.concat(F.expr("repeat('y', 3000000)"), F.col("id").cast("string")))
        .when(F.col("id") % 9 == 0, None)
        .otherwise(F.format_string("\u00e9%d", "id")).alias("str"),
    ).write.parquet(path)
    ours = assert_like_native(spark.read.parquet(path), [("k", "desc")])
    m = fullwindow.operator_metrics(ours)
    assert m["FullWindowSortPartition.rowSortFallbacks"] == 1, m
    assert m["FullWindowSortPartition.columnarRuns"] >= 1, m
    assert m["FullWindowSortPartition.numOutputRows"] == 60_000, m
