"""Turning the key forms users pass (index, name, Column, callable, list of pairs) into Columns."""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, MapType, StructType

from fullwindow._compat import COLUMN_TYPES, VariantType, dataframe_schema
from fullwindow._order import Order
from fullwindow.errors import FullWindowTypeError, FullWindowValueError, KeyNotSortableError

_hidden_ids = itertools.count()

KEY_FORMS = ("a 0-based field index, a column name (nested 'a.b' too), a Column, "
             "a Python key selector (callable on a Row), or a list of (key, Order) pairs")


@dataclass
class ResolvedKeys:
    columns: list[Column]
    ascending: list[bool]
    hidden: list[str]          # hidden key-selector columns added to the input; dropped after
    df: DataFrame              # the input, with hidden columns added when there are any


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _unsortable(dt: DataType) -> bool:
    if isinstance(dt, (MapType, VariantType)):
        return True
    if isinstance(dt, ArrayType):
        return _unsortable(dt.elementType)
    if isinstance(dt, StructType):
        return any(_unsortable(f.dataType) for f in dt.fields)
    return False


def _field_by_path(schema: StructType, name: str) -> tuple[str, DataType] | None:
    """(column expression text, type) for a top-level name or a dotted path into structs."""
    for f in schema.fields:
        if f.name == name:
            return _quote(name), f.dataType
    parts = name.split(".")
    current: DataType = schema
    quoted = []
    for part in parts:
        if not isinstance(current, StructType):
            return None
        match = next((f for f in current.fields if f.name == part), None)
        if match is None:
            return None
        quoted.append(_quote(part))
        current = match.dataType
    return ".".join(quoted), current


def _check_sortable(operation: str, label: str, dt: DataType) -> None:
    if _unsortable(dt):
        raise KeyNotSortableError(
            f"{operation}: key {label} has type {dt.simpleString()}, which cannot be sorted "
            "(maps, variants, and structs or arrays holding them, have no order)")


def _selector_column(operation: str, df: DataFrame, fn: Callable[[Any], Any],
                     key_type: DataType | None) -> tuple[DataFrame, str] | None:
    """Adds a hidden column holding ``fn(row)``, computed through Spark's Arrow Python path."""
    from pyspark.sql.types import _infer_type

    if key_type is None:
        first = df.limit(1).collect()
        if not first:
            return None  # an empty input: nothing to sort, nothing to infer from
        try:
            sample = fn(first[0])
        except Exception as err:
            raise FullWindowValueError(
                f"{operation}: the key selector {fn!r} failed on the first row {first[0]!r}: "
                f"{type(err).__name__}: {err}") from err
        if sample is None:
            raise FullWindowValueError(
                f"{operation}: the key selector returned None for the first row; pass "
                "key_type= to say what type the key has")
        key_type = _infer_type(sample)
    _check_sortable(operation, f"selector {getattr(fn, '__name__', fn)!r}", key_type)
    name = f"__fullwindow_key_{next(_hidden_ids)}"
    udf = F.udf(fn, key_type, useArrow=True)
    row = F.struct(*[F.col(_quote(c)) for c in dataframe_schema(df).names])
    return df.withColumn(name, udf(row)), name


def resolve_sort_keys(operation: str, df: DataFrame, key: Any, order: Any,
                      key_type: DataType | None = None) -> ResolvedKeys | None:
    """Returns the sort columns for ``key``/``order`` or raises a clear error. ``None`` means the
    input is empty and the only key is a selector whose type cannot be inferred: nothing to do."""
    default = Order.parse(order, "order")
    if key is None:
        raise FullWindowTypeError(f"{operation}: key must be {KEY_FORMS}; got None")
    if isinstance(key, (list, tuple)) and not isinstance(key, COLUMN_TYPES):
        if len(key) == 0:
            raise FullWindowValueError(f"{operation}: key is an empty list; give at least one key")
        pairs = []
        for i, item in enumerate(key):
            if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], (Order, str)) \
                    and not isinstance(item[0], tuple):
                pairs.append((item[0], Order.parse(item[1], f"order of key #{i}")))
            else:
                pairs.append((item, default))
    else:
        pairs = [(key, default)]

    schema = dataframe_schema(df)
    columns: list[Column] = []
    ascending: list[bool] = []
    hidden: list[str] = []
    current = df
    for k, o in pairs:
        if k is None:
            raise FullWindowTypeError(f"{operation}: key must be {KEY_FORMS}; got None")
        if isinstance(k, bool):
            raise FullWindowTypeError(f"{operation}: key must be {KEY_FORMS}; got the bool {k!r}")
        if isinstance(k, int):
            n = len(schema.fields)
            if not 0 <= k < n:
                raise FullWindowValueError(
                    f"{operation}: field index {k} is out of range; the input has {n} fields "
                    f"(valid indexes 0..{n - 1}: {', '.join(schema.names)})")
            f = schema.fields[k]
            _check_sortable(operation, f"#{k} ({f.name!r})", f.dataType)
            columns.append(F.col(_quote(f.name)))
        elif isinstance(k, str):
            found = _field_by_path(schema, k)
            if found is None:
                raise FullWindowValueError(
                    f"{operation}: key {k!r} is not a column of the input; columns are "
                    f"{', '.join(schema.names)} (nested fields as 'a.b')")
            expr, dt = found
            _check_sortable(operation, repr(k), dt)
            columns.append(F.col(expr))
        elif isinstance(k, COLUMN_TYPES):
            columns.append(k)
        elif callable(k):
            made = _selector_column(operation, current, k, key_type)
            if made is None:
                return None
            current, name = made
            hidden.append(name)
            columns.append(F.col(name))
        else:
            raise FullWindowTypeError(
                f"{operation}: key must be {KEY_FORMS}; got {type(k).__name__} {k!r}")
        ascending.append(o is Order.ASCENDING)
    return ResolvedKeys(columns, ascending, hidden, current)
