"""aggregate(*columns) evaluated in the JVM, and the SQL hint's aggregate forms: one row per
non-empty partition (per key with GROUP BY), no exchange."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

import fullwindow
from fullwindow import FullWindowTypeError, FullWindowValueError
from helpers import (executed_plan, needs_connect_result_metrics, num_partitions,
                     partitions, sorts_under_fullwindow)


@pytest.fixture(scope="module")
def df(spark):
    # partitions 0 and 1 hold ids 0..2 and 3..5; partitions 2 and 3 are empty
    return spark.range(0, 12, 1, 4).filter("id < 6").select(
        (F.col("id") % 2).alias("k"), F.col("id").alias("v"), (F.col("id") * 1.5).alias("x"))


def test_builtin_aggregates_one_row_per_non_empty_partition(df):
    out = df.fullWindowPartition().aggregate(
        F.sum("v").alias("total"), F.count("*").alias("n"), F.avg("x").alias("mean"),
        F.max("v").alias("hi"), F.collect_list("v").alias("vs"))
    assert out.columns == ["total", "n", "mean", "hi", "vs"]
    got = sorted((r.total, r.n, r.mean, r.hi, sorted(r.vs)) for r in out.collect())
    assert got == [(3, 3, 1.5, 2, [0, 1, 2]), (12, 3, 6.0, 5, [3, 4, 5])]
    assert num_partitions(out) == 4


def test_aggregate_plan_has_no_exchange(df):
    out = df.fullWindowPartition().aggregate(F.sum("v"))
    out.collect()
    plan = executed_plan(out)
    assert "FullWindowAggregate" in plan
    assert "Exchange" not in plan
    # key-less: Spark's code-generated hash aggregate, whole partition as one group, no keys
    assert "HashAggregate(keys=[], functions=[sum(v" in plan


def test_aggregate_with_imperative_functions_uses_the_aggregation_iterator(df):
    out = df.fullWindowPartition().aggregate(F.collect_list("v").alias("vs"))
    assert sorted(sorted(r.vs) for r in out.collect()) == [[0, 1, 2], [3, 4, 5]]
    plan = executed_plan(out)
    assert "FullWindowAggregate" in plan and "Exchange" not in plan and "HashAggregate" not in plan


def test_aggregate_metrics(df):
    out = df.fullWindowPartition().aggregate(F.count("*"))
    out.collect()
    m = fullwindow.operator_metrics(out)
    assert m["FullWindowAggregate.numInputRows"] == 6
    assert m["FullWindowAggregate.numOutputRows"] == 2


def test_aggregate_expressions_over_aggregates(df):
    out = df.fullWindowPartition().aggregate((F.sum("v") * 2 + F.count("*")).alias("y"),
                                             F.first("k").alias("first_k"))
    assert sorted(r.y for r in out.collect()) == [9, 27]


def test_aggregate_of_all_empty_partitions(spark):
    out = spark.range(0, 4, 1, 2).filter("id > 10").fullWindowPartition().aggregate(F.count("*"))
    assert out.collect() == []  # unlike a global aggregate, which would give one row of 0


def test_aggregate_after_a_shuffle_keeps_its_partitioning(spark):
    df = spark.range(100).repartition(5, "id")
    out = df.fullWindowPartition().aggregate(F.count("*").alias("n"))
    assert sum(r.n for r in out.collect()) == 100
    assert executed_plan(out).count("Exchange") == 1  # the user's own repartition only


def test_not_an_aggregate_column(df):
    with pytest.raises(FullWindowValueError, match=r"aggregate: column `v` is not an aggregate"):
        df.fullWindowPartition().aggregate(F.col("v"))
    with pytest.raises(FullWindowValueError, match=r"is not an aggregate"):
        df.fullWindowPartition().aggregate(F.sum("v"), F.col("k") + 1)


def test_non_column_arguments(df):
    with pytest.raises(FullWindowTypeError, match=r"aggregate: argument #1 must be an aggregate Column"):
        df.fullWindowPartition().aggregate(F.sum("v"), 3)
    with pytest.raises(FullWindowTypeError, match=r"aggregate: give aggregate Columns"):
        df.fullWindowPartition().aggregate()


def test_unknown_column_in_an_aggregate(df):
    with pytest.raises(fullwindow.FullWindowAnalysisError, match=r"aggregate: .*nope"):
        df.fullWindowPartition().aggregate(F.sum("nope"))


def test_distinct_aggregates_are_rejected_clearly(df):
    with pytest.raises(FullWindowValueError, match=r"DISTINCT aggregates are not supported"):
        df.fullWindowPartition().aggregate(F.count_distinct("v"))


def test_streaming_input_is_rejected(spark):
    stream = spark.readStream.format("rate").load()
    with pytest.raises(fullwindow.StreamingNotSupportedError, match="aggregate is a full-window operation"):
        stream.fullWindowPartition().aggregate(F.sum("value"))


# ---- SQL -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def view(df):
    df.createOrReplaceTempView("fw_agg")
    return "fw_agg"


def test_sql_hint_aggregate_without_group_by(spark, view):
    q = spark.sql(f"SELECT /*+ FULL_WINDOW_PARTITION */ sum(v) AS s, count(*) AS n FROM {view}")
    assert sorted(tuple(r) for r in q.collect()) == [(3, 3), (12, 3)]
    plan = executed_plan(q)
    assert "FullWindowAggregate" in plan and "Exchange" not in plan


def test_sql_hint_aggregate_with_group_by(spark, view):
    q = spark.sql(f"SELECT /*+ FULL_WINDOW_PARTITION */ k, sum(v) AS s FROM {view} GROUP BY k")
    parts = [sorted(p) for p in partitions(q)]
    # one row per key per partition: partition 0 holds 0,1,2 and partition 1 holds 3,4,5
    assert parts == [[(0, 2), (1, 1)], [(0, 4), (1, 8)], [], []]
    plan = executed_plan(q)
    assert "FullWindowAggregate" in plan and "Exchange" not in plan


@needs_connect_result_metrics()
def test_a_sort_over_a_shuffle_runs_outside_its_codegen_stage(spark):
    spark.range(100).selectExpr("id % 3 AS k", "id AS v").repartition(5, "k") \
        .createOrReplaceTempView("fw_agg_shuffled")
    q = spark.sql("SELECT /*+ FULL_WINDOW_PARTITION */ k, sum(v) AS s FROM fw_agg_shuffled "
                  "GROUP BY k")
    got = q.collect()
    assert sorted(set(r.k for r in got)) == [0, 1, 2] and sum(r.s for r in got) == sum(range(100))
    sorts = sorts_under_fullwindow(q)
    # sorted by columns (the default): fullwindow's node, in no code-generated stage
    assert [s["name"] for s in sorts] == ["FullWindowColumnarSort"], sorts
    assert sorts[0]["stageTime"] == -1 and sorts[0]["peakMemory"] > 0, sorts
    spark.conf.set("spark.fullwindow.sort.columnar.enabled", "false")
    try:
        q = spark.sql("SELECT /*+ FULL_WINDOW_PARTITION */ k, sum(v) AS s FROM fw_agg_shuffled "
                      "GROUP BY k")
        assert sum(r.s for r in q.collect()) == sum(range(100))
        sorts = sorts_under_fullwindow(q)
    finally:
        spark.conf.unset("spark.fullwindow.sort.columnar.enabled")
    assert [s["name"] for s in sorts] == ["Sort"], sorts
    assert sorts[0]["stageTime"] == 0 and sorts[0]["peakMemory"] > 0, sorts


def test_sql_hint_group_by_with_order_by_and_having(spark, view):
    q = spark.sql(f"SELECT /*+ FULL_WINDOW_PARTITION */ k, sum(v) AS s FROM {view} "
                  f"GROUP BY k HAVING sum(v) > 1 ORDER BY s DESC")
    parts = partitions(q)
    assert parts == [[(0, 2)], [(1, 8), (0, 4)], [], []]
    plan = executed_plan(q)
    assert "FullWindowAggregate" in plan and "FullWindowSortPartition" in plan
    assert "Exchange" not in plan


def test_sql_without_hint_is_a_global_aggregate(spark, view):
    q = spark.sql(f"SELECT sum(v) AS s FROM {view}")
    assert [r.s for r in q.collect()] == [15]
    assert "FullWindowAggregate" not in executed_plan(q)
