"""sortPartition end to end on real Spark (local mode): every key form, orders, nulls, plans,
metrics, and the SQL hint."""
from __future__ import annotations

import pytest
from pyspark.sql import Row
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

import fullwindow
from fullwindow import Order
from helpers import assert_sorted_within, executed_plan, num_partitions, partitions

NPARTS = 3


@pytest.fixture(scope="module")
def df(spark):
    # Deterministic partitioning: spark.range splits ids into contiguous slices, no exchange.
    return spark.range(0, 60, 1, NPARTS).select(
        (F.col("id") % 4).alias("a"),
        ((F.col("id") * 7919) % 101).alias("b"),
        F.concat(F.lit("n"), (F.col("id") * 31 % 17).cast("string")).alias("name"),
        F.struct((F.col("id") % 5).alias("x"), (F.col("id") * 13 % 7).alias("y")).alias("s"),
    )


def same_partitions_as_input(inp, out):
    """Each output partition holds exactly the rows of the matching input partition."""
    pi, po = partitions(inp), partitions(out)
    assert len(po) == len(pi)
    for a, b in zip(pi, po):
        assert sorted(a, key=repr) == sorted(b, key=repr)
    return po


def test_sort_by_name_ascending_keeps_partitions(df):
    out = df.fullWindowPartition().sortPartition("b")
    parts = same_partitions_as_input(df, out)
    assert num_partitions(out) == NPARTS
    assert_sorted_within(parts, key=lambda r: r[1])
    assert all(len(p) == 20 for p in parts)


def test_field_index_zero_is_accepted(df):
    # Flink rejects field 0 although its docs use it; ours is 0-based and takes 0.
    parts = same_partitions_as_input(df, df.fullWindowPartition().sortPartition(0))
    assert_sorted_within(parts, key=lambda r: r[0])


def test_last_field_index_and_descending(df):
    parts = partitions(df.fullWindowPartition().sortPartition(2, Order.DESCENDING))
    assert_sorted_within(parts, key=lambda r: r[2], reverse=True)


def test_order_given_as_string(df):
    parts = partitions(df.fullWindowPartition().sortPartition("b", "desc"))
    assert_sorted_within(parts, key=lambda r: r[1], reverse=True)


def test_nested_field_name(df):
    parts = partitions(df.fullWindowPartition().sortPartition("s.y"))
    assert_sorted_within(parts, key=lambda r: r[3][1])


def test_column_expression_key(df):
    parts = partitions(df.fullWindowPartition().sortPartition(F.col("b") % 10))
    assert_sorted_within(parts, key=lambda r: r[1] % 10)


def test_column_with_its_own_direction(df):
    parts = partitions(df.fullWindowPartition().sortPartition(F.col("b").desc()))
    assert_sorted_within(parts, key=lambda r: r[1], reverse=True)


def test_several_keys_with_orders(df):
    out = df.fullWindowPartition().sortPartition([("a", Order.ASCENDING), ("b", Order.DESCENDING)])
    parts = same_partitions_as_input(df, out)
    assert_sorted_within(parts, key=lambda r: (r[0], -r[1]))


def test_several_plain_keys_take_the_default_order(df):
    parts = partitions(df.fullWindowPartition().sortPartition(["a", "name"], Order.DESCENDING))
    assert_sorted_within(parts, key=lambda r: (r[0], r[2]), reverse=True)


def test_python_key_selector(df):
    out = df.fullWindowPartition().sortPartition(lambda r: -(r.b * 3 + r.a))
    assert out.columns == df.columns  # the hidden key column is dropped
    parts = same_partitions_as_input(df, out)
    assert_sorted_within(parts, key=lambda r: -(r[1] * 3 + r[0]))
    plan = executed_plan(out)
    assert "ArrowEvalPython" in plan and "FullWindowSortPartition" in plan


def test_key_selector_mixed_with_named_key(df):
    out = df.fullWindowPartition().sortPartition(
        [("a", Order.DESCENDING), (lambda r: r.name, Order.ASCENDING)])
    parts = partitions(out)
    for part in parts:
        keys = [(r[0], r[2]) for r in part]
        assert keys == sorted(keys, key=lambda k: (-k[0], k[1]))


def test_key_selector_with_explicit_type_on_empty_input(spark):
    empty = spark.createDataFrame([], "v long")
    assert empty.fullWindowPartition().sortPartition(lambda r: r.v).collect() == []
    out = empty.fullWindowPartition().sortPartition(lambda r: r.v, key_type=LongType())
    assert out.collect() == []


def test_nulls_first_ascending_last_descending(spark):
    schema = StructType([StructField("v", LongType()), StructField("t", StringType())])
    data = [(3, "c"), (None, "n1"), (1, "a"), (None, "n2"), (2, "b")]
    df = spark.createDataFrame(data, schema).coalesce(1)
    asc = [r.v for r in df.fullWindowPartition().sortPartition("v").collect()]
    assert asc == [None, None, 1, 2, 3]
    desc = [r.v for r in df.fullWindowPartition().sortPartition("v", Order.DESCENDING).collect()]
    assert desc == [3, 2, 1, None, None]
    last = [r.v for r in df.fullWindowPartition().sortPartition(F.col("v").asc_nulls_last()).collect()]
    assert last == [1, 2, 3, None, None]


def test_string_and_struct_keys(df):
    parts = partitions(df.fullWindowPartition().sortPartition("s"))
    assert_sorted_within(parts, key=lambda r: tuple(r[3]))
    parts = partitions(df.fullWindowPartition().sortPartition("name"))
    assert_sorted_within(parts, key=lambda r: r[2])


def test_empty_partitions(spark):
    df = spark.range(0, 5, 1, 4).filter("id > 10").select(F.col("id").alias("v"))
    out = df.fullWindowPartition().sortPartition("v")
    assert num_partitions(out) == 4
    assert out.collect() == []


def test_plan_has_no_exchange_and_names_the_step(df):
    out = df.fullWindowPartition().sortPartition("b")
    out.collect()
    plan = executed_plan(out)
    assert "FullWindowSortPartition" in plan
    assert "Exchange" not in plan
    assert "Sort [" not in plan  # not Spark's own sort


def test_explain_shows_the_full_window_step(df, capsys):
    df.fullWindowPartition().sortPartition("b").explain()
    text = capsys.readouterr().out
    assert "FullWindowSortPartition order=[b#" in text


def test_metrics_rows_and_memory(df):
    out = df.fullWindowPartition().sortPartition("b")
    out.collect()  # metrics belong to the query execution of `out` itself
    m = fullwindow.operator_metrics(out)
    assert m["FullWindowSortPartition.numInputRows"] == 60
    assert m["FullWindowSortPartition.numOutputRows"] == 60
    assert m["FullWindowSortPartition.peakMemory"] > 0
    assert m["FullWindowSortPartition.spillSize"] == 0
    assert "FullWindowSortPartition.sortTime" in m


def test_metrics_without_codegen(spark, df):
    spark.conf.set("spark.sql.codegen.wholeStage", "false")
    try:
        out = df.fullWindowPartition().sortPartition("b")
        parts = partitions(out)
        assert_sorted_within(parts, key=lambda r: r[1])
        out.collect()
        assert fullwindow.operator_metrics(out)["FullWindowSortPartition.numOutputRows"] == 60
    finally:
        spark.conf.unset("spark.sql.codegen.wholeStage")


def test_after_a_shuffle_the_partition_count_is_kept(spark):
    df = spark.range(100).repartition(5, "id")
    out = df.fullWindowPartition().sortPartition("id", Order.DESCENDING)
    assert num_partitions(out) == 5
    assert_sorted_within(partitions(out), key=lambda r: r[0], reverse=True)
    # only the user's own repartition exchange, none added by the sort
    assert executed_plan(out).count("Exchange") == 1


# ---- SQL ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def view(spark, df):
    df.createOrReplaceTempView("fw_t")
    return "fw_t"


def test_sql_hint_sorts_within_partitions(spark, view):
    q = spark.sql(f"SELECT /*+ FULL_WINDOW_PARTITION */ a, b FROM {view} ORDER BY b DESC")
    parts = partitions(q)
    assert len(parts) == NPARTS
    assert_sorted_within(parts, key=lambda r: r[1], reverse=True)
    plan = executed_plan(q)
    assert "FullWindowSortPartition" in plan and "Exchange" not in plan


def test_sql_hint_order_by_a_column_not_selected(spark, view):
    q = spark.sql(f"SELECT /*+ FULL_WINDOW_PARTITION */ name FROM {view} ORDER BY b")
    assert q.columns == ["name"]
    plan = executed_plan(q)
    assert "FullWindowSortPartition" in plan and "Exchange" not in plan
    full = spark.sql(f"SELECT /*+ FULL_WINDOW_PARTITION */ name, b FROM {view} ORDER BY b")
    assert_sorted_within(partitions(full), key=lambda r: r[1])


def test_sql_hint_several_keys(spark, view):
    q = spark.sql(f"SELECT /*+ FULL_WINDOW_PARTITION */ * FROM {view} ORDER BY a DESC, b ASC")
    assert_sorted_within(partitions(q), key=lambda r: (-r[0], r[1]))


def test_sql_without_hint_is_spark_global_sort(spark, view):
    q = spark.sql(f"SELECT a, b FROM {view} ORDER BY b")
    q.collect()
    assert "FullWindowSortPartition" not in executed_plan(q)


def test_sql_hint_alone_is_a_no_op(spark, view):
    q = spark.sql(f"SELECT /*+ FULL_WINDOW_PARTITION */ a FROM {view}")
    assert q.count() == 60
    assert "FullWindow" not in executed_plan(q)


def test_sql_hint_with_parameters_is_rejected(spark, view):
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException, match="FULL_WINDOW_PARTITION.*no parameters"):
        spark.sql(f"SELECT /*+ FULL_WINDOW_PARTITION(3) */ a FROM {view} ORDER BY a")
