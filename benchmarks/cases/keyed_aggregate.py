"""Keyed aggregate(*columns) (Spark's aggregate functions) against Spark's own groupBy(k).agg
with the same aggregates (DESIGN.md, "Bars for speed": >= 0.95x, parity within noise, at 10,000
keys, at 8 keys and with every key unique; one key holding half the rows is measured too).

Both variants read the same Parquet input (2M rows, 4 files) and compute ``count(1)`` and
``sum(x)`` per key. Both plans combine before the exchange: Spark's partial aggregation on the
map side, an exchange by ``k`` of the partial rows, the final aggregation; ours adds the
full-window step around them (FullWindowAggregate over the final aggregation, a row counter
under the partial one). The floor is the input exchanged by ``k`` whole (no aggregation): what
the plan without the combine (spark.fullwindow.combine.enabled=false) pays before it sorts.
"""
from __future__ import annotations

from pyspark.sql import functions as F

import fullwindow  # noqa: F401  (adds DataFrame.keyBy)

from benchmarks.cases.keyed import FEW_KEYS, MANY_KEYS, _CONF, _FLOORS, _columns
from benchmarks.data import low_cardinality_long, parquet_input, random_long, run_noop
from benchmarks.registry import Case, register

GROUP = "keyed"


def _aggregates():
    return [F.count(F.lit(1)).alias("n"), F.sum("x").alias("s")]


def _ours(df):
    run_noop(df.keyBy("k").fullWindowPartition().aggregate(*_aggregates()))


def _native(df):
    run_noop(df.groupBy("k").agg(*_aggregates()))


def _unique(seed: int):
    # every key unique: k a 64-bit hash of id (2M distinct values in no order)
    return [random_long(seed).alias("k"), random_long(seed + 1).alias("v"),
            (F.col("id") % 1000).cast("double").alias("x")]


def _heavy(seed: int):
    # one key (0) holding half the rows, the other half over 10,000 keys (1..10,000)
    k = F.when(F.col("id") % 2 == 0, F.lit(0)).otherwise(
        low_cardinality_long(seed, MANY_KEYS) + 1)
    return [k.alias("k"), random_long(seed + 1).alias("v"),
            (F.col("id") % 1000).cast("double").alias("x")]


_INPUTS = {
    "10,000 keys": ("keyed-k10000", _columns(MANY_KEYS)),   # the keyed cases' inputs
    "8 large keys": ("keyed-k8", _columns(FEW_KEYS)),
    "every key unique": ("keyed-unique", _unique),
    "one key holding half the rows": ("keyed-heavy-half", _heavy),
}


def _case(name: str, keys: str, bar: float, bar_note: str = "") -> None:
    data, columns = _INPUTS[keys]
    register(Case(
        name=name, group=GROUP,
        description=("keyBy('k').fullWindowPartition().aggregate(F.count(F.lit(1)), F.sum('x')) "
                     f"vs groupBy('k').agg(the same); {keys}"),
        setup=lambda spark, scale: parquet_input(spark, scale, data, columns),
        ours=_ours, native=_native, native_name="groupBy().agg",
        bar=bar, bar_note=bar_note, rows=2_000_000, partitions=4, spark_conf=_CONF,
        ours_node="FullWindowAggregate", native_node="HashAggregate",
        floors=_FLOORS[:1],
        settings={"columns": "k: long key, v: random long, x: double in [0, 1000)",
                  "aggregates": "count(1), sum(x)", "keys": keys, "shuffle partitions": "4"},
    ))


# DESIGN: >= 0.95x, parity within noise (the same Spark operators on both sides)
_case("keyed_aggregate_columns", "10,000 keys", 0.95)
_case("keyed_aggregate_columns_few_keys", "8 large keys", 0.95)
_case("keyed_aggregate_columns_unique_keys", "every key unique", 0.95)
_case("keyed_aggregate_columns_heavy_key", "one key holding half the rows", 0.95,
      "no bar in DESIGN; held to the others' 0.95x")
