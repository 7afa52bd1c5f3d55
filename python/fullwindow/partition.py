"""Non-keyed full windows: one window per Spark partition."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Union

from pyspark.sql import DataFrame, Row
from pyspark.sql.types import DataType, StructType

from fullwindow._backend import backend, conf_get
from fullwindow._jvm import jvm_errors
from fullwindow._keys import resolve_sort_keys
from fullwindow._compat import COLUMN_TYPES, DATAFRAME_TYPES, dataframe_schema
from fullwindow._order import Order
from fullwindow.errors import ConfigurationError, FullWindowTypeError, FullWindowValueError

if TYPE_CHECKING:
    from fullwindow.functions import ProcessWindowFunction, TimePolicy


class PartitionWindowedDataFrame:
    """A DataFrame seen as one full window per partition (FLIP-380's ``PartitionWindowedStream``).

    Each operation processes a whole partition at the end of its input. No exchange is added and
    the partition count is kept. Get one with ``df.fullWindowPartition()``.
    """

    def __init__(self, df: DataFrame):
        if not isinstance(df, DATAFRAME_TYPES):
            raise TypeError(f"fullWindowPartition needs a DataFrame, got {type(df).__name__}")
        self._df = df

    @property
    def dataframe(self) -> DataFrame:
        """The DataFrame this window is over."""
        return self._df

    def __repr__(self) -> str:
        return f"PartitionWindowedDataFrame[{dataframe_schema(self._df).simpleString()}]"

    @jvm_errors("sortPartition")
    def sortPartition(self, key: Any, order: Order | str = Order.ASCENDING, *,
                      key_type: DataType | None = None) -> DataFrame:
        """Sorts the records of each partition, spilling to disk when they do not fit in memory.

        ``key`` is a 0-based field index, a column name (nested ``"a.b"`` too), a ``Column``
        (``F.col("v").desc_nulls_first()`` keeps its own direction), a Python key selector
        called on each ``Row``, or a list of ``(key, Order)`` pairs for several keys. Nulls come
        first when ascending and last when descending. A key selector's result type is inferred
        from the first row unless ``key_type`` is given.

        Examples:
            Each partition is sorted on its own (here ``df`` has two partitions):

            >>> out = df.fullWindowPartition().sortPartition("v", Order.DESCENDING)
            >>> out.rdd.glom().map(lambda rows: [r.v for r in rows]).collect()
            [[3, 2, 1], [6, 5, 4]]

            Several keys, and a key selector, on one partition:

            >>> one = df.coalesce(1).fullWindowPartition()
            >>> pairs = [("k", Order.ASCENDING), ("v", Order.DESCENDING)]
            >>> [tuple(r) for r in one.sortPartition(pairs).collect()]
            [(0, 3), (0, 1), (1, 5), (1, 2), (2, 6), (2, 4)]
            >>> [r.v for r in one.sortPartition(lambda r: (r.v % 3, r.v)).collect()]
            [3, 6, 1, 4, 2, 5]
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

        Examples:
            >>> def top(rows):
            ...     best = max(rows, key=lambda r: r.v, default=None)
            ...     if best is not None:
            ...         yield (best.k, best.v)
            >>> sorted(df.fullWindowPartition().mapPartition(top, "k long, v long").collect())
            [Row(k=0, v=3), Row(k=2, v=6)]
        """
        from fullwindow import _worker

        _require_callable("mapPartition", "func", func, "a function taking an iterator of Rows")
        out = _parse_schema("mapPartition", schema)
        in_schema = dataframe_schema(self._df)
        return _python_partition(
            self._df, "mapPartition", out,
            lambda enc: _worker.map_partition(func, in_schema, enc, _PREFETCH_DEPTH), func)

    @jvm_errors("mapPartitionInArrow")
    def mapPartitionInArrow(self, func: Callable[[Iterator[Any]], Iterable[Any]],
                            schema: Union[StructType, str]) -> DataFrame:
        """Like [`mapPartition`][fullwindow.PartitionWindowedDataFrame.mapPartition] with
        ``Iterator[pyarrow.RecordBatch]`` in and out: ``func`` is called once per partition and
        may yield any number of batches of ``schema``.

        Examples:
            >>> import pyarrow as pa
            >>> import pyarrow.compute as pc
            >>> def double(batches):
            ...     for b in batches:
            ...         yield pa.RecordBatch.from_arrays([pc.multiply(b["v"], 2)], ["v2"])
            >>> out = df.fullWindowPartition().mapPartitionInArrow(double, "v2 long")
            >>> sorted(r.v2 for r in out.collect())
            [2, 4, 6, 8, 10, 12]
        """
        from fullwindow import _worker

        _require_callable("mapPartitionInArrow", "func", func,
                          "a function taking an iterator of pyarrow.RecordBatch")
        out = _parse_schema("mapPartitionInArrow", schema)
        return _python_partition(
            self._df, "mapPartitionInArrow", out,
            lambda enc: _worker.map_partition_in_arrow(func, enc, _PREFETCH_DEPTH), func)

    @jvm_errors("mapPartitionInPandas")
    def mapPartitionInPandas(self, func: Callable[[Iterator[Any]], Iterable[Any]],
                             schema: Union[StructType, str]) -> DataFrame:
        """Like :meth:`mapPartition` with pandas: ``func`` is called once per partition (empty
        ones too) with an iterator of ``pandas.DataFrame``, one per Arrow batch of the partition
        (at most ``spark.sql.execution.arrow.maxRecordsPerBatch`` rows each when set, else
        50,000), and yields DataFrames of ``schema``. Values convert as in ``mapInPandas``; result columns are
        matched to ``schema`` by name (by position when the labels are not strings).

        Examples:
            >>> def big(frames):
            ...     for pdf in frames:
            ...         yield pdf.loc[pdf.v > 2, ["k", "v"]]
            >>> out = df.fullWindowPartition().mapPartitionInPandas(big, "k long, v long")
            >>> sorted(tuple(r) for r in out.collect())
            [(0, 3), (1, 5), (2, 4), (2, 6)]
        """
        from fullwindow import _worker

        _require_callable("mapPartitionInPandas", "func", func,
                          "a function taking an iterator of pandas.DataFrame")
        out = _parse_schema("mapPartitionInPandas", schema)
        in_schema = dataframe_schema(self._df)
        options = _worker.PandasOptions.of(self._df.sparkSession)
        return _python_partition(
            self._df, "mapPartitionInPandas", out,
            lambda enc: _worker.map_partition_in_pandas(func, in_schema, enc, _PREFETCH_DEPTH,
                                                        options), func, pandas=True)

    @jvm_errors("aggregate")
    def aggregate(self, *args: Any, schema: Union[StructType, str] | None = None) -> DataFrame:
        """Aggregates each partition into one row (partitions without records give none); no
        exchange.

        With built-in aggregate ``Column``s, evaluated in the JVM by Spark's aggregation code,
        or with a Python [`AggregateFunction`][fullwindow.AggregateFunction] and the schema of
        its result.

        ``Mean`` below is the example class of [`AggregateFunction`][fullwindow.AggregateFunction].

        Examples:
            >>> w = df.fullWindowPartition()
            >>> sorted(w.aggregate(F.sum("v").alias("total"), F.count("*").alias("n")).collect())
            [Row(total=6, n=3), Row(total=15, n=3)]
            >>> sorted(w.aggregate(Mean(), "mean double").collect())
            [Row(mean=2.0), Row(mean=5.0)]
        """
        from pyspark.sql import Column

        from fullwindow import _worker

        if not args:
            raise FullWindowTypeError("aggregate: give aggregate Columns, or an AggregateFunction "
                                      "and a schema")
        first = args[0]
        if isinstance(first, COLUMN_TYPES) or (isinstance(first, str) and schema is None
                                         and len(args) != 2):
            columns = []
            for i, c in enumerate(args):
                if not isinstance(c, COLUMN_TYPES):
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
        in_schema = dataframe_schema(self._df)
        return _python_partition(
            self._df, "aggregate", out,
            lambda enc: _worker.aggregate(first, in_schema, enc, _PREFETCH_DEPTH), first)

    @jvm_errors("reduce")
    def reduce(self, func: Callable[[Row, Row], Any]) -> DataFrame:
        """Combines the records of each partition pairwise with ``func(a, b) -> Row or tuple``:
        one row of the input schema per non-empty partition.

        Examples:
            >>> sorted(df.fullWindowPartition().reduce(lambda a, b: a if a.v >= b.v else b).collect())
            [Row(k=0, v=3), Row(k=2, v=6)]
        """
        from fullwindow import _worker

        _require_callable("reduce", "func", func, "a function (a: Row, b: Row) -> Row")
        in_schema = dataframe_schema(self._df)
        return _python_partition(
            self._df, "reduce", in_schema,
            lambda enc: _worker.reduce(func, in_schema, enc, _PREFETCH_DEPTH), func)

    @jvm_errors("process")
    def process(self, func: ProcessWindowFunction, schema: Union[StructType, str]) -> DataFrame:
        """Calls a [`ProcessWindowFunction`][fullwindow.ProcessWindowFunction] on each
        non-empty partition's window: ``open(ctx)``, ``process(None, ctx, rows)``, timers at end
        of input, ``close()``.

        Examples:
            >>> class Summary(ProcessWindowFunction):
            ...     def process(self, key, ctx, rows):
            ...         yield (ctx.partition_id, sum(1 for _ in rows), ctx.firing_info.name)
            >>> sorted(df.fullWindowPartition().process(Summary(), "pid int, n long, why string")
            ...        .collect())
            [Row(pid=0, n=3, why='ON_TIME'), Row(pid=1, n=3, why='ON_TIME')]
        """
        from fullwindow import _worker

        _require_methods("process", "func", func, ("process",),
                         "a ProcessWindowFunction (with process(key, ctx, rows))")
        out = _parse_schema("process", schema)
        policy = _time_policy(self._df.sparkSession)
        in_schema = dataframe_schema(self._df)
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
        from fullwindow._ddl import parse_simple_schema

        simple = parse_simple_schema(schema)  # the common forms without a trip to the JVM
        if simple is not None:
            return simple
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


def _require_methods(operation: str, argument: str, value: Any, methods: tuple[str, ...],
                     expected: str) -> None:
    if value is None:
        raise FullWindowTypeError(f"{operation}: {argument} must be {expected}; got None")
    missing = [m for m in methods if not callable(getattr(value, m, None))]
    if missing:
        raise FullWindowTypeError(
            f"{operation}: {argument} must be {expected}; {type(value).__name__} has no "
            f"{', '.join(missing)}")


_ALLOW = ("ALLOW", "IGNORE", "FAIL")
_END_OF_INPUT = ("FIRE_AND_QUIESCE", "IGNORE")


def _time_policy(spark: Any) -> "TimePolicy":
    """The processing-time policy in force (FLIP-134), read when the operation is defined."""
    from fullwindow.functions import TimePolicy

    mode = (conf_get(spark, "spark.fullwindow.runtimeMode", "AUTOMATIC") or "AUTOMATIC").upper()
    streaming = mode == "STREAMING"
    allow = (conf_get(spark, "spark.fullwindow.processingTime.allow", None)
             or ("ALLOW" if streaming else "FAIL")).strip().upper()
    end = (conf_get(spark, "spark.fullwindow.processingTime.endOfInput", None)
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


def _python_partition(df: DataFrame, operation: str, schema: StructType,
                      make_runner: Callable[[Any], Any], func: Any = None,
                      extra: Any = None, pandas: bool = False) -> DataFrame:
    """Runs ``make_runner(encoder)`` (an Arrow-batches-in, batches-out function) once per
    partition, as the named full-window operation; ``pandas``: the function takes pandas
    frames (the JVM then sizes its input batches for pandas)."""
    column = _udf_column(df, operation, schema, make_runner, func)
    out = backend(df).python_partition(df, operation, column, pandas)
    return _recoverable(out, operation, func, extra)


def _udf_column(df: DataFrame, operation: str, schema: StructType,
                make_runner: Callable[[Any], Any], func: Any = None) -> Any:
    """The Python UDF of eval type SQL_MAP_ARROW_ITER_UDF that runs ``make_runner(encoder)`` in
    each task (the JVM gives it the whole input row, so its arguments are nominal), named after
    ``func``; keyed.py uses it too."""
    from fullwindow._worker import RowEncoder

    spark = df.sparkSession
    be = backend(df)
    be.check(df)
    large = (conf_get(spark, "spark.sql.execution.arrow.useLargeVarTypes", "false") or "false") \
        .lower() == "true"
    batch = int(conf_get(spark, "spark.sql.execution.arrow.maxRecordsPerBatch", "10000") or 10000)
    encoder = RowEncoder(operation, schema, large, batch)
    return be.udf_column(df, schema, _named(make_runner(encoder), func))


def _named(runner: Callable[..., Any], func: Any) -> Callable[..., Any]:
    """``runner`` named after the user's function (or its class, for an AggregateFunction or
    ProcessWindowFunction), so that explain() and the Spark UI show which function runs."""
    if func is not None:
        name = getattr(func, "__name__", None) or type(func).__name__
        runner.__name__ = runner.__qualname__ = str(name)
    return runner


_PREFETCH_DEPTH = 2
