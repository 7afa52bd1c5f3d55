"""The pyspark internals that differ between the supported Spark lines, in one place.

Everything here is chosen by what the installed pyspark offers (a parameter, a function, a
class), never by its version string: the worker and key code import these names and stay the
same on every line.
"""
from __future__ import annotations

import datetime
import decimal
import functools
import inspect
import re
from typing import Any, Callable, List, Mapping, Optional

import pyarrow as pa
from pyspark.sql import Column as _Column
from pyspark.sql import DataFrame as _DataFrame
from pyspark.sql.pandas.types import to_arrow_schema as _to_arrow_schema
from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, ByteType, DataType,
                               DecimalType, DoubleType, FloatType, IntegerType, LongType, MapType,
                               NullType, ShortType, StringType, StructType, TimestampType,
                               UserDefinedType, _create_row)

try:  # pyspark.util since 4.0
    from pyspark.util import PythonEvalType
except ImportError:  # pragma: no cover - older lines keep it in pyspark.rdd
    from pyspark.rdd import PythonEvalType  # type: ignore[no-redef,import-not-found,unused-ignore]

try:  # 4.0+
    from pyspark.sql.types import VariantType
except ImportError:  # pragma: no cover - a line without variants: a type no value has
    class VariantType(DataType):  # type: ignore[no-redef]
        """Stands for Spark's VariantType on a pyspark that has none."""

try:  # 4.0+
    from pyspark.sql.conversion import ArrowTableToRowsConversion as _ArrowToRows
    from pyspark.sql.conversion import LocalDataToArrowConversion as _RowsToArrow
except ImportError:  # 3.5: see _ClassicArrowToRows
    _ArrowToRows = _RowsToArrow = None  # type: ignore[assignment,misc,unused-ignore]


def _identity(value: Any) -> Any:
    return value


class _ClassicArrowToRows:
    """Arrow values (as ``to_pylist`` gives them) -> the Python values a classic pyspark 3.5
    session hands to user code, for pyspark 3.5. Its only per-value converters are in its Spark
    Connect client (``pyspark.sql.connect.conversion``), which cannot be imported without gRPC;
    its classic Arrow paths go through pandas, which turns integer columns with nulls into
    floats. So these follow pyspark's classic rules (``DataType.fromInternal``): timestamps as
    naive local datetimes, structs as ``Row``, maps as ``dict``, UDTs deserialized; binary nested
    in structs/arrays as ``bytearray``, as pyspark 3.5 gives it."""

    @staticmethod
    def _need_converter(dt: DataType) -> bool:
        if isinstance(dt, ArrayType):
            return _ClassicArrowToRows._need_converter(dt.elementType)
        return isinstance(dt, (NullType, StructType, MapType, BinaryType, TimestampType,
                               UserDefinedType))

    @staticmethod
    def _create_converter(dt: DataType) -> Callable[[Any], Any]:
        conv = _ClassicArrowToRows._create_converter
        if not _ClassicArrowToRows._need_converter(dt):
            return _identity
        if isinstance(dt, NullType):
            return lambda value: None
        if isinstance(dt, StructType):
            names, fields = dt.names, [conv(f.dataType) for f in dt.fields]

            def struct(value: Any) -> Any:
                if value is None:
                    return None
                return _create_row(names, [c(v) for c, v in zip(fields, value.values())])
            return struct
        if isinstance(dt, ArrayType):
            element = conv(dt.elementType)
            return lambda value: None if value is None else [element(v) for v in value]
        if isinstance(dt, MapType):
            key, item = conv(dt.keyType), conv(dt.valueType)
            return lambda value: None if value is None else {key(k): item(v) for k, v in value}
        if isinstance(dt, BinaryType):
            return lambda value: None if value is None else bytearray(value)
        if isinstance(dt, TimestampType):
            return lambda value: None if value is None else \
                value.astimezone().replace(tzinfo=None)
        assert isinstance(dt, UserDefinedType)
        udt, sql = dt, conv(dt.sqlType())
        return lambda value: None if value is None else udt.deserialize(sql(value))


class _ClassicRowsToArrow:
    """Python rows (tuples, Rows, dicts, objects) -> an Arrow table, for pyspark 3.5 (see
    ``_ClassicArrowToRows``), by classic pyspark's rules (``DataType.toInternal``): naive
    timestamps are local time, structs are taken from Rows/tuples by position and from dicts by
    name, maps from dicts, UDTs serialized, a NaN decimal is null, and atomic values given for a
    string field become their text (booleans ``true``/``false``)."""

    @staticmethod
    def _create_converter(dt: DataType) -> Callable[[Any], Any]:
        conv = _ClassicRowsToArrow._create_converter
        if isinstance(dt, NullType):
            return lambda value: None
        if isinstance(dt, StructType):
            names, fields = dt.names, [conv(f.dataType) for f in dt.fields]

            def struct(value: Any) -> Any:
                if value is None:
                    return None
                return dict(zip(names, (c(v) for c, v in zip(fields, _values(value, names)))))
            return struct
        if isinstance(dt, ArrayType):
            element = conv(dt.elementType)
            if element is _identity:
                return _identity
            return lambda value: None if value is None else [element(v) for v in value]
        if isinstance(dt, MapType):
            key, item = conv(dt.keyType), conv(dt.valueType)
            return lambda value: None if value is None else \
                [(key(k), item(v)) for k, v in value.items()]
        if isinstance(dt, BinaryType):
            return lambda value: None if value is None else bytes(value)
        if isinstance(dt, TimestampType):
            return lambda value: None if value is None else \
                value.astimezone(datetime.timezone.utc)
        if isinstance(dt, DecimalType):
            return lambda value: None if value is None or value.is_nan() else value
        if isinstance(dt, StringType):
            return _to_string
        if isinstance(dt, UserDefinedType):
            udt, sql = dt, conv(dt.sqlType())
            return lambda value: None if value is None else sql(udt.serialize(value))
        return _identity

    @staticmethod
    def convert(rows: list, schema: StructType) -> pa.Table:
        names = schema.names
        convs = [_ClassicRowsToArrow._create_converter(f.dataType) for f in schema.fields]
        columns: List[List[Any]] = [[] for _ in names]
        for row in rows:
            for column, c, v in zip(columns, convs, _values(row, names)):
                column.append(c(v))
        return pa.Table.from_arrays(columns, schema=_to_arrow_schema(schema))


def _values(value: Any, names: List[str]) -> Any:
    """The field values of a row or struct given as a Row, tuple, dict or plain object."""
    if not isinstance(value, (tuple, dict)) and hasattr(value, "__dict__"):
        value = value.__dict__
    if isinstance(value, dict):
        return [value.get(n) for n in names]
    if len(value) != len(names):
        raise ValueError(f"{value!r} has {len(value)} fields, the schema {len(names)}")
    return value


def _to_string(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, bytes, bytearray, decimal.Decimal, datetime.date,
                          datetime.timedelta)):
        return str(value)
    raise TypeError(f"a string field takes str or an atomic value, got {type(value).__name__}")


if _ArrowToRows is None:
    _ArrowToRows = _ClassicArrowToRows  # type: ignore[assignment,misc,unused-ignore]
    _RowsToArrow = _ClassicRowsToArrow  # type: ignore[assignment,misc,unused-ignore]

__all__ = ["COLUMN_TYPES", "DATAFRAME_TYPES", "PythonEvalType", "VariantType",
           "arrow_value_converter", "classic_rdd_types", "connect_dataframe",
           "connect_dataframe_class",
           "connect_execution_metrics", "connect_plan_observations", "connect_server_conf",
           "arrow_to_pandas", "enforce_schema", "error_condition", "numpy_column_converter",
           "pandas_to_arrow",
           "rows_to_arrow", "to_arrow_schema", "to_pylist"]

_CONVERTER_PARAMS = inspect.signature(_ArrowToRows._create_converter).parameters
_SCHEMA_PARAMS = inspect.signature(_to_arrow_schema).parameters
_CONVERT_PARAMS = inspect.signature(_RowsToArrow.convert).parameters


def error_condition(err: Any) -> Optional[str]:
    """The error condition (e.g. ``DATATYPE_MISMATCH.INVALID_ORDERING_TYPE``) of a pyspark
    exception: ``getCondition()`` from 4.0, ``getErrorClass()`` on 3.5; 3.5's Connect client
    leaves that empty, and the condition is only the ``[CONDITION]`` its message starts with.
    None without one."""
    for name in ("getCondition", "getErrorClass"):
        if hasattr(err, name):
            found = getattr(err, name)()
            if found:
                return found
            break
    text = err.getMessage() if hasattr(err, "getMessage") else str(err)
    leading = re.match(r"\s*\[([A-Z][A-Z0-9_]*(?:\.[A-Z][A-Z0-9_]*)*)\]", text or "")
    return leading.group(1) if leading else None


def _large(t: pa.DataType) -> pa.DataType:
    """``t`` with every string and binary (nested too) in its large (64-bit offset) form."""
    if pa.types.is_string(t):
        return pa.large_string()
    if pa.types.is_binary(t):
        return pa.large_binary()
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_large(t.value_type)))
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_large(t.key_type)),
                       t.item_field.with_type(_large(t.item_type)))
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_large(t.field(i).type))
                          for i in range(t.num_fields)])
    return t


def arrow_value_converter(data_type: DataType) -> Optional[Callable[[Any], Any]]:
    """What turns one value of an Arrow column (as ``to_pylist`` gives it) of ``data_type`` into
    the Python value pyspark hands to user code, binary as ``bytes``; None when nothing does."""
    if "none_on_identity" in _CONVERTER_PARAMS:
        return _ArrowToRows._create_converter(data_type, none_on_identity=True,
                                              binary_as_bytes=True)
    # Older converters return an identity function and turn top-level binary into bytearray
    # (unhashable, so unusable as a key): Arrow's own bytes are what this package promises.
    if isinstance(data_type, BinaryType) or not _ArrowToRows._need_converter(data_type):
        return None
    return _ArrowToRows._create_converter(data_type)


if hasattr(_ArrowToRows, "_to_pylist"):
    _typed_pylist: Callable[[Any], List[Any]] = _ArrowToRows._to_pylist
else:
    def _typed_pylist(column: Any) -> List[Any]:
        return column.to_pylist()


def _is_numpy_exact(t: pa.DataType) -> bool:
    """Boolean, integer and 32/64-bit floating columns: NumPy's ``tolist`` gives the same Python
    values as Arrow's scalars (bool, int, float)."""
    return (pa.types.is_boolean(t) or pa.types.is_integer(t)
            or pa.types.is_float32(t) or pa.types.is_float64(t))


def _numpy_pylist(chunk: pa.Array) -> List[Any]:
    if chunk.null_count == 0:
        return chunk.to_numpy(zero_copy_only=False).tolist()
    fill = False if pa.types.is_boolean(chunk.type) else 0
    values = chunk.fill_null(fill).to_numpy(zero_copy_only=False).tolist()
    for i in chunk.is_null().to_numpy(zero_copy_only=False).nonzero()[0].tolist():
        values[i] = None
    return values


def to_pylist(column: Any) -> List[Any]:
    """A column's (Array or ChunkedArray) values as the Python objects Arrow's ``to_pylist``
    gives. Boolean, integer and floating columns go through NumPy: the pyarrow releases Spark
    3.5 accepts (< 21) make one Python scalar object per value, ~15x slower."""
    if not _is_numpy_exact(column.type):
        return _typed_pylist(column)
    if isinstance(column, pa.ChunkedArray):
        out: List[Any] = []
        for chunk in column.chunks:
            out.extend(_numpy_pylist(chunk))
        return out
    return _numpy_pylist(column)


def to_arrow_schema(schema: StructType, large_var_types: bool) -> pa.Schema:
    """The Arrow schema of ``schema``, timestamps in UTC."""
    if "timezone" in _SCHEMA_PARAMS:
        return _to_arrow_schema(schema, timezone="UTC", prefers_large_types=large_var_types)
    if "prefers_large_types" in _SCHEMA_PARAMS:
        return _to_arrow_schema(schema,  # type: ignore[call-arg,unused-ignore]
                                timestamp_utc=True, prefers_large_types=large_var_types)
    # 3.5: timestamps are always UTC; large types by hand
    arrow = _to_arrow_schema(schema)
    return pa.schema([f.with_type(_large(f.type)) for f in arrow]) if large_var_types else arrow


def rows_to_arrow(rows: list, schema: StructType, large_var_types: bool) -> pa.Table:
    """Python rows (tuples, Rows, dicts) of ``schema`` as an Arrow table, by pyspark's converter."""
    if "use_large_var_types" in _CONVERT_PARAMS:
        return _RowsToArrow.convert(rows, schema, large_var_types)
    table = _RowsToArrow.convert(rows, schema)  # type: ignore[call-arg,unused-ignore]  # 3.5
    return table.cast(to_arrow_schema(schema, True)) if large_var_types else table


try:  # 4.2+: the conversions applyInPandas uses, as functions of their own
    from pyspark.sql.conversion import ArrowBatchTransformer as _Transformer
    from pyspark.sql.conversion import PandasToArrowConversion as _PandasToArrow
except ImportError:  # 3.5 to 4.1: the same conversions are methods of the pandas serializer
    _Transformer = _PandasToArrow = None  # type: ignore[assignment,misc,unused-ignore]


@functools.lru_cache(maxsize=None)
def _pandas_serializer(timezone: Optional[str], safecheck: bool, int_to_decimal: bool) -> Any:
    """pyspark's ``ArrowStreamPandasSerializer`` (what ``mapInPandas`` and ``applyInPandas``
    convert with up to 4.1), one per setting: 4.1 caches its converters in it."""
    from pyspark.sql.pandas.serializers import (  # type: ignore[attr-defined,unused-ignore]
        ArrowStreamPandasSerializer)  # up to 4.1

    if "int_to_decimal_coercion_enabled" in inspect.signature(
            ArrowStreamPandasSerializer.__init__).parameters:  # 4.1
        return ArrowStreamPandasSerializer(timezone, safecheck, int_to_decimal)
    return ArrowStreamPandasSerializer(timezone, safecheck)  # type: ignore[call-arg,unused-ignore]


def arrow_to_pandas(batch: pa.RecordBatch, timezone: Optional[str], schema: StructType,
                    prefer_int_ext: bool) -> List[Any]:
    """The columns of ``batch`` (of ``schema``) as the pandas Series pyspark's ``applyInPandas``
    hands to its function: ``ArrowBatchTransformer.to_pandas`` from 4.2, the pandas serializer's
    ``arrow_to_pandas`` before (timestamps localized to ``timezone``, structs as dicts)."""
    if _Transformer is not None:
        return _Transformer.to_pandas(batch, timezone=timezone,  # type: ignore[arg-type,unused-ignore]
                                      schema=schema, prefer_int_ext_dtype=prefer_int_ext)
    serializer = _pandas_serializer(timezone, True, False)
    convert = serializer.arrow_to_pandas
    if "idx" in inspect.signature(convert).parameters:  # 4.1: a position and the Spark type
        return [convert(batch.column(i), i, spark_type=f.dataType)
                for i, f in enumerate(schema.fields)]
    return [convert(batch.column(i)) for i in range(batch.num_columns)]  # 3.5, 4.0


def pandas_to_arrow(columns: List[Any], schema: StructType, timezone: Optional[str],
                    safecheck: bool, large_var_types: bool,
                    int_to_decimal: bool) -> pa.RecordBatch:
    """pandas Series (one per field of ``schema``) as an Arrow batch of ``schema``, converted and
    cast as ``applyInPandas`` converts its function's result: ``PandasToArrowConversion.convert``
    from 4.2, the pandas serializer's ``_create_array`` (with Arrow casting) before."""
    if _PandasToArrow is not None:
        return _PandasToArrow.convert(
            columns, schema, timezone=timezone, safecheck=safecheck, arrow_cast=True,
            prefers_large_types=large_var_types,
            int_to_decimal_coercion_enabled=int_to_decimal)
    serializer = _pandas_serializer(timezone, safecheck, int_to_decimal)
    arrow = to_arrow_schema(schema, large_var_types)
    arrays = [serializer._create_array(column, arrow.field(i).type, field.dataType,
                                       arrow_cast=True)
              for i, (column, field) in enumerate(zip(columns, schema.fields))]
    return pa.RecordBatch.from_arrays(arrays, schema=arrow)


# Types whose Arrow column pyspark's Arrow -> pandas conversion turns into a pandas Series
# exactly as pyarrow's own ``to_numpy`` does (4.2 and 4.3: ``Array.to_pandas()`` for these).
_NUMPY_TYPES = (BooleanType, ByteType, ShortType, IntegerType, LongType, FloatType, DoubleType,
                BinaryType)
_PROBE_VALUES: dict[str, list[Any]] = {"BooleanType": [True, False],
                                       "BinaryType": [b"a", b"bc"]}


def consolidate(frame: Any) -> Any:
    """``frame`` with its columns of one dtype stored as one block, as pandas' constructor
    leaves them when given a dict of arrays without copying. pandas consolidates a frame on
    first column access and every ``iloc`` slice of an unconsolidated frame again, per slice;
    a frame cut into many small per-key slices paid that once per key (18% of coGroup
    applyInPandas' Python CPU at 10,000 keys, benchmarks/notes/keyed.md). pandas has no public
    call for it; without the private one the frame is returned as it is."""
    merge = getattr(frame, "_consolidate_inplace", None)
    if merge is not None:
        merge()
    return frame


def numpy_view(column: pa.Array) -> Any:
    """``column`` (of a type ``numpy_column_converter`` takes) as a numpy array: a read-only view
    of the Arrow memory where pyarrow can give one, for the caller to copy."""
    return column.to_numpy(zero_copy_only=False)


def _array_to_numpy(column: pa.Array) -> Any:
    # writable: the function owns its frames (pandas would refuse to assign into Arrow memory)
    return column.to_numpy(zero_copy_only=False, writable=True)


@functools.lru_cache(maxsize=None)
def _numpy_matches(type_name: str, prefer_int_ext: bool) -> bool:
    """Whether, on this pyspark, a column of the type ``type_name`` converts to the same Series
    (dtype, values, value types) by pyspark's converter and by ``to_numpy``: checked once per worker
    on a probe with and without nulls, so that a pyspark that converts a type otherwise (e.g.
    integers to nullable extension dtypes with ``preferIntExtensionDtype``) keeps its own."""
    import pandas as pd
    from pyspark.sql.types import StructField

    spark_type = next(t for t in _NUMPY_TYPES if t.__name__ == type_name)()
    values = _PROBE_VALUES.get(type_name, [1, 2])
    schema = StructType([StructField("c", spark_type)])
    arrow_type = _to_arrow_schema(schema).field(0).type
    for data in (values, values[:1] + [None], [None, None]):
        column = pa.array(data, arrow_type)
        batch = pa.RecordBatch.from_arrays([column], names=["c"])
        try:
            ref = arrow_to_pandas(batch, "UTC", schema, prefer_int_ext)[0]
        except Exception:  # noqa: BLE001 - a pyspark without this conversion: keep its own
            return False
        mine = pd.Series(_array_to_numpy(column), name="c")
        if not (ref.dtype == mine.dtype and ref.equals(mine)
                and [type(v) for v in ref] == [type(v) for v in mine]):
            return False
    return True


def numpy_column_converter(data_type: DataType,
                           prefer_int_ext: bool) -> Optional[Callable[[pa.Array], Any]]:
    """A converter of an Arrow column of ``data_type`` to the numpy array pyspark's Arrow ->
    pandas conversion would give, without its per-column Series and rename (three times
    cheaper for a 10,000-row batch of numbers); ``None`` where pyspark's own conversion must do
    it (strings, decimals, time, nested types, or a type this pyspark converts otherwise)."""
    if type(data_type) not in _NUMPY_TYPES \
            or not _numpy_matches(type(data_type).__name__, prefer_int_ext):
        return None
    return _array_to_numpy


if _Transformer is not None:  # 4.2+
    def enforce_schema(batch: pa.RecordBatch, arrow_schema: pa.Schema) -> pa.RecordBatch:
        """``batch`` with the columns of ``arrow_schema``, taken by name and cast safely."""
        return _Transformer.enforce_schema(batch, arrow_schema)
else:
    def enforce_schema(batch: pa.RecordBatch, arrow_schema: pa.Schema) -> pa.RecordBatch:
        """``batch`` with the columns of ``arrow_schema``, taken by name and cast safely."""
        if batch.num_columns == 0 or len(arrow_schema) == 0:
            return batch
        if batch.schema.equals(arrow_schema, check_metadata=False):
            return batch
        names = batch.schema.names
        columns = []
        for field in arrow_schema:
            if field.name not in names:
                raise TypeError(f"Result column '{field.name}' does not exist in the output. "
                                f"Expected schema: {arrow_schema}, got: {batch.schema}.")
            column = batch.column(names.index(field.name))
            columns.append(column if column.type == field.type
                           else column.cast(target_type=field.type, safe=True))
        return pa.RecordBatch.from_arrays(columns, schema=arrow_schema)


# --- Spark Connect client ------------------------------------------------------------------------

def client_only() -> bool:
    """Whether the installed pyspark is ``pyspark-client``, Spark's pure-Python Spark Connect
    client (4.0+): no ``pyspark.core`` (SparkContext, RDD), no ``pyspark.sql.classic``, no py4j,
    so no JVM and no classic or local session in this process, only ``sc://`` servers.
    pyspark's own ``is_remote_only`` tells (4.0+); 3.5 has no such client."""
    try:
        from pyspark.util import is_remote_only
    except ImportError:  # 3.5
        return False
    return bool(is_remote_only())


def _connect_types() -> tuple:
    """The Connect client's DataFrame and Column classes where they do not derive from
    ``pyspark.sql.DataFrame`` / ``Column`` (3.5); from 4.0 both kinds share those bases, so
    nothing is added. Known without importing the Connect client (``import fullwindow`` stays
    light) for a full pyspark 4.x, which has ``pyspark.sql.classic``, and for pyspark-client,
    which exists from 4.0 only; anything else is told by the classes themselves."""
    import importlib.util

    if importlib.util.find_spec("pyspark.sql.classic") is not None or client_only():
        return (), ()
    try:
        from pyspark.sql.connect.column import Column as ConnectColumn
        from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame
    except ImportError:  # no Connect client libraries: no Connect DataFrames either
        return (), ()
    if issubclass(ConnectDataFrame, _DataFrame) and issubclass(ConnectColumn, _Column):
        return (), ()
    return (ConnectDataFrame,), (ConnectColumn,)


def classic_rdd_types() -> tuple:
    """``(classic DataFrame class, RDD class)`` of the installed pyspark, whose ``foreach`` /
    ``foreachPartition`` run on the driver's py4j session (``pyspark.sql.classic`` and
    ``pyspark.core.rdd`` from 4.0; ``pyspark.sql.DataFrame`` and ``pyspark.rdd`` on 3.5);
    ``()`` for a thin client (pyspark-client: no classic sessions)."""
    import importlib

    if client_only():
        return ()
    for df_module, rdd_module in (("pyspark.sql.classic.dataframe", "pyspark.core.rdd"),
                                  ("pyspark.sql.dataframe", "pyspark.rdd")):
        try:
            df_cls = importlib.import_module(df_module).DataFrame
            rdd_cls = importlib.import_module(rdd_module).RDD
        except (ImportError, AttributeError):
            continue
        return df_cls, rdd_cls
    return ()


def connect_dataframe_class() -> Any:
    """The Spark Connect client's DataFrame class, if its client is importable (None else)."""
    try:
        from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame
    except ImportError:
        return None
    return ConnectDataFrame


_CONNECT_DF, _CONNECT_COLUMN = _connect_types()
#: what ``isinstance`` takes for "a DataFrame" / "a Column", classic or Spark Connect
DATAFRAME_TYPES: tuple = (_DataFrame, *_CONNECT_DF)
COLUMN_TYPES: tuple = (_Column, *_CONNECT_COLUMN)


def dataframe_schema(df: Any) -> StructType:
    """``df.schema``, asked of a Spark Connect server at most once per DataFrame object. From 4.0
    every DataFrame keeps its schema once known; 3.5's Connect DataFrame asks its server again
    (an AnalyzePlan round trip) on every ``schema``/``columns``, so there fullwindow keeps the
    answer beside the DataFrame, as 4.x's does."""
    if _CONNECT_DF and isinstance(df, _CONNECT_DF):
        kept = df.__dict__.get("_fullwindow_schema")
        if kept is None:
            kept = df.__dict__["_fullwindow_schema"] = df.schema
        return kept
    return df.schema


def keep_schema(df: Any, schema: StructType) -> bool:
    """Gives a Spark Connect DataFrame whose schema is known (a step inside one operation) that
    schema, so that asking for it costs no round trip: beside the DataFrame on 3.5, as
    :func:`dataframe_schema` keeps it; in the client's own cache from 4.0 (``_cached_schema``,
    which pyspark's client itself copies onto derived DataFrames). False where neither exists:
    the schema will be asked of the server."""
    if _CONNECT_DF and isinstance(df, _CONNECT_DF):
        df.__dict__["_fullwindow_schema"] = schema
        return True
    if "_cached_schema" in df.__dict__:
        df.__dict__["_cached_schema"] = schema
        return True
    return False


def connect_dataframe(plan: Any, session: Any) -> Any:
    """A Spark Connect DataFrame over a client-side logical plan: ``DataFrame(plan, session)``
    from 4.0; 3.5's constructor takes only the session, and ``DataFrame.withPlan`` sets the plan."""
    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame

    if "plan" in inspect.signature(ConnectDataFrame.__init__).parameters:
        return ConnectDataFrame(plan, session)
    return ConnectDataFrame.withPlan(plan, session)  # type: ignore[attr-defined,unused-ignore]


def connect_plan_observations(plan: Any) -> dict:
    """The observations (``df.observe``) a Connect client plan holds: 3.5's plans keep none."""
    return dict(getattr(plan, "observations", None) or {})


def connect_execution_metrics(df: Any) -> Any:
    """The SQL metrics the Connect server sent with ``df``'s last action's result
    (``df.executionInfo.metrics`` from 4.0; None before an action). Raises
    ``FullWindowValueError`` on a client that does not keep them (3.5 has no executionInfo)."""
    if not hasattr(df, "executionInfo"):
        import pyspark

        from fullwindow.errors import FullWindowValueError

        raise FullWindowValueError(
            "operator_metrics: the Spark Connect client of pyspark "
            f"{pyspark.__version__} does not keep the metrics its server sends with a result "
            "(DataFrame.executionInfo exists from Spark 4.0 on); use a classic session "
            "(fullwindow.session(master=...)) or the Spark UI of the Connect server")
    info = df.executionInfo
    return info.metrics if info is not None else None


def connect_server_conf(jar: str) -> dict:
    """Settings a local Connect server (``remote("local[N]")``) needs beyond fullwindow's own:
    from 4.0 pyspark ships the Connect server in its jars/ (nothing to add); 3.5 does not, and
    starts it only when the spark-connect artifact is on the class path (pyspark's docs: with
    ``spark.jars.packages``), so this names the artifact the line's jar was compiled against
    (its ``fullwindow/connect-server`` entry)."""
    import os
    import zipfile

    import pyspark

    jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    if not os.path.isdir(jars) or any(n.startswith("spark-connect_") for n in os.listdir(jars)):
        return {}  # a pyspark that ships the server, or a SPARK_HOME install: as it is
    with zipfile.ZipFile(jar) as z:
        if "fullwindow/connect-server" not in z.namelist():
            return {}
        artifact = z.read("fullwindow/connect-server").decode().strip()
    return {"spark.jars.packages": artifact}


@functools.cache
def classic_error_types() -> tuple:
    """``(Py4JJavaError, CapturedException)``: what a classic session's JVM calls raise, for
    ``isinstance`` and ``except``; ``()`` where pyspark has no py4j (pyspark-client), whose
    sessions are all Spark Connect ones. Nothing else in fullwindow imports py4j for errors."""
    try:
        from py4j.protocol import Py4JJavaError
        from pyspark.errors.exceptions.captured import CapturedException
    except ImportError:
        return ()
    return (Py4JJavaError, CapturedException)


def submitted_api_mode_connect(submitted: Mapping[str, str], jvm: Any) -> bool:
    """Whether spark-submit started this script's JVM (``jvm``) as a Spark Connect client's, for
    ``spark.api.mode=connect`` (4.0+, whose pyspark reads the mode:
    ``pyspark.util.default_api_mode``): such a JVM has a Connect client's class path, without
    the classic session class (nor a Connect server). A JVM that has the class runs a classic
    session as usual. 3.5 has no API mode and ignores the setting."""
    try:
        from pyspark.util import default_api_mode  # noqa: F401  (4.0+)
    except ImportError:
        return False
    if str(submitted.get("spark.api.mode", "")).strip().lower() != "connect":
        return False
    from py4j.java_gateway import JavaClass
    from pyspark.sql import SparkSession

    find = getattr(SparkSession, "_get_j_spark_session_class", None)  # 4.0+: the classic class
    return find is None or not isinstance(find(jvm), JavaClass)
