"""The pandas forms on real Spark: non-keyed and keyed ``mapPartitionInPandas``, the
``window(EndOfStreamWindows.get()).applyInPandas`` spelling, and coGroup's ``applyInPandas``:
results against pyspark's own pandas APIs, frame dtypes as pyspark converts them, the streaming
bound (a key's records in Arrow-batch-sized frames, never the whole key), plans, errors, and
recovery of a pandas operation by its fingerprint."""
from __future__ import annotations

import datetime
import decimal
import json
import os
import re
import warnings

import pandas as pd
import pytest
from pyspark.errors import PythonException
from pyspark.sql import functions as F

import fullwindow  # noqa: F401  (adds DataFrame.fullWindowPartition / keyBy)
from fullwindow import EndOfStreamWindows, FullWindowTypeError, FullWindowValueError
from helpers import executed_plan, fast_jvm, num_partitions, partitions, run_python

EOS = EndOfStreamWindows.get()


@pytest.fixture(scope="module")
def df(spark):
    # 40 records over 4 partitions; k = id % 5
    return spark.range(0, 40, 1, 4).select(
        (F.col("id") % 5).alias("k"), F.col("id").alias("v"),
        F.concat(F.lit("s"), F.col("id").cast("string")).alias("name"))


@pytest.fixture()
def small_batches(spark):
    """Arrow batches of 3 records: keys span batches and batches hold several keys."""
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    spark.conf.set(key, "3")
    yield 3
    spark.conf.unset(key)


def rss() -> int:
    """The resident memory of this (worker) process, in bytes."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096


def rows(out) -> list[tuple]:
    return sorted(tuple(r) for r in out.collect())


# ---- non-keyed --------------------------------------------------------------------------------

def test_non_keyed_once_per_partition_including_empty(spark):
    src = spark.range(0, 12, 1, 4).where("id < 6")  # 4 partitions of 3, the last two empty

    def count(frames):
        frames = list(frames)
        assert all(isinstance(f, pd.DataFrame) for f in frames)
        yield pd.DataFrame({"frames": [len(frames)], "n": [sum(len(f) for f in frames)]})

    out = src.fullWindowPartition().mapPartitionInPandas(count, "frames long, n long")
    assert num_partitions(out) == 4
    assert sorted(tuple(r) for r in out.collect()) == [(0, 0), (0, 0), (1, 3), (1, 3)]


def test_non_keyed_frames_are_arrow_batch_sized_and_results_match_map_in_pandas(df, small_batches):
    def f(frames):
        for pdf in frames:
            assert len(pdf) <= 3 and list(pdf.columns) == ["k", "v", "name"]
            assert list(pdf.index) == list(range(len(pdf)))
            out = pdf[pdf.v % 2 == 0].copy()
            out["w"] = out.v * 10
            yield out[["w", "name"]]  # by name, in another order than the schema's

    ours = df.fullWindowPartition().mapPartitionInPandas(f, "name string, w long")
    native = df.mapInPandas(f, "name string, w long")
    assert rows(ours) == rows(native) and len(rows(ours)) == 20
    # the partitioning and the order within each partition are kept
    assert partitions(ours) == partitions(native)


def test_non_keyed_plan(df):
    out = df.fullWindowPartition().mapPartitionInPandas(lambda it: it, "k long, v long, name string")
    out.collect()
    plan = executed_plan(out)
    assert "FullWindowMapPartitionInPandas" in plan and "Exchange" not in plan, plan
    m = fullwindow.operator_metrics(out)
    assert m["FullWindowMapPartitionInPandas.numInputRows"] == 40
    assert m["FullWindowMapPartitionInPandas.numOutputRows"] == 40


# every column type a frame can hold, with and without nulls: the plain numbers, booleans and
# binary columns are taken from pyarrow directly, the others converted by pyspark; both must
# give what applyInPandas gives
ALL_TYPES = ("i long, n int, d double, s string, dec decimal(10,2), ts timestamp, dt date, "
             "arr array<int>, st struct<x:int>, b boolean, by tinyint, sh smallint, f float, "
             "bin binary, nb tinyint, ns smallint, nl long, nf float, nbin binary, bb boolean, "
             "ntz timestamp_ntz, m map<string,int>")
ALL_TYPES_ROWS = [
    (1, None, 1.5, "a", decimal.Decimal("1.25"), datetime.datetime(2024, 1, 2, 3, 4, 5),
     datetime.date(2024, 1, 2), [1, 2], {"x": 1}, True, 3, 300, 2.5, b"xy", None, None, None,
     None, None, False, datetime.datetime(2024, 1, 2, 3, 4, 5), {"a": 1}),
    (2, 7, None, None, None, None, None, None, None, None, -4, -400, -0.25, b"", 5, 6, 7, 1.0,
     b"z", True, None, None),
    (3, 8, float("nan"), "c", decimal.Decimal("-3.50"), datetime.datetime(1999, 12, 31),
     datetime.date(1999, 12, 31), [], {"x": None}, False, 0, 0, float("inf"), b"\x00",
     1, 2, 3, 4.0, b"w", None, datetime.datetime(1999, 12, 31), {}),
]


@pytest.mark.parametrize("prefer_int_ext", ["false", "true"])
def test_frames_have_the_dtypes_and_values_pyspark_gives(spark, prefer_int_ext):
    src = spark.createDataFrame(ALL_TYPES_ROWS, ALL_TYPES)

    def describe(pdf):
        return pd.DataFrame({"col": list(pdf.columns),
                             "dtype": [str(t) for t in pdf.dtypes],
                             "values": [json.dumps(pdf[c].tolist(), default=repr) for c in pdf.columns],
                             "types": [json.dumps([type(v).__name__ for v in pdf[c]])
                                       for c in pdf.columns]})

    schema = "col string, dtype string, values string, types string"
    key = "spark.sql.execution.pythonUDF.pandas.preferIntExtensionDtype"
    spark.conf.set(key, prefer_int_ext)
    try:
        # as groupBy().applyInPandas converts them (e.g. a nullable int column is float64 with
        # NaN, or Int32 with preferIntExtensionDtype)
        with_g = src.withColumn("g", F.lit(1))
        native = rows(with_g.groupBy("g").applyInPandas(lambda p: describe(p.drop(columns="g")),
                                                          schema))
        ours = src.coalesce(1).fullWindowPartition().mapPartitionInPandas(
            lambda frames: map(describe, frames), schema)
        keyed = with_g.keyBy("g").fullWindowPartition().mapPartitionInPandas(
            lambda key, frames: (describe(f.drop(columns="g")) for f in frames), schema)
        ours_rows, keyed_rows = rows(ours), rows(keyed)
    finally:
        spark.conf.unset(key)
    assert len(native) == len(ALL_TYPES.split(", "))
    n_dtype = "Int32" if prefer_int_ext == "true" else "float64"
    assert [r[1] for r in native if r[0] == "n"] == [n_dtype]
    assert ours_rows == native and keyed_rows == native


def test_frames_of_numeric_columns_can_be_changed_in_place(spark, small_batches):
    """Numeric columns come from Arrow memory; the frames are still the function's own."""
    src = spark.range(0, 10, 1, 1).select((F.col("id") % 2).alias("k"), F.col("id").alias("v"),
                                          (F.col("id") / 2).alias("x"))

    def bump(key, frames):
        for pdf in frames:
            pdf.loc[0, "v"] = -1
            pdf["x"] += 1
            pdf.iloc[-1, 2] = 100.0
            yield pdf

    got = rows(src.keyBy("k").fullWindowPartition().mapPartitionInPandas(bump, src.schema))
    changed = [r for r in got if r[1] == -1]
    assert len(got) == 10 and len(changed) >= 4  # the first record of every frame
    assert sum(1 for r in got if r[2] == 100.0) == len(changed)  # and the last one
    untouched = [r for r in got if r[1] != -1 and r[2] != 100.0]
    assert untouched and all(x == v / 2 + 1 for _, v, x in untouched)  # the column was added to


def test_keyed_runs_with_null_nan_and_batch_spanning_keys(spark, small_batches):
    """Keys spread over many batches (a batch inside one key is taken as one run without
    comparing its records), nulls and NaNs at both ends of a batch: the same groups as
    applyInPandas."""
    keys = [None] * 4 + [float("nan")] * 5 + [0.0, 0.0] + [1.5] * 7 + [2.5] + [3.5] * 3
    src = spark.createDataFrame([(k, i) for i, k in enumerate(keys)], "k double, v long").repartition(2)

    def count(key, frames):
        n = s = 0
        for pdf in frames:
            assert len(pdf) <= 3
            n += len(pdf)
            s += int(pdf.v.sum())
        yield pd.DataFrame({"k": [key], "n": [n], "s": [s]})

    ours = src.keyBy("k").fullWindowPartition().mapPartitionInPandas(count, "k double, n long, s long")
    native = src.groupBy("k").applyInPandas(
        lambda pdf: pd.DataFrame({"k": [pdf.k.iloc[0]], "n": [len(pdf)], "s": [int(pdf.v.sum())]}),
        "k double, n long, s long")

    def norm(rs):
        return sorted((("none" if k is None else "nan" if k != k else str(k)), n, s)
                      for k, n, s in rs.collect())

    assert norm(ours) == norm(native)
    assert sorted(n for _, n, _ in norm(ours)) == [1, 2, 3, 4, 5, 7]


def test_types_round_trip_through_the_output(spark):
    src = spark.createDataFrame(
        [(1, decimal.Decimal("1.25"), datetime.datetime(2024, 1, 2, 3, 4, 5), [1, None], {"x": 1}),
         (2, None, None, None, None)],
        "i long, dec decimal(10,2), ts timestamp, arr array<int>, st struct<x:int>")
    out = src.fullWindowPartition().mapPartitionInPandas(lambda it: it, src.schema)
    assert rows(out) == rows(src)
    keyed = src.keyBy("i").fullWindowPartition().mapPartitionInPandas(lambda k, it: it, src.schema)
    assert rows(keyed) == rows(src)


def test_result_columns_by_position_and_casts(df):
    def f(frames):
        for pdf in frames:
            yield pd.DataFrame([[int(x), float(x)] for x in pdf.v])  # integer labels: by position

    out = df.fullWindowPartition().mapPartitionInPandas(f, "a int, b float")
    got = rows(out)
    assert got[:2] == [(0, 0.0), (1, 1.0)] and len(got) == 40


# ---- keyed ------------------------------------------------------------------------------------

def count_sum(key, frames):
    n = s = 0
    for pdf in frames:
        assert (pdf.k == key).all()
        n += len(pdf)
        s += int(pdf.v.sum())
    yield pd.DataFrame({"k": [key], "n": [n], "s": [s]})


def test_keyed_once_per_key_matches_apply_in_pandas(df):
    ours = df.keyBy("k").fullWindowPartition().mapPartitionInPandas(count_sum, "k long, n long, s long")
    native = df.groupBy("k").applyInPandas(
        lambda pdf: pd.DataFrame({"k": [pdf.k.iloc[0]], "n": [len(pdf)], "s": [pdf.v.sum()]}),
        "k long, n long, s long")
    assert rows(ours) == rows(native) == [(k, 8, sum(range(k, 40, 5))) for k in range(5)]


def test_keyed_frames_hold_only_the_key_in_batch_sized_pieces(df, small_batches):
    def shapes(key, frames):
        sizes = []
        for pdf in frames:
            assert set(pdf.k) == {key} and list(pdf.index) == list(range(len(pdf)))
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # frames may be changed freely, without warnings
                pdf["twice"] = pdf.v * 2
                pdf.loc[0, "v"] = -1
            sizes.append(len(pdf))
        yield pd.DataFrame({"k": [key], "sizes": [sizes]})

    got = rows(df.keyBy("k").fullWindowPartition().mapPartitionInPandas(shapes, "k long, sizes array<long>"))
    assert [k for k, _ in got] == list(range(5))
    for _, sizes in got:
        assert sum(sizes) == 8 and max(sizes) <= 3 and len(sizes) >= 3


def _frame_sizes(key, frames):
    yield pd.DataFrame({"k": [key], "sizes": [[len(pdf) for pdf in frames]]})


def _co_frame_sizes(key, left, right):
    sizes = [len(pdf) for pdf in left]
    yield pd.DataFrame({"k": [key], "sizes": [sizes], "right": [[len(pdf) for pdf in right]]})


@pytest.mark.parametrize("setting, expected", [
    # unset: every pandas form's own default frame, 50,000 rows (docs/pandas.md)
    (None, [50_000, 50_000, 20_000]),
    # set, even to Spark's own default: the setting is honoured exactly
    ("10000", [10_000] * 12),
    ("70000", [70_000, 50_000]),
])
def test_frame_size_default_and_explicit_setting(spark, setting, expected):
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    assert spark.conf.get(key, None) is None or setting is not None
    src = spark.range(0, 120_000, 1, 2).select(F.lit(7).cast("long").alias("k"), F.col("id").alias("v"))
    if setting is not None:
        spark.conf.set(key, setting)
    try:
        keyed = rows(src.keyBy("k").fullWindowPartition().mapPartitionInPandas(
            _frame_sizes, "k long, sizes array<long>"))
        whole = src.coalesce(1).fullWindowPartition().mapPartitionInPandas(
            lambda frames: _frame_sizes(7, frames), "k long, sizes array<long>").collect()
        # coGroup: the key's left records come first in the merged stream, then the right ones
        other = spark.range(0, 3, 1, 1).select(F.lit(7).cast("long").alias("k"), F.col("id").alias("w"))
        co = src.keyBy("k").coGroup(other.keyBy("k")).window(EOS).applyInPandas(
            _co_frame_sizes, "k long, sizes array<long>, right array<long>").collect()
    finally:
        spark.conf.unset(key)
    assert keyed == [(7, expected)]
    assert [tuple(r) for r in whole] == [(7, expected)]
    assert [tuple(r) for r in co] == [(7, expected, [3])]


@pytest.mark.parametrize("payload", [
    # a string column: rows of variable width
    lambda: [F.repeat(F.lit("x"), 64).alias("p")],
    # 25 double columns: fixed-width, but 50,000 such rows take over 8 MiB of Arrow data
    lambda: [F.col("id").cast("double").alias(f"d{i}") for i in range(25)],
], ids=["string", "wide"])
def test_frames_of_wide_or_variable_rows_keep_sparks_default_size(spark, payload):
    """Unset, the 50,000-row default is only for narrow fixed-width rows: a frame of strings
    takes several times its Arrow size in the worker, so such rows keep Spark's 10,000."""
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    assert spark.conf.get(key, None) is None
    src = spark.range(0, 120_000, 1, 2).select(
        F.lit(7).cast("long").alias("k"), F.col("id").alias("v"), *payload())
    schema = "k long, sizes array<long>"
    keyed = rows(src.keyBy("k").fullWindowPartition().mapPartitionInPandas(_frame_sizes, schema))
    whole = src.coalesce(1).fullWindowPartition().mapPartitionInPandas(
        lambda frames: _frame_sizes(7, frames), schema).collect()
    other = spark.range(0, 3, 1, 1).select(F.lit(7).cast("long").alias("k"), F.col("id").alias("w"))
    co = src.keyBy("k").coGroup(other.keyBy("k")).window(EOS).applyInPandas(
        _co_frame_sizes, "k long, sizes array<long>, right array<long>").collect()
    expected = [10_000] * 12
    assert keyed == [(7, expected)]
    assert [tuple(r) for r in whole] == [(7, expected)]
    assert [tuple(r) for r in co] == [(7, expected, [3])]


def test_keyed_plan_and_end_of_stream_windows_spelling(df):
    a = df.keyBy("k").fullWindowPartition().mapPartitionInPandas(count_sum, "k long, n long, s long")
    b = df.keyBy("k").window(EOS).applyInPandas(count_sum, "k long, n long, s long")
    assert rows(a) == rows(b)
    plan_a, plan_b = executed_plan(a), executed_plan(b)
    assert "FullWindowKeyedMapPartitionInPandas" in plan_a, plan_a
    assert "FullWindowKeyedApplyInPandas" in plan_b, plan_b
    for plan in (plan_a, plan_b):
        assert plan.count("Exchange") == 1 and re.search(r"hashpartitioning\(k#\d+", plan), plan


def test_keyed_several_keys_give_a_tuple_and_a_function_may_stop_early(df, small_batches):
    def first(key, frames):
        pdf = next(frames)  # the rest of the key is skipped
        yield pd.DataFrame({"a": [key[0]], "b": [key[1]], "v": [int(pdf.v.iloc[0])]})

    src = df.withColumn("p", F.col("v") % 2)
    got = rows(src.keyBy("k", "p").fullWindowPartition().mapPartitionInPandas(first, "a long, b long, v long"))
    assert [(a, b) for a, b, _ in got] == [(k, p) for k in range(5) for p in range(2)]
    assert all(v % 5 == a and v % 2 == b for a, b, v in got)


def test_keyed_function_yielding_nothing_or_many_frames(df):
    def f(key, frames):
        if key % 2:
            return
        for pdf in frames:
            yield pdf[["k", "v"]]
            yield pdf[["k", "v"]].head(0)

    got = rows(df.keyBy("k").fullWindowPartition().mapPartitionInPandas(f, "k long, v long"))
    assert got == sorted((v % 5, v) for v in range(40) if (v % 5) % 2 == 0)


def test_keyed_empty_input(spark, df):
    out = df.where("v < 0").keyBy("k").fullWindowPartition().mapPartitionInPandas(count_sum, "k long, n long, s long")
    assert out.collect() == []


def test_keyed_heavy_key_streams_in_bounded_memory(spark):
    """One key with 3 M records: the function sees them as frames of one Arrow batch each while
    the partition is read, so the worker does not grow with the key (holding it whole as
    pandas would take > 150 MiB; applyInPandas would build one 3 M-row frame)."""
    n = 3_000_000
    src = spark.range(0, n, 1, 2).select(F.lit(1).alias("k"), F.col("id").alias("v"),
                                         (F.col("id") % 7).cast("double").alias("x"))

    def watch(key, frames):
        start = peak = rss()
        count = biggest = pieces = 0
        total = 0.0
        for pdf in frames:
            pieces += 1
            count += len(pdf)
            biggest = max(biggest, len(pdf))
            total += pdf.x.sum()
            if pieces % 20 == 0:
                peak = max(peak, rss())
        yield pd.DataFrame({"n": [count], "pieces": [pieces], "biggest": [biggest],
                            "total": [total], "grew": [peak - start]})

    (got,) = src.keyBy("k").fullWindowPartition().mapPartitionInPandas(
        watch, "n long, pieces long, biggest long, total double, grew long").collect()
    assert got.n == n and got.total == float(sum(i % 7 for i in range(7)) * (n // 7) + sum(range(n % 7)))
    assert got.biggest == 50_000 and got.pieces == n // 50_000  # the pandas forms' default frame
    assert got.grew < 100 * 2**20, f"worker grew by {got.grew / 2**20:.0f} MiB"


# ---- coGroup ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def left(spark):
    return spark.range(0, 24, 1, 3).select((F.col("id") % 6).alias("k"), F.col("id").alias("v"),
                                           F.concat(F.lit("L"), F.col("id").cast("string")).alias("name"))


@pytest.fixture(scope="module")
def right(spark):
    return spark.range(0, 12, 1, 2).select((F.col("id") % 6 + 3).alias("k"), (F.col("id") * 100).alias("w"))


def sides(key, lefts, rights):
    ls = [pdf for pdf in lefts]
    rs = [pdf for pdf in rights]
    assert all(list(p.columns) == ["k", "v", "name"] for p in ls)
    assert all(list(p.columns) == ["k", "w"] for p in rs)
    yield pd.DataFrame({"k": [key], "ls": [sorted(int(v) for p in ls for v in p.v)],
                        "rs": [sorted(int(w) for p in rs for w in p.w)]})


SIDES = "k long, ls array<long>, rs array<long>"


def test_cogroup_apply_in_pandas_matches_cogroup_apply_in_pandas(left, right, small_batches):
    ours = left.keyBy("k").coGroup(right.keyBy("k")).window(EOS).applyInPandas(sides, SIDES)

    def native(key, l, r):
        return pd.DataFrame({"k": [key[0]], "ls": [sorted(int(v) for v in l.v)],
                             "rs": [sorted(int(w) for w in r.w)]})

    theirs = left.groupBy("k").cogroup(right.groupBy("k")).applyInPandas(native, SIDES)
    got = rows(ours)
    assert got == rows(theirs)
    assert [k for k, _, _ in got] == list(range(9))  # keys on one side only are called too
    assert got[0] == (0, [0, 6, 12, 18], []) and got[8] == (8, [], [500, 1100])
    plan = executed_plan(ours)
    assert "FullWindowCoGroup" in plan and plan.count("Exchange") == 2, plan


def test_cogroup_big_key_streams_when_left_is_read_first(spark):
    n = 1_500_000
    a = spark.range(0, n, 1, 2).select(F.lit(7).alias("k"), F.col("id").alias("v"))
    b = spark.range(0, n, 1, 2).select(F.lit(7).alias("k"), (F.col("id") * 2).alias("w"))

    def f(key, lefts, rights):
        start = peak = rss()
        nl = biggest = 0
        total = 0
        for i, pdf in enumerate(lefts):
            nl += len(pdf)
            biggest = max(biggest, len(pdf))
            if i % 20 == 0:
                peak = max(peak, rss())
        for i, pdf in enumerate(rights):
            total += int(pdf.w.sum())
            biggest = max(biggest, len(pdf))
            if i % 20 == 0:
                peak = max(peak, rss())
        yield pd.DataFrame({"k": [key], "nl": [nl], "total": [total], "biggest": [biggest],
                            "grew": [peak - start]})

    (got,) = a.keyBy("k").coGroup(b.keyBy("k")).window(EOS).applyInPandas(
        f, "k int, nl long, total long, biggest long, grew long").collect()
    assert (got.k, got.nl, got.total) == (7, n, n * (n - 1))
    assert got.biggest == 50_000  # the pandas forms' default frame, coGroup's too
    assert got.grew < 100 * 2**20, f"worker grew by {got.grew / 2**20:.0f} MiB"


# ---- errors -----------------------------------------------------------------------------------

def _forms(df, left, right):
    keyed = df.keyBy("k")
    return {
        "mapPartitionInPandas": lambda f, s: df.fullWindowPartition().mapPartitionInPandas(f, s),
        "keyed mapPartitionInPandas": lambda f, s: keyed.fullWindowPartition().mapPartitionInPandas(f, s),
        "keyed applyInPandas": lambda f, s: keyed.window(EOS).applyInPandas(f, s),
        "coGroup applyInPandas": lambda f, s: left.keyBy("k").coGroup(right.keyBy("k")).window(EOS)
        .applyInPandas(f, s),
    }


@pytest.mark.parametrize("bad, got", [(None, "got None"), (42, "got int 42")])
def test_function_must_be_callable(df, left, right, bad, got):
    for name, call in _forms(df, left, right).items():
        with pytest.raises(FullWindowTypeError, match=rf"{name}: func must be .*pandas.DataFrame.*; {got}"):
            call(bad, "k long")


def test_bad_schema(df, left, right):
    for name, call in _forms(df, left, right).items():
        with pytest.raises(FullWindowValueError, match=rf"{name}: schema 'k lung' is not a valid DDL"):
            call(lambda *a: iter(()), "k lung")
        with pytest.raises(FullWindowTypeError, match=rf"{name}: schema must be a StructType"):
            call(lambda *a: iter(()), 3)


def _missing_column(*args):
    yield pd.DataFrame({"k": [1], "other": [2]})


def _wrong_type(*args):
    yield pd.DataFrame({"k": [1], "n": ["not a number"]})


def _single_frame(*args):
    return pd.DataFrame({"k": [1], "n": [2]})


def _not_a_frame(*args):
    yield [(1, 2)]


@pytest.mark.parametrize("func, message", [
    (_missing_column, r"SchemaMismatchError: {op}: partition \d+: the DataFrame func returned has "
                      r"no column 'n' of the schema struct<k:bigint,n:bigint>; its columns are k, "
                      r"other \(unexpected: other\)"),
    (_wrong_type, r"SchemaMismatchError: {op}: partition \d+: field 'n' expects bigint, got a "
                  r"column of dtype object \(first values \['not a number'(, 'not a number')*\]\)"),
    (_single_frame, r"FullWindowTypeError: {op}: func must return an iterator of "
                    r"pandas.DataFrame \(e.g. yield the frame\), got a single DataFrame"),
    (_not_a_frame, r"SchemaMismatchError: {op}: partition \d+: func must yield pandas.DataFrame "
                   r"objects of struct<k:bigint,n:bigint>; got list"),
])
def test_results_that_do_not_fit(df, left, right, func, message):
    for name, call in _forms(df, left, right).items():
        with pytest.raises(PythonException, match=message.format(op=name)):
            call(func, "k long, n long").collect()


def test_user_exception_surfaces_with_its_traceback(df):
    def boom(key, frames):
        raise ValueError(f"no good key {key}")

    with pytest.raises(PythonException, match=r"(?s)in boom.*ValueError: no good key"):
        df.keyBy("k").fullWindowPartition().mapPartitionInPandas(boom, "k long").collect()


# ---- recovery ---------------------------------------------------------------------------------

_RECOVERY_JOB = """
import os, sys
import pandas as pd
import fullwindow
from fullwindow.recovery import job_events
from pyspark.sql import functions as F

spark = fullwindow.session(master="local[2]", conf={{
    "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "3",
    "spark.fullwindow.recovery.enabled": "true",
    "spark.fullwindow.recovery.dir": {dir!r}, "spark.fullwindow.recovery.jobId": "pandas",
    "spark.fullwindow.eventStore.flushInterval": "100ms"}})
marks = {marks!r}

def mark(key):
    from pyspark import TaskContext
    open(os.path.join(marks, f"{{os.environ['RUN']}}-{{key}}-{{TaskContext.get().taskAttemptId()}}"), "w").close()

def total(key, frames):
    mark(key)
    yield pd.DataFrame({{"k": [key], "s": [sum(int(p.v.sum()) for p in frames)]}})

def total2(key, frames):  # the same result, other code
    mark(key)
    s = 0
    for p in frames:
        s += int(p.v.sum())
    yield pd.DataFrame({{"k": [key], "s": [s]}})

src = spark.range(0, 300, 1, 3).select((F.col("id") % 7).alias("k"), F.col("id").alias("v"))
func = total2 if os.environ.get("VARIANT") else total
out = src.keyBy("k").fullWindowPartition().mapPartitionInPandas(func, "k long, s long")
print("ROWS", sorted(tuple(r) for r in out.collect()))
print("PLAN", "FullWindowRecoveredScan" in out._jdf.queryExecution().executedPlan().toString())
spark.stop()
fps = [e["fingerprint"] for e in job_events({dir!r}, "pandas")
       if e["type"] == "vertexInitialized" and e["operator"] == "keyed mapPartitionInPandas"]
print("FPS", len(set(fps)))
"""


def test_recovery_reads_back_a_finished_pandas_operation_by_its_fingerprint(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    code = _RECOVERY_JOB.format(dir=str(tmp_path / "recovery"), marks=str(marks))
    expected = sorted((k, sum(range(k, 300, 7))) for k in range(7))

    def run(name, **env):
        p = run_python(code, env=fast_jvm({"RUN": name, **env}))
        assert p.returncode == 0, p.stderr[-3000:]
        out = dict(line.split(" ", 1) for line in p.stdout.splitlines() if line[:4] in ("ROWS", "PLAN", "FPS "))
        assert out["ROWS"] == str(expected)
        ran = sorted(int(n.split("-")[1]) for n in os.listdir(marks) if n.startswith(name + "-"))
        return ran, out["PLAN"] == "True", int(out["FPS"])

    assert run("r1") == (list(range(7)), False, 1)
    assert run("r2") == ([], True, 1)                      # all read back, the function not run
    assert run("r3", VARIANT="2") == (list(range(7)), False, 2)  # changed code: a new fingerprint
