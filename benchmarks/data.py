"""Benchmark inputs: generated once, written to Parquet under the out dir, read back.

Generating the input is never what is timed: a case's ``setup`` writes the Parquet files once
(they are kept between runs, keyed by name, rows, partitions and seed) and returns a DataFrame
that reads them, one Spark partition per file. Both variants read the same files.
"""
from __future__ import annotations

import os
import shutil
from typing import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from benchmarks.registry import Native, Scale

# One file = one partition: files are never split (maxPartitionBytes) nor packed together
# (an open cost as large as the split size). Cases that read Parquet inputs set these.
ONE_PARTITION_PER_FILE = {
    "spark.sql.files.maxPartitionBytes": "1g",
    "spark.sql.files.openCostInBytes": "1g",
}


def random_long(seed: int) -> F.Column:
    """A uniformly distributed pseudo-random 64-bit long, a pure function of ``id``."""
    return F.xxhash64(F.col("id"), F.lit(seed))


def low_cardinality_long(seed: int, distinct: int) -> F.Column:
    """A pseudo-random long in ``[0, distinct)``."""
    return F.pmod(F.xxhash64(F.col("id"), F.lit(seed)), F.lit(distinct))


def parquet_input(spark: SparkSession, scale: Scale, name: str,
                  columns: Callable[[int], list[F.Column]]) -> DataFrame:
    """Writes ``spark.range(rows)`` projected to ``columns(seed)`` as ``partitions`` Parquet files
    (once), and returns a DataFrame reading them back with exactly ``partitions`` partitions."""
    path = os.path.join(os.path.abspath(scale.out_dir), "data",
                        f"{name}-r{scale.rows}-p{scale.partitions}-s{scale.seed}")
    if not os.path.exists(os.path.join(path, "_SUCCESS")):
        shutil.rmtree(path, ignore_errors=True)
        sc = spark.sparkContext
        sc.setJobDescription(f"benchmark input {name}")
        (spark.range(0, scale.rows, 1, numPartitions=scale.partitions)
         .select(*columns(scale.seed))
         .write.mode("overwrite").parquet(path))
        sc.setJobDescription(None)
    df = spark.read.parquet(path)
    got = df.rdd.getNumPartitions()
    if got != scale.partitions:
        raise RuntimeError(f"input {path} reads as {got} partitions, expected {scale.partitions}: "
                           f"set {ONE_PARTITION_PER_FILE} in the case's spark_conf")
    return df


def run_noop(df: DataFrame) -> None:
    """Runs the whole plan of ``df`` and discards the rows. Unlike ``count()``, the noop sink
    makes Spark execute every operator, so a sort cannot be optimized away."""
    df.write.format("noop").mode("overwrite").save()


def scan_floor(without: str) -> Native:
    """The floor of a case that reads one input and writes to the noop sink: the same scan to
    the same sink with nothing in between (``without`` names what is left out, e.g. "sort")."""
    return Native(f"scan + sink (no {without})", run_noop)


def _sides(data) -> list[DataFrame]:
    return list(data) if isinstance(data, tuple) else [data]


def _by_key(data, key: str, sort: bool) -> DataFrame:
    """Each input (a coGroup case's two sides: each) hash-exchanged by ``key`` into
    spark.sql.shuffle.partitions partitions as the keyed operators' own exchange is, optionally
    sorted by it within each, the sides unioned."""
    frames = [d.repartition(key) for d in _sides(data)]
    if sort:
        frames = [f.sortWithinPartitions(key) for f in frames]
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out


def key_floors(key: str = "k") -> tuple[Native, ...]:
    """The floors of a keyed (or coGroup) Python case: its input exchanged by key to the noop
    sink, without the sort, then with it; no Python. What every form of the shape pays before
    the Python worker, so ours / floor is how close ours is to a Python step that cost
    nothing."""
    return (Native(f"exchange by {key} (no sort, no Python)",
                   lambda data: run_noop(_by_key(data, key, sort=False)), "Exchange"),
            Native(f"exchange + sort by {key} (no Python)",
                   lambda data: run_noop(_by_key(data, key, sort=True)), "Sort"))
