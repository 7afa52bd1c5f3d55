"""Non-keyed full windows: one window per Spark partition."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Union

from pyspark.sql import DataFrame, Row
from pyspark.sql.types import DataType, StructType

from fullwindow._backend import backend
from fullwindow._operation import jvm_errors
from fullwindow._keys import resolve_sort_keys
from fullwindow._compat import COLUMN_TYPES, DATAFRAME_TYPES, dataframe_schema
from fullwindow._order import Order
from fullwindow._pyfunc import (_PREFETCH_DEPTH, _parse_schema, _python_partition, _recoverable,
                                _require_callable, _require_methods, _time_policy)
from fullwindow.errors import FullWindowTypeError

if TYPE_CHECKING:
    from fullwindow.functions import ProcessWindowFunction


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
        50,000 for narrow fixed-width rows and Spark's default for others), and yields
        DataFrames of ``schema``. Values convert as in ``mapInPandas``; result columns are
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
