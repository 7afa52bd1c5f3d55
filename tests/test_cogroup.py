"""The two-sorter coGroup on real Spark:
a.keyBy(k).coGroup(b.keyBy(k)).window(EndOfStreamWindows.get()).apply(func(key, left, right)):
every key on either side called once, co-partitioned inputs each sorted by its own sorter, the
memory bound on the streamed sides, and every coGroup error."""
from __future__ import annotations

import re
from collections import defaultdict

import pytest
from pyspark.errors import PythonException
from pyspark.sql import Row
from pyspark.sql import functions as F

import fullwindow
from fullwindow import (EndOfStreamWindows, FullWindowTypeError, KeyTypeMismatchError,
                        StreamingNotSupportedError)
from helpers import executed_plan

EOS = EndOfStreamWindows.get()


@pytest.fixture(scope="module")
def left(spark):
    # keys 0..5 (id % 6), 24 records over 3 partitions
    return spark.range(0, 24, 1, 3).select((F.col("id") % 6).alias("k"), F.col("id").alias("v"),
                                           F.concat(F.lit("L"), F.col("id").cast("string")).alias("name"))


@pytest.fixture(scope="module")
def right(spark):
    # keys 3..8 (id % 6 + 3), 12 records over 2 partitions; same column names as the left side
    return spark.range(0, 12, 1, 2).select((F.col("id") % 6 + 3).alias("k"), (F.col("id") * 100).alias("v"),
                                           F.struct(F.col("id").alias("x")).alias("extra"))


@pytest.fixture()
def small_batches(spark):
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    spark.conf.set(key, "3")
    yield
    spark.conf.unset(key)


def summarize(key, lefts, rights):
    ls = [r.v for r in lefts]
    rs = [r.v for r in rights]
    yield (key, sorted(ls), sorted(rs))


SUMMARY = "k long, ls array<long>, rs array<long>"


def expected():
    ls, rs = defaultdict(list), defaultdict(list)
    for i in range(24):
        ls[i % 6].append(i)
    for i in range(12):
        rs[i % 6 + 3].append(i * 100)
    return [(k, sorted(ls[k]), sorted(rs[k])) for k in range(9)]


def co(left_df, right_df, lkeys=("k",), rkeys=("k",)):
    return left_df.keyBy(*lkeys).coGroup(right_df.keyBy(*rkeys)).window(EOS)


def test_every_key_on_either_side_once(left, right):
    out = co(left, right).apply(summarize, SUMMARY)
    got = sorted((r.k, r.ls, r.rs) for r in out.collect())
    assert got == expected()  # keys 0-2 only left, 6-8 only right, 3-5 both; each once


def test_plan_two_sorters_no_union(left, right):
    out = co(left, right).apply(summarize, SUMMARY)
    out.collect()
    plan = executed_plan(out)
    assert re.search(r"FullWindowCoGroup leftKeys=\[k#\d+L\], rightKeys=\[k#\d+L\]", plan), plan
    assert len(re.findall(r"Exchange hashpartitioning\(k#\d+L", plan)) == 2, plan
    assert plan.count("Sort [k#") == 2, plan
    assert "Union" not in plan and "__side" not in plan


def test_metrics(left, right):
    out = co(left, right).apply(summarize, SUMMARY)
    out.collect()
    m = fullwindow.operator_metrics(out)
    assert m["FullWindowCoGroup.numInputRows"] == 36
    assert m["FullWindowCoGroup.numOutputRows"] == 9


@pytest.mark.parametrize("order", ["left_first", "right_first", "interleaved"])
def test_sides_can_be_read_in_any_order(left, right, small_batches, order):
    def f(key, lefts, rights):
        if order == "left_first":
            ls = [r.v for r in lefts]
            rs = [r.v for r in rights]
        elif order == "right_first":
            rs = [r.v for r in rights]
            ls = [r.v for r in lefts]
        else:
            li, ri = iter(lefts), iter(rights)
            ls, rs = [], []
            first = next(li, None)
            if first is not None:
                ls.append(first.v)
            rs.extend(r.v for r in ri)  # buffers what is left of the left run
            ls.extend(r.v for r in li)
        yield (key, sorted(ls), sorted(rs))

    out = co(left, right).apply(f, SUMMARY)
    assert sorted((r.k, r.ls, r.rs) for r in out.collect()) == expected()


def test_reading_one_side_or_none(left, right, small_batches):
    def only_right(key, lefts, rights):
        yield (key, [], sorted(r.v for r in rights))

    def neither(key, lefts, rights):
        yield (key, [], [])

    exp = expected()
    got = sorted((r.k, r.ls, r.rs) for r in co(left, right).apply(only_right, SUMMARY).collect())
    assert got == [(k, [], rs) for k, _, rs in exp]
    got = sorted((r.k, r.ls, r.rs) for r in co(left, right).apply(neither, SUMMARY).collect())
    assert got == [(k, [], []) for k, _, _ in exp]


def test_rows_of_each_side_carry_their_own_columns(left, right):
    def f(key, lefts, rights):
        for r in lefts:
            assert r.__fields__ == ["k", "v", "name"] and r.name == f"L{r.v}" and r.k == key
            yield (key, "L", r.name)
        for r in rights:
            assert r.__fields__ == ["k", "v", "extra"] and r.extra == Row(x=r.v // 100) and r.k == key
            yield (key, "R", str(r.extra.x))

    out = co(left, right).apply(f, "k long, side string, what string")
    got = out.collect()
    assert len(got) == 36
    assert sorted(r.what for r in got if r.side == "L") == sorted(f"L{i}" for i in range(24))


def test_different_key_names_and_several_keys(spark):
    users = spark.createDataFrame([(1, "eu", "ann"), (2, "eu", "bob"), (3, "us", "cy")],
                                  "id long, region string, name string")
    orders = spark.createDataFrame([(1, "eu", 10.0), (1, "eu", 5.0), (3, "us", 7.5), (4, "us", 1.0)],
                                   "user_id long, reg string, amount double")

    def f(key, us, os):
        names = [u.name for u in us]
        total = sum(o.amount for o in os)
        yield (list(key), names, total)

    out = co(users, orders, ("id", "region"), ("user_id", "reg")).apply(
        f, "key array<string>, names array<string>, total double")
    got = sorted((tuple(r.key), r.names, r.total) for r in out.collect())
    assert got == [(("1", "eu"), ["ann"], 15.0), (("2", "eu"), ["bob"], 0.0),
                   (("3", "us"), ["cy"], 7.5), (("4", "us"), [], 1.0)]


def test_empty_sides(spark, left, right):
    empty_left = left.filter("v < 0")
    out = co(empty_left, right).apply(summarize, SUMMARY)
    assert sorted((r.k, r.ls, r.rs) for r in out.collect()) == [(k, [], rs) for k, _, rs in expected() if rs]
    out = co(left, right.filter("v < 0")).apply(summarize, SUMMARY)
    assert sorted((r.k, r.ls, r.rs) for r in out.collect()) == [(k, ls, []) for k, ls, _ in expected() if ls]
    calls = spark.sparkContext.accumulator(0)

    def f(key, lefts, rights):
        calls.add(1)
        return []

    assert co(empty_left, right.filter("v < 0")).apply(f, SUMMARY).collect() == []
    assert calls.value == 0


def test_null_keys_meet(spark):
    a = spark.createDataFrame([(None, 1), (None, 2), (1, 3)], "k int, v long")
    b = spark.createDataFrame([(None, 10), (2, 20)], "k int, v long")
    got = sorted(((r.k if r.k is not None else -1), r.ls, r.rs)
                 for r in co(a, b).apply(summarize, "k int, ls array<long>, rs array<long>").collect())
    assert got == [(-1, [1, 2], [10]), (1, [3], []), (2, [], [20])]


def test_self_cogroup(left):
    out = co(left, left).apply(summarize, SUMMARY)
    got = sorted((r.k, r.ls, r.rs) for r in out.collect())
    assert got == [(k, ls, ls) for k, ls, _ in expected() if ls]


def test_co_partitioned_inputs_need_no_more_exchanges(left, right):
    out = co(left.repartition(4, "k"), right.repartition(4, "k")).apply(summarize, SUMMARY)
    assert sorted((r.k, r.ls, r.rs) for r in out.collect()) == expected()
    assert executed_plan(out).count("Exchange") == 2


def test_many_keys_small_batches(spark, small_batches):
    a = spark.range(0, 3000, 1, 3).select((F.col("id") % 700).alias("k"), F.col("id").alias("v"))
    b = spark.range(0, 2000, 1, 2).select((F.col("id") % 900).alias("k"), F.col("id").alias("v"))

    def f(key, ls, rs):
        yield (key, sum(1 for _ in ls), sum(1 for _ in rs))

    got = {r.k: (r.nl, r.nr) for r in co(a, b).apply(f, "k long, nl long, nr long").collect()}
    assert len(got) == 900
    assert sum(v[0] for v in got.values()) == 3000 and sum(v[1] for v in got.values()) == 2000
    assert got[0] == (5, 3) and got[899] == (0, 2)


def test_big_key_streams_on_both_sides_when_left_is_read_first(spark):
    """One key with 1.5M records on each side: read left then right, the worker stays flat."""
    n = 1_500_000
    a = spark.range(0, n, 1, 2).select(F.lit(7).alias("k"), F.col("id").alias("v"))
    b = spark.range(0, n, 1, 2).select(F.lit(7).alias("k"), (F.col("id") * 2).alias("w"))

    def f(key, lefts, rights):
        def rss():
            with open("/proc/self/statm") as fh:
                return int(fh.read().split()[1]) * 4096
        start = peak = rss()
        nl = nr = 0
        for _ in lefts:
            nl += 1
            if nl % 100_000 == 0:
                peak = max(peak, rss())
        for r in rights:
            nr += r.w
            if r.w % 200_000 == 0:
                peak = max(peak, rss())
        yield (key, nl, nr, peak - start)

    (k, nl, total, grew), = [tuple(r) for r in
                             co(a, b).apply(f, "k int, nl long, total long, grew long").collect()]
    assert (k, nl, total) == (7, n, n * (n - 1))
    assert grew < 100 * 2**20, f"worker grew by {grew / 2**20:.0f} MiB"


def test_user_exception_surfaces(left, right):
    def f(key, lefts, rights):
        raise ValueError(f"bad key {key}")

    with pytest.raises(PythonException, match=r"ValueError: bad key"):
        co(left, right).apply(f, SUMMARY).collect()


# ---- errors -----------------------------------------------------------------------------------

def test_mismatched_key_types(spark, left):
    ints = spark.range(3).select(F.col("id").cast("int").alias("k"))
    with pytest.raises(KeyTypeMismatchError,
                       match=r"coGroup: the two sides must be keyed by the same number of keys of the "
                             r"same types .*left side is keyed by \(k BIGINT\) and the right side by "
                             r"\(k INT\)") as e:
        co(left, ints).apply(summarize, SUMMARY)
    assert isinstance(e.value, TypeError)


def test_mismatched_key_counts(left, right):
    with pytest.raises(KeyTypeMismatchError,
                       match=r"left side is keyed by \(k BIGINT, v BIGINT\) and the right side by \(k BIGINT\)"):
        co(left, right, ("k", "v"), ("k",)).apply(summarize, SUMMARY)


@pytest.mark.parametrize("other", [None, "df", 5])
def test_other_must_be_keyed(left, right, other):
    arg = right if other == "df" else other
    hint = r".*call .keyBy\(...\) on it first" if other == "df" else ""
    with pytest.raises(FullWindowTypeError, match=rf"coGroup: other must be a KeyedDataFrame.*got{hint}"):
        left.keyBy("k").coGroup(arg)


def test_window_assigner_and_apply_before_window(left, right):
    grouped = left.keyBy("k").coGroup(right.keyBy("k"))
    with pytest.raises(FullWindowTypeError, match=r"coGroup window: full windows take the window assigner "
                                                  r"EndOfStreamWindows.get\(\).*got str 'tumbling'"):
        grouped.window("tumbling")
    with pytest.raises(FullWindowTypeError, match=r"coGroup: call .window\(EndOfStreamWindows.get\(\)\) before"):
        grouped.apply(summarize, SUMMARY)


@pytest.mark.parametrize("bad", [None, "f"])
def test_function_must_be_callable(left, right, bad):
    with pytest.raises(FullWindowTypeError, match=r"coGroup apply: func must be a function \(key, left_rows, right_rows\)"):
        co(left, right).apply(bad, SUMMARY)


def test_bad_schema(left, right):
    with pytest.raises(FullWindowTypeError, match=r"coGroup apply: schema must be a StructType"):
        co(left, right).apply(summarize, None)


def test_output_that_does_not_fit(left, right):
    with pytest.raises(PythonException, match=r"SchemaMismatchError.*coGroup apply: partition \d+: field 'n' expects bigint"):
        co(left, right).apply(lambda k, l, r: [(k, "x")], "k long, n long").collect()


def test_streaming_side_and_streaming_mode(spark, left):
    stream = spark.readStream.format("rate").load().select(F.col("value").alias("k"))
    with pytest.raises(StreamingNotSupportedError,
                       match=r"coGroup is a full-window operation .*streaming DataFrame"):
        co(left, stream).apply(summarize, SUMMARY)
    spark.conf.set("spark.fullwindow.runtimeMode", "STREAMING")
    try:
        with pytest.raises(StreamingNotSupportedError,
                           match=r"coGroup is a full-window operation and cannot run in STREAMING runtime mode"):
            co(left, left).apply(summarize, SUMMARY)
    finally:
        spark.conf.unset("spark.fullwindow.runtimeMode")
