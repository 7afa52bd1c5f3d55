"""sortPartition against sortWithinPartitions (DESIGN.md, "Bars for speed"): the Parquet input is
columnar and every column a long, so ours runs the columnar sort (FullWindowColumnarSortExec);
and sortPartition followed by mapPartitionInArrow, whose Arrow batches are filled from the
sorted columns, against sortWithinPartitions followed by mapInArrow."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import functions as F

import fullwindow  # noqa: F401  (adds DataFrame.fullWindowPartition)
from fullwindow import Order

from benchmarks.data import (ONE_PARTITION_PER_FILE, low_cardinality_long, parquet_input,
                             random_long, run_noop, scan_floor)
from benchmarks.registry import Case, register

GROUP = "sort"

# Memory of the runs that must not spill: the largest partition's sort buffers (rows, pointer
# array, radix-sort scratch: about 60 bytes a row) stay far below each task's share.
_IN_MEMORY_CONF = {"spark.driver.memory": "4g", **ONE_PARTITION_PER_FILE}

# The spill case: Spark's unified memory pool is (heap - 300 MiB) * spark.memory.fraction,
# (1024 - 300) MiB * 0.1 = 72.4 MiB, shared by the 2 concurrent tasks (at most half each).
# 9.5M rows of two longs are 9.5M * 24 B (UnsafeRow: 8 B null bits + 2 * 8 B) = 217 MiB of rows,
# 3x the pool; each of the 2 partitions holds 3x its task's share before any sort overhead.
_SPILL_HEAP_MIB = 1024
_SPILL_FRACTION = 0.1
_SPILL_POOL_MIB = (_SPILL_HEAP_MIB - 300) * _SPILL_FRACTION
_SPILL_ROWS = 9_500_000
_SPILL_CONF = {
    "spark.driver.memory": f"{_SPILL_HEAP_MIB}m",
    "spark.memory.fraction": str(_SPILL_FRACTION),
    **ONE_PARTITION_PER_FILE,
}


# the scan of the same Parquet input to the same noop sink, no sort
_FLOORS = (scan_floor("sort"),)


def _one_key_columns(seed: int):
    return [random_long(seed).alias("k"), F.col("id").alias("v")]


def _two_key_columns(seed: int):
    return [low_cardinality_long(seed, 1000).alias("k1"),
            random_long(seed + 1).alias("k2"),
            F.col("id").alias("v")]


def _wide_columns(seed: int):
    """k a random long, three strings of 16-31 ASCII characters (hex digits of hashes, so they
    neither repeat nor compress to nothing), v a long: rows of about 100 bytes."""
    def text(i: int):
        h = F.hex(F.xxhash64(F.col("id"), F.lit(seed + i)))  # 16 hex digits
        both = F.concat(h, F.hex(F.xxhash64(F.col("id"), F.lit(seed - i))))
        return both.substr(F.lit(1), F.lit(16) + F.pmod(F.col("id"), F.lit(16)).cast("int"))
    return [random_long(seed).alias("k"), text(1).alias("s1"), text(2).alias("s2"),
            text(3).alias("s3"), F.col("id").alias("v")]


def _string_key_columns(seed: int):
    """k 16 hex digits of a hash (an id whose first 8 bytes tell most rows apart), v a long."""
    return [F.hex(F.xxhash64(F.col("id"), F.lit(seed))).alias("k"), F.col("id").alias("v")]


def _prefixed_key_columns(seed: int):
    """k 'customer-' and a number below 10^7 (every key's first 8 bytes are the same: its bytes
    past them decide), v a long."""
    number = F.pmod(F.xxhash64(F.col("id"), F.lit(seed)), F.lit(10_000_000))
    return [F.concat(F.lit("customer-"), number.cast("string")).alias("k"), F.col("id").alias("v")]


def _decimal_columns(seed: int):
    """k an amount as decimal(18,2) (random, signed), a a decimal(9,2), v a long."""
    amount = F.pmod(F.xxhash64(F.col("id"), F.lit(seed + 1)), F.lit(10 ** 8)) / 100
    return [(random_long(seed) % 10 ** 15 / 100).cast("decimal(18,2)").alias("k"),
            amount.cast("decimal(9,2)").alias("a"), F.col("id").alias("v")]


def _setup_decimal_key(spark, scale):
    return parquet_input(spark, scale, "decimal_key", _decimal_columns)


def _setup_string_key(spark, scale):
    return parquet_input(spark, scale, "string_key", _string_key_columns)


def _setup_prefixed_key(spark, scale):
    return parquet_input(spark, scale, "prefixed_key", _prefixed_key_columns)


def _setup_one_key(spark, scale):
    return parquet_input(spark, scale, "one_key", _one_key_columns)


def _setup_two_keys(spark, scale):
    return parquet_input(spark, scale, "two_keys", _two_key_columns)


def _setup_wide(spark, scale):
    return parquet_input(spark, scale, "wide", _wide_columns)


def _ours_one_key(df):
    run_noop(df.fullWindowPartition().sortPartition("k"))


def _native_one_key(df):
    run_noop(df.sortWithinPartitions("k"))


def _ours_two_keys(df):
    run_noop(df.fullWindowPartition().sortPartition([("k1", Order.ASCENDING),
                                                     ("k2", Order.DESCENDING)]))


def _native_two_keys(df):
    run_noop(df.sortWithinPartitions(F.col("k1").asc(), F.col("k2").desc()))


def _sort_case(**fields) -> None:
    """Registers a sort case: each reads Parquet, sorts within partitions, writes to noop."""
    register(Case(group=GROUP, ours_node="FullWindowSortPartition", native_node="Sort",
                  floors=_FLOORS, **fields))


_sort_case(
    name="sort_one_key",
    description="sortPartition('k') vs sortWithinPartitions('k'); k a random long, plus a long "
                "payload; input read from Parquet (columnar sort), noop sink",
    setup=_setup_one_key, ours=_ours_one_key, native=_native_one_key,
    bar=1.5, rows=10_000_000, partitions=4,
    spark_conf=_IN_MEMORY_CONF,
    settings={"columns": "k: random long, v: long", "keys": "k ASC"},
)

_sort_case(
    name="sort_two_keys",
    description="sortPartition([('k1', ASC), ('k2', DESC)]) vs sortWithinPartitions(k1.asc(), "
                "k2.desc()); k1 has 1000 distinct values so k2 decides most comparisons (columnar sort)",
    setup=_setup_two_keys, ours=_ours_two_keys, native=_native_two_keys,
    bar=4.0, rows=10_000_000, partitions=4,
    spark_conf=_IN_MEMORY_CONF,
    settings={"columns": "k1: long in [0, 1000), k2: random long, v: long",
              "keys": "k1 ASC, k2 DESC"},
)

_sort_case(
    name="sort_spill",
    description="sort_one_key on data 3x the execution memory (1 GiB driver, memory.fraction "
                "0.1): both variants must spill (ours: columnar sorted runs, merged)",
    setup=_setup_one_key, ours=_ours_one_key, native=_native_one_key,
    bar=1.2, rows=_SPILL_ROWS, partitions=2,
    spark_conf=_SPILL_CONF,
    require_spill=True, bar_note="completes, spills in both",
    settings={"columns": "k: random long, v: long", "keys": "k ASC",
              "execution memory": f"({_SPILL_HEAP_MIB} MiB - 300 MiB) x {_SPILL_FRACTION} = "
                                  f"{_SPILL_POOL_MIB:.1f} MiB unified pool, 2 concurrent tasks",
              "default data": f"{_SPILL_ROWS:,} rows x 24 B = "
                      f"{_SPILL_ROWS * 24 / 2**20:.0f} MiB of UnsafeRows "
                      f"({_SPILL_ROWS * 24 / 2**20 / _SPILL_POOL_MIB:.1f}x the pool)"},
)

_sort_case(
    name="sort_wide",
    description="sortPartition('k') vs sortWithinPartitions('k') on wide rows: k a random long, "
                "three strings of 16-31 characters and a long (the strings ride in the columnar sort)",
    setup=_setup_wide, ours=_ours_one_key, native=_native_one_key,
    bar=1.0, rows=5_000_000, partitions=4,
    spark_conf=_IN_MEMORY_CONF,
    settings={"columns": "k: random long, s1..s3: strings of 16-31 chars, v: long",
              "keys": "k ASC"},
)

# string and decimal keys: no DESIGN bar (the issue names string keys a second step), a
# reference bar of 1.0x
for _name, _key, _setup, _columns, _note in (
        ("sort_string_key", "k a string id of 16 hex digits (its first 8 bytes order most rows), "
         "plus a long payload", _setup_string_key, "k: 16 hex digits, v: long", "string keys"),
        ("sort_string_key_shared_prefix", "k 'customer-<n>', n below 10^7: every key's first 8 "
         "bytes are the same, so the bytes past them order every row, plus a long payload",
         _setup_prefixed_key, "k: 'customer-' + n < 10^7, v: long", "string keys"),
        ("sort_decimal_key", "k a decimal(18,2) amount, plus a decimal(9,2) and a long",
         _setup_decimal_key, "k: decimal(18,2), a: decimal(9,2), v: long", "decimal keys")):
    _sort_case(
        name=_name,
        description=f"sortPartition('k') vs sortWithinPartitions('k'); {_key} (columnar sort)",
        setup=_setup, ours=_ours_one_key, native=_native_one_key,
        bar=1.0, rows=5_000_000, partitions=4,
        spark_conf=_IN_MEMORY_CONF,
        bar_note=f"a reference, not a DESIGN bar: {_note}",
        settings={"columns": _columns, "keys": "k ASC"},
    )


def _sum_v(batches):
    """A cheap function: the sum of v per batch."""
    for b in batches:
        yield pa.RecordBatch.from_pydict({"s": [pc.sum(b.column("v")).as_py()]},
                                         schema=pa.schema([("s", pa.int64())]))


_SUM_SCHEMA = "s long"


def _ours_map_in_arrow(df):
    run_noop(df.fullWindowPartition().sortPartition("k").fullWindowPartition()
             .mapPartitionInArrow(_sum_v, _SUM_SCHEMA))


def _native_map_in_arrow(df):
    run_noop(df.sortWithinPartitions("k").mapInArrow(_sum_v, _SUM_SCHEMA))


register(Case(
    name="sort_partition_map_in_arrow", group=GROUP,
    description="sortPartition('k') then mapPartitionInArrow(f) vs sortWithinPartitions('k') then "
                "mapInArrow(f); f sums v per batch; ours fills the Arrow batches from the sorted "
                "columns (no row in between)",
    setup=_setup_one_key, ours=_ours_map_in_arrow, native=_native_map_in_arrow,
    bar=1.0, rows=10_000_000, partitions=4,
    spark_conf=_IN_MEMORY_CONF,
    ours_node="FullWindowMapPartitionInArrow", native_node="MapInArrow",
    floors=(scan_floor("sort and Python"),),
    settings={"columns": "k: random long, v: long", "keys": "k ASC",
              "function": "per batch: sum(v)"},
))
