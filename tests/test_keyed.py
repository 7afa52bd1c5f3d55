"""Keyed full windows on real Spark: df.keyBy(...).fullWindowPartition() and
.window(EndOfStreamWindows.get()) (mapPartition/apply, mapPartitionInArrow, sortPartition,
aggregate, reduce, process), the not-windowed keyed reduce in BATCH and STREAMING runtime modes,
the heavy-key run in a 1 GiB driver, and every keyed error."""
from __future__ import annotations

import datetime
import decimal
import json
import math
import re
from collections import defaultdict

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark.errors import PythonException
from pyspark.sql import Row
from pyspark.sql import functions as F

import fullwindow
from fullwindow import (AggregateFunction, EndOfStreamWindows, FullWindowTypeError,
                        FullWindowValueError, KeyedDataFrame, KeyNotSortableError, Order,
                        ProcessWindowFunction, StreamingNotSupportedError)
from fullwindow.functions import MAX_TIMESTAMP, MIN_TIMESTAMP
from helpers import (executed_plan, needs_connect_result_metrics, partitions,
                     run_python, sorts_under_fullwindow)

KEYS = 5


@pytest.fixture(scope="module")
def df(spark):
    # 40 records over 4 input partitions; key k = id % 5, so every key is in every partition
    return spark.range(0, 40, 1, 4).select(
        (F.col("id") % KEYS).alias("k"), F.col("id").alias("v"),
        F.concat(F.lit("s"), F.col("id").cast("string")).alias("name"))


@pytest.fixture()
def runtime_mode(spark):
    def set_mode(mode):
        spark.conf.set("spark.fullwindow.runtimeMode", mode)
    yield set_mode
    spark.conf.unset("spark.fullwindow.runtimeMode")


@pytest.fixture()
def small_batches(spark):
    """Arrow batches of 3 records: keys span batches and batches hold several keys."""
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    spark.conf.set(key, "3")
    yield
    spark.conf.unset(key)


def expected_by_key(n=40, keys=KEYS):
    groups = defaultdict(list)
    for i in range(n):
        groups[i % keys].append(i)
    return groups


def count_and_sum(key, rows):
    n = total = 0
    for r in rows:
        assert r.k == key
        n += 1
        total += r.v
    yield (key, n, total)


def one_exchange_by(plan: str, column: str) -> None:
    assert plan.count("Exchange") == 1, plan
    assert re.search(rf"Exchange hashpartitioning\({column}#\d+", plan), plan


# ---- keyBy ------------------------------------------------------------------------------------

def test_key_by_gives_a_keyed_dataframe(df):
    keyed = df.keyBy("k")
    assert isinstance(keyed, KeyedDataFrame)
    assert keyed.keys == ("k",) and keyed.dataframe is df
    assert df.keyBy("k", "name").keys == ("k", "name")
    assert df.keyBy(["k", "name"]).keys == ("k", "name")
    assert "keys=(k)" in repr(keyed)


# ---- mapPartition -----------------------------------------------------------------------------

def test_map_partition_once_per_key(df):
    out = df.keyBy("k").fullWindowPartition().mapPartition(count_and_sum, "k long, n long, total long")
    got = sorted(tuple(r) for r in out.collect())
    exp = expected_by_key()
    assert got == [(k, len(exp[k]), sum(exp[k])) for k in range(KEYS)]


def test_map_partition_plan_has_one_exchange_by_key_and_the_named_node(df):
    out = df.keyBy("k").fullWindowPartition().mapPartition(count_and_sum, "k long, n long, total long")
    out.collect()
    plan = executed_plan(out)
    one_exchange_by(plan, "k")
    assert re.search(r"FullWindowKeyedMapPartition keys=\[k#\d+L\]", plan), plan
    # the node sorts its partitions itself, by columns (a string column beside the long key)
    assert "columnar=true" in plan and "Sort [" not in plan, plan


@needs_connect_result_metrics()
def test_the_sort_under_a_keyed_node_runs_outside_its_codegen_stage(spark, df):
    """The SortExec under a keyed Python node (the columnar sort off) hands its sorter's rows
    straight over: its whole-stage-codegen stage never runs (no time recorded), while the sort
    itself does and keeps its metrics. With code generation off, the plan has no stage and the
    same result."""
    spark.conf.set("spark.fullwindow.sort.columnar.enabled", "false")
    try:
        _sort_outside_codegen(spark, df)
    finally:
        spark.conf.unset("spark.fullwindow.sort.columnar.enabled")


def _sort_outside_codegen(spark, df):
    out = df.keyBy("k").fullWindowPartition().mapPartition(count_and_sum, "k long, n long, total long")
    got = sorted(tuple(r) for r in out.collect())
    exp = expected_by_key()
    assert got == [(k, len(exp[k]), sum(exp[k])) for k in range(KEYS)]
    sorts = sorts_under_fullwindow(out)
    assert len(sorts) == 1, sorts
    assert sorts[0]["stageTime"] == 0 and sorts[0]["peakMemory"] > 0, sorts
    spark.conf.set("spark.sql.codegen.wholeStage", "false")
    try:
        out = df.keyBy("k").fullWindowPartition().mapPartition(
            count_and_sum, "k long, n long, total long")
        assert sorted(tuple(r) for r in out.collect()) == got
        sorts = sorts_under_fullwindow(out)
        assert len(sorts) == 1 and sorts[0]["stageTime"] == -1 and sorts[0]["peakMemory"] > 0, sorts
    finally:
        spark.conf.unset("spark.sql.codegen.wholeStage")


def test_map_partition_no_second_exchange_when_already_clustered(df):
    out = df.repartition(3, "k").keyBy("k").fullWindowPartition().mapPartition(
        count_and_sum, "k long, n long, total long")
    assert len(out.collect()) == KEYS
    plan = executed_plan(out)
    one_exchange_by(plan, "k")  # the user's own repartition only


def test_each_key_lives_in_one_partition(df):
    def where(key, rows):
        from pyspark import TaskContext
        yield (key, TaskContext.get().partitionId(), sum(1 for _ in rows))

    out = df.keyBy("k").fullWindowPartition().mapPartition(where, "k long, pid int, n long")
    got = out.collect()
    assert sorted(r.k for r in got) == list(range(KEYS))  # each key once, so in one task


def test_several_keys_give_a_tuple(df):
    def f(key, rows):
        rows = list(rows)
        assert all((r.k, r.v % 2) == key for r in rows)
        yield (list(key), type(key).__name__, len(rows))

    out = df.withColumn("parity", F.col("v") % 2).keyBy("k", "parity").fullWindowPartition() \
        .mapPartition(f, "key array<long>, t string, n long")
    got = sorted((tuple(r.key), r.t, r.n) for r in out.collect())
    assert got == [((k, p), "tuple", 4) for k in range(KEYS) for p in (0, 1)]


def test_outputs_as_tuples_rows_dicts_lists_or_none(df):
    def f(key, rows):
        if key == 0:
            return None
        if key == 1:
            return [Row(k=key, n=len(list(rows)))]
        if key == 2:
            return [{"n": len(list(rows)), "k": key}]
        return ((key, 1) for _ in rows)

    out = df.keyBy("k").fullWindowPartition().mapPartition(f, "k long, n long")
    got = sorted(tuple(r) for r in out.collect())
    assert got == [(1, 8), (2, 8)] + [(3, 1)] * 8 + [(4, 1)] * 8


def test_function_reading_part_of_a_key_moves_on_to_the_next(df, small_batches):
    def first_two(key, rows):
        it = iter(rows)
        yield (key, next(it).v)
        yield (key, next(it).v)

    out = df.keyBy("k").fullWindowPartition().mapPartition(first_two, "k long, v long")
    got = defaultdict(list)
    for r in out.collect():
        got[r.k].append(r.v)
    assert sorted(got) == list(range(KEYS))
    assert all(len(vs) == 2 and all(v % KEYS == k for v in vs) for k, vs in got.items())


def test_keys_span_batches(df, small_batches):
    out = df.keyBy("k").fullWindowPartition().mapPartition(count_and_sum, "k long, n long, total long")
    exp = expected_by_key()
    assert sorted(tuple(r) for r in out.collect()) == [(k, len(exp[k]), sum(exp[k])) for k in range(KEYS)]


def test_empty_input(spark, df):
    calls = spark.sparkContext.accumulator(0)

    def f(key, rows):
        calls.add(1)
        yield (key, 0, 0)

    out = df.filter("v < 0").keyBy("k").fullWindowPartition().mapPartition(f, "k long, n long, total long")
    assert out.collect() == []
    assert calls.value == 0


def test_null_nan_and_signed_zero_keys_each_form_one_group(spark):
    rows = [(None, 1), (None, 2), (float("nan"), 3), (float("nan"), 4), (0.0, 5), (-0.0, 6),
            (1.5, 7), (None, 8), (float("nan"), 9)]
    df = spark.createDataFrame(rows, "k double, v long").repartition(3)

    def f(key, rows):
        yield (key, sorted(r.v for r in rows))

    got = df.keyBy("k").fullWindowPartition().mapPartition(f, "k double, vs array<long>").collect()
    by = {("nan" if r.k is not None and math.isnan(r.k) else r.k): r.vs for r in got}
    assert len(got) == 4, got
    assert by == {None: [1, 2, 8], "nan": [3, 4, 9], 0.0: [5, 6], 1.5: [7]}


@pytest.mark.parametrize("ddl,values", [
    ("string", ["b", "a", "é", "", None]),
    ("date", [datetime.date(2024, 1, d) for d in (3, 1, 2)] + [None]),
    ("timestamp", [datetime.datetime(2024, 1, 1, h, tzinfo=datetime.timezone.utc) for h in (2, 1)]),
    ("decimal(10,2)", [decimal.Decimal("1.50"), decimal.Decimal("-2.00"), None]),
    ("boolean", [True, False, None]),
    ("binary", [b"\x01", b"", b"\x00\x02"]),
    ("struct<a:int,b:string>", [Row(a=1, b="x"), Row(a=1, b="y"), Row(a=None, b="x"), None]),
    ("array<int>", [[1, 2], [1], [], None]),
])
def test_key_types(spark, ddl, values, small_batches):
    data = [(v, i) for i, v in enumerate(values * 3)]  # each value three times
    df = spark.createDataFrame(data, f"k {ddl}, i long").repartition(2)

    def f(key, rows):
        rows = list(rows)
        assert all(r.k == key for r in rows), (key, rows)
        yield (json.dumps(repr(key)), len(rows))

    got = df.keyBy("k").fullWindowPartition().mapPartition(f, "key string, n long").collect()
    assert sorted(r.n for r in got) == [3] * len(values)


def test_map_partition_metrics(df):
    out = df.keyBy("k").fullWindowPartition().mapPartition(count_and_sum, "k long, n long, total long")
    out.collect()
    m = fullwindow.operator_metrics(out)
    assert m["FullWindowKeyedMapPartition.numInputRows"] == 40
    assert m["FullWindowKeyedMapPartition.numOutputRows"] == KEYS


def test_output_that_does_not_fit_the_schema(df):
    def f(key, rows):
        yield (key, "many" if key == 3 else 1)

    with pytest.raises(PythonException) as e:
        df.keyBy("k").fullWindowPartition().mapPartition(f, "k long, n long").collect()
    assert "SchemaMismatchError" in str(e.value)
    assert re.search(r"keyed mapPartition: partition \d+: field 'n' expects bigint, got 'many' \(str\)",
                     str(e.value))


def test_user_exception_surfaces_with_its_traceback(df):
    def f(key, rows):
        if key == 2:
            raise KeyError("no such thing for key 2")
        return []

    with pytest.raises(PythonException, match=r"KeyError: 'no such thing for key 2'"):
        df.keyBy("k").fullWindowPartition().mapPartition(f, "k long").collect()


# ---- mapPartitionInArrow ----------------------------------------------------------------------

def test_map_partition_in_arrow_gets_only_the_keys_batches(df, small_batches):
    def f(key, batches):
        n = total = 0
        for b in batches:
            assert isinstance(b, pa.RecordBatch) and b.schema.names == ["k", "v", "name"]
            assert pc.all(pc.equal(b["k"], key)).as_py()
            n += b.num_rows
            total += pc.sum(b["v"]).as_py()
        yield pa.RecordBatch.from_pylist([{"k": key, "n": n, "total": total}])

    out = df.keyBy("k").fullWindowPartition().mapPartitionInArrow(f, "k long, n long, total long")
    exp = expected_by_key()
    assert sorted(tuple(r) for r in out.collect()) == [(k, len(exp[k]), sum(exp[k])) for k in range(KEYS)]
    assert "FullWindowKeyedMapPartitionInArrow keys=[k#" in executed_plan(out)


def test_map_partition_in_arrow_passthrough_and_tables(df):
    def f(key, batches):
        for b in batches:
            yield pa.table({"v": pc.cast(b["v"], pa.int32())})  # int32 -> long

    out = df.keyBy("k").fullWindowPartition().mapPartitionInArrow(f, "v long")
    assert sorted(r.v for r in out.collect()) == list(range(40))


# ---- sortPartition ----------------------------------------------------------------------------

def test_sort_partition_groups_by_key_and_sorts_within(df):
    out = df.keyBy("k").fullWindowPartition().sortPartition("v", Order.DESCENDING)
    parts = [p for p in partitions(out) if p]
    seen = set()
    for part in parts:
        keys = [r[0] for r in part]
        assert keys == sorted(keys)  # grouped: each key's records are contiguous
        for k in set(keys):
            assert k not in seen  # and in one partition only
            seen.add(k)
            vs = [r[1] for r in part if r[0] == k]
            assert vs == sorted(vs, reverse=True)
    assert seen == set(range(KEYS))
    plan = executed_plan(out)
    one_exchange_by(plan, "k")
    assert "FullWindowSortPartition order=[k#" in plan


def test_sort_partition_key_forms(df):
    keyed = df.keyBy("k").fullWindowPartition()
    for out in (keyed.sortPartition([("name", Order.ASCENDING), ("v", Order.DESCENDING)]),
                keyed.sortPartition(F.col("name")),
                keyed.sortPartition(2),
                keyed.sortPartition(lambda r: r.name)):
        assert out.columns == ["k", "v", "name"]
        for part in partitions(out):
            assert part == sorted(part, key=lambda r: (r[0], r[2]))


# ---- aggregate --------------------------------------------------------------------------------

def test_aggregate_columns_key_columns_first(df):
    out = df.keyBy("k").fullWindowPartition().aggregate(
        F.sum("v").alias("total"), F.count("*").alias("n"), F.collect_list("v").alias("vs"))
    assert out.columns == ["k", "total", "n", "vs"]
    exp = expected_by_key()
    got = sorted((r.k, r.total, r.n, sorted(r.vs)) for r in out.collect())
    assert got == [(k, sum(exp[k]), len(exp[k]), exp[k]) for k in range(KEYS)]
    plan = executed_plan(out)
    one_exchange_by(plan, "k")
    # combined before the exchange (tests/test_keyed_combine_columns.py): partial, then final
    assert "FullWindowAggregate" in plan and "partial_collect_list" in plan


def test_aggregate_columns_several_keys(df):
    out = df.withColumn("p", F.col("v") % 2).keyBy("p", "k").fullWindowPartition() \
        .aggregate(F.max("v").alias("hi"))
    assert out.columns == ["p", "k", "hi"]
    got = sorted(tuple(r) for r in out.collect())
    assert len(got) == 10 and (1, 4, 39) in got and (0, 0, 30) in got


class MeanAndCount(AggregateFunction):
    def create_accumulator(self):
        return (0, 0)

    def add(self, row, acc):
        return (acc[0] + row.v, acc[1] + 1)  # immutable: the returned one must be used

    def get_result(self, acc):
        return {"n": acc[1], "mean": acc[0] / acc[1]}

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])


def test_aggregate_function_key_columns_then_result_fields(df):
    out = df.keyBy("k").fullWindowPartition().aggregate(MeanAndCount(), "mean double, n long")
    assert out.columns == ["k", "mean", "n"]
    exp = expected_by_key()
    assert sorted(tuple(r) for r in out.collect()) == [
        (k, sum(exp[k]) / len(exp[k]), len(exp[k])) for k in range(KEYS)]
    assert "FullWindowKeyedAggregate keys=[k#" in executed_plan(out)


def test_aggregate_function_single_value(df):
    class Total(AggregateFunction):
        def create_accumulator(self): return 0
        def add(self, row, acc): return acc + row.v
        def get_result(self, acc): return acc

    out = df.keyBy("k").fullWindowPartition().aggregate(Total(), schema="total long")
    exp = expected_by_key()
    assert sorted(tuple(r) for r in out.collect()) == [(k, sum(exp[k])) for k in range(KEYS)]


# ---- reduce -----------------------------------------------------------------------------------

def test_reduce_one_row_per_key(df):
    out = df.keyBy("k").fullWindowPartition().reduce(lambda a, b: a if a.v > b.v else b)
    assert out.columns == df.columns
    assert sorted(tuple(r) for r in out.collect()) == [(k, 35 + k, f"s{35 + k}") for k in range(KEYS)]
    assert "FullWindowKeyedReduce keys=[k#" in executed_plan(out)


def test_reduce_returning_tuples_and_dicts(df, small_batches):
    out = df.keyBy("k").fullWindowPartition().reduce(
        lambda a, b: {"k": a.k, "v": a.v + b.v, "name": "x"} if b.v % 2 else (a.k, a.v + b.v, "y"))
    exp = expected_by_key()
    assert sorted((r.k, r.v) for r in out.collect()) == [(k, sum(exp[k])) for k in range(KEYS)]


# ---- process ----------------------------------------------------------------------------------

class PerKey(ProcessWindowFunction):
    def open(self, ctx):
        self.keys_seen = 0

    def process(self, key, ctx, rows):
        self.keys_seen += 1
        w = ctx.window()
        ctx.register_event_time_timer(100 + key)
        yield (key, ctx.key, sum(1 for _ in rows), ctx.firing_id, ctx.firing_info.name,
               w.start, w.end, ctx.current_watermark(), "process")

    def on_timer(self, ts, ctx):
        yield (ctx.key, ctx.key, ts, 0, "", 0, 0, 0, "timer")


PER_KEY = "key long, ctx_key long, n long, firing int, why string, start long, end long, wm long, what string"


def test_process_per_key_with_context_and_timers(df):
    out = df.keyBy("k").fullWindowPartition().process(PerKey(), PER_KEY)
    got = sorted(tuple(r) for r in out.collect())
    assert [g for g in got if g[-1] == "process"] == [
        (k, k, 8, 0, "ON_TIME", MIN_TIMESTAMP, MAX_TIMESTAMP, MAX_TIMESTAMP, "process") for k in range(KEYS)]
    # each key's timer fired, with that key's context
    assert sorted((g[0], g[2]) for g in got if g[-1] == "timer") == [(k, 100 + k) for k in range(KEYS)]
    assert "FullWindowKeyedProcess keys=[k#" in executed_plan(out)


def test_process_open_and_close_once_per_task(spark, df):
    opened = spark.sparkContext.accumulator(0)
    closed = spark.sparkContext.accumulator(0)
    calls = spark.sparkContext.accumulator(0)

    class Counted(ProcessWindowFunction):
        def open(self, ctx):
            opened.add(1)
            assert ctx.key is None

        def process(self, key, ctx, rows):
            calls.add(1)
            yield (key, sum(1 for _ in rows))

        def close(self):
            closed.add(1)

    out = df.keyBy("k").fullWindowPartition().process(Counted(), "k long, n long")
    assert sorted(tuple(r) for r in out.collect()) == [(k, 8) for k in range(KEYS)]
    assert calls.value == KEYS
    assert opened.value == closed.value and 1 <= opened.value <= 4  # tasks, not keys


# ---- EndOfStreamWindows -----------------------------------------------------------------------

def test_end_of_stream_windows_forms(df):
    window = df.keyBy("k").window(EndOfStreamWindows.get())
    full = df.keyBy("k").fullWindowPartition()
    exp = expected_by_key()

    applied = window.apply(count_and_sum, "k long, n long, total long")
    assert sorted(tuple(r) for r in applied.collect()) == [(k, len(exp[k]), sum(exp[k])) for k in range(KEYS)]
    assert "FullWindowKeyedApply keys=[k#" in executed_plan(applied)

    reduced = window.reduce(lambda a, b: a if a.v > b.v else b)
    assert sorted(reduced.collect()) == sorted(full.reduce(lambda a, b: a if a.v > b.v else b).collect())

    assert sorted(window.aggregate(F.sum("v")).collect()) == sorted(full.aggregate(F.sum("v")).collect())
    assert sorted(window.aggregate(MeanAndCount(), "mean double, n long").collect()) == \
        sorted(full.aggregate(MeanAndCount(), "mean double, n long").collect())
    assert sorted(window.process(PerKey(), PER_KEY).collect()) == \
        sorted(full.process(PerKey(), PER_KEY).collect())


@pytest.mark.parametrize("assigner,got", [
    (None, "got None"),
    ("global", "got str 'global'"),
    (EndOfStreamWindows, r"got the class EndOfStreamWindows \(call .get\(\) on it\)"),
])
def test_other_window_assigners_are_rejected(df, assigner, got):
    with pytest.raises(FullWindowTypeError,
                       match=rf"window: full windows take the window assigner EndOfStreamWindows.get\(\).*{got}"):
        df.keyBy("k").window(assigner)


# ---- keyed reduce, not windowed: BATCH vs STREAMING ------------------------------------------

def add(a, b):
    return Row(k=a.k, v=a.v + b.v, name=b.name)


@pytest.mark.parametrize("mode", [None, "AUTOMATIC", "BATCH"])
def test_keyed_reduce_in_batch_mode_gives_final_rows(df, runtime_mode, mode):
    if mode:
        runtime_mode(mode)
    out = df.keyBy("k").reduce(add)
    exp = expected_by_key()
    assert sorted((r.k, r.v) for r in out.collect()) == [(k, sum(exp[k])) for k in range(KEYS)]
    assert "FullWindowKeyedReduce" in executed_plan(out)


def test_keyed_reduce_in_streaming_mode_gives_running_rows_in_input_order(df, runtime_mode, small_batches):
    runtime_mode("STREAMING")
    out = df.keyBy("k").reduce(add)
    assert out.columns == df.columns
    rows = out.collect()
    assert len(rows) == 40  # one row per input record (an upsert stream)
    by_key = defaultdict(list)
    for r in rows:
        by_key[r.k].append((r.v, r.name))
    exp = expected_by_key()
    for k in range(KEYS):
        running, sums = 0, []
        for v in exp[k]:  # input order: id order
            running += v
            sums.append((running, f"s{v}"))
        assert by_key[k] == sums, k
    plan = executed_plan(out)
    assert "KeyedRunningReduce keys=[k#" in plan and "FullWindow" not in plan
    assert "__fullwindow_seq" not in ",".join(out.columns)


def test_full_window_operations_still_fail_in_streaming_mode(df, runtime_mode):
    runtime_mode("STREAMING")
    keyed = df.keyBy("k")
    cases = [
        ("keyed mapPartition", lambda: keyed.fullWindowPartition().mapPartition(count_and_sum, "k long, n long, t long")),
        ("keyed reduce", lambda: keyed.fullWindowPartition().reduce(add)),
        ("keyed apply", lambda: keyed.window(EndOfStreamWindows.get()).apply(count_and_sum, "k long, n long, t long")),
        ("keyed reduce", lambda: keyed.window(EndOfStreamWindows.get()).reduce(add)),
        ("aggregate", lambda: keyed.fullWindowPartition().aggregate(F.sum("v"))),
        ("sortPartition", lambda: keyed.fullWindowPartition().sortPartition("v")),
    ]
    for name, build in cases:
        with pytest.raises(StreamingNotSupportedError,
                           match=rf"{name} is a full-window operation and cannot run in STREAMING runtime mode"):
            build()


def test_keyed_reduce_on_a_streaming_dataframe(spark):
    stream = spark.readStream.format("rate").load()
    with pytest.raises(StreamingNotSupportedError,
                       match=r"keyed reduce cannot run on a streaming DataFrame: .*bounded input.*"
                             r"applyInPandasWithState"):
        stream.keyBy("value").reduce(lambda a, b: b)


def test_keyed_full_windows_on_a_streaming_dataframe(spark):
    stream = spark.readStream.format("rate").load()
    with pytest.raises(StreamingNotSupportedError,
                       match=r"keyed mapPartition is a full-window operation .*streaming DataFrame"):
        stream.keyBy("value").fullWindowPartition().mapPartition(lambda k, rows: rows, "value long")


@pytest.mark.parametrize("operation", ["reduce", "aggregate"])
def test_keyed_combining_windows_on_a_streaming_dataframe(spark, operation):
    """reduce and an AggregateFunction with merge combine before the exchange on a batch input;
    on a stream the refusal names the keyed operation, not its map side."""
    stream = spark.readStream.format("rate").load()
    w = stream.keyBy("value").fullWindowPartition()
    with pytest.raises(StreamingNotSupportedError,
                       match=rf"keyed {operation} is a full-window operation .*streaming DataFrame"):
        if operation == "reduce":
            w.reduce(lambda a, b: b)
        else:
            w.aggregate(MeanAndCount(), "mean double, n long")


def test_bad_runtime_mode_for_keyed_reduce(df, runtime_mode):
    runtime_mode("SOMETIMES")
    with pytest.raises(fullwindow.ConfigurationError, match=r"runtimeMode is 'SOMETIMES'"):
        df.keyBy("k").reduce(add)


# ---- errors -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def odd(spark):
    return spark.range(0, 4, 1, 2).select(
        F.col("id").alias("v"),
        F.create_map(F.lit("a"), F.col("id")).alias("m"),
        F.struct(F.col("id").alias("x"), F.create_map(F.lit("a"), F.col("id")).alias("mm")).alias("s"),
        F.array(F.create_map(F.lit("a"), F.col("id"))).alias("am"),
        F.col("id").cast("string").alias("name"))


@pytest.mark.parametrize("args", [(), ([],)])
def test_key_by_needs_keys(odd, args):
    with pytest.raises(FullWindowTypeError, match=r"keyBy: give at least one key column name"):
        odd.keyBy(*args)


@pytest.mark.parametrize("bad,got", [(None, "got None"), (3, "got int 3"),
                                     ("column", r"got Column .*add it as a column with withColumn")])
def test_key_must_be_a_column_name(odd, bad, got):
    if bad == "column":
        bad = F.col("v")
    with pytest.raises(FullWindowTypeError, match=rf"keyBy: key #0 must be the name \(str\) of a top-level column; {got}"):
        odd.keyBy(bad)


def test_unknown_key_column(odd):
    with pytest.raises(FullWindowValueError,
                       match=r"keyBy: key 'nope' is not a column of the input; columns are v, m, s, am, name"):
        odd.keyBy("v", "nope")
    with pytest.raises(FullWindowValueError, match=r"key 's.x' is not a column"):
        odd.keyBy("s.x")


def test_duplicate_and_ambiguous_keys(odd, spark):
    with pytest.raises(FullWindowValueError, match=r"keyBy: key 'v' is given twice"):
        odd.keyBy("v", "v")
    twice = odd.select("v", F.col("name").alias("v"))
    with pytest.raises(FullWindowValueError, match=r"keyBy: key 'v' is ambiguous: the input has 2 columns"):
        twice.keyBy("v")


@pytest.mark.parametrize("col,dtype", [("m", "map<string,bigint>"),
                                       ("s", r"struct<x:bigint,mm:map<string,bigint>>"),
                                       ("am", r"array<map<string,bigint>>")])
def test_keys_that_cannot_be_hashed_or_sorted(odd, col, dtype):
    with pytest.raises(KeyNotSortableError,
                       match=rf"keyBy: key '{col}' has type {dtype}, which cannot be hashed or sorted") as e:
        odd.keyBy(col)
    assert isinstance(e.value, TypeError)


@pytest.mark.skipif(not hasattr(F, "parse_json"), reason="this Spark line has no variant type")
def test_variant_key_cannot_be_hashed_or_sorted(spark):
    df = spark.range(2).select(F.parse_json(F.lit('{"a": 1}')).alias("j"))
    with pytest.raises(KeyNotSortableError, match=r"key 'j' has type variant"):
        df.keyBy("j")


@pytest.mark.skipif(not hasattr(F, "collate"), reason="this Spark line has no collations")
def test_collated_string_key(spark):
    df = spark.range(2).select(F.col("id").cast("string").alias("s"))
    lcase = df.select(F.collate("s", "UTF8_LCASE").alias("s"))
    with pytest.raises(FullWindowTypeError, match=r"keyBy: key 's' .*non-binary collation"):
        lcase.keyBy("s")


OPS = [
    ("keyed mapPartition", lambda w, f: w.fullWindowPartition().mapPartition(f, "v long")),
    ("keyed mapPartitionInArrow", lambda w, f: w.fullWindowPartition().mapPartitionInArrow(f, "v long")),
    ("keyed reduce", lambda w, f: w.fullWindowPartition().reduce(f)),
    ("keyed apply", lambda w, f: w.window(EndOfStreamWindows.get()).apply(f, "v long")),
    ("keyed reduce", lambda w, f: w.window(EndOfStreamWindows.get()).reduce(f)),
    ("keyed reduce", lambda w, f: w.reduce(f)),
]


@pytest.mark.parametrize("name,call", OPS)
@pytest.mark.parametrize("bad", [None, 42])
def test_functions_must_be_callable(df, name, call, bad):
    with pytest.raises(FullWindowTypeError, match=rf"{name}: func must be a function"):
        call(df.keyBy("k"), bad)


def test_aggregate_and_process_need_their_function_objects(df):
    keyed = df.keyBy("k")
    with pytest.raises(FullWindowTypeError, match=r"keyed aggregate: func must be an AggregateFunction"):
        keyed.fullWindowPartition().aggregate(None, "x long")
    with pytest.raises(FullWindowTypeError, match=r"keyed aggregate: give aggregate Columns"):
        keyed.window(EndOfStreamWindows.get()).aggregate()
    with pytest.raises(FullWindowTypeError, match=r"keyed aggregate: argument #1 must be an aggregate Column"):
        keyed.fullWindowPartition().aggregate(F.sum("v"), 3)
    with pytest.raises(FullWindowTypeError, match=r"keyed process: func must be a ProcessWindowFunction"):
        keyed.fullWindowPartition().process(None, "x long")
    with pytest.raises(FullWindowTypeError, match=r"keyed process: func must be a ProcessWindowFunction"):
        keyed.window(EndOfStreamWindows.get()).process(lambda k, c, r: r, "x long")


def test_aggregate_errors(df):
    keyed = df.keyBy("k").fullWindowPartition()
    with pytest.raises(FullWindowValueError, match=r"keyed aggregate: column `v` is not an aggregate"):
        keyed.aggregate(F.col("v"))
    with pytest.raises(FullWindowValueError,
                       match=r"keyed aggregate: the result field 'k' has the name of a key column"):
        keyed.aggregate(MeanAndCount(), "k long, n long")


def test_bad_schema(df):
    with pytest.raises(FullWindowTypeError, match=r"keyed mapPartition: schema must be a StructType"):
        df.keyBy("k").fullWindowPartition().mapPartition(count_and_sum, 42)
    with pytest.raises(FullWindowValueError, match=r"keyed apply: schema 'k lon g' is not a valid DDL"):
        df.keyBy("k").window(EndOfStreamWindows.get()).apply(count_and_sum, "k lon g")


# ---- a key much larger than memory --------------------------------------------------------------

HEAVY_ROWS = 8_000_000
# The execution memory of the 1 GiB driver: (heap - 300 MiB) x 0.3, at most about 210 MiB, less
# than the heavy key's 7.2M records take in the sort (about 290 MB of UnsafeRows and pointers),
# so its sort spills with fewer records than the default fraction (0.6) needed (20M).
HEAVY_MEMORY_FRACTION = "0.3"


def test_heavy_key_streams_through_a_1g_driver():
    """8M records, 7.2M of them under one key, through keyed mapPartition in local mode with a
    1 GiB driver. Held as Python Rows the heavy key would take about 0.8 GB in the worker,
    several times the bound below; the function counts it while tracking its own worker's
    memory, which must stay flat. The key also overflows the JVM's execution memory, so Spark's
    sort spills it to disk."""
    proc = run_python(f"""
        import json
        import fullwindow
        from pyspark.sql import functions as F

        spark = fullwindow.session(master="local[2]", conf={{
            "spark.driver.memory": "1g", "spark.memory.fraction": "{HEAVY_MEMORY_FRACTION}",
            "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "4"}})
        spark.sparkContext.setLogLevel("ERROR")
        n = {HEAVY_ROWS}
        # 90% of the records have key 0; the rest spread over 100 small keys
        df = spark.range(0, n, 1, 4).select(
            F.when(F.col("id") % 10 != 0, F.lit(0)).otherwise(F.col("id") % 1000 + 1).alias("k"),
            F.col("id").alias("v"))

        def count(key, rows):
            def rss():
                with open("/proc/self/statm") as f:
                    return int(f.read().split()[1]) * 4096
            start = peak = rss()
            seen = total = 0
            for r in rows:
                seen += 1
                total += r.v
                if seen % 250_000 == 0:
                    peak = max(peak, rss())
            yield (key, seen, total, max(peak, rss()) - start)

        out = df.keyBy("k").fullWindowPartition().mapPartition(
            count, "k long, n long, total long, grew long")
        rows = out.collect()
        heap = spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory()
        spill = 0
        plan = out._jdf.queryExecution().executedPlan()
        stack = [plan.executedPlan() if plan.nodeName() == "AdaptiveSparkPlan" else plan]
        while stack:
            node = stack.pop()
            # Spark's sort, or the keyed node itself when it sorts by columns
            if node.nodeName() == "Sort" or (node.nodeName().startswith("FullWindowKeyed")
                                             and node.metrics().contains("spillSize")):
                spill += node.metrics().apply("spillSize").value()
            if node.nodeName().endswith("QueryStage"):
                stack.append(node.plan())
            children = node.children()
            stack.extend(children.apply(i) for i in range(children.size()))
        print("RESULT " + json.dumps({{"rows": [list(r) for r in rows], "heap": heap, "spill": spill}}))
        print("HEAVY: heap %d MiB, sort spill %d MiB, worker grew %.1f MiB" % (
            heap >> 20, spill >> 20, max(r[3] for r in rows) / 2**20))
    """, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    line = next(l for l in proc.stdout.splitlines() if l.startswith("RESULT "))
    result = json.loads(line[len("RESULT "):])
    assert result["heap"] <= 1.1 * 2**30  # the driver (and local executor) JVM had 1 GiB
    rows = {k: (n, total, grew) for k, n, total, grew in result["rows"]}
    assert len(rows) == 101
    heavy_n = HEAVY_ROWS * 9 // 10
    assert rows[0][0] == heavy_n
    assert rows[0][1] == sum(range(HEAVY_ROWS)) - sum(range(0, HEAVY_ROWS, 10))
    assert sum(n for n, _, _ in rows.values()) == HEAVY_ROWS
    # ~0.8 GB of Rows if the key were held; streaming keeps the worker flat
    assert rows[0][2] < 150 * 2**20, f"the worker grew by {rows[0][2] / 2**20:.0f} MiB"
    assert result["spill"] > 0  # the heavy key did not fit in the sort's memory
