"""The two-sorter coGroup on real Spark:
a.keyBy(k).coGroup(b.keyBy(k)).window(EndOfStreamWindows.get()).apply(func(key, left, right)):
every key on either side called once, co-partitioned inputs each sorted by its own sorter, the
memory bound on the streamed sides, and every coGroup error."""
from __future__ import annotations

import json
import re
from collections import defaultdict

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark.errors import PythonException
from pyspark.sql import Row
from pyspark.sql import functions as F

import fullwindow
from fullwindow import (EndOfStreamWindows, FullWindowTypeError, KeyTypeMismatchError,
                        StreamingNotSupportedError)
from helpers import executed_plan, needs_connect_result_metrics, run_python, sorts_under_fullwindow

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
    _two_sorters(plan)
    assert "Union" not in plan and "__side" not in plan


def _two_sorters(plan):
    # a sorter each: in the final plan the left side (long, long, string) sorts on columns, the
    # right (a struct column) with Spark's Sort; a plan before adaptive execution ran (Connect's
    # explain) shows Spark's Sort on both, the columnar one put in each stage as it runs
    columnar = plan.count("FullWindowColumnarSort order=[k#")
    assert columnar + plan.count("Sort [k#") == 2, plan
    assert columnar == (0 if "isFinalPlan=false" in plan else 1), plan


@needs_connect_result_metrics()
def test_both_sorts_run_outside_their_codegen_stages(left, right):
    out = co(left, right).apply(summarize, SUMMARY)
    assert sorted((r.k, r.ls, r.rs) for r in out.collect()) == expected()
    sorts = sorts_under_fullwindow(out)
    assert sorted(s["name"] for s in sorts) == ["FullWindowColumnarSort", "Sort"], sorts
    # Spark's Sort is in a stage that never runs (no time); the columnar sort is in none (-1)
    assert all(s["stageTime"] == (0 if s["name"] == "Sort" else -1) and s["peakMemory"] > 0
               for s in sorts), sorts


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


# ---- the Arrow form ---------------------------------------------------------------------------

def arrow_summarize(key, lefts, rights):
    ls = [v for b in lefts for v in b.column("v").to_pylist()]
    rs = [v for b in rights for v in b.column("v").to_pylist()]
    yield pa.RecordBatch.from_pylist([{"k": key, "ls": sorted(ls), "rs": sorted(rs)}])


def test_arrow_every_key_on_either_side_once(left, right):
    out = co(left, right).applyInArrow(arrow_summarize, SUMMARY)
    assert sorted((r.k, r.ls, r.rs) for r in out.collect()) == expected()
    plan = executed_plan(out)
    assert "FullWindowCoGroup" in plan, plan
    _two_sorters(plan)


@pytest.mark.parametrize("order", ["left_first", "right_first"])
def test_arrow_batches_stream_with_each_sides_columns(left, right, small_batches, order):
    """Batches of at most maxRecordsPerBatch records, only the key's, named as their side's
    columns (the other side's are not there); either side can be read first."""
    def f(key, lefts, rights):
        seen = {}
        sides = [("L", lefts), ("R", rights)]
        for side, batches in (sides if order == "left_first" else sides[::-1]):
            seen[side] = list(batches)
        for side, names in (("L", ["k", "v", "name"]), ("R", ["k", "v", "extra"])):
            for b in seen[side]:
                assert isinstance(b, pa.RecordBatch) and b.schema.names == names
                assert 0 < b.num_rows <= 3 and set(b.column("k").to_pylist()) == {key}
        for b in seen["R"]:
            assert b.column("extra").to_pylist() == [{"x": v // 100} for v in b.column("v").to_pylist()]
        ls = [v for b in seen["L"] for v in b.column("v").to_pylist()]
        rs = [v for b in seen["R"] for v in b.column("v").to_pylist()]
        yield pa.table({"k": [key], "ls": [sorted(ls)], "rs": [sorted(rs)]})  # a Table is fine too

    out = co(left, right).applyInArrow(f, SUMMARY)
    assert sorted((r.k, r.ls, r.rs) for r in out.collect()) == expected()


def test_arrow_output_cast_to_schema_and_gathered(spark, small_batches):
    """Batches of other (castable) types are cast to the schema; one small batch per key of
    many keys still comes back whole."""
    a = spark.range(0, 3000, 1, 3).select((F.col("id") % 700).alias("k"), F.col("id").alias("v"))
    b = spark.range(0, 2000, 1, 2).select((F.col("id") % 900).alias("k"), F.col("id").alias("v"))

    def f(key, ls, rs):
        nl = sum(x.num_rows for x in ls)
        nr = sum(x.num_rows for x in rs)
        yield pa.RecordBatch.from_arrays([pa.array([key], pa.int32()), pa.array([nl], pa.int16()),
                                          pa.array([nr], pa.int8())], names=["k", "nl", "nr"])

    out = co(a, b).applyInArrow(f, "k long, nl long, nr long")
    assert out.schema.simpleString() == "struct<k:bigint,nl:bigint,nr:bigint>"
    got = {r.k: (r.nl, r.nr) for r in out.collect()}
    assert len(got) == 900 and got[0] == (5, 3) and got[899] == (0, 2)
    assert sum(v[0] for v in got.values()) == 3000 and sum(v[1] for v in got.values()) == 2000


def test_arrow_several_keys_and_empty_side(spark):
    users = spark.createDataFrame([(1, "eu", "ann"), (2, "eu", "bob")],
                                  "id long, region string, name string")
    orders = spark.createDataFrame([(1, "eu", 10.0), (1, "eu", 5.0), (4, "us", 1.0)],
                                   "user_id long, reg string, amount double")

    def f(key, us, os):
        names = [n for b in us for n in b.column("name").to_pylist()]
        total = sum(pc.sum(b.column("amount")).as_py() for b in os)
        yield pa.RecordBatch.from_pylist([{"key": [str(k) for k in key], "names": names,
                                           "total": float(total)}])

    out = co(users, orders, ("id", "region"), ("user_id", "reg")).applyInArrow(
        f, "key array<string>, names array<string>, total double")
    got = sorted((tuple(r.key), r.names, r.total) for r in out.collect())
    assert got == [(("1", "eu"), ["ann"], 15.0), (("2", "eu"), ["bob"], 0.0), (("4", "us"), [], 1.0)]


def test_arrow_big_key_streams_on_both_sides(spark):
    """One key with 1.5M records on each side, left read first: the worker stays flat."""
    n = 1_500_000
    a = spark.range(0, n, 1, 2).select(F.lit(7).alias("k"), F.col("id").alias("v"))
    b = spark.range(0, n, 1, 2).select(F.lit(7).alias("k"), (F.col("id") * 2).alias("w"))

    def f(key, lefts, rights):
        def rss():
            with open("/proc/self/statm") as fh:
                return int(fh.read().split()[1]) * 4096
        start = peak = rss()
        nl = total = biggest = 0
        for i, batch in enumerate(lefts):
            nl += batch.num_rows
            biggest = max(biggest, batch.num_rows)
            if i % 20 == 0:
                peak = max(peak, rss())
        for i, batch in enumerate(rights):
            total += pc.sum(batch.column("w")).as_py()
            biggest = max(biggest, batch.num_rows)
            if i % 20 == 0:
                peak = max(peak, rss())
        yield pa.RecordBatch.from_pylist([{"k": key, "nl": nl, "total": total,
                                           "biggest": biggest, "grew": peak - start}])

    (got,) = co(a, b).applyInArrow(f, "k int, nl long, total long, biggest long, grew long").collect()
    assert (got.k, got.nl, got.total) == (7, n, n * (n - 1))
    assert got.biggest <= 10_000  # Spark's Arrow batch size: never the whole key at once
    assert got.grew < 100 * 2**20, f"worker grew by {got.grew / 2**20:.0f} MiB"


def test_arrow_errors(left, right):
    with pytest.raises(FullWindowTypeError,
                       match=r"coGroup applyInArrow: func must be a function \(key, left_batches, "
                             r"right_batches\) taking and yielding pyarrow.RecordBatch"):
        co(left, right).applyInArrow(None, SUMMARY)
    with pytest.raises(FullWindowTypeError, match=r"coGroup applyInArrow: schema must be a StructType"):
        co(left, right).applyInArrow(arrow_summarize, None)
    with pytest.raises(PythonException,
                       match=r"SchemaMismatchError.*coGroup applyInArrow: partition \d+: func must "
                             r"yield pyarrow.RecordBatch \(or Table\), got tuple"):
        co(left, right).applyInArrow(lambda k, l, r: [(k, 1)], "k long, n long").collect()
    with pytest.raises(PythonException,
                       match=r"SchemaMismatchError.*coGroup applyInArrow: partition \d+: a batch with "
                             r"schema \[k: string\] does not fit"):
        co(left, right).applyInArrow(
            lambda k, l, r: [pa.RecordBatch.from_pylist([{"k": "x"}])], "k long").collect()
    with pytest.raises(PythonException, match=r"ValueError: bad key"):
        co(left, right).applyInArrow(lambda k, l, r: (_ for _ in ()).throw(ValueError(f"bad key {k}")),
                                     "k long").collect()


# ---- a key holding half of both inputs, in a 1 GiB driver and a 1 GiB Python worker -----------

# each side's records, half of them under key 0, and the characters of payload per record (a
# multiple of 32): key 0 holds 2 x 400,000 x (256 + 16) bytes of Arrow data, 218 MB, as much as
# 1,200,000 records of 160 characters did, in two thirds of the records (the rows form's Python
# time goes by the record). The forms' workers grew by 12-24 MiB at this size (2026-12, 2 cores),
# under the bound of a third of the key (69 MiB); a form holding the key whole grows by more
# than the key
HALF_ROWS = 800_000
PAYLOAD = 256


def test_every_form_streams_a_key_holding_half_of_both_inputs_in_1g():
    """Each side has HALF_ROWS records with a PAYLOAD-character string, half of them under key
    0 (about 110 MB of Arrow per side for that key, several times that as Rows), run through
    the rows, pandas and Arrow forms with a 1 GiB driver and spark.executor.pyspark.memory=1g.
    Every form completes with the right counts and the worker's memory stays far below the
    key's size (``cogroup().applyInArrow`` loads both sides of a key whole)."""
    proc = run_python(f"""
        import json
        import pandas as pd
        import pyarrow as pa
        import fullwindow
        from fullwindow import EndOfStreamWindows
        from pyspark.sql import functions as F

        spark = fullwindow.session(master="local[2]", conf={{
            "spark.driver.memory": "1g", "spark.executor.pyspark.memory": "1g",
            "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "4"}})
        spark.sparkContext.setLogLevel("ERROR")
        n = {HALF_ROWS}

        def side(mult):
            return spark.range(0, n, 1, 2).select(
                F.when(F.col("id") % 2 == 0, F.lit(0))
                .otherwise((F.col("id") / 2).cast("long") % 50 + 1).alias("k"),
                (F.col("id") * mult).alias("v"),
                F.repeat(F.substring(F.sha2(F.col("id").cast("string"), 256), 1, 32),
                         {PAYLOAD // 32}).alias("s"))

        def rss():
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * 4096

        def meter(sizes):
            start = peak = rss()
            nl = nr = total = since = 0
            for side, size, v in sizes:
                if side == 0:
                    nl += size
                else:
                    nr += size
                total += v
                since += size
                if since >= 20_000:
                    peak, since = max(peak, rss()), 0
            return nl, nr, total, max(peak, rss()) - start

        def rows_form(key, lefts, rights):
            import itertools
            sizes = itertools.chain(((0, 1, r.v) for r in lefts), ((1, 1, r.v) for r in rights))
            yield (key,) + meter(sizes)

        def pandas_form(key, lefts, rights):
            import itertools
            sizes = itertools.chain(((0, len(f), int(f.v.sum())) for f in lefts),
                                    ((1, len(f), int(f.v.sum())) for f in rights))
            nl, nr, total, grew = meter(sizes)
            yield pd.DataFrame({{"k": [key], "nl": [nl], "nr": [nr], "total": [total],
                                "grew": [grew]}})

        def arrow_form(key, lefts, rights):
            import itertools
            import pyarrow.compute as pc
            sizes = itertools.chain(
                ((0, b.num_rows, pc.sum(b.column("v")).as_py()) for b in lefts),
                ((1, b.num_rows, pc.sum(b.column("v")).as_py()) for b in rights))
            nl, nr, total, grew = meter(sizes)
            yield pa.RecordBatch.from_pylist([{{"k": key, "nl": nl, "nr": nr, "total": total,
                                               "grew": grew}}])

        schema = "k long, nl long, nr long, total long, grew long"
        window = side(1).keyBy("k").coGroup(side(3).keyBy("k")).window(EndOfStreamWindows.get())
        out = {{}}
        for name, form in (("apply", window.apply), ("applyInPandas", window.applyInPandas),
                           ("applyInArrow", window.applyInArrow)):
            f = {{"apply": rows_form, "applyInPandas": pandas_form, "applyInArrow": arrow_form}}[name]
            out[name] = [list(r) for r in form(f, schema).collect()]
        heap = spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory()
        print("RESULT " + json.dumps({{"out": out, "heap": heap}}))
    """, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    line = next(l for l in proc.stdout.splitlines() if l.startswith("RESULT "))
    result = json.loads(line[len("RESULT "):])
    assert result["heap"] <= 1.1 * 2**30
    n = HALF_ROWS
    heavy = n // 2
    heavy_total = 4 * sum(range(0, n, 2))  # left v = id, right v = 3 * id, over even ids
    key_bytes = 2 * heavy * (PAYLOAD + 16)  # the key's records, both sides, as bare Arrow data
    grew = {}
    for name, rows in result["out"].items():
        by_key = {k: (nl, nr, total, g) for k, nl, nr, total, g in rows}
        assert len(by_key) == 51, name
        assert by_key[0][:3] == (heavy, heavy, heavy_total), name
        assert sum(v[0] for v in by_key.values()) == n and sum(v[1] for v in by_key.values()) == n
        grew[name] = by_key[0][3]
    print("COGROUP HEAVY: key %d MiB, worker grew %s" % (
        key_bytes >> 20, {k: f"{v / 2**20:.1f} MiB" for k, v in grew.items()}))
    for name, g in grew.items():
        assert g < key_bytes / 3, f"{name}: the worker grew by {g / 2**20:.0f} MiB"


# ---- the merged stream's layout ---------------------------------------------------------------

def _alike_sides(spark):
    """Two sides whose columns have alike types in other orders and numbers, with nulls: the
    merged stream gives columns of one type to both sides (see CoGroupLayout)."""
    left = spark.createDataFrame(
        [("a1", 1, None, 1.5, (1, "s")), (None, 2, "b2", None, None), ("a3", 1, "b3", 3.5, (3, None))],
        "a string, k long, b string, x double, s struct<i:int,t:string>")
    right = spark.createDataFrame(
        [(9.0, 1, "c1", None, "e1", (7, "u")), (None, 3, None, "d2", None, None)],
        "y double, k long, c string, d string, e string, t struct<i:int,t:string>")
    return left, right


def test_alike_columns_keep_each_sides_values_in_every_form(spark):
    left, right = _alike_sides(spark)
    want_left = {tuple(r) for r in left.collect()}
    want_right = {tuple(r) for r in right.collect()}

    def rows(key, ls, rs):
        for r in ls:
            yield ("L", key, repr(tuple(r)), ",".join(r.__fields__))
        for r in rs:
            yield ("R", key, repr(tuple(r)), ",".join(r.__fields__))

    def frames(key, ls, rs):
        import pandas as pd
        for side, it in (("L", ls), ("R", rs)):
            for pdf in it:
                for rec in pdf.astype(object).where(pdf.notna(), None).itertuples(index=False):
                    vals = tuple(tuple(v.values()) if isinstance(v, dict) else v for v in rec)
                    yield pd.DataFrame({"side": [side], "k": [key], "rec": [repr(vals)],
                                        "cols": [",".join(pdf.columns)]})

    def batches(key, ls, rs):
        for side, it in (("L", ls), ("R", rs)):
            for b in it:
                for rec in b.to_pylist():
                    vals = tuple(tuple(v.values()) if isinstance(v, dict) else v
                                 for v in rec.values())
                    yield pa.RecordBatch.from_pylist([{"side": side, "k": key, "rec": repr(vals),
                                                       "cols": ",".join(b.schema.names)}])

    schema = "side string, k long, rec string, cols string"
    grouped = co(left, right)
    for name, out in (("apply", grouped.apply(rows, schema)),
                      ("applyInPandas", grouped.applyInPandas(frames, schema)),
                      ("applyInArrow", grouped.applyInArrow(batches, schema))):
        got = out.collect()
        assert {r.cols for r in got if r.side == "L"} == {"a,k,b,x,s"}, name
        assert {r.cols for r in got if r.side == "R"} == {"y,k,c,d,e,t"}, name
        # structs come back as tuples in every form (Rows compare as tuples)
        norm = lambda text: eval(text)  # noqa: E731 - repr of plain values
        assert {norm(r.rec) for r in got if r.side == "L"} == \
            {tuple(tuple(v) if isinstance(v, Row) else v for v in t) for t in want_left}, name
        assert {norm(r.rec) for r in got if r.side == "R"} == \
            {tuple(tuple(v) if isinstance(v, Row) else v for v in t) for t in want_right}, name
        assert sorted(r.k for r in got) == [1, 1, 1, 2, 3], name


def test_sides_of_alike_types_share_the_streams_columns(spark):
    # both sides (k long, v long, x double): the stream sends [side, k, v, x], not the two
    # sides' columns side by side; bytes sent to Python stay within 1.3x of the same records
    # through a keyed mapPartition (one input, no side column); side by side they were 2.4x
    a = spark.range(0, 20000, 1, 2).select((F.col("id") % 50).alias("k"), F.col("id").alias("v"),
                                           (F.col("id") * 0.5).alias("x"))

    def count(key, ls, rs):
        yield (key, sum(1 for _ in ls), sum(1 for _ in rs))

    out = co(a, a).apply(count, "k long, nl long, nr long")
    assert sorted(out.collect())[0] == (0, 400, 400)
    sent = fullwindow.operator_metrics(out)["FullWindowCoGroup.pythonDataSent"]
    one = a.unionByName(a).keyBy("k").fullWindowPartition().mapPartition(
        lambda key, rows: [(key, sum(1 for _ in rows))], "k long, n long")
    assert len(one.collect()) == 50
    alone = fullwindow.operator_metrics(one)["FullWindowKeyedMapPartition.pythonDataSent"]
    assert 0 < sent < 1.3 * alone, (sent, alone)
