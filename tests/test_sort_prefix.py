"""Multi-key sortPartition with a packed prefix (jvm .../execution/PackedSortPrefix.scala).

With two or more keys and an integral first key, the sorter's 64-bit prefix packs several keys:
each integral key as a variable-length code of its difference to a base (the first non-null value
the partition's sorter sees), then the top bits of the next key. These tests compare the output,
partition by partition, with Spark's own sortWithinPartitions on the same input, over key types,
directions, null orderings, extreme values (relative to the base too), NaN and -0.0, whole-stage
code generation on and off, the switch that turns packing off, and forced spills. Every sort ends
with the unique ``id`` so that the expected order is total and the comparison exact."""
from __future__ import annotations

import datetime as dt
import math
import random
import struct
from decimal import Decimal

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import (BinaryType, BooleanType, ByteType, DateType, DayTimeIntervalType,
                               DecimalType, DoubleType, FloatType, IntegerType, LongType,
                               ShortType, StringType, StructField, StructType, TimestampType)

import fullwindow  # noqa: F401  (adds DataFrame.fullWindowPartition)
from conftest import get_session
from fullwindow import Order
from helpers import executed_plan, partitions

LMIN, LMAX = -2**63, 2**63 - 1
PACKED_KEY = "spark.fullwindow.sort.packedPrefix"

SCHEMA = StructType([
    StructField("id", LongType(), False),
    StructField("b", BooleanType()),
    StructField("y", ByteType()),
    StructField("s", ShortType()),
    StructField("i", IntegerType()),
    StructField("l", LongType()),
    StructField("l2", LongType()),
    StructField("d", DateType()),
    StructField("ts", TimestampType()),
    StructField("iv", DayTimeIntervalType()),
    StructField("dec", DecimalType(10, 2)),
    StructField("dec18", DecimalType(18, 0)),
    StructField("big", DecimalType(38, 10)),
    # precision > 18 with <= 18 integer digits: Spark's prefix is a rounded, signed long
    StructField("dec20", DecimalType(20, 10)),
    StructField("dbl", DoubleType()),
    StructField("f", FloatType()),
    StructField("str", StringType()),
    StructField("bin", BinaryType()),
])
COLS = [f.name for f in SCHEMA.fields]

_INT_RANGE = {"y": (-2**7, 2**7 - 1), "s": (-2**15, 2**15 - 1), "i": (-2**31, 2**31 - 1),
              "l": (LMIN, LMAX), "l2": (LMIN, LMAX), "dec18": (-(10**18 - 1), 10**18 - 1)}
_EPOCH = dt.date(1970, 1, 1)
_DMIN, _DMAX = dt.date(1, 1, 1), dt.date(9999, 12, 31)
_TMIN, _TMAX = dt.datetime(1000, 1, 1), dt.datetime(9000, 12, 31, 23, 59, 59, 999999)


def _f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def _integral(rnd: random.Random, lo: int, hi: int, centre: int, spread: int) -> int:
    """Mostly values clustered near `centre` (so keys tie and the next key decides), some
    extremes of the type, some anywhere in it."""
    r = rnd.random()
    if r < 0.08:
        return rnd.choice([lo, lo + 1, hi, hi - 1, -1, 0, 1])
    if r < 0.2:
        return rnd.randint(lo, hi)
    return max(lo, min(hi, centre + rnd.randint(-spread, spread)))


def _value(rnd: random.Random, col: str, centre: int):
    if rnd.random() < 0.1:
        return None
    if col in _INT_RANGE:
        lo, hi = _INT_RANGE[col]
        v = _integral(rnd, lo, hi, centre, 20 if col != "l2" else 3)
        return Decimal(v) if col == "dec18" else v
    if col == "b":
        return rnd.random() < 0.5
    if col == "d":
        if rnd.random() < 0.05:
            return rnd.choice([_DMIN, _DMAX])
        return _EPOCH + dt.timedelta(days=centre % 30000 - 15000 + rnd.randint(-5, 5))
    if col == "ts":
        if rnd.random() < 0.05:
            return rnd.choice([_TMIN, _TMAX])
        return dt.datetime(2024, 1, 1) + dt.timedelta(seconds=rnd.randint(-3, 3) * 3600,
                                                      microseconds=rnd.randint(-2, 2))
    if col == "iv":
        return dt.timedelta(microseconds=_integral(rnd, -10**15, 10**15, centre, 10))
    if col == "dec":
        return Decimal(rnd.randint(-10**10 + 1, 10**10 - 1) if rnd.random() < 0.2
                       else rnd.randint(-30, 30)) / 100
    if col == "big":
        return Decimal(rnd.randint(-10**38 + 1, 10**38 - 1)).scaleb(-10) \
            if rnd.random() < 0.5 else Decimal(rnd.randint(-5, 5))
    if col == "dec20":
        return Decimal(rnd.randint(-10**20 + 1, 10**20 - 1)).scaleb(-10) \
            if rnd.random() < 0.5 else Decimal(rnd.randint(-10**6, 10**6)).scaleb(-10)
    if col in ("dbl", "f"):
        r = rnd.random()
        if r < 0.25:
            v = rnd.choice([math.nan, math.inf, -math.inf, -0.0, 0.0, 1.0, -1.0,
                            5e-324, -5e-324, 1.7976931348623157e308, -1.7976931348623157e308])
        elif r < 0.6:
            v = float(rnd.randint(-3, 3))  # ties
        else:
            v = rnd.gauss(0, 1) * 10 ** rnd.randint(-30, 30)
        if col == "f":
            if math.isfinite(v) and abs(v) > 3.4e38:
                v = math.copysign(math.inf, v)
            v = _f32(v)
        return v
    if col == "str":
        stem = rnd.choice(["", "a", "abcdefgh", "abcdefghij", "zzzzzzzzzz", "é€"])
        return stem + "".join(rnd.choice("ab\u00e9z") for _ in range(rnd.randint(0, 3)))
    if col == "bin":
        return bytes(rnd.choice([0, 1, 127, 128, 255]) for _ in range(rnd.randint(0, 10)))
    raise AssertionError(col)


def _row(rnd: random.Random, rid: int, centre: int, override: dict | None = None) -> tuple:
    vals = {c: _value(rnd, c, centre) for c in COLS[1:]}
    vals.update(override or {})
    return (rid, *[vals[c] for c in COLS[1:]])


# The first row of each partition fixes the base of every integral key's code in that partition;
# these make it an extreme, a null or a plain value, so other rows sit far below or above it.
_FIRST_ROWS = [
    {c: (_INT_RANGE[c][1] if c != "dec18" else Decimal(_INT_RANGE[c][1])) for c in _INT_RANGE}
    | {"d": _DMAX, "ts": _TMAX, "b": True, "iv": dt.timedelta(microseconds=10**15)},
    {c: (_INT_RANGE[c][0] if c != "dec18" else Decimal(_INT_RANGE[c][0])) for c in _INT_RANGE}
    | {"d": _DMIN, "ts": _TMIN, "b": False, "iv": dt.timedelta(microseconds=-10**15)},
    {c: None for c in COLS[1:]},
    {"l": 2**62, "l2": -(2**62), "i": 0, "s": 0, "y": 0},
]


def _build_partitions(seed: int, nparts: int, rows_per_part: int) -> list[list[tuple]]:
    rnd = random.Random(seed)
    parts, rid = [], 0
    for p in range(nparts):
        rows = []
        centre = rnd.choice([0, 1000, -1000, 2**40, -(2**40)])
        for j in range(rows_per_part):
            override = _FIRST_ROWS[p % len(_FIRST_ROWS)] if j == 0 else None
            rows.append(_row(rnd, rid, centre, override))
            rid += 1
        parts.append(rows)
    return parts


def _dataframe(spark, parts: list[list[tuple]]):
    """A cached DataFrame whose partition i holds exactly parts[i], in that order."""
    sc = spark.sparkContext
    rdd = sc.parallelize(range(len(parts)), len(parts)).flatMap(lambda i: parts[i])
    df = spark.createDataFrame(rdd, SCHEMA).cache()
    assert df.count() == sum(len(p) for p in parts)
    return df


def _sort_columns(spec):
    """`spec`: (column, 'asc' / 'desc' / 'asc_nulls_last' / ...) pairs, then id ascending."""
    return [getattr(F.col(c), how)() for c, how in spec] + [F.col("id").asc()]


def _canon(parts):
    # repr: NaN equals itself and -0.0 differs from 0.0, so the comparison is exact
    return [[repr(r) for r in p] for p in parts]


def assert_like_native(df, spec):
    cols = _sort_columns(spec)
    ours = df.fullWindowPartition().sortPartition(cols)
    native = df.sortWithinPartitions(*cols)
    got, want = _canon(partitions(ours)), _canon(partitions(native))
    assert [len(p) for p in got] == [len(p) for p in want]
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"partition {i} differs from sortWithinPartitions for {spec}"
    return ours


@pytest.fixture(scope="module")
def data(spark):
    # not unpersisted: the spill tests at the end replace this session (and its cache)
    return _dataframe(spark, _build_partitions(seed=7, nparts=4, rows_per_part=700))


DIRECTIONS = ["asc", "desc", "asc_nulls_last", "desc_nulls_first"]

# (first key, second key): every integral type first, each with several kinds of second key.
PAIRS = [
    ("l", "l2"), ("l", "dbl"), ("l", "str"), ("l2", "l"),
    ("i", "l"), ("i", "f"), ("i", "big"), ("i", "dec20"), ("l", "dec20"),
    ("s", "dbl"), ("s", "bin"),
    ("y", "str"), ("y", "ts"),
    ("b", "l"), ("b", "dbl"),
    ("d", "l"), ("d", "str"),
    ("ts", "dbl"), ("ts", "i"),
    ("iv", "l2"),
    ("dec", "l"), ("dec18", "dbl"), ("dec18", "dec"),
]


@pytest.mark.parametrize("k1,k2", PAIRS)
def test_two_keys_match_native_in_every_direction(data, k1, k2):
    for o1, o2 in [("asc", "desc"), ("desc", "asc"), ("asc_nulls_last", "desc_nulls_first"),
                   ("desc_nulls_first", "asc_nulls_last")]:
        assert_like_native(data, [(k1, o1), (k2, o2)])


@pytest.mark.parametrize("spec", [
    [("y", "asc"), ("s", "desc"), ("str", "asc")],            # two integral codes, then a string
    [("i", "desc_nulls_first"), ("l2", "asc"), ("dbl", "desc")],
    [("b", "asc"), ("y", "desc"), ("s", "asc"), ("i", "desc"), ("l", "asc")],  # five integral
    [("l", "asc"), ("l2", "desc"), ("i", "asc")],             # wide values: codes fill 64 bits
    [("d", "asc_nulls_last"), ("ts", "desc"), ("dec", "asc")],
    [("s", "asc"), ("big", "desc"), ("l", "asc")],            # a non-long decimal ends the chain
    [("i", "asc"), ("str", "desc"), ("l", "desc")],           # a string ends the chain
])
def test_three_or_more_keys_match_native(data, spec):
    assert_like_native(data, spec)


@pytest.mark.parametrize("spec", [
    [("dbl", "asc"), ("l", "desc")],       # first key not integral: Spark's one-key prefix
    [("str", "desc"), ("i", "asc")],
    [("l", "desc")],                       # one key: Spark's prefix and radix sort, unchanged
])
def test_sorts_that_keep_sparks_prefix_match_native(data, spec):
    assert_like_native(data, spec)


def test_output_is_the_plan_node_and_sorted_by_tuple(data):
    out = assert_like_native(data, [("i", "asc"), ("l", "desc")])
    assert "FullWindowSortPartition" in executed_plan(out)
    # independent of Spark: each partition is ordered by (i asc nulls first, l desc nulls last, id)
    for p in partitions(out):
        keys = [((r[4] is not None, r[4] if r[4] is not None else 0),
                 (r[5] is None, -(r[5] or 0)), r[0]) for r in p]
        assert keys == sorted(keys)


def _bits_row(rid, k1, k2):
    return (rid, None, None, None, None, k1, k2) + (None,) * (len(COLS) - 7)


def test_values_far_from_the_base_in_both_directions(spark):
    """Bases at the extremes and in the middle; other rows at every distance from them, including
    differences that overflow a long and first keys that differ only in low bits (their codes
    fill the prefix, so the full comparator must decide)."""
    far = [LMIN, LMIN + 1, LMAX, LMAX - 1, -1, 0, 1, 2**62, 2**62 + 1, 2**62 + 2, -(2**62) - 1,
           2**56, 2**56 + 1, 2**57 - 1, -(2**57), 2**63 - 64, 2**63 - 63]
    rnd = random.Random(3)
    parts, rid = [], 0
    for first in [0, LMIN, LMAX, None, 2**62, -1]:
        rows = [_bits_row(rid, first, 5)]
        rid += 1
        for _ in range(3):
            for v in far + [None]:
                for k2 in [LMIN, -7, 0, 7, LMAX, None, rnd.randint(LMIN, LMAX)]:
                    rows.append(_bits_row(rid, v, k2))
                    rid += 1
        rnd.shuffle(rows[1:])
        parts.append(rows)
    df = _dataframe(spark, parts)
    try:
        for o1 in DIRECTIONS:
            for o2 in ["asc", "desc_nulls_first"]:
                assert_like_native(df, [("l", o1), ("l2", o2)])
    finally:
        df.unpersist()


def _long_ties_partitions(seed: int) -> list[list[tuple]]:
    """Runs of thousands of rows whose packed prefixes are equal (same first key, strings sharing
    their first 8 bytes), so the full comparator must order them. In partition 0 the first 1500
    rows all differ (the sorter radix-sorts by prefix, judging by its first rows) and a run of
    12,000 equal prefixes follows, longer than the tied rows it sorts on the heap; in partition 1
    the ties start at once (the sorter keeps TimSort)."""
    rnd = random.Random(seed)

    def row(rid, k1, tail):
        return (rid, None, None, None, k1, rnd.choice([1, 2, None]), None, None, None, None,
                None, None, None, None, None, None, "commonprefix" + tail, None)

    def tail():
        return "".join(rnd.choice("abc") for _ in range(rnd.randint(0, 6)))

    parts, rid = [[], []], 0
    for _ in range(1500):
        parts[0].append(row(rid, rnd.randint(-10**6, 10**6), str(rid)))
        rid += 1
    for p in range(2):
        for _ in range(12_000):
            parts[p].append(row(rid, rnd.choice([7, 7, 7, 8, None]) if p else 7, tail()))
            rid += 1
    assert len(parts[0][0]) == len(COLS)
    return parts


def test_long_runs_of_equal_prefixes(spark):
    df = _dataframe(spark, _long_ties_partitions(5))
    try:
        assert_like_native(df, [("i", "asc"), ("str", "desc"), ("l", "asc")])
        assert_like_native(df, [("i", "desc_nulls_first"), ("str", "asc_nulls_last")])
    finally:
        df.unpersist()


def test_without_whole_stage_codegen(spark, data):
    spark.conf.set("spark.sql.codegen.wholeStage", "false")
    try:
        out = assert_like_native(data, [("s", "desc"), ("dbl", "asc"), ("str", "desc")])
        assert "WholeStageCodegen" not in executed_plan(out)
        assert_like_native(data, [("l", "asc_nulls_last"), ("l2", "desc")])
    finally:
        spark.conf.unset("spark.sql.codegen.wholeStage")


def test_without_radix_sort(spark, data):
    spark.conf.set("spark.sql.sort.enableRadixSort", "false")
    try:
        assert_like_native(data, [("i", "asc"), ("l", "desc")])
        assert_like_native(data, [("d", "desc_nulls_first"), ("str", "asc")])
    finally:
        spark.conf.unset("spark.sql.sort.enableRadixSort")


def test_packing_can_be_switched_off(spark, data):
    spark.conf.set(PACKED_KEY, "false")
    try:
        assert_like_native(data, [("i", "asc"), ("l", "desc")])
    finally:
        spark.conf.unset(PACKED_KEY)


def test_bad_packing_switch_value_names_the_key(spark, data):
    spark.conf.set(PACKED_KEY, "maybe")
    try:
        with pytest.raises(Exception, match=r"spark\.fullwindow\.sort\.packedPrefix is 'maybe'; "
                                            r"expected one of: true, false"):
            data.fullWindowPartition().sortPartition([("i", "asc"), ("l", "desc")]).collect()
    finally:
        spark.conf.unset(PACKED_KEY)


def test_keyed_sort_partition_with_integral_key(spark, data):
    out = data.keyBy("y").fullWindowPartition().sortPartition([("l", Order.DESCENDING),
                                                              ("id", Order.ASCENDING)])
    for p in partitions(out):
        keys = [((r[2] is not None, r[2] or 0), (r[5] is None, -(r[5] or 0)), r[0]) for r in p]
        assert keys == sorted(keys)
    assert out.count() == data.count()


# ---- forced spills: the same comparisons with the sorter spilling every 500 records ----------
# (a JVM-start setting, hence a session of its own; these tests run last in this module)

@pytest.fixture(scope="module")
def spill_data():
    s = get_session({"spark.shuffle.spill.numElementsForceSpillThreshold": "500"})
    return _dataframe(s, _build_partitions(seed=11, nparts=4, rows_per_part=2500))


@pytest.mark.parametrize("spec", [
    [("l", "asc"), ("l2", "desc")],
    [("i", "desc_nulls_first"), ("dbl", "asc_nulls_last")],
    [("s", "asc"), ("y", "desc"), ("str", "asc")],
    [("d", "desc"), ("ts", "asc"), ("f", "desc")],
    [("y", "asc"), ("dec20", "desc")],
])
def test_with_forced_spills(spill_data, spec):
    import fullwindow as fw

    out = assert_like_native(spill_data, spec)
    out.collect()
    m = fw.operator_metrics(out)
    assert m["FullWindowSortPartition.spillSize"] > 0, m


def test_long_runs_of_equal_prefixes_with_forced_spills(spill_data):
    s = spill_data.sparkSession
    df = _dataframe(s, _long_ties_partitions(6))
    assert_like_native(df, [("i", "asc"), ("str", "desc"), ("l", "asc")])
