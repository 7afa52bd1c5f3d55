"""Non-keyed full windows against their native Spark alternatives (DESIGN.md, "Bars for speed"):

- aggregate(*columns)           vs groupBy(spark_partition_id()).agg        >= 1.2x
- mapPartitionInArrow           vs mapInArrow                               >= 0.95x
- mapPartition (rows)           vs rdd.mapPartitions                        >= 3x
- Python aggregate / reduce     vs rdd.mapPartitions doing the same         >= 3x

The native Python variants go through ``df.rdd`` (rows pickled to the worker) and back through
``createDataFrame`` with the same schema, as a user without fullwindow would write them.
"""
from __future__ import annotations

import functools

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import functions as F

import fullwindow  # noqa: F401  (adds DataFrame.fullWindowPartition)
from fullwindow import AggregateFunction

from benchmarks.data import (ONE_PARTITION_PER_FILE, low_cardinality_long, parquet_input,
                             random_long, run_noop, scan_floor)
from benchmarks.registry import Case, register

GROUP = "partition"
_CONF = {"spark.driver.memory": "4g", **ONE_PARTITION_PER_FILE}
# the scan of the same input to the same noop sink, nothing in between
_NO_PYTHON = (scan_floor("Python"),)


def _columns(seed: int):
    return [low_cardinality_long(seed, 1000).alias("k"), random_long(seed + 1).alias("v"),
            (F.col("id") % 1000).cast("double").alias("x")]


def _setup(spark, scale):
    return parquet_input(spark, scale, "partition", _columns)


# ---- aggregate(*columns) ------------------------------------------------------------------------

def _aggs():
    return [F.sum("x").alias("s"), F.count("*").alias("n"), F.max("v").alias("hi"),
            F.avg("k").alias("mean_k")]


register(Case(
    name="aggregate_columns", group=GROUP,
    description="aggregate(sum, count, max, avg) per partition vs "
                "groupBy(spark_partition_id()).agg(same)",
    setup=_setup,
    ours=lambda df: run_noop(df.fullWindowPartition().aggregate(*_aggs())),
    native=lambda df: run_noop(df.groupBy(F.spark_partition_id()).agg(*_aggs())),
    bar=1.2, rows=60_000_000, partitions=4, spark_conf=_CONF,
    ours_node="FullWindowAggregate", native_node="HashAggregate",
    floors=(scan_floor("aggregate"),),
    settings={"columns": "k: long in [0,1000), v: random long, x: double",
              "aggregates": "sum(x), count(*), max(v), avg(k)"},
))


# ---- mapPartitionInArrow --------------------------------------------------------------------

def _arrow_fn(batches):
    for b in batches:
        yield pa.RecordBatch.from_arrays(
            [b.column(0), pc.add(b.column(2), 1.0)], ["k", "x1"])


_ARROW_SCHEMA = "k long, x1 double"

register(Case(
    name="map_partition_in_arrow", group=GROUP,
    description="mapPartitionInArrow(f) vs mapInArrow(f); f keeps k and adds 1 to x per batch",
    setup=_setup,
    ours=lambda df: run_noop(df.fullWindowPartition().mapPartitionInArrow(_arrow_fn, _ARROW_SCHEMA)),
    native=lambda df: run_noop(df.mapInArrow(_arrow_fn, _ARROW_SCHEMA)),
    bar=0.95, rows=10_000_000, partitions=4, spark_conf=_CONF,
    ours_node="FullWindowMapPartitionInArrow", native_node="MapInArrow", floors=_NO_PYTHON,
    settings={"function": "per batch: k, x + 1"},
))


# ---- mapPartition (rows) --------------------------------------------------------------------

def _rows_fn(rows):
    for r in rows:
        if r.k < 500:
            yield (r.k, r.x * 2.0)


_ROWS_SCHEMA = "k long, x2 double"


def _native_rows(df):
    spark = df.sparkSession
    run_noop(spark.createDataFrame(df.rdd.mapPartitions(_rows_fn), _ROWS_SCHEMA))


register(Case(
    name="map_partition_rows", group=GROUP,
    description="mapPartition(f) vs createDataFrame(df.rdd.mapPartitions(f)); f filters half the "
                "rows and maps the rest",
    setup=_setup,
    ours=lambda df: run_noop(df.fullWindowPartition().mapPartition(_rows_fn, _ROWS_SCHEMA)),
    native=_native_rows,
    bar=3.0, rows=1_500_000, partitions=4, spark_conf=_CONF,
    ours_node="FullWindowMapPartition", native_node=None, floors=_NO_PYTHON,
    settings={"function": "for r in rows: if r.k < 500: yield (r.k, r.x * 2)"},
))


# ---- Python aggregate and reduce ------------------------------------------------------------

class _SumCount(AggregateFunction):
    def create_accumulator(self):
        return (0.0, 0)

    def add(self, row, acc):
        return (acc[0] + row.x, acc[1] + 1)

    def get_result(self, acc):
        return acc

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])


def _native_aggregate(df):
    agg = _SumCount()

    def fold(rows):
        acc = None
        for r in rows:
            acc = agg.add(r, agg.create_accumulator() if acc is None else acc)
        if acc is not None:
            yield agg.get_result(acc)

    run_noop(df.sparkSession.createDataFrame(df.rdd.mapPartitions(fold), "s double, n long"))


register(Case(
    name="python_aggregate", group=GROUP,
    description="aggregate(AggregateFunction) (sum and count with a tuple accumulator) vs the same "
                "fold in rdd.mapPartitions",
    setup=_setup,
    ours=lambda df: run_noop(df.fullWindowPartition().aggregate(_SumCount(), "s double, n long")),
    native=_native_aggregate,
    bar=3.0, rows=1_500_000, partitions=4, spark_conf=_CONF,
    ours_node="FullWindowAggregate", native_node=None, floors=_NO_PYTHON,
    settings={"function": "add(row, acc) = (acc[0] + row.x, acc[1] + 1)"},
))


def _max_by_v(a, b):
    return a if a.v >= b.v else b


def _native_reduce(df):
    def red(rows):
        it = iter(rows)
        first = next(it, None)
        if first is not None:
            yield functools.reduce(_max_by_v, it, first)

    run_noop(df.sparkSession.createDataFrame(df.rdd.mapPartitions(red), df.schema))


register(Case(
    name="python_reduce", group=GROUP,
    description="reduce(max by v) vs functools.reduce in rdd.mapPartitions",
    setup=_setup,
    ours=lambda df: run_noop(df.fullWindowPartition().reduce(_max_by_v)),
    native=_native_reduce,
    bar=3.0, rows=1_500_000, partitions=4, spark_conf=_CONF,
    ours_node="FullWindowReduce", native_node=None, floors=_NO_PYTHON,
    settings={"function": "a if a.v >= b.v else b"},
))
