"""fullwindow's own per-value Arrow converters (``fullwindow._compat``'s ``_ClassicArrowToRows``
and ``_ClassicRowsToArrow``), used on lines whose pyspark has no classic per-value converter
(3.5), give exactly what that pyspark's Spark Connect client converters give
(``pyspark.sql.connect.conversion``: ``ArrowTableToRowsConversion``,
``LocalDataToArrowConversion``), for a table of every type the line's Arrow schema takes: structs,
arrays and maps nested in each other, timestamps (naive local, aware in other zones, around a
daylight-saving change; the process time zone not UTC), TimestampNTZ, dates, decimals (NaN
too), binary (bytes and bytearray), day-time intervals, NullType, a user-defined type, strings
given other atomic values, and nulls at every level. 3.5's Arrow schema has no year-month
interval, so neither converter meets one there.

It runs in the Spark Connect smoke suite because only there are the Connect client libraries
importable on 3.5 (dev/venvs puts them beside the line's venv). It needs no session. Values are
compared with their Python types and reprs (``bytes`` vs ``bytearray``, naive vs aware, a
datetime's fold), not by ``==``, which would let such differences through."""
from __future__ import annotations

import datetime
import decimal
import os
import time

import pyarrow as pa
import pytest
from pyspark.sql import Row
from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, DateType, DayTimeIntervalType,
                               DecimalType, DoubleType, FloatType, IntegerType, LongType, MapType,
                               NullType, StringType, StructField, StructType, TimestampNTZType,
                               TimestampType, UserDefinedType, _create_row)

from fullwindow import _compat

if _compat._ArrowToRows is not _compat._ClassicArrowToRows:
    pytest.skip("this line's pyspark has classic per-value Arrow converters of its own "
                "(pyspark.sql.conversion), which fullwindow uses instead of its _compat ones",
                allow_module_level=True)
assert _compat._RowsToArrow is _compat._ClassicRowsToArrow
try:
    from pyspark.sql.connect.conversion import (ArrowTableToRowsConversion,
                                                LocalDataToArrowConversion)
except ImportError as err:  # the suite as a whole needs them: not a reason to skip
    pytest.fail(f"the Spark Connect smoke suite needs the Connect client libraries ({err}): "
                "run it as dev/test does, with .venvs/spark-<line>-connect on PYTHONPATH",
                pytrace=False)

# the process's time zone while converting: local timestamps are 4 or 5 hours off UTC, and
# 2021-11-07 01:30 happens twice
LOCAL_TZ = "America/New_York"
# the session time zone Spark writes timestamps in when it sends Arrow batches to Python
SESSION_TZ = "Asia/Kolkata"


class Point:
    def __init__(self, x: float, y: float):
        self.x, self.y = x, y

    def __repr__(self) -> str:
        return f"Point({self.x!r}, {self.y!r})"


class PointUDT(UserDefinedType):
    @classmethod
    def sqlType(cls):
        return StructType([StructField("x", DoubleType(), False),
                           StructField("y", DoubleType(), False)])

    @classmethod
    def module(cls):
        return __name__

    def serialize(self, obj):
        return (obj.x, obj.y)

    def deserialize(self, datum):
        return Point(datum[0], datum[1])


class Holder:  # a struct given as a plain object: its attributes by name
    def __init__(self, **values):
        self.__dict__.update(values)


INNER = StructType([StructField("bin", BinaryType()), StructField("t", TimestampType()),
                    StructField("nothing", NullType())])
SCHEMA = StructType([
    StructField("id", LongType()),
    StructField("i", IntegerType()),
    StructField("f", FloatType()),
    StructField("ok", BooleanType()),
    StructField("s", StringType()),
    StructField("b", BinaryType()),
    StructField("d", DecimalType(20, 5)),
    StructField("ts", TimestampType()),
    StructField("ntz", TimestampNTZType()),
    StructField("day", DateType()),
    StructField("iv", DayTimeIntervalType()),
    StructField("n", NullType()),
    StructField("p", PointUDT()),
    StructField("arr", ArrayType(StructType([StructField("x", IntegerType()),
                                             StructField("inner", INNER)]))),
    StructField("tss", ArrayType(TimestampType())),
    StructField("m", MapType(StringType(), ArrayType(BinaryType()))),
    StructField("mts", MapType(IntegerType(), TimestampType())),
    StructField("st", StructType([StructField("a", LongType()), StructField("inner", INNER),
                                  StructField("m", MapType(StringType(), DecimalType(10, 2))),
                                  StructField("ps", ArrayType(PointUDT()))])),
])
NAMES = SCHEMA.names


def _rows():
    """The same kinds of values in the forms a user's function may give them: a Row, a tuple
    (nested structs as tuples, binary as bytearray), a dict with keys missing (nested structs as
    dicts and plain objects), and a row of nulls."""
    ny_naive = datetime.datetime(2021, 11, 7, 1, 30, 0, 123456)  # the first 01:30 (EDT)
    aware = datetime.datetime(2024, 2, 29, 23, 59, 59, 999999,
                              tzinfo=datetime.timezone(datetime.timedelta(hours=-9, minutes=-30)))
    inner = Row(bin=b"\x00\xff", t=ny_naive.replace(fold=1), nothing=None)  # the second 01:30
    return [
        Row(id=1, i=-7, f=0.1, ok=True, s="plain", b=b"\x00bytes", d=decimal.Decimal("12.34567"),
            ts=ny_naive, ntz=datetime.datetime(1999, 12, 31, 23, 59, 59),
            day=datetime.date(1970, 1, 1), iv=datetime.timedelta(days=-3, microseconds=5),
            n=None, p=Point(1.5, -2.0),
            arr=[Row(x=1, inner=inner), None, Row(x=None, inner=None)],
            tss=[aware, None, datetime.datetime(1900, 1, 1, 0, 0)],
            m={"a": [b"x", None, bytearray(b"y")], "none": None, "empty": []},
            mts={1: aware, 2: None},
            st=Row(a=9, inner=inner, m={"k": decimal.Decimal("1.50"), "nan": None},
                   ps=[Point(0.0, 0.0), None])),
        (2, None, None, False, 7, bytearray(b"\x01bytearray"), decimal.Decimal("NaN"), aware,
         datetime.datetime(2021, 3, 14, 2, 30), datetime.date(2000, 2, 29),
         datetime.timedelta(hours=25, seconds=1), None, None,
         [(None, (bytearray(b""), aware, None))], [], {}, {},
         (None, (None, None, None), {"x": decimal.Decimal("NaN")}, [])),
        {"id": 3, "s": True, "ts": datetime.datetime(2021, 3, 14, 2, 30),  # a local hour not there
         "st": {"a": 1, "inner": Holder(bin=None, t=ny_naive, nothing=None), "m": None,
                "ps": None},
         "arr": [{"x": 5, "inner": {"bin": b"z"}}], "m": None, "mts": None},
        Row(**{name: None for name in NAMES}),
        (5, 2147483647, float("inf"), None, datetime.date(2020, 1, 2), None,
         decimal.Decimal("-99999999999999.99999"), None, None, None, None, None, Point(-0.0, 1e300),
         None, None, None, None, None),
        {"id": 6, "s": decimal.Decimal("1.10")},
        {"id": 7, "s": 2.5},
        {"id": 8, "s": datetime.timedelta(minutes=1)},
        {"id": 9, "s": datetime.datetime(2020, 5, 17, 8, 0)},
        {"id": 10, "s": b"raw"},
    ]


def canon(value):
    """``value`` with every Python type and repr spelled out, Rows with their field names."""
    if isinstance(value, Row):
        return ("Row", tuple(value.__fields__) if hasattr(value, "__fields__") else None,
                [canon(v) for v in value])
    if isinstance(value, dict):
        return ("dict", [(canon(k), canon(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [canon(v) for v in value])
    if isinstance(value, Point):
        return ("Point", repr(value))
    return (type(value).__name__, repr(value))


def classic_rows(table: pa.Table, schema: StructType) -> list:
    """fullwindow's path: its column values (``_compat.to_pylist``), then its classic
    converters, into Rows as pyspark builds them."""
    columns = [_compat.to_pylist(c) for c in table.columns]
    convs = [_compat._ClassicArrowToRows._create_converter(f.dataType) for f in schema.fields]
    return [_create_row(schema.names, [conv(col[i]) for conv, col in zip(convs, columns)])
            for i in range(table.num_rows)]


def connect_rows(table: pa.Table, schema: StructType) -> list:
    return ArrowTableToRowsConversion.convert(table, schema)


def _retyped(t: pa.DataType, tz: str | None, large: bool) -> pa.DataType:
    """``t`` with timestamps that have a zone in ``tz`` and, with ``large``, large strings and
    binaries, nested types too."""
    if pa.types.is_timestamp(t) and t.tz is not None and tz is not None:
        return pa.timestamp(t.unit, tz=tz)
    if large and pa.types.is_string(t):
        return pa.large_string()
    if large and pa.types.is_binary(t):
        return pa.large_binary()
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_retyped(t.value_type, tz, large)))
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_retyped(t.key_type, tz, large)),
                       t.item_field.with_type(_retyped(t.item_type, tz, large)))
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_retyped(t.field(i).type, tz, large))
                          for i in range(t.num_fields)])
    return t


@pytest.fixture
def local_tz():
    """The process's local time zone is LOCAL_TZ while a test runs."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = LOCAL_TZ
    time.tzset()
    assert time.localtime(0).tm_hour == 19  # 1970-01-01 00:00 UTC is 19:00 in New York
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = old
        time.tzset()


def test_rows_to_arrow_is_the_connect_clients(local_tz):
    rows = _rows()
    ours = _compat._ClassicRowsToArrow.convert(rows, SCHEMA)
    theirs = LocalDataToArrowConversion.convert(rows, SCHEMA)
    assert ours.schema.equals(theirs.schema, check_metadata=True), \
        f"{ours.schema}\n!=\n{theirs.schema}"
    for name in NAMES:
        assert ours.column(name).to_pylist() == theirs.column(name).to_pylist(), name
    assert ours.equals(theirs)
    # and what both give is what was meant: a local time, in UTC
    ts = ours.column("ts").to_pylist()
    assert ts[0] == datetime.datetime(2021, 11, 7, 5, 30, 0, 123456, tzinfo=datetime.timezone.utc)
    # 02:30 on 2021-03-14 is not a New York time (clocks went from 02:00 to 03:00): Python
    # reads it with the offset after the change (EDT)
    assert ts[2] == datetime.datetime(2021, 3, 14, 6, 30, tzinfo=datetime.timezone.utc)
    assert ours.column("s").to_pylist()[1:] == [
        "7", "true", None, "2020-01-02", "1.10", "2.5", "0:01:00", "2020-05-17 08:00:00",
        "b'raw'"]
    assert ours.column("d").to_pylist()[1] is None  # NaN
    assert ours.column("st").to_pylist()[0]["inner"]["t"] == \
        datetime.datetime(2021, 11, 7, 6, 30, 0, 123456, tzinfo=datetime.timezone.utc)


@pytest.mark.parametrize("tz, large", [(None, False), (SESSION_TZ, False), (SESSION_TZ, True)],
                         ids=["utc", "session-time-zone", "session-time-zone-large-types"])
def test_arrow_to_rows_is_the_connect_clients(local_tz, tz, large):
    table = LocalDataToArrowConversion.convert(_rows(), SCHEMA)
    if tz is not None or large:
        table = table.cast(pa.schema([f.with_type(_retyped(f.type, tz, large))
                                      for f in table.schema]))
        if tz is not None:
            assert table.schema.field("ts").type.tz == tz
    ours = classic_rows(table, SCHEMA)
    theirs = connect_rows(table, SCHEMA)
    assert len(ours) == len(theirs) == table.num_rows
    for i, (a, b) in enumerate(zip(ours, theirs)):
        for name, x, y in zip(NAMES, a, b):
            assert canon(x) == canon(y), f"row {i}, field {name}: {x!r} != {y!r}"
        assert canon(a) == canon(b)
    # and what both give is what pyspark's classic rows hold: local naive times, bytearray,
    # Rows with their field names, dicts, the user's class
    first = ours[0]
    assert canon(first.ts) == canon(datetime.datetime(2021, 11, 7, 1, 30, 0, 123456))
    assert canon(first.tss[0]) == canon(datetime.datetime(2024, 3, 1, 4, 29, 59, 999999))
    assert canon(ours[2].ts) == canon(datetime.datetime(2021, 3, 14, 1, 30))  # 06:30 UTC
    assert canon(first.b) == canon(bytearray(b"\x00bytes"))
    assert canon(first.m["a"]) == canon([bytearray(b"x"), None, bytearray(b"y")])
    assert first.arr[0].inner.__fields__ == ["bin", "t", "nothing"]
    assert canon(first.arr[0].inner.t) == canon(datetime.datetime(2021, 11, 7, 1, 30, 0, 123456))
    assert isinstance(first.p, Point) and (first.p.x, first.p.y) == (1.5, -2.0)
    assert first.iv == datetime.timedelta(days=-3, microseconds=5)
    assert ours[1].i is None and ours[3].f is None and ours[4].i == 2147483647
    assert canon(ours[1].ntz) == canon(datetime.datetime(2021, 3, 14, 2, 30))
