"""Keyed aggregate(*columns) combines before the exchange: Spark's partial aggregation on the
map side, one exchange by the key, the final aggregation after it (as groupBy(k).agg plans
them), the full-window step named on top. Results equal groupBy(k).agg's; the switch
spark.fullwindow.combine.enabled=false keeps the per-partition plan (every record crosses)."""
from __future__ import annotations

import math
import re

import pytest
from pyspark.sql import functions as F

import fullwindow
from fullwindow import ConfigurationError, EndOfStreamWindows, FullWindowValueError
from helpers import executed_plan, is_connect, needs_connect_result_metrics, session_conf

COMBINE = "spark.fullwindow.combine.enabled"


@pytest.fixture(scope="module")
def df(spark):
    # 48 records over 4 input partitions, every key in every partition; x is null for id % 7 == 0,
    # the key is null for id % 11 == 5; f (first/last) is the same within a key, so first and
    # last are well defined whatever order records meet in
    return spark.range(0, 48, 1, 4).select(
        F.when(F.col("id") % 11 == 5, F.lit(None)).otherwise(F.col("id") % 4).alias("k"),
        (F.col("id") % 3).alias("j"),
        F.when(F.col("id") % 7 == 0, F.lit(None)).otherwise(F.col("id")).alias("x"),
        (F.col("id") % 4 * 10).alias("f"))


@pytest.fixture()
def no_combine(spark):
    with session_conf(spark, {COMBINE: "false"}):
        yield


ALL = [
    lambda: F.count(F.lit(1)).alias("n"),
    lambda: F.count("x").alias("nx"),
    lambda: F.sum("x").alias("s"),
    lambda: F.min("x").alias("lo"),
    lambda: F.max("x").alias("hi"),
    lambda: F.avg("x").alias("mean"),
    lambda: F.first("f").alias("first"),
    lambda: F.last("f").alias("last"),
    lambda: F.first("x", ignorenulls=True).isNotNull().alias("any_x"),
    lambda: F.sort_array(F.collect_list("x")).alias("xs"),
    lambda: F.approx_count_distinct("x").alias("approx"),
]


def rows(out):
    return sorted((tuple(r) for r in out.collect()), key=repr)


def combined(plan: str, key: str = "k") -> None:
    """The plan of a keyed aggregate that combines: FullWindowAggregate on top of Spark's final
    aggregation, one exchange by the key, Spark's partial aggregation, the rows-in counter; no
    sort."""
    assert re.search(rf"FullWindowAggregate keys=\[{key}#\d+L?[,\]].*combined=true", plan), plan
    assert re.search(r"(Hash|ObjectHash|Sort)Aggregate\(keys=\[.*functions=\[partial_", plan), plan
    final = r"(Hash|ObjectHash|Sort)Aggregate\(keys=\[.*functions=\[(?!partial_)"
    assert re.search(final, plan), plan
    assert len(re.findall(r"Exchange hashpartitioning", plan)) == 1, plan
    assert "FullWindowCombineInput" in plan and "Sort [" not in plan, plan


def test_plan_has_partial_and_final_around_one_exchange(df):
    out = df.keyBy("k").fullWindowPartition().aggregate(F.count(F.lit(1)), F.sum("x"))
    assert out.columns == ["k", "count(1)", "sum(x)"]
    rows(out)
    plan = executed_plan(out)
    combined(plan)
    assert re.search(r"Exchange hashpartitioning\(k#\d+L, \d+\)", plan), plan
    # the same steps as Spark's own groupBy().agg
    native = executed_plan(df.groupBy("k").agg(F.count(F.lit(1)), F.sum("x")))
    steps = re.compile(r"(HashAggregate|Exchange hashpartitioning)")
    assert steps.findall(plan) == steps.findall(native)


def test_every_builtin_equals_group_by(df):
    cols = [c() for c in ALL]
    out = df.keyBy("k").fullWindowPartition().aggregate(*cols)
    assert out.columns == ["k"] + [c.split(" AS ")[-1] for c in out.columns[1:]]
    got, want = rows(out), rows(df.groupBy("k").agg(*[c() for c in ALL]))
    assert got == want
    assert len(got) == 5 and any(r[0] is None for r in got)  # the null key is a key
    combined(executed_plan(out))


def test_several_keys(df):
    def cols():
        return [F.sum("x").alias("s"), F.max("x").alias("hi")]
    out = df.keyBy("k", "j").fullWindowPartition().aggregate(*cols())
    assert out.columns == ["k", "j", "s", "hi"]
    assert rows(out) == rows(df.groupBy("k", "j").agg(*cols()))
    plan = executed_plan(out)
    assert re.search(r"FullWindowAggregate keys=\[k#\d+L, j#\d+L\]", plan), plan
    assert len(re.findall(r"Exchange hashpartitioning\(k#\d+L, j#\d+L", plan)) == 1, plan


def test_floating_point_keys_group_as_spark_groups_them(spark):
    values = [0.0, -0.0, float("nan"), float("-nan"), 1.5, None]
    data = spark.createDataFrame([(v, i) for i, v in enumerate(values * 3)], "d double, i long") \
        .repartition(3)
    out = data.keyBy("d").fullWindowPartition().aggregate(F.count(F.lit(1)).alias("n"))
    got = {("nan" if r.d is not None and math.isnan(r.d) else r.d): r.n for r in out.collect()}
    assert got == {0.0: 6, "nan": 6, 1.5: 3, None: 3}


def test_window_spelling_is_the_same(df):
    cols = [F.count(F.lit(1)).alias("n"), F.sum("x").alias("s")]
    out = df.keyBy("k").window(EndOfStreamWindows.get()).aggregate(*cols)
    assert out.columns == ["k", "n", "s"]
    assert rows(out) == rows(df.groupBy("k").agg(*cols))
    combined(executed_plan(out))


def test_expressions_over_aggregates(df):
    out = df.keyBy("k").fullWindowPartition().aggregate(
        (F.sum("x") / F.count(F.lit(1))).alias("ratio"), (F.max("x") + 1).alias("next"))
    want = df.groupBy("k").agg((F.sum("x") / F.count(F.lit(1))).alias("ratio"),
                               (F.max("x") + 1).alias("next"))
    assert rows(out) == rows(want)
    combined(executed_plan(out))


def test_input_already_keyed_needs_no_second_exchange(df):
    parted = df.repartition(3, "k")
    out = parted.keyBy("k").fullWindowPartition().aggregate(F.sum("x").alias("s"))
    assert rows(out) == rows(df.groupBy("k").agg(F.sum("x").alias("s")))
    plan = executed_plan(out)
    assert len(re.findall(r"Exchange hashpartitioning", plan)) == 1, plan


@needs_connect_result_metrics()
def test_metrics_rows_in_before_and_after_the_combine(df):
    out = df.keyBy("k").fullWindowPartition().aggregate(F.count(F.lit(1)).alias("n"))
    rows(out)
    m = fullwindow.operator_metrics(out)
    assert m["FullWindowAggregate.numInputRows"] == 48
    assert m["FullWindowAggregate.numOutputRows"] == 5
    # one partial row per key (the null key too) per input partition
    assert m["FullWindowAggregate.numCombinedRows"] == 4 * 5


def test_switched_off_keeps_the_per_partition_plan(df, no_combine):
    cols = [F.count(F.lit(1)).alias("n"), F.sum("x").alias("s"),
            F.sort_array(F.collect_list("x"))]
    out = df.keyBy("k").fullWindowPartition().aggregate(*cols)
    assert rows(out) == rows(df.groupBy("k").agg(*cols))
    plan = executed_plan(out)
    assert re.search(r"FullWindowAggregate perPartitionKeys=\[k#\d+L\]", plan), plan
    assert "partial_" not in plan and "FullWindowCombineInput" not in plan, plan
    exchange = r"Exchange hashpartitioning\(k#\d+L, \d+\), REPARTITION_BY_COL"
    assert len(re.findall(exchange, plan)) == 1, plan


def test_bad_switch_value(spark, df):
    with session_conf(spark, {COMBINE: "sometimes"}):
        with pytest.raises(ConfigurationError,
                           match=r"spark\.fullwindow\.combine\.enabled is 'sometimes'; expected "
                                 r"one of: true, false"):
            df.keyBy("k").fullWindowPartition().aggregate(F.sum("x"))


@pytest.mark.parametrize("bad, message", [
    (lambda: F.count_distinct("x"), "DISTINCT aggregates are not supported"),
    (lambda: F.col("x"), "column `x` is not an aggregate"),
    (lambda: F.col("k"), "column `k` is not an aggregate"),  # a key, though groupBy takes it
    (lambda: F.sum("x") + F.col("nope"), "nope"),  # Spark's own error, not "not an aggregate"
])
def test_refused_as_before(df, bad, message):
    with pytest.raises(Exception, match=message) as caught:
        df.keyBy("k").fullWindowPartition().aggregate(bad())
    assert isinstance(caught.value, FullWindowValueError) == ("nope" not in message)


def test_committed_then_recovered(spark, df, tmp_path):
    if is_connect(df):
        pytest.skip("recovery over Connect: tests/connect/test_connect_recovery.py")
    from fullwindow.recovery._jobs import _runtime

    def make():
        return df.keyBy("k").fullWindowPartition().aggregate(F.count(F.lit(1)).alias("n"),
                                                             F.sum("x").alias("s"))
    recovery = {"spark.fullwindow.recovery.enabled": "true",
                "spark.fullwindow.recovery.dir": str(tmp_path),
                "spark.fullwindow.recovery.jobId": "combine",
                "spark.fullwindow.eventStore.flushInterval": "100ms"}
    with session_conf(spark, recovery):
        try:
            first = make()
            want = rows(first)
            native = df.groupBy("k").agg(F.count(F.lit(1)).alias("n"), F.sum("x").alias("s"))
            assert want == rows(native)
            plan = executed_plan(first)
            assert "FullWindowCommit" in plan, plan
            combined(plan)
            fullwindow.recovery.flush(spark)
            _runtime.close_job(str(tmp_path / "combine"))  # as if the driver started again
            again = make()
            assert "FullWindowRecoveredScan" in executed_plan(again)
            assert rows(again) == want
        finally:
            fullwindow.recovery.cleanup(spark)
