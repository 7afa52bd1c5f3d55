"""Keyed Python aggregates (with merge) and BATCH reduce combine before the exchange: results
equal to the uncombined path (spark.fullwindow.combine.enabled=false), the map-side step in the
plan, its bound in keys and bytes (seen in its row counts), when records pass through, when
nothing combines, and the errors."""
from __future__ import annotations

import re

import pytest
from pyspark.errors import PythonException
from pyspark.sql import Row
from pyspark.sql import functions as F

import fullwindow
from fullwindow import AggregateFunction, ConfigurationError, EndOfStreamWindows
from helpers import executed_plan, needs_connect_result_metrics

ENABLED = "spark.fullwindow.combine.enabled"
MAX_KEYS = "spark.fullwindow.combine.maxKeys"
MAX_BYTES = "spark.fullwindow.combine.maxBytes"
BATCH = "spark.sql.execution.arrow.maxRecordsPerBatch"


@pytest.fixture(scope="module")
def df(spark):
    # 400 records in 4 input partitions; key k = id % 7, null for every 11th record
    return spark.range(0, 400, 1, 4).select(
        F.when(F.col("id") % 11 == 0, F.lit(None)).otherwise(F.col("id") % 7).alias("k"),
        F.col("id").alias("v"), (F.col("id") % 3).cast("double").alias("x"))


@pytest.fixture()
def conf(spark):
    """Sets session settings for one test, then unsets them."""
    touched = []

    def set_conf(**values):
        for key, value in values.items():
            spark.conf.set(key, value)
            touched.append(key)
    yield set_conf
    for key in touched:
        spark.conf.unset(key)


def uncombined(spark, build):
    """``build()``'s rows with combining off: what every record crossing the exchange gives."""
    spark.conf.set(ENABLED, "false")
    try:
        out = build()
        assert "Combine" not in executed_plan(out)
        return collected(out)
    finally:
        spark.conf.unset(ENABLED)


def collected(out):
    """``out``'s rows as tuples, in an order that does not care for nulls."""
    return sorted((tuple(r) for r in out.collect()), key=repr)


def combine_rows(out):
    """The map-side step's rows in and out (after an action on ``out``)."""
    m = fullwindow.operator_metrics(out)
    ins = [v for k, v in m.items() if k.endswith("Combine.numInputRows")]
    outs = [v for k, v in m.items() if k.endswith("Combine.numOutputRows")]
    assert len(ins) == len(outs) == 1, m
    return ins[0], outs[0]


class Stats(AggregateFunction):
    """Count, sum and the sorted set of names per key: associative, order-free."""

    def create_accumulator(self):
        return (0, 0, frozenset())

    def add(self, row, acc):
        return (acc[0] + 1, acc[1] + row.v, acc[2] | {row.v % 5})

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1], a[2] | b[2])

    def get_result(self, acc):
        return (acc[0], acc[1], sorted(acc[2]))


STATS = "n long, total long, fives array<long>"


class NoMerge(AggregateFunction):
    def create_accumulator(self):
        return 0

    def add(self, row, acc):
        return acc + row.v

    def get_result(self, acc):
        return acc


def bigger(a, b):
    return a if (a.v, a.x) >= (b.v, b.x) else b


def add_up(a, b):
    return Row(k=a.k, v=a.v + b.v, x=a.x + b.x)


def plan_combines(plan: str, node: str) -> None:
    """``node`` above one exchange by the key, whose child is the map-side step."""
    assert plan.count("Exchange") == 1, plan
    lines = plan.splitlines()

    def at(text: str) -> int:
        found = [i for i, line in enumerate(lines) if text in line]
        assert len(found) == 1, (text, plan)
        return found[0]

    exchange = at("Exchange hashpartitioning(k#")
    assert at(f"{node} keys=[k#") < exchange, plan
    assert at(f"{node}Combine function=") == exchange + 1, plan


AGGREGATES = {
    "fullWindowPartition": lambda df: df.keyBy("k").fullWindowPartition().aggregate(Stats(), STATS),
    "window": lambda df: df.keyBy("k").window(EndOfStreamWindows.get()).aggregate(Stats(), STATS),
}
REDUCES = {
    "fullWindowPartition": lambda df, f: df.keyBy("k").fullWindowPartition().reduce(f),
    "window": lambda df, f: df.keyBy("k").window(EndOfStreamWindows.get()).reduce(f),
    "keyBy": lambda df, f: df.keyBy("k").reduce(f),
}


# ---- results and plans ------------------------------------------------------------------------

@pytest.mark.parametrize("form", sorted(AGGREGATES))
def test_aggregate_with_merge_combines_with_the_uncombined_results(spark, df, form):
    build = AGGREGATES[form]
    out = build(df)
    assert out.columns == ["k", "n", "total", "fives"]
    got = collected(out)
    assert got == uncombined(spark, lambda: build(df))
    assert len(got) == 8  # 7 keys and null
    assert (None, 37, sum(range(0, 400, 11)), [0, 1, 2, 3, 4]) in got
    plan_combines(executed_plan(out), "FullWindowKeyedAggregate")


@pytest.mark.parametrize("form", sorted(REDUCES))
@pytest.mark.parametrize("func", [bigger, add_up], ids=["bigger", "add_up"])
def test_reduce_combines_with_the_uncombined_results(spark, df, form, func):
    build = REDUCES[form]
    out = build(df, func)
    assert out.columns == df.columns
    got = collected(out)
    assert got == uncombined(spark, lambda: build(df, func))
    assert len(got) == 8
    plan_combines(executed_plan(out), "FullWindowKeyedReduce")


@needs_connect_result_metrics()
def test_rows_in_and_out_of_the_combine(df):
    out = df.keyBy("k").fullWindowPartition().aggregate(Stats(), STATS)
    out.collect()
    rows_in, rows_out = combine_rows(out)
    assert rows_in == 400
    assert rows_out == 4 * 8  # one partial result per key and input partition
    m = fullwindow.operator_metrics(out)
    assert m["FullWindowKeyedAggregate.numInputRows"] == 32
    assert m["FullWindowKeyedAggregate.numOutputRows"] == 8


def test_several_keys_with_nulls_nans_and_signed_zeros(spark):
    rows = [(k1, k2, i) for i in range(60)
            for k1, k2 in [(float("nan"), "a"), (0.0, None), (-0.0, None), (None, "a"),
                           (1.5, "b")][i % 5:i % 5 + 1]]
    data = spark.createDataFrame(rows, "k1 double, k2 string, v long").repartition(3)

    def build():
        return data.keyBy("k1", "k2").fullWindowPartition().aggregate(Stats(), STATS)

    def reduced():
        return data.keyBy("k1", "k2").reduce(lambda a, b: (a.k1, a.k2, a.v + b.v))

    got = sorted((repr(r) for r in build().collect()))
    assert got == sorted(repr(Row(k1=t[0], k2=t[1], n=t[2], total=t[3], fives=t[4]))
                         for t in uncombined(spark, build))
    assert len(got) == 4  # NaN, 0.0 = -0.0, null, 1.5
    totals = sorted(r.v for r in reduced().collect())
    assert totals == sorted(t[2] for t in uncombined(spark, reduced))
    assert sum(totals) == sum(range(60))


def test_struct_array_and_binary_keys(spark):
    data = spark.range(0, 90, 1, 3).select(
        F.struct((F.col("id") % 3).alias("a"), F.lit("s").alias("b")).alias("st"),
        F.array((F.col("id") % 2), F.lit(7)).alias("arr"),
        F.col("id").cast("string").substr(-1, 1).cast("binary").alias("bin"),
        F.col("id").alias("v"))
    for keys in (["st"], ["arr"], ["bin"], ["st", "arr"]):
        def build():
            return data.keyBy(*keys).fullWindowPartition().aggregate(Stats(), STATS)

        got = collected(build())
        assert got == uncombined(spark, build), keys
        assert sum(r[-3] for r in got) == 90, keys


# ---- the bound of the map side's dict ---------------------------------------------------------

@needs_connect_result_metrics()
def test_the_key_bound_hands_partial_results_on(spark, conf):
    # each input partition: 30 records of key 0, 30 of key 1, 30 of key 2, then 10 of key 0
    data = spark.range(0, 400, 1, 4).select(
        F.when(F.col("id") % 100 < 30, 0).when(F.col("id") % 100 < 60, 1)
         .when(F.col("id") % 100 < 90, 2).otherwise(0).alias("k"), F.col("id").alias("v"))

    def build():
        return data.keyBy("k").fullWindowPartition().aggregate(Stats(), STATS)

    expected = uncombined(spark, build)
    out = build()
    assert collected(out) == expected
    assert combine_rows(out) == (400, 4 * 3)  # unbounded: one per key and partition
    conf(**{MAX_KEYS: "2"})
    out = build()
    assert collected(out) == expected
    # two keys at most: keys 0 and 1 are handed on when key 2 comes, key 0 again later
    assert combine_rows(out) == (400, 4 * 4)
    def reduced():
        return data.keyBy("k").reduce(lambda a, b: (a.k, a.v + b.v))

    out = reduced()
    assert collected(out) == uncombined(spark, reduced)
    assert combine_rows(out) == (400, 4 * 4)


@needs_connect_result_metrics()
def test_a_heavy_key_never_grows_the_dict(spark, conf):
    # one key; its accumulator grows with every record (a list), and the byte bound is tiny:
    # the accumulator is handed on after every input batch of 10 records
    data = spark.range(0, 400, 1, 4).select(F.lit(1).alias("k"), F.col("id").alias("v"))

    class Collect(AggregateFunction):
        def create_accumulator(self):
            return []

        def add(self, row, acc):
            acc.append(row.v)
            return acc

        def merge(self, a, b):
            return a + b

        def get_result(self, acc):
            return (len(acc), sum(acc))

    def build():
        return data.keyBy("k").fullWindowPartition().aggregate(Collect(), "n long, total long")

    conf(**{BATCH: "10"})
    expected = uncombined(spark, build)
    assert expected == [(1, 400, sum(range(400)))]
    out = build()
    assert collected(out) == expected
    assert combine_rows(out) == (400, 4)
    conf(**{MAX_BYTES: "100b"})
    out = build()
    assert collected(out) == expected
    rows_in, rows_out = combine_rows(out)
    assert rows_in == 400 and 4 < rows_out <= 40  # several pieces per partition, still combined


@needs_connect_result_metrics()
def test_every_key_distinct_passes_records_through(spark, conf):
    # columns of the types whose Arrow form differs most between the JVM and pyspark
    data = spark.range(0, 400, 1, 4).select(
        F.col("id").alias("k"), F.col("id").alias("v"), F.lit(0.5).alias("x"),
        F.col("id").cast("string").alias("s"), F.timestamp_seconds("id").alias("ts"),
        F.col("id").cast("decimal(10,2)").alias("d"), F.to_date(F.lit("2024-01-02")).alias("day"))
    conf(**{MAX_KEYS: "4", BATCH: "50"})
    for build in (lambda: data.keyBy("k").fullWindowPartition().aggregate(Stats(), STATS),
                  lambda: data.keyBy("k").reduce(lambda a, b: a)):
        expected = uncombined(spark, build)
        out = build()
        assert collected(out) == expected
        assert len(expected) == 400
        # the dict filled in the first batch with nothing combined: the rest passed through
        assert combine_rows(out) == (400, 400)


# ---- a stub merge -----------------------------------------------------------------------------

class UnsupportedOperationException(Exception):
    """What a port of Java's ``throw new UnsupportedOperationException()`` raises."""


class Stub(Stats):
    """Stats whose merge is one of the stubs Flink code has (FLIP-380's full-window aggregate
    never calls merge): it raises, or returns None. It would fail the job, or lose every count,
    if it were ever called on a partial result."""

    def __init__(self, kind):
        self.kind = kind

    def merge(self, a, b):
        if self.kind == "runtime":
            raise RuntimeError()  # Flink's own KeyedPartitionWindowedStreamITCase.testAggregate
        if self.kind == "not-implemented":
            raise NotImplementedError("merge is not needed for a full window")
        if self.kind == "unsupported":
            raise UnsupportedOperationException()
        # "none": a `pass` stub, which returns None


STUBS = ["runtime", "not-implemented", "unsupported", "none"]


def test_a_stub_merge_aggregates_without_combining(spark, df):
    expected = uncombined(spark, lambda: build_with(df, "fullWindowPartition", Stats()))
    assert (None, 37, sum(range(0, 400, 11)), [0, 1, 2, 3, 4]) in expected
    for form in sorted(AGGREGATES):
        for kind in STUBS:
            # every key is in each of the 4 input partitions: combined, its partial results
            # would need merge; the stub is never given one, and the result is the uncombined
            assert collected(build_with(df, form, Stub(kind))) == expected, (form, kind)


def build_with(df, form, func):
    keyed = df.keyBy("k")
    windowed = keyed.fullWindowPartition() if form == "fullWindowPartition" \
        else keyed.window(EndOfStreamWindows.get())
    return windowed.aggregate(func, STATS)


@needs_connect_result_metrics()
def test_with_a_stub_merge_every_record_crosses_the_exchange(spark, df, conf):
    for kind in STUBS:
        out = build_with(df, "fullWindowPartition", Stub(kind))
        assert len(collected(out)) == 8
        assert combine_rows(out) == (400, 400), kind  # nothing combined: no partial result
        assert fullwindow.operator_metrics(out)["FullWindowKeyedAggregate.numInputRows"] == 400
    # small batches and a key bound of 2: still no partial result leaves any partition
    conf(**{MAX_KEYS: "2", BATCH: "7"})
    out = build_with(df, "window", Stub("runtime"))
    assert len(collected(out)) == 8
    assert combine_rows(out) == (400, 400)


@needs_connect_result_metrics()
def test_a_working_merge_still_combines_by_default(df):
    out = df.keyBy("k").fullWindowPartition().aggregate(Stats(), STATS)
    out.collect()
    assert combine_rows(out) == (400, 4 * 8)


class MutatingMerge(Stats):
    """A working merge that changes its first argument in place and returns it (as Java code
    often does): the probe works on copies, so the partition's own accumulator is unchanged."""

    def create_accumulator(self):
        return [0, 0, set()]

    def add(self, row, acc):
        acc[0] += 1
        acc[1] += row.v
        acc[2].add(row.v % 5)
        return acc

    def merge(self, a, b):
        a[0] += b[0]
        a[1] += b[1]
        a[2] |= b[2]
        return a


def test_the_merge_probe_changes_no_accumulator(spark, df):
    def build():
        return df.keyBy("k").fullWindowPartition().aggregate(MutatingMerge(), STATS)

    got = collected(build())
    assert got == uncombined(spark, build)
    assert got == collected(build_with(df, "fullWindowPartition", Stats()))


# ---- what does not combine --------------------------------------------------------------------

def test_switch_off_no_merge_and_streaming_keep_todays_plan(spark, df, conf):
    def today(out, node):
        plan = executed_plan(out)
        assert "Combine" not in plan, plan
        assert plan.count("Exchange") == 1 and f"{node} keys=[k#" in plan, plan

    keyed = df.keyBy("k").fullWindowPartition()
    no_merge = keyed.aggregate(NoMerge(), "total long")
    today(no_merge, "FullWindowKeyedAggregate")
    assert sum(r.total for r in no_merge.collect()) == sum(range(400))
    conf(**{ENABLED: "false"})
    today(keyed.aggregate(Stats(), STATS), "FullWindowKeyedAggregate")
    today(keyed.reduce(bigger), "FullWindowKeyedReduce")
    today(df.keyBy("k").reduce(bigger), "FullWindowKeyedReduce")
    conf(**{ENABLED: "true", "spark.fullwindow.runtimeMode": "STREAMING"})
    running = df.keyBy("k").reduce(add_up)
    plan = executed_plan(running)
    assert "KeyedRunningReduce" in plan and "Combine" not in plan, plan
    assert running.count() == 400


def test_bad_settings(df, conf):
    keyed = df.keyBy("k").fullWindowPartition()
    conf(**{ENABLED: "maybe"})
    with pytest.raises(ConfigurationError, match=r"spark.fullwindow.combine.enabled is 'maybe'; "
                                                 r"expected true or false"):
        keyed.reduce(bigger)
    conf(**{ENABLED: "true", MAX_KEYS: "0"})
    with pytest.raises(ConfigurationError, match=r"spark.fullwindow.combine.maxKeys is '0'"):
        keyed.aggregate(Stats(), STATS)
    conf(**{MAX_KEYS: "10", MAX_BYTES: "lots"})
    with pytest.raises(ConfigurationError, match=r"spark.fullwindow.combine.maxBytes is 'lots'"):
        keyed.aggregate(Stats(), STATS)


# ---- errors -----------------------------------------------------------------------------------

class Unpicklable(AggregateFunction):
    def create_accumulator(self):
        import threading

        return [threading.Lock(), 0]

    def add(self, row, acc):
        acc[1] += 1
        return acc

    def merge(self, a, b):
        return [a[0], a[1] + b[1]]

    def get_result(self, acc):
        return acc[1]


def test_an_accumulator_that_cannot_cross_the_exchange(df):
    out = df.keyBy("k").fullWindowPartition().aggregate(Unpicklable(), "n long")
    with pytest.raises(PythonException) as e:
        out.collect()
    text = str(e.value)
    assert "FullWindowTypeError" in text, text
    assert re.search(r"keyed aggregate: partition \d+: the accumulator \[<unlocked _thread.lock "
                     r"object at 0x[0-9a-f]+>, \d+\] of key (\d|None) cannot be pickled to cross "
                     r"the exchange .*spark.fullwindow.combine.enabled=false", text), text


def test_a_result_that_does_not_fit_the_schema(df):
    class Bad(Stats):
        def get_result(self, acc):
            return (acc[0], "many", [])

    out = df.keyBy("k").fullWindowPartition().aggregate(Bad(), STATS)
    with pytest.raises(PythonException) as e:
        out.collect()
    assert "SchemaMismatchError" in str(e.value)
    assert re.search(r"keyed aggregate: partition \d+: field 'total' expects bigint, got 'many' "
                     r"\(str\)", str(e.value)), str(e.value)


def test_reduce_errors_name_the_partition_and_the_value(df):
    with pytest.raises(PythonException) as e:
        df.keyBy("k").reduce(lambda a, b: 42).collect()
    assert re.search(r"keyed reduce: partition \d+: func returned 42; it must return the combined "
                     r"row", str(e.value)), str(e.value)
    with pytest.raises(PythonException) as e:
        df.keyBy("k").fullWindowPartition().reduce(lambda a, b: (-1, a.v, a.x)).collect()
    assert "FullWindowValueError" in str(e.value)
    assert re.search(r"keyed reduce: partition \d+: func returned Row\(k=-1, v=\d+, x=[\d.]+\), "
                     r"whose key is not its inputs' key (\d|None); .*"
                     r"spark.fullwindow.combine.enabled=false", str(e.value)), str(e.value)


def test_a_reduce_that_changes_the_key_runs_with_the_switch_off(spark, df):
    rows = uncombined(spark, lambda: df.keyBy("k").reduce(lambda a, b: (-1, a.v + b.v, a.x)))
    assert len(rows) == 8 and sum(r[1] for r in rows) == sum(range(400))


def test_the_map_side_step_is_named_after_the_function(df):
    plan = executed_plan(df.keyBy("k").reduce(bigger))
    assert "FullWindowKeyedReduceCombine function=bigger, output=[k#" in plan, plan
    plan = executed_plan(df.keyBy("k").fullWindowPartition().aggregate(Stats(), STATS))
    assert re.search(r"FullWindowKeyedAggregateCombine function=Stats, output=\[k#\d+L?, v#\d+L?, "
                     r"x#\d+, __fullwindow_acc#\d+\]", plan), plan
