"""Non-keyed Python full windows on real Spark: mapPartition, mapPartitionInArrow,
aggregate(AggregateFunction), reduce, and process with its context and processing-time policies."""
from __future__ import annotations

import time

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark.errors import PythonException
from pyspark.sql import Row
from pyspark.sql import functions as F

import fullwindow
from fullwindow import FullWindowTypeError, FullWindowValueError
from fullwindow.functions import (MAX_TIMESTAMP, MIN_TIMESTAMP, AggregateFunction,
                                  ProcessWindowFunction)
from helpers import executed_plan, num_partitions, partitions


@pytest.fixture(scope="module")
def df(spark):
    # 4 partitions: ids 0..5 in partition 0 and 1, partitions 2 and 3 empty after the filter
    return spark.range(0, 12, 1, 4).filter("id < 6").select(
        (F.col("id") % 2).alias("k"), F.col("id").alias("v"),
        F.concat(F.lit("s"), F.col("id").cast("string")).alias("name"))


def by_partition(out, key="pid"):
    return sorted(out.collect(), key=lambda r: r[key])


def pid():
    from pyspark import TaskContext
    return TaskContext.get().partitionId()


# ---- mapPartition --------------------------------------------------------------------------

def test_map_partition_called_once_per_partition_including_empty(df):
    def summarize(rows):
        rows = list(rows)
        yield (pid(), len(rows), sum(r.v for r in rows))

    out = df.fullWindowPartition().mapPartition(summarize, "pid int, n long, total long")
    assert num_partitions(out) == 4
    assert [tuple(r) for r in by_partition(out)] == [(0, 3, 3), (1, 3, 12), (2, 0, 0), (3, 0, 0)]


def test_map_partition_rows_are_rows_and_outputs_may_be_tuples_rows_or_dicts(df):
    def f(rows):
        for r in rows:
            assert isinstance(r, Row) and r.asDict() == {"k": r[0], "v": r[1], "name": r[2]}
            if r.v % 3 == 0:
                yield (r.v, r.name.upper())
            elif r.v % 3 == 1:
                yield Row(v=r.v, name=r.name.upper())
            else:
                yield {"name": r.name.upper(), "v": r.v}

    out = df.fullWindowPartition().mapPartition(f, "v long, name string")
    assert sorted(tuple(r) for r in out.collect()) == [(i, f"S{i}") for i in range(6)]


def test_map_partition_keeps_partitioning_and_order(df):
    out = df.fullWindowPartition().mapPartition(lambda rows: ((pid(), r.v) for r in rows),
                                                "pid int, v long")
    parts = partitions(out)
    assert parts == [[(0, 0), (0, 1), (0, 2)], [(1, 3), (1, 4), (1, 5)], [], []]
    plan = executed_plan(out)
    assert "FullWindowMapPartition" in plan and "Exchange" not in plan


def test_map_partition_nested_and_null_values(spark):
    df = spark.createDataFrame(
        [(1, None, {"a": 1}, [1, 2], Row(x=1, y="p")), (2, "b", None, None, None)],
        "i int, s string, m map<string,int>, a array<int>, st struct<x:int,y:string>").coalesce(1)
    out = df.fullWindowPartition().mapPartition(
        lambda rows: ((r.i, r.s, r.m, r.a, r.st, r.st.y if r.st else None) for r in rows),
        "i int, s string, m map<string,int>, a array<int>, st struct<x:int,y:string>, y string")
    got = sorted(out.collect())
    assert got[0] == Row(i=1, s=None, m={"a": 1}, a=[1, 2], st=Row(x=1, y="p"), y="p")
    assert got[1] == Row(i=2, s="b", m=None, a=None, st=None, y=None)


def test_map_partition_function_may_stop_early(spark):
    df = spark.range(0, 50_000, 1, 2)

    def first_two(rows):
        it = iter(rows)
        yield next(it)
        yield next(it)

    out = df.fullWindowPartition().mapPartition(first_two, "id long")
    assert sorted(r.id for r in out.collect()) == [0, 1, 25_000, 25_001]


def test_map_partition_metrics(df):
    out = df.fullWindowPartition().mapPartition(lambda rows: ((r.v,) for r in rows if r.k == 0),
                                                "v long")
    out.collect()
    m = fullwindow.operator_metrics(out)
    assert m["FullWindowMapPartition.numInputRows"] == 6
    assert m["FullWindowMapPartition.numOutputRows"] == 3


def test_map_partition_memory_stays_bounded(spark):
    """A few million rows through one call: the function sees them while the partition is read,
    a bounded queue at a time, so the worker's memory does not grow with the partition."""
    rows = 3_000_000
    df = spark.range(0, rows, 1, 1).select(
        F.col("id"), F.concat(F.lit("x" * 60), F.col("id").cast("string")).alias("payload"))

    def watch(it):
        def rss():
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * 4096

        start = peak = rss()
        n = chars = 0
        for r in it:
            n += 1
            chars += len(r.payload)
            if n % 100_000 == 0:
                peak = max(peak, rss())
        yield (n, chars, peak - start)

    (n, chars, grew), = [tuple(r) for r in
                         df.fullWindowPartition().mapPartition(watch, "n long, c long, grew long").collect()]
    assert n == rows
    # Holding the partition would take > 500 MB of Python objects; a bounded queue of decoded
    # batches takes a few MB.
    assert grew < 120 * 1024 * 1024, f"worker memory grew by {grew / 2**20:.0f} MiB"


# ---- mapPartitionInArrow ---------------------------------------------------------------------

def test_map_partition_in_arrow(df):
    def f(batches):
        n = 0
        for b in batches:
            n += b.num_rows
            yield pa.RecordBatch.from_arrays([pc.multiply(b.column("v"), 10)], ["v10"])
        yield pa.RecordBatch.from_arrays([pa.array([-n], pa.int64())], ["v10"])

    out = df.fullWindowPartition().mapPartitionInArrow(f, "v10 long")
    got = sorted(r.v10 for r in out.collect())
    assert got == [-3, -3, 0, 0, 0, 10, 20, 30, 40, 50]  # each partition, empty ones too
    assert "FullWindowMapPartitionInArrow" in executed_plan(out)


def test_map_partition_in_arrow_table_output_and_cast(df):
    def f(batches):
        for b in batches:
            yield pa.table({"v": pc.cast(b.column("v"), pa.int32())})  # int32 -> long
    out = df.fullWindowPartition().mapPartitionInArrow(f, "v long")
    assert sorted(r.v for r in out.collect()) == list(range(6))


# ---- aggregate with an AggregateFunction -----------------------------------------------------

class MeanAndCount(AggregateFunction):
    """Immutable tuple accumulator: only works if the returned accumulator is used."""

    def create_accumulator(self):
        return (0, 0)

    def add(self, row, acc):
        return (acc[0] + row.v, acc[1] + 1)

    def get_result(self, acc):
        return (pid(), acc[0] / acc[1], acc[1])

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])


def test_python_aggregate_immutable_accumulator(df):
    out = df.fullWindowPartition().aggregate(MeanAndCount(), "pid int, mean double, n long")
    assert [tuple(r) for r in by_partition(out)] == [(0, 1.0, 3), (1, 4.0, 3)]  # no empty ones
    assert "FullWindowAggregate" in executed_plan(out) and "Exchange" not in executed_plan(out)


def test_python_aggregate_single_value_result(df):
    class Total(AggregateFunction):
        def create_accumulator(self): return 0
        def add(self, row, acc): return acc + row.v
        def get_result(self, acc): return acc
        def merge(self, a, b): return a + b

    out = df.fullWindowPartition().aggregate(Total(), schema="total long")
    assert sorted(r.total for r in out.collect()) == [3, 12]


# ---- reduce ---------------------------------------------------------------------------------

def test_reduce(df):
    out = df.fullWindowPartition().reduce(lambda a, b: a if a.v > b.v else b)
    assert out.columns == df.columns
    assert sorted(tuple(r) for r in out.collect()) == [(0, 2, "s2"), (1, 5, "s5")]


def test_reduce_returning_tuples(df):
    out = df.fullWindowPartition().reduce(lambda a, b: (a.k + b.k, a.v + b.v, a.name + b.name))
    assert sorted(tuple(r) for r in out.collect()) == [(1, 3, "s0s1s2"), (2, 12, "s3s4s5")]


# ---- process and its context -----------------------------------------------------------------

class Describe(ProcessWindowFunction):
    def open(self, ctx):
        self.opened_with = ctx.partition_id

    def process(self, key, ctx, rows):
        w = ctx.window()
        n = sum(1 for _ in rows)
        yield (key, ctx.key, ctx.partition_id, self.opened_with, n, ctx.firing_id,
               ctx.firing_info.name, w.start, w.end, w.max_timestamp, ctx.current_watermark())


SCHEMA = ("key string, ctx_key string, pid int, opened int, n long, firing_id int, why string, "
          "start long, end long, max_ts long, wm long")


def test_process_context(df):
    out = df.fullWindowPartition().process(Describe(), SCHEMA)
    got = [tuple(r) for r in by_partition(out)]
    assert got == [
        (None, None, p, p, 3, 0, "ON_TIME", MIN_TIMESTAMP, MAX_TIMESTAMP, MAX_TIMESTAMP - 1,
         MAX_TIMESTAMP) for p in (0, 1)]
    assert "FullWindowProcess" in executed_plan(out)


def test_process_open_and_close_are_called(spark, df):
    opened = spark.sparkContext.accumulator(0)
    closed = spark.sparkContext.accumulator(0)

    class Counted(ProcessWindowFunction):
        def open(self, ctx):
            opened.add(1)

        def process(self, key, ctx, rows):
            yield (sum(1 for _ in rows),)

        def close(self):
            closed.add(1)

    out = df.fullWindowPartition().process(Counted(), "n long")
    assert sorted(r.n for r in out.collect()) == [3, 3]
    assert opened.value == 4 and closed.value == 4  # once per task, empty partitions too


class Clock(ProcessWindowFunction):
    def process(self, key, ctx, rows):
        list(rows)
        yield ("now", ctx.current_processing_time())


class Timers(ProcessWindowFunction):
    def process(self, key, ctx, rows):
        list(rows)
        ctx.register_processing_time_timer(200)
        ctx.register_processing_time_timer(100)
        ctx.register_event_time_timer(7)
        yield ("process", 0)

    def on_timer(self, ts, ctx):
        ctx.register_processing_time_timer(999)  # ignored once quiescing
        yield ("timer", ts)


@pytest.fixture()
def policy(spark):
    def set_policy(allow=None, end=None):
        for key, value in (("spark.fullwindow.processingTime.allow", allow),
                           ("spark.fullwindow.processingTime.endOfInput", end)):
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
    yield set_policy
    set_policy()


def one_partition(spark):
    return spark.range(0, 5, 1, 1)


def test_processing_time_fails_by_default_in_batch(spark, policy):
    with pytest.raises(PythonException, match="ProcessingTimeNotAllowedError.*processingTime.allow=FAIL"):
        one_partition(spark).fullWindowPartition().process(Clock(), "what string, t long").collect()
    with pytest.raises(PythonException, match="register_processing_time_timer.*FAIL"):
        one_partition(spark).fullWindowPartition().process(Timers(), "what string, t long").collect()


def test_processing_time_allowed(spark, policy):
    policy(allow="ALLOW")
    before = int(time.time() * 1000)
    (what, t), = [tuple(r) for r in
                  one_partition(spark).fullWindowPartition().process(Clock(), "what string, t long").collect()]
    assert what == "now" and before - 1000 <= t <= int(time.time() * 1000) + 1000


def test_timers_fire_and_quiesce_at_end_of_input(spark, policy):
    policy(allow="ALLOW", end="FIRE_AND_QUIESCE")
    out = one_partition(spark).fullWindowPartition().process(Timers(), "what string, t long")
    # the event-time timer first (the watermark jumps to its maximum); its on_timer registers a
    # processing-time timer (999), still before quiescing; then the processing-time service
    # quiesces and fires what is pending in time order, ignoring registrations made meanwhile
    # (the 999 that 100, 200 and 999 each register again)
    assert [tuple(r) for r in out.collect()] == [
        ("process", 0), ("timer", 7), ("timer", 100), ("timer", 200), ("timer", 999)]


def test_processing_timers_dropped_under_end_of_input_ignore(spark, policy):
    policy(allow="ALLOW", end="IGNORE")
    out = one_partition(spark).fullWindowPartition().process(Timers(), "what string, t long")
    assert [tuple(r) for r in out.collect()] == [("process", 0), ("timer", 7)]


def test_processing_time_ignore_drops_registrations(spark, policy):
    policy(allow="IGNORE", end="FIRE_AND_QUIESCE")
    out = one_partition(spark).fullWindowPartition().process(Timers(), "what string, t long")
    assert [tuple(r) for r in out.collect()] == [("process", 0), ("timer", 7)]


def test_bad_policy_values(spark, policy):
    policy(allow="SOMETIMES")
    with pytest.raises(fullwindow.ConfigurationError, match="processingTime.allow is 'SOMETIMES'"):
        one_partition(spark).fullWindowPartition().process(Clock(), "what string, t long")
    policy(allow="ALLOW", end="LATER")
    with pytest.raises(fullwindow.ConfigurationError, match="processingTime.endOfInput is 'LATER'"):
        one_partition(spark).fullWindowPartition().process(Clock(), "what string, t long")


# ---- errors ---------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["mapPartition", "mapPartitionInArrow"])
@pytest.mark.parametrize("bad", [None, 42, "name"])
def test_non_callable_functions(df, op, bad):
    with pytest.raises(FullWindowTypeError, match=rf"{op}: func must be a function"):
        getattr(df.fullWindowPartition(), op)(bad, "v long")


@pytest.mark.parametrize("bad", [None, 42])
def test_reduce_needs_a_function(df, bad):
    with pytest.raises(FullWindowTypeError, match="reduce: func must be a function"):
        df.fullWindowPartition().reduce(bad)


def test_aggregate_function_needs_its_methods(df):
    class Half:
        def create_accumulator(self): return 0
    with pytest.raises(FullWindowTypeError, match="aggregate: func must be an AggregateFunction.*has no add, get_result"):
        df.fullWindowPartition().aggregate(Half(), "x long")
    with pytest.raises(FullWindowTypeError, match="aggregate: func must be"):
        df.fullWindowPartition().aggregate(None, "x long")


def test_process_needs_a_process_window_function(df):
    with pytest.raises(FullWindowTypeError, match="process: func must be a ProcessWindowFunction"):
        df.fullWindowPartition().process(lambda rows: rows, "x long")


@pytest.mark.parametrize("schema", [42, None])
def test_schema_must_be_a_struct(df, schema):
    with pytest.raises(FullWindowTypeError, match="mapPartition: schema must be a StructType or a DDL string"):
        df.fullWindowPartition().mapPartition(lambda rows: rows, schema)


def test_bad_ddl_schema(df):
    with pytest.raises(FullWindowValueError, match="mapPartition: schema 'v lon g' is not a valid DDL schema"):
        df.fullWindowPartition().mapPartition(lambda rows: rows, "v lon g")


def test_output_value_that_does_not_fit_names_partition_and_value(df):
    def f(rows):
        for r in rows:
            yield (r.v, "not a number" if r.v == 4 else r.v)

    with pytest.raises(PythonException) as e:
        df.fullWindowPartition().mapPartition(f, "v long, w long").collect()
    msg = str(e.value)
    assert "SchemaMismatchError" in msg
    assert "mapPartition: partition 1: field 'w' expects bigint, got 'not a number' (str)" in msg


def test_output_row_of_the_wrong_width(df):
    # either partition may fail first: (0,) is the first row of partition 0, (3,) of partition 1
    with pytest.raises(PythonException, match=r"partition \d: the row \([03],\) has 1 fields but the schema struct<v:bigint,w:bigint> has 2"):
        df.fullWindowPartition().mapPartition(lambda rows: ((r.v,) for r in rows), "v long, w long").collect()


def test_function_returning_a_non_iterable(df):
    with pytest.raises(PythonException, match=r"mapPartition: func must return an iterable of rows.*got int 5"):
        df.fullWindowPartition().mapPartition(lambda rows: 5, "v long").collect()


def test_arrow_batch_that_does_not_fit(df):
    def f(batches):
        for b in batches:
            yield pa.RecordBatch.from_arrays([b.column("name")], ["other"])
    with pytest.raises(PythonException, match=r"mapPartitionInArrow: partition \d: a batch with schema .* does not fit struct<v:bigint>"):
        df.fullWindowPartition().mapPartitionInArrow(f, "v long").collect()


def test_user_exception_surfaces_with_its_python_traceback(df):
    def explode(rows):
        for r in rows:
            if r.v == 4:
                raise KeyError("no such customer 4")
            yield (r.v,)

    with pytest.raises(PythonException) as e:
        df.fullWindowPartition().mapPartition(explode, "v long").collect()
    msg = str(e.value)
    assert "KeyError: 'no such customer 4'" in msg
    assert "in explode" in msg
    assert "at org.apache.spark" not in msg  # Python's traceback, not a JVM dump


def test_reduce_returning_none(df):
    with pytest.raises(PythonException, match="reduce: partition \\d: func returned None; it must return the combined row"):
        df.fullWindowPartition().reduce(lambda a, b: None).collect()


def test_streaming_input_is_rejected_for_python_operations(spark):
    stream = spark.readStream.format("rate").load()
    with pytest.raises(fullwindow.StreamingNotSupportedError, match="mapPartition is a full-window operation"):
        stream.fullWindowPartition().mapPartition(lambda rows: rows, "value long")
    with pytest.raises(fullwindow.StreamingNotSupportedError, match="process is a full-window operation"):
        stream.fullWindowPartition().process(Describe(), SCHEMA)
