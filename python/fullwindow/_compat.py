"""The pyspark internals that differ between the supported Spark lines, in one place.

Everything here is chosen by what the installed pyspark offers (a parameter, a function, a
class), never by its version string: the worker and key code import these names and stay the
same on every line.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, List, Optional

import pyarrow as pa
from pyspark.sql.conversion import ArrowTableToRowsConversion as _ArrowToRows
from pyspark.sql.conversion import LocalDataToArrowConversion as _RowsToArrow
from pyspark.sql.pandas.types import to_arrow_schema as _to_arrow_schema
from pyspark.sql.types import BinaryType, DataType, StructType

try:  # pyspark.util since 4.0
    from pyspark.util import PythonEvalType
except ImportError:  # pragma: no cover - older lines keep it in pyspark.rdd
    from pyspark.rdd import PythonEvalType  # type: ignore[no-redef,import-not-found,unused-ignore]

try:  # 4.0+
    from pyspark.sql.types import VariantType
except ImportError:  # pragma: no cover - a line without variants: a type no value has
    class VariantType(DataType):  # type: ignore[no-redef]
        """Stands for Spark's VariantType on a pyspark that has none."""

__all__ = ["PythonEvalType", "VariantType", "arrow_value_converter", "enforce_schema",
           "require_pandas_conversion",
           "rows_to_arrow", "to_arrow_schema", "to_pylist"]

_CONVERTER_PARAMS = inspect.signature(_ArrowToRows._create_converter).parameters
_SCHEMA_PARAMS = inspect.signature(_to_arrow_schema).parameters


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
    to_pylist: Callable[[Any], List[Any]] = _ArrowToRows._to_pylist
else:
    def to_pylist(column: Any) -> List[Any]:
        """A column's values as Python objects (Arrow's own conversion)."""
        return column.to_pylist()


def to_arrow_schema(schema: StructType, large_var_types: bool) -> pa.Schema:
    """The Arrow schema of ``schema``, timestamps in UTC."""
    if "timezone" in _SCHEMA_PARAMS:
        return _to_arrow_schema(schema, timezone="UTC", prefers_large_types=large_var_types)
    return _to_arrow_schema(schema, timestamp_utc=True,  # type: ignore[call-arg,unused-ignore]
                            prefers_large_types=large_var_types)


def rows_to_arrow(rows: list, schema: StructType, large_var_types: bool) -> pa.Table:
    """Python rows (tuples, Rows, dicts) of ``schema`` as an Arrow table, by pyspark's converter."""
    return _RowsToArrow.convert(rows, schema, large_var_types)


def require_pandas_conversion(operation: str) -> None:
    """The pandas forms convert through pyspark's ``ArrowBatchTransformer.to_pandas`` and
    ``PandasToArrowConversion.convert`` (what ``applyInPandas`` uses), which pyspark has from
    4.2 on; on a line without them a pandas form raises ``FullWindowSetupError`` at once."""
    import pyspark.sql.conversion as conversion

    if hasattr(conversion, "ArrowBatchTransformer") and hasattr(conversion,
                                                                "PandasToArrowConversion"):
        return
    import pyspark

    from fullwindow.errors import FullWindowSetupError

    raise FullWindowSetupError(
        f"{operation}: the pandas forms need pyspark's Arrow-to-pandas conversion "
        f"(pyspark.sql.conversion.ArrowBatchTransformer), which pyspark {pyspark.__version__} "
        "does not have (Spark 4.2 and later do). Use the Arrow form (mapPartitionInArrow, or "
        "apply with pyarrow) and convert with pyarrow's to_pandas() in the function.")


try:  # 4.2+
    from pyspark.sql.conversion import ArrowBatchTransformer as _Transformer

    def enforce_schema(batch: pa.RecordBatch, arrow_schema: pa.Schema) -> pa.RecordBatch:
        """``batch`` with the columns of ``arrow_schema``, taken by name and cast safely."""
        return _Transformer.enforce_schema(batch, arrow_schema)
except ImportError:
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
