"""Non-keyed full windows: one window per Spark partition."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Union

from pyspark.sql import DataFrame, Row
from pyspark.sql.types import DataType, StructType

from fullwindow._backend import backend
from fullwindow._jvm import jvm_errors
from fullwindow._keys import resolve_sort_keys
from fullwindow._order import Order
from fullwindow.errors import ConfigurationError, FullWindowTypeError, FullWindowValueError

if TYPE_CHECKING:
    from fullwindow.functions import TimePolicy


class PartitionWindowedDataFrame:
    """A DataFrame seen as one full window per partition (FLIP-380's ``PartitionWindowedStream``).

    Each operation processes a whole partition at the end of its input. No exchange is added and
    the partition count is kept. Get one with ``df.fullWindowPartition()``.
    """

    def __init__(self, df: DataFrame):
        if not isinstance(df, DataFrame):
            raise TypeError(f"fullWindowPartition needs a DataFrame, got {type(df).__name__}")
        self._df = df

    @property
    def dataframe(self) -> DataFrame:
        """The DataFrame this window is over."""
        return self._df

    def __repr__(self) -> str:
        return f"PartitionWindowedDataFrame[{self._df.schema.simpleString()}]"

    @jvm_errors("sortPartition")
    def sortPartition(self, key: Any, order: Order | str = Order.ASCENDING, *,
                      key_type: DataType | None = None) -> DataFrame:
        """Sorts the records of each partition, spilling to disk when they do not fit in memory.

        ``key`` is a 0-based field index, a column name (nested ``"a.b"`` too), a ``Column``
        (``F.col("v").desc_nulls_first()`` keeps its own direction), a Python key selector
        called on each ``Row``, or a list of ``(key, Order)`` pairs for several keys. Nulls come
        first when ascending and last when descending. A key selector's result type is inferred
        from the first row unless ``key_type`` is given.

        >>> df.fullWindowPartition().sortPartition("v").show()
        >>> df.fullWindowPartition().sortPartition([("a", Order.ASCENDING), ("b", Order.DESCENDING)])
        >>> df.fullWindowPartition().sortPartition(lambda r: r.name.lower())
        """
        df = self._df
        be = backend(df)
        be.check(df)
        keys = resolve_sort_keys("sortPartition", df, key, order, key_type)
        if keys is None:
            return df
        out = be.sort_partition(keys.df, keys.columns, keys.ascending)
        out = out.drop(*keys.hidden) if keys.hidden else out
        return _recoverable(out, "sortPartition", key if callable(key) else None)

    @jvm_errors("mapPartition")
    def mapPartition(self, func: Callable[[Iterator[Row]], Iterable[Any]],
                     schema: Union[StructType, str]) -> DataFrame:
        """Calls ``func`` once per partition with an iterator over all its records (``Row``s)
        and returns what it yields (tuples, Rows or dicts of ``schema``). Records reach ``func``
        while the partition is still being read, through a bounded queue, so memory stays
        bounded however large the partition.

        >>> def top3(rows):
        ...     return sorted(((r.k, r.v) for r in rows), key=lambda t: -t[1])[:3]
        >>> df.fullWindowPartition().mapPartition(top3, "k long, v long").show()
        """
        from fullwindow import _worker

        _require_callable("mapPartition", "func", func, "a function taking an iterator of Rows")
        out = _parse_schema("mapPartition", schema)
        in_schema = self._df.schema
        return _python_partition(
            self._df, "mapPartition", out,
            lambda enc: _worker.map_partition(func, in_schema, enc, _PREFETCH_DEPTH), func)

    @jvm_errors("mapPartitionInArrow")
    def mapPartitionInArrow(self, func, schema) -> DataFrame:
        """Like :meth:`mapPartition` with ``Iterator[pyarrow.RecordBatch]`` in and out: ``func``
        is called once per partition and may yield any number of batches of ``schema``.

        >>> def double(batches):
        ...     for b in batches:
        ...         yield pa.RecordBatch.from_arrays([pc.multiply(b["v"], 2)], ["v2"])
        >>> df.fullWindowPartition().mapPartitionInArrow(double, "v2 long").show()
        """
        from fullwindow import _worker

        _require_callable("mapPartitionInArrow", "func", func,
                          "a function taking an iterator of pyarrow.RecordBatch")
        out = _parse_schema("mapPartitionInArrow", schema)
        return _python_partition(
            self._df, "mapPartitionInArrow", out,
            lambda enc: _worker.map_partition_in_arrow(func, enc, _PREFETCH_DEPTH), func)

    @jvm_errors("aggregate")
    def aggregate(self, *args: Any, schema=None) -> DataFrame:
        """Aggregates each partition into one row (partitions without records give none); no
        exchange.

        With built-in aggregate ``Column``s, evaluated in the JVM by Spark's aggregation code:

        >>> df.fullWindowPartition().aggregate(F.sum("v"), F.count("*").alias("n")).show()

        With a Python :class:`AggregateFunction` and the schema of its result:

        >>> df.fullWindowPartition().aggregate(Mean(), "mean double").show()
        """
        from pyspark.sql import Column

        from fullwindow import _worker

        if not args:
            raise FullWindowTypeError("aggregate: give aggregate Columns, or an AggregateFunction "
                                      "and a schema")
        first = args[0]
        if isinstance(first, Column) or (isinstance(first, str) and schema is None
                                         and len(args) != 2):
            columns = []
            for i, c in enumerate(args):
                if not isinstance(c, Column):
                    raise FullWindowTypeError(
                        f"aggregate: argument #{i} must be an aggregate Column such as F.sum('v'); "
                        f"got {type(c).__name__} {c!r}")
                columns.append(c)
            return _recoverable(backend(self._df).aggregate(self._df, columns), "aggregate")
        if len(args) == 2 and schema is None:
            first, schema = args
        elif len(args) != 1:
            raise FullWindowTypeError(
                "aggregate(func, schema) takes one AggregateFunction and a schema")
        _require_methods("aggregate", "func", first, ("create_accumulator", "add", "get_result"),
                         "an AggregateFunction (create_accumulator, add, get_result, merge) or "
                         "aggregate Columns")
        out = _parse_schema("aggregate", schema)
        in_schema = self._df.schema
        return _python_partition(
            self._df, "aggregate", out,
            lambda enc: _worker.aggregate(first, in_schema, enc, _PREFETCH_DEPTH), first)

    @jvm_errors("reduce")
    def reduce(self, func: Callable[[Row, Row], Any]) -> DataFrame:
        """Combines the records of each partition pairwise with ``func(a, b) -> Row or tuple``:
        one row of the input schema per non-empty partition.

        >>> df.fullWindowPartition().reduce(lambda a, b: a if a.v >= b.v else b).show()
        """
        from fullwindow import _worker

        _require_callable("reduce", "func", func, "a function (a: Row, b: Row) -> Row")
        in_schema = self._df.schema
        return _python_partition(
            self._df, "reduce", in_schema,
            lambda enc: _worker.reduce(func, in_schema, enc, _PREFETCH_DEPTH), func)

    @jvm_errors("process")
    def process(self, func, schema) -> DataFrame:
        """Calls a :class:`ProcessWindowFunction` on each non-empty partition's window:
        ``open(ctx)``, ``process(None, ctx, rows)``, timers at end of input, ``close()``.

        >>> df.fullWindowPartition().process(Summary(), "pid int, n long, why string").show()
        """
        from fullwindow import _worker

        _require_methods("process", "func", func, ("process",),
                         "a ProcessWindowFunction (with process(key, ctx, rows))")
        out = _parse_schema("process", schema)
        policy = _time_policy(self._df.sparkSession)
        in_schema = self._df.schema
        return _python_partition(
            self._df, "process", out,
            lambda enc: _worker.process(func, in_schema, enc, _PREFETCH_DEPTH, policy),
            func, policy)


# ---- helpers of the Python-function operations (keyed.py uses them too) -------------------------

def _parse_schema(operation: str, schema: Any) -> "StructType":
    from pyspark.sql.types import StructType, _parse_datatype_string

    if isinstance(schema, StructType):
        return schema
    if isinstance(schema, str):
        try:
            parsed = _parse_datatype_string(schema)
        except Exception as err:  # noqa: BLE001 - re-raised with the argument named
            raise FullWindowValueError(
                f"{operation}: schema {schema!r} is not a valid DDL schema "
                f"(e.g. 'k long, total double'): {err}") from None
        if isinstance(parsed, StructType):
            return parsed
        raise FullWindowValueError(f"{operation}: schema must describe a struct, got {schema!r}")
    raise FullWindowTypeError(
        f"{operation}: schema must be a StructType or a DDL string like 'k long, total double'; "
        f"got {type(schema).__name__} {schema!r}")


def _require_callable(operation: str, argument: str, value: Any, expected: str) -> None:
    if value is None or not callable(value):
        got = "None" if value is None else f"{type(value).__name__} {value!r}"
        raise FullWindowTypeError(f"{operation}: {argument} must be {expected}; got {got}")


def _require_methods(operation: str, argument: str, value: Any, methods: tuple, expected: str):
    if value is None:
        raise FullWindowTypeError(f"{operation}: {argument} must be {expected}; got None")
    missing = [m for m in methods if not callable(getattr(value, m, None))]
    if missing:
        raise FullWindowTypeError(
            f"{operation}: {argument} must be {expected}; {type(value).__name__} has no "
            f"{', '.join(missing)}")


_ALLOW = ("ALLOW", "IGNORE", "FAIL")
_END_OF_INPUT = ("FIRE_AND_QUIESCE", "IGNORE")


def _time_policy(spark) -> "TimePolicy":
    """The processing-time policy in force (FLIP-134), read when the operation is defined."""
    from fullwindow.functions import TimePolicy

    mode = (spark.conf.get("spark.fullwindow.runtimeMode", "AUTOMATIC") or "AUTOMATIC").upper()
    streaming = mode == "STREAMING"
    allow = (spark.conf.get("spark.fullwindow.processingTime.allow", None)
             or ("ALLOW" if streaming else "FAIL")).strip().upper()
    end = (spark.conf.get("spark.fullwindow.processingTime.endOfInput", None)
           or ("FIRE_AND_QUIESCE" if streaming else "IGNORE")).strip().upper()
    if allow not in _ALLOW:
        raise ConfigurationError(f"spark.fullwindow.processingTime.allow is '{allow}'; "
                                 f"expected one of: {', '.join(_ALLOW)}.")
    if end not in _END_OF_INPUT:
        raise ConfigurationError(f"spark.fullwindow.processingTime.endOfInput is '{end}'; "
                                 f"expected one of: {', '.join(_END_OF_INPUT)}.")
    return TimePolicy(allow, end)


def _recoverable(out: DataFrame, operation: str, func: Any = None, extra: Any = None) -> DataFrame:
    """``out`` made recoverable when spark.fullwindow.recovery.enabled is true (else itself)."""
    from fullwindow.recovery import commit_operation

    return commit_operation(out, operation, func, extra)


def _python_partition(df: DataFrame, operation: str, schema, make_runner, func: Any = None,
                      extra: Any = None) -> DataFrame:
    """Runs ``make_runner(encoder)`` (an Arrow-batches-in, batches-out function) once per
    partition, as the named full-window operation."""
    column = _udf_column(df, operation, schema, make_runner)
    out = backend(df).python_partition(df, operation, column)
    return _recoverable(out, operation, func, extra)


def _udf_column(df: DataFrame, operation: str, schema: StructType, make_runner) -> Any:
    """The Python UDF of eval type SQL_MAP_ARROW_ITER_UDF that runs ``make_runner(encoder)`` in
    each task (the JVM gives it the whole input row, so its arguments are nominal); keyed.py
    uses it too."""
    from fullwindow._worker import RowEncoder

    spark = df.sparkSession
    be = backend(df)
    be.check(df)
    large = (spark.conf.get("spark.sql.execution.arrow.useLargeVarTypes", "false") or "false") \
        .lower() == "true"
    batch = int(spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch", "10000") or 10000)
    encoder = RowEncoder(operation, schema, large, batch)
    return be.udf_column(df, schema, make_runner(encoder))


_PREFETCH_DEPTH = 2
