"""Keyed full windows and coGroup against their native Spark alternatives (DESIGN.md, "Bars for
speed"):

- keyed mapPartition (rows) vs the fastest native form            >= 3x (many keys, few keys)
- keyed mapPartitionInArrow vs the fastest native Arrow form     >= 2.3x at 10,000 keys, >= 1.7x at 8,
  and ours at most 1.15x the same rounds' exchange + sort floor (no Python)
- keyed mapPartitionInPandas vs applyInPandas (iterator on 4.1+) >= 2x at 10,000 keys, >= 1.2x at 8
- coGroup (rows)        vs the fastest native cogroup             >= 1.3x at 10,000 keys
- coGroup applyInPandas vs cogroup().applyInPandas                >= 3x at 10,000 keys, >= 1.0x at 8
- coGroup applyInArrow  vs cogroup().applyInArrow                 >= 1.3x at 10,000 keys, >= 0.95x at 8

Both variants do the same per-key work, each in the way its API is naturally written:

- fullwindow: ``func(key, rows)`` gets a lazy iterator of Rows for one key and loops over it in
  Python (``n += 1; s += r.x``), yielding one tuple per key;
- native: ``func(key, pdf)`` gets the key's records as one pandas DataFrame and computes
  ``len(pdf)`` and ``pdf["x"].sum()`` (vectorized), returning a one-row pandas DataFrame.

Both plans hash-partition by ``k`` (one exchange, spark.sql.shuffle.partitions = 4) and sort
by ``k`` within each partition before the Python worker; the difference is what happens in and
around the Python worker. The one-key-holding-half-the-rows memory run (1 GiB driver) is not a
ratio and lives in ``benchmarks/heavy_key.py``.
"""
from __future__ import annotations

import dataclasses

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import functions as F

import fullwindow  # noqa: F401  (adds DataFrame.keyBy)
from fullwindow import EndOfStreamWindows

from benchmarks.data import (ONE_PARTITION_PER_FILE, key_floors, low_cardinality_long,
                             parquet_input, random_long, run_noop)
from benchmarks.natives import (WIDE_COGROUP_ARROW, cogroup_natives, count_sum_arrow,
                                count_sum_schema, keyed_arrow_natives, keyed_pandas_natives,
                                keyed_row_natives, payload_length)
from benchmarks.registry import CASES, Case, Check, Scale, register

GROUP = "keyed"
_CONF = {"spark.driver.memory": "4g", **ONE_PARTITION_PER_FILE}

# what every form pays before the Python worker: the exchange by k, without and with the sort
_FLOORS = key_floors("k")

MANY_KEYS = 10_000
FEW_KEYS = 8


def _columns(distinct: int):
    def columns(seed: int):
        return [low_cardinality_long(seed, distinct).alias("k"), random_long(seed + 1).alias("v"),
                (F.col("id") % 1000).cast("double").alias("x")]
    return columns


# ---- keyed mapPartition vs applyInPandas ----------------------------------------------------

_COUNT_SUM_SCHEMA = "k long, n long, s double"


def count_sum(key, rows):
    """fullwindow: count the key's rows and sum x, one pass over the lazy Row iterator."""
    n = 0
    s = 0.0
    for r in rows:
        n += 1
        s += r.x
    yield (key, n, s)


def count_sum_pd(key, pdf):
    """applyInPandas: the same on the key's whole pandas DataFrame."""
    return pd.DataFrame({"k": [key[0]], "n": [len(pdf)], "s": [pdf["x"].sum()]})


def _ours_map(df):
    run_noop(df.keyBy("k").fullWindowPartition().mapPartition(count_sum, _COUNT_SUM_SCHEMA))


def _native_map(df):
    run_noop(df.groupBy("k").applyInPandas(count_sum_pd, count_sum_schema(df)))


_MAP_DESC = ("keyBy('k').fullWindowPartition().mapPartition(f) vs groupBy('k').applyInPandas(g); "
             "per key, f loops over the Row iterator counting rows and summing x "
             "(n += 1; s += r.x) and yields (k, n, s); g returns "
             "pd.DataFrame({k, len(pdf), pdf['x'].sum()})")
_MAP_SETTINGS = {"columns": "k: long key, v: random long, x: double in [0, 1000)",
                 "ours": "for r in rows: n += 1; s += r.x  ->  yield (key, n, s)",
                 "native": "pd.DataFrame({'k': [key[0]], 'n': [len(pdf)], 's': [pdf['x'].sum()]})",
                 "shuffle partitions": "4"}

def _keyed_input(keys: int):
    """The setup of a keyed case: its rows with ``keys`` distinct keys, from Parquet."""
    return lambda spark, scale: parquet_input(spark, scale, f"keyed-k{keys}", _columns(keys))


def _keys_text(keys: int) -> str:
    return f"{keys:,} {'keys' if keys > FEW_KEYS else 'large keys'}"


def _map_case(name: str, keys: int) -> None:
    register(Case(
        name=name, group=GROUP, description=f"{_MAP_DESC}; {_keys_text(keys)}",
        setup=_keyed_input(keys), ours=_ours_map, native=_native_map,
        native_name="applyInPandas", natives=keyed_row_natives, baseline_in_headline=False,
        bar=3.0, rows=2_000_000, partitions=4, spark_conf=_CONF,
        ours_node="FullWindowKeyedMapPartition", native_node="FlatMapGroupsInPandas",
        floors=_FLOORS, settings={**_MAP_SETTINGS, "keys": f"{keys:,} distinct, uniform"},
    ))


_map_case("keyed_map_partition", MANY_KEYS)
_map_case("keyed_map_partition_few_keys", FEW_KEYS)


# ---- keyed mapPartitionInArrow (vectorized) vs applyInPandas, few large keys --------------
#
# With a few large keys pandas' vectorized sum beats any per-row Python loop; the fair
# comparison for vectorizable per-key work is fullwindow's vectorized form: the key's records
# as a stream of Arrow batches, summed with pyarrow.compute.

_COUNT_SUM_ARROW = count_sum_arrow(pa.int64())
_COUNT_SUM_ARROW_STRING_KEY = count_sum_arrow(pa.string())


def count_sum_arrow_batches(key, batches):
    """fullwindow, vectorized: count and sum x batch by batch over the key's Arrow stream."""
    n = 0
    s = 0.0
    for b in batches:
        n += b.num_rows
        s += pc.sum(b.column("x")).as_py() or 0.0
    yield pa.RecordBatch.from_pydict({"k": [key], "n": [n], "s": [s]}, schema=(
        _COUNT_SUM_ARROW_STRING_KEY if isinstance(key, str) else _COUNT_SUM_ARROW))


def _ours_map_arrow(df):
    run_noop(df.keyBy("k").fullWindowPartition().mapPartitionInArrow(count_sum_arrow_batches,
                                                                    count_sum_schema(df)))


def _arrow_case(name: str, keys: int, bar: float) -> None:
    register(Case(
        name=name, group=GROUP,
        description=("keyBy('k').fullWindowPartition().mapPartitionInArrow(f) vs "
                     "groupBy('k').applyInArrow (table and iterator forms, where the line has "
                     "them), @arrow_udtf over asTable().partitionBy('k') and applyInPandas(g); "
                     "per key, f sums x with pyarrow.compute batch by batch and counts rows, "
                     "the native forms do the same on their input, g as in keyed_map_partition; "
                     f"{_keys_text(keys)}"),
        setup=_keyed_input(keys),
        ours=_ours_map_arrow, native=_native_map, native_name="applyInPandas",
        natives=keyed_arrow_natives, baseline_in_headline=False, baseline_stands_in=False,
        bar=bar, rows=2_000_000, partitions=4, spark_conf=_CONF,
        ours_node="FullWindowKeyedMapPartitionInArrow", native_node="FlatMapGroupsInPandas",
        floors=_FLOORS, checks=(Check("floor", 1.15, (_FLOORS[1].name,)),),
        settings={**_MAP_SETTINGS, "keys": f"{keys:,} distinct, uniform",
                  "ours": "for b in batches: n += b.num_rows; s += pc.sum(b['x'])  ->  "
                          "one-row batch (key, n, s)"},
    ))


# DESIGN's bars with the columnar sort (KeyedColumnarSort), revised from 2.5x / 2x, which asked
# the whole form to cost less than Spark's exchange and sort alone (benchmarks/notes/keyed.md)
_arrow_case("keyed_map_partition_in_arrow", MANY_KEYS, 2.3)
_arrow_case("keyed_map_partition_in_arrow_few_keys", FEW_KEYS, 1.7)


def _columns_with_strings(seed: int):
    # the 10,000-key columns and a 32-character ASCII string p beside them (a hex digest of id)
    return _columns(MANY_KEYS)(seed) + [F.substring(F.sha2(F.col("id").cast("string"), 256), 1, 32)
                                        .alias("p")]


register(dataclasses.replace(
    CASES["keyed_map_partition_in_arrow"], name="keyed_map_partition_in_arrow_strings",
    description=CASES["keyed_map_partition_in_arrow"].description
    + "; a 32-character string column p beside k, v and x, carried by every form",
    setup=lambda spark, scale: parquet_input(spark, scale, "keyed-k10000-s32", _columns_with_strings),
    bar_note="DESIGN's 10,000-key bar, here with a string column the row sorter carried before",
    settings={**CASES["keyed_map_partition_in_arrow"].settings,
              "columns": _MAP_SETTINGS["columns"] + ", p: 32-character string"}))


def _columns_with_a_string_key(seed: int):
    # the 10,000-key columns with k an id string 'customer-<n>' (every key's first 8 bytes the
    # same: the columnar sort orders them by the bytes past those)
    k, v, x = _columns(MANY_KEYS)(seed)
    return [F.format_string("customer-%05d", low_cardinality_long(seed, MANY_KEYS)).alias("k"), v, x]


register(dataclasses.replace(
    CASES["keyed_map_partition_in_arrow"], name="keyed_map_partition_in_arrow_string_key",
    description=CASES["keyed_map_partition_in_arrow"].description
    + "; k a string id 'customer-<n>' (14 bytes)",
    setup=lambda spark, scale: parquet_input(spark, scale, "keyed-k10000-string-key",
                                             _columns_with_a_string_key),
    bar_note="DESIGN's 10,000-key bar, here with a string key",
    settings={**CASES["keyed_map_partition_in_arrow"].settings,
              "columns": "k: 'customer-<n>' string key, v: random long, x: double in [0, 1000)"}))


# ---- keyed mapPartitionInPandas vs applyInPandas --------------------------------------------
#
# The pandas form against the pandas API users know, doing the same vectorized work per key:
# ours gets the key's records as a stream of frames (one Arrow batch at most each) and sums
# them frame by frame; applyInPandas gets the key's records as one frame.


def count_sum_frames(key, frames):
    """fullwindow, pandas: count and sum x frame by frame over the key's stream of frames."""
    n = 0
    s = 0.0
    for pdf in frames:
        n += len(pdf)
        s += pdf["x"].sum()
    yield pd.DataFrame({"k": [key], "n": [n], "s": [s]})


def _ours_map_pandas(df):
    run_noop(df.keyBy("k").fullWindowPartition().mapPartitionInPandas(count_sum_frames,
                                                                     _COUNT_SUM_SCHEMA))


_PANDAS_DESC = ("keyBy('k').fullWindowPartition().mapPartitionInPandas(f) vs "
                "groupBy('k').applyInPandas(g); per key, f counts rows and sums x frame by frame "
                "over the key's frames and yields pd.DataFrame({k, n, s}); g as in "
                "keyed_map_partition")
_PANDAS_SETTINGS = {**_MAP_SETTINGS,
                    "ours": "for pdf in frames: n += len(pdf); s += pdf['x'].sum()  ->  "
                            "yield pd.DataFrame({'k': [key], 'n': [n], 's': [s]})"}


def _pandas_case(name: str, keys: int, bar: float) -> None:
    register(Case(
        name=name, group=GROUP,
        description=f"{_PANDAS_DESC}; {_keys_text(keys)}",
        setup=_keyed_input(keys),
        ours=_ours_map_pandas, native=_native_map, native_name="applyInPandas",
        natives=keyed_pandas_natives,
        bar=bar, rows=2_000_000, partitions=4, spark_conf=_CONF,
        ours_node="FullWindowKeyedMapPartitionInPandas", native_node="FlatMapGroupsInPandas",
        floors=_FLOORS,
        # DESIGN's row: the iterator applyInPandas (4.1+), else applyInPandas; the headline
        # still counts every pandas form, whole-group applyInPandas included
        bar_natives=("applyInPandas (iterator)",),
        settings={**_PANDAS_SETTINGS, "keys": f"{keys:,} distinct, uniform"},
    ))


_pandas_case("keyed_map_partition_in_pandas", MANY_KEYS, bar=2.0)
_pandas_case("keyed_map_partition_in_pandas_few_keys", FEW_KEYS, bar=1.2)


# ---- coGroup vs cogroup().applyInPandas -----------------------------------------------------

_COGROUP_SCHEMA = "k long, nl long, sl double, nr long, sr double"


def cogroup_count_sum(key, left, right):
    """fullwindow: per key, count and sum x on each side (left read first, as documented)."""
    nl = 0
    sl = 0.0
    for r in left:
        nl += 1
        sl += r.x
    nr = 0
    sr = 0.0
    for r in right:
        nr += 1
        sr += r.x
    yield (key, nl, sl, nr, sr)


def cogroup_count_sum_pd(key, left, right):
    """applyInPandas: the same on the two pandas DataFrames of the key."""
    return pd.DataFrame({"k": [key[0]], "nl": [len(left)], "sl": [float(left["x"].sum())],
                         "nr": [len(right)], "sr": [float(right["x"].sum())]})


def _cogroup_inputs(spark, scale: Scale, keys: int):
    # right: half as many rows as left, over the same key range (a different seed, so most keys
    # are on both sides and some on one side only)
    right_scale = Scale(rows=max(scale.rows // 2, 1), partitions=scale.partitions,
                        quick=scale.quick, out_dir=scale.out_dir, seed=scale.seed + 100)
    left = parquet_input(spark, scale, f"cogroup-left-k{keys}", _columns(keys))
    right = parquet_input(spark, right_scale, f"cogroup-right-k{keys}", _columns(keys))
    return left, right


def _cogroup_setup(spark, scale: Scale):
    return _cogroup_inputs(spark, scale, MANY_KEYS)


def _ours_cogroup(data):
    a, b = data
    run_noop(a.keyBy("k").coGroup(b.keyBy("k")).window(EndOfStreamWindows.get())
             .apply(cogroup_count_sum, _COGROUP_SCHEMA))


def _native_cogroup(data):
    a, b = data
    run_noop(a.groupBy("k").cogroup(b.groupBy("k")).applyInPandas(cogroup_count_sum_pd,
                                                                  _COGROUP_SCHEMA))


register(Case(
    name="cogroup", group=GROUP,
    description=("a.keyBy('k').coGroup(b.keyBy('k')).window(EndOfStreamWindows.get()).apply(f) vs "
                 "a.groupBy('k').cogroup(b.groupBy('k')).applyInPandas(g); per key, f loops over "
                 "left then right rows counting them and summing x, g takes len() and "
                 "['x'].sum() of the two pandas DataFrames; "
                 f"{MANY_KEYS:,} keys, right side half the rows of the left"),
    setup=_cogroup_setup, ours=_ours_cogroup, native=_native_cogroup,
    native_name="cogroup().applyInPandas", natives=cogroup_natives,
    bar=1.3, rows=2_000_000, partitions=4, spark_conf=_CONF,
    ours_node="FullWindowCoGroup", native_node="FlatMapCoGroupsInPandas", floors=_FLOORS,
    settings={"left": f"rows (the case's row count), k over {MANY_KEYS:,} keys",
              "right": f"rows / 2, k over the same {MANY_KEYS:,} keys, another seed",
              "ours": "for r in left: nl += 1; sl += r.x; the same for right -> "
                      "yield (key, nl, sl, nr, sr)",
              "native": "pd.DataFrame({k, len(left), left['x'].sum(), len(right), "
                        "right['x'].sum()})",
              "shuffle partitions": "4"},
))


# ---- coGroup applyInPandas vs cogroup().applyInPandas ---------------------------------------
#
# The pandas form of coGroup against the pandas API, doing the same vectorized work per key:
# ours gets each side's records of the key as a stream of frames (one Arrow batch at most each)
# and sums them frame by frame; cogroup().applyInPandas gets each side's records as one frame.


def cogroup_count_sum_frames(key, left, right):
    """fullwindow, pandas: count and sum x over each side's frames (left first)."""
    nl = 0
    sl = 0.0
    for pdf in left:
        nl += len(pdf)
        sl += float(pdf["x"].sum())
    nr = 0
    sr = 0.0
    for pdf in right:
        nr += len(pdf)
        sr += float(pdf["x"].sum())
    yield pd.DataFrame({"k": [key], "nl": [nl], "sl": [sl], "nr": [nr], "sr": [sr]})


def _ours_cogroup_pandas(data):
    a, b = data
    run_noop(a.keyBy("k").coGroup(b.keyBy("k")).window(EndOfStreamWindows.get())
             .applyInPandas(cogroup_count_sum_frames, _COGROUP_SCHEMA))


def _cogroup_pandas_case(name: str, keys: int, bar: float, bar_note: str) -> None:
    register(Case(
        name=name, group=GROUP,
        description=("a.keyBy('k').coGroup(b.keyBy('k')).window(EndOfStreamWindows.get())"
                     ".applyInPandas(f) vs a.groupBy('k').cogroup(b.groupBy('k')).applyInPandas(g); "
                     "per key, f counts rows and sums x frame by frame over each side's frames, "
                     "g takes len() and ['x'].sum() of the two pandas DataFrames; "
                     f"{_keys_text(keys)}, right side half "
                     "the rows of the left"),
        setup=lambda spark, scale: _cogroup_inputs(spark, scale, keys),
        ours=_ours_cogroup_pandas, native=_native_cogroup,
        native_name="cogroup().applyInPandas", natives=cogroup_natives,
        bar=bar, bar_note=bar_note, rows=2_000_000, partitions=4, spark_conf=_CONF,
        # DESIGN's bar is against the same user function in pandas (cogroup().applyInPandas);
        # cogroup().applyInArrow stays a column (the headline: the fastest native form)
        bar_natives=("cogroup().applyInPandas",),
        ours_node="FullWindowCoGroup", native_node="FlatMapCoGroupsInPandas", floors=_FLOORS,
        settings={"left": f"rows (the case's row count), k over {keys:,} keys",
                  "right": f"rows / 2, k over the same {keys:,} keys, another seed",
                  "ours": "for pdf in left: nl += len(pdf); sl += pdf['x'].sum(); the same for "
                          "right -> yield pd.DataFrame({k, nl, sl, nr, sr})",
                  "native": "pd.DataFrame({k, len(left), left['x'].sum(), len(right), "
                            "right['x'].sum()})",
                  "frames": "spark.sql.execution.arrow.maxRecordsPerBatch not set (ours: "
                            "50,000-row frames, the pandas forms' default)",
                  "shuffle partitions": "4"},
    ))


_cogroup_pandas_case("cogroup_in_pandas", MANY_KEYS, 3.0, "")
_cogroup_pandas_case("cogroup_in_pandas_few_keys", FEW_KEYS, 1.0, "")


# ---- coGroup applyInArrow vs cogroup().applyInArrow -----------------------------------------
#
# The Arrow form of coGroup against Spark's own Arrow cogroup (4.0+; on lines without it the
# comparison is cogroup().applyInPandas), doing the same vectorized work per key: ours gets each
# side's records of the key as a stream of record batches, Spark's each side as one Table.

_COGROUP_ARROW = pa.schema([("k", pa.int64()), ("nl", pa.int64()), ("sl", pa.float64()),
                            ("nr", pa.int64()), ("sr", pa.float64())])


def cogroup_count_sum_batches(key, left, right):
    """fullwindow, Arrow: count and sum x batch by batch over each side's batches (left first)."""
    nl = 0
    sl = 0.0
    for b in left:
        nl += b.num_rows
        sl += pc.sum(b.column("x")).as_py() or 0.0
    nr = 0
    sr = 0.0
    for b in right:
        nr += b.num_rows
        sr += pc.sum(b.column("x")).as_py() or 0.0
    yield pa.RecordBatch.from_pydict({"k": [key], "nl": [nl], "sl": [sl], "nr": [nr], "sr": [sr]},
                                     schema=_COGROUP_ARROW)


# the wide records of benchmarks/heavy_key.py (*_wide variants): per key and side also the summed
# length of the string payload p

def cogroup_count_sum_wide(key, left, right):
    """fullwindow, rows: count, sum x and the payload's length over each side's Rows."""
    out = [key]
    for rows in (left, right):
        n = b = 0
        s = 0.0
        for r in rows:
            n += 1
            s += r.x
            b += len(r.p)
        out += [n, s, b]
    yield tuple(out)


def cogroup_count_sum_frames_wide(key, left, right):
    """fullwindow, pandas: the same frame by frame."""
    out = {"k": [key]}
    for side, frames in (("l", left), ("r", right)):
        n = b = 0
        s = 0.0
        for pdf in frames:
            n += len(pdf)
            s += float(pdf["x"].sum())
            b += int(pdf["p"].str.len().sum())
        out.update({f"n{side}": [n], f"s{side}": [s], f"b{side}": [b]})
    yield pd.DataFrame(out)


def cogroup_count_sum_batches_wide(key, left, right):
    """fullwindow, Arrow: the same batch by batch."""
    out = {"k": [key]}
    for side, batches in (("l", left), ("r", right)):
        n = b = 0
        s = 0.0
        for batch in batches:
            n += batch.num_rows
            s += pc.sum(batch.column("x")).as_py() or 0.0
            b += payload_length(batch.column("p"))
        out.update({f"n{side}": [n], f"s{side}": [s], f"b{side}": [b]})
    yield pa.RecordBatch.from_pydict(out, schema=WIDE_COGROUP_ARROW)


def _ours_cogroup_arrow(data):
    a, b = data
    run_noop(a.keyBy("k").coGroup(b.keyBy("k")).window(EndOfStreamWindows.get())
             .applyInArrow(cogroup_count_sum_batches, _COGROUP_SCHEMA))


def _cogroup_arrow_case(name: str, keys: int, bar: float) -> None:
    register(Case(
        name=name, group=GROUP,
        description=("a.keyBy('k').coGroup(b.keyBy('k')).window(EndOfStreamWindows.get())"
                     ".applyInArrow(f) vs a.groupBy('k').cogroup(b.groupBy('k')).applyInArrow(g) "
                     "where the line has it, and applyInPandas; per key, f counts rows and sums x "
                     "batch by batch over each side's batches, g takes num_rows and pc.sum(x) of "
                     f"the two Tables; {_keys_text(keys)}, "
                     "right side half the rows of the left"),
        setup=lambda spark, scale: _cogroup_inputs(spark, scale, keys),
        ours=_ours_cogroup_arrow, native=_native_cogroup,
        native_name="cogroup().applyInPandas", natives=cogroup_natives,
        bar=bar, rows=2_000_000, partitions=4, spark_conf=_CONF,
        ours_node="FullWindowCoGroup", native_node="FlatMapCoGroupsInPandas", floors=_FLOORS,
        settings={"left": f"rows (the case's row count), k over {keys:,} keys",
                  "right": f"rows / 2, k over the same {keys:,} keys, another seed",
                  "ours": "for b in left: nl += b.num_rows; sl += pc.sum(b['x']); the same for "
                          "right -> yield one RecordBatch (k, nl, sl, nr, sr)",
                  "native": "one Table (k, left.num_rows, pc.sum(left['x']), right.num_rows, "
                            "pc.sum(right['x']))",
                  "shuffle partitions": "4"},
    ))


_cogroup_arrow_case("cogroup_in_arrow", MANY_KEYS, 1.3)
_cogroup_arrow_case("cogroup_in_arrow_few_keys", FEW_KEYS, 0.95)
