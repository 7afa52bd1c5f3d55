"""Keyed full windows (one window per key), EndOfStreamWindows, and the two-sorter coGroup.

``df.keyBy("k")`` is a DataFrame seen as Flink's ``KeyedStream``: hash-partitioned by the key.
Every keyed operation fires once per key at end of input. The Python ones stream each key's
records from a key-sorted, spilling input, so a key larger than memory goes through.
"""
from __future__ import annotations

import itertools
from typing import Any, Callable, Iterable, Iterator, Union

from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StringType, StructField, StructType

from fullwindow import _combine
from fullwindow._backend import backend, conf_get
from fullwindow._operation import jvm_errors
from fullwindow._keys import _quote, _unsortable, resolve_sort_keys
from fullwindow._compat import COLUMN_TYPES, DATAFRAME_TYPES, dataframe_schema
from fullwindow._order import Order
from fullwindow.errors import (ConfigurationError, FullWindowTypeError, FullWindowValueError,
                               KeyNotSortableError, StreamingNotSupportedError)
from fullwindow.functions import EndOfStreamWindows, ProcessWindowFunction
from fullwindow._pyfunc import (_PREFETCH_DEPTH, _parse_schema, _require_callable,
                                _require_methods, _time_policy, _udf_column)

_seq_ids = itertools.count()


# ---- keys -------------------------------------------------------------------------------------

def _collated(dt: DataType) -> bool:
    """A string type compared under a collation other than binary: Spark groups such keys by
    the collation (e.g. 'A' = 'a'), which Python's equality does not follow."""
    from pyspark.sql.types import ArrayType

    if isinstance(dt, StringType):
        return getattr(dt, "collation", "UTF8_BINARY") not in ("UTF8_BINARY", None)
    if isinstance(dt, ArrayType):
        return _collated(dt.elementType)
    if isinstance(dt, StructType):
        return any(_collated(f.dataType) for f in dt.fields)
    return False


def validate_keys(operation: str, df: DataFrame, cols: tuple) -> tuple[str, ...]:
    """The key column names, checked: top-level columns of ``df`` whose values can be hashed and
    sorted; raises a clear error otherwise."""
    if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
        cols = tuple(cols[0])
    if not cols:
        raise FullWindowTypeError(
            f"{operation}: give at least one key column name, e.g. df.keyBy('k') or "
            "df.keyBy('k1', 'k2')")
    schema = dataframe_schema(df)
    names = schema.names
    keys: list[str] = []
    for i, c in enumerate(cols):
        if not isinstance(c, str):
            got = "None" if c is None else f"{type(c).__name__} {c!r}"
            hint = (" (to key by an expression, add it as a column with withColumn first)"
                    if isinstance(c, COLUMN_TYPES) else "")
            raise FullWindowTypeError(
                f"{operation}: key #{i} must be the name (str) of a top-level column; got {got}"
                f"{hint}")
        matches = names.count(c)
        if matches == 0:
            raise FullWindowValueError(
                f"{operation}: key {c!r} is not a column of the input; columns are "
                f"{', '.join(names) or '(none)'}")
        if matches > 1:
            raise FullWindowValueError(
                f"{operation}: key {c!r} is ambiguous: the input has {matches} columns of that "
                "name (rename them first)")
        if c in keys:
            raise FullWindowValueError(f"{operation}: key {c!r} is given twice")
        dt = schema[c].dataType
        if _unsortable(dt):
            raise KeyNotSortableError(
                f"{operation}: key {c!r} has type {dt.simpleString()}, which cannot be hashed "
                "or sorted (maps, variants, and structs or arrays holding them, can be neither); "
                "key by another column")
        if _collated(dt):
            raise FullWindowTypeError(
                f"{operation}: key {c!r} has type {dt.simpleString()} with a non-binary "
                "collation, which is not supported as a key; key by F.col(...).collate("
                "'UTF8_BINARY') (or a normalized column such as F.lower(...)) instead")
        keys.append(c)
    return tuple(keys)


def _key_fields(df: DataFrame, keys: tuple[str, ...]) -> list[StructField]:
    return [dataframe_schema(df)[k] for k in keys]


def _check_assigner(operation: str, assigner: Any) -> None:
    if isinstance(assigner, EndOfStreamWindows):
        return
    got = "None" if assigner is None else f"{type(assigner).__name__} {assigner!r}"
    if assigner is EndOfStreamWindows:
        got = "the class EndOfStreamWindows (call .get() on it)"
    raise FullWindowTypeError(
        f"{operation}: full windows take the window assigner EndOfStreamWindows.get() (one "
        f"window per key, fired at end of input); got {got}")


def _recoverable(out: DataFrame, operation: str, keys: Any, func: Any = None,
                 extra: Any = None) -> DataFrame:
    """``out`` made recoverable when spark.fullwindow.recovery.enabled is true (else itself):
    its partitions are committed, or read back from an earlier run of the job. The fingerprint
    covers the plan (both inputs of a coGroup), the keys and the pickled function."""
    from fullwindow.recovery._jobs import commit_operation

    return commit_operation(out, operation, func, ("keys", keys, extra))


def _keyed_python(df: DataFrame, keys: tuple[str, ...], operation: str, schema: StructType,
                  make_runner: Callable[[Any], Any], func: Any, extra: Any = None,
                  pandas: bool = False) -> DataFrame:
    column = _udf_column(df, f"keyed {operation}", schema, make_runner, func)
    out = backend(df).keyed_python(df, operation, keys, column, pandas)
    return _recoverable(out, f"keyed {operation}", keys, func, extra)


def _keyed_combined(df: DataFrame, keys: tuple[str, ...], operation: str, partial: StructType,
                    make_combiner: Callable[[Any], Any], schema: StructType,
                    make_merger: Callable[[Any], Any], func: Any) -> DataFrame:
    """A keyed Python aggregate or reduce that combines before the exchange: the map side
    (``make_combiner``, once per input partition, no exchange: partial results of schema
    ``partial``), then the keyed operation over the partial results (``make_merger``, per key
    after the exchange and sort, as :func:`_keyed_python`). Both steps name ``operation`` in
    their errors; the plan shows the map side as FullWindowKeyed<Operation>Combine."""
    label = f"keyed {operation}"
    be = backend(df)
    combiner = _udf_column(df, label, partial, make_combiner, func)
    combined = be.combine_input(df, f"keyed{operation[:1].upper()}{operation[1:]}Combine",
                                combiner, partial)
    column = _udf_column(combined, label, schema, make_merger, func)
    out = be.keyed_python(combined, operation, keys, column, False)
    return _recoverable(out, label, keys, func)


def _runtime_mode(spark: Any) -> str:
    raw = (conf_get(spark, "spark.fullwindow.runtimeMode", "AUTOMATIC") or "AUTOMATIC")
    mode = raw.strip().upper()
    if mode not in ("BATCH", "STREAMING", "AUTOMATIC"):
        raise ConfigurationError(f"spark.fullwindow.runtimeMode is '{mode}'; expected one of: "
                                 "BATCH, STREAMING, AUTOMATIC.")
    return mode


# ---- KeyedDataFrame ---------------------------------------------------------------------------

class KeyedDataFrame:
    """A DataFrame keyed by some of its columns (Flink's ``KeyedStream``): keyed operations see
    the records hash-partitioned by the key. Get one with ``df.keyBy("k")`` or
    ``df.keyBy("k1", "k2")``; the key handed to functions is the value for one key column and a
    tuple for several.

    Examples:
        >>> keyed = df.keyBy("k")
        >>> keyed.keys
        ('k',)
        >>> def count(key, rows):
        ...     yield (key, sum(1 for _ in rows))
        >>> sorted(keyed.fullWindowPartition().mapPartition(count, "k long, n long").collect())
        [Row(k=0, n=2), Row(k=1, n=2), Row(k=2, n=2)]
        >>> largest = keyed.window(EndOfStreamWindows.get()).reduce(
        ...     lambda a, b: a if a.v >= b.v else b)
        >>> sorted(largest.collect())
        [Row(k=0, v=3), Row(k=1, v=5), Row(k=2, v=6)]
    """

    def __init__(self, df: DataFrame, keys: tuple[str, ...]):
        self._df = df
        self._keys = tuple(keys)

    @property
    def dataframe(self) -> DataFrame:
        """The DataFrame that was keyed (as it was; keyed operations partition it by key)."""
        return self._df

    @property
    def keys(self) -> tuple[str, ...]:
        """The key column names."""
        return self._keys

    def __repr__(self) -> str:
        return (f"KeyedDataFrame[keys=({', '.join(self._keys)}); "
                f"{dataframe_schema(self._df).simpleString()}]")

    def fullWindowPartition(self) -> "KeyedPartitionWindowedDataFrame":
        """One full window per key: the operations of the non-keyed full window, per key."""
        return KeyedPartitionWindowedDataFrame(self._df, self._keys)

    def window(self, assigner: EndOfStreamWindows) -> "KeyedWindowedDataFrame":
        """The same per-key full window, spelled as FLIP-331 spells it:
        ``keyBy("k").window(EndOfStreamWindows.get())``. Other assigners are rejected."""
        _check_assigner("window", assigner)
        return KeyedWindowedDataFrame(self._df, self._keys)

    def reduce(self, func: Callable[[Row, Row], Any]) -> DataFrame:
        """Keyed reduce, not windowed (FLIP-134). In BATCH runtime mode (the default on a
        bounded input) one final row per key, as the windowed reduce. With
        ``spark.fullwindow.runtimeMode=STREAMING`` on a bounded input: one running row per input
        record, in input order within each key (the upsert stream a streaming job would emit;
        the last row of each key is the final value). Not supported on a streaming DataFrame.

        Examples:
            >>> sorted(df.keyBy("k").reduce(lambda a, b: Row(k=a.k, v=a.v + b.v)).collect())
            [Row(k=0, v=4), Row(k=1, v=7), Row(k=2, v=10)]
        """
        _require_callable("keyed reduce", "func", func, "a function (a: Row, b: Row) -> Row")
        df = self._df
        mode = _runtime_mode(df.sparkSession)
        if df.isStreaming:
            raise StreamingNotSupportedError(
                "keyed reduce cannot run on a streaming DataFrame: its running (upsert) result "
                "of STREAMING runtime mode is computed over a bounded input, by sorting each "
                "key's records by their input position, which an unbounded stream cannot be. "
                "For an unbounded stream use Structured Streaming's stateful operators (e.g. "
                "groupBy(...).applyInPandasWithState).")
        if mode != "STREAMING":
            return KeyedPartitionWindowedDataFrame(df, self._keys)._reduce("reduce", func)
        return _running_reduce(df, self._keys, func)

    def coGroup(self, other: "KeyedDataFrame") -> "CoGroupedDataFrames":
        """Groups this keyed DataFrame with another by key (FLIP-331's coGroup); finish with
        ``.window(EndOfStreamWindows.get()).apply(func(key, left_rows, right_rows), schema)``.
        Both sides need the same number of keys, of the same types."""
        if not isinstance(other, KeyedDataFrame):
            got = "None" if other is None else f"{type(other).__name__} {other!r}"
            hint = " (call .keyBy(...) on it first)" if isinstance(other, DATAFRAME_TYPES) else ""
            raise FullWindowTypeError(f"coGroup: other must be a KeyedDataFrame, "
                                      f"e.g. other_df.keyBy('k'); got {got}{hint}")
        if other._df.sparkSession is not self._df.sparkSession:
            raise FullWindowValueError("coGroup: both sides must belong to the same SparkSession")
        return CoGroupedDataFrames(self, other)


def _running_reduce(df: DataFrame, keys: tuple[str, ...], func: Callable[[Row, Row], Any]
                    ) -> DataFrame:
    from fullwindow import _keyed_worker

    in_schema = dataframe_schema(df)
    key_idx = [in_schema.names.index(k) for k in keys]
    seq = f"__fullwindow_seq_{next(_seq_ids)}"
    with_seq = df.withColumn(seq, F.monotonically_increasing_id())  # input position, before the exchange
    column = _udf_column(with_seq, "keyed reduce", in_schema,
                         lambda enc: _keyed_worker.running_reduce(func, in_schema, key_idx, enc,
                                                                  _PREFETCH_DEPTH), func)
    out = backend(df).keyed_running(with_seq, "reduce", keys, seq, column)
    # the hidden sequence column's name differs between runs; the plan text keeps it
    return _recoverable(out, "keyed running reduce", keys, func)


KeyedDataFrame.reduce = jvm_errors("keyed reduce")(KeyedDataFrame.reduce)  # type: ignore[method-assign]


# ---- per-key full windows ---------------------------------------------------------------------

class KeyedPartitionWindowedDataFrame:
    """One full window per key (FLIP-380's keyed ``PartitionWindowedStream``): the input is
    hash-partitioned by the key and each operation fires once per key at end of input. Get one
    with ``df.keyBy("k").fullWindowPartition()``.

    The Python operations stream each key's records: the partition is sorted by key with
    Spark's spilling sorter and each key's records reach the function as a lazy iterator while
    the partition is read, so a key with more records than fit in memory goes through (unlike
    ``groupBy().applyInPandas``, which loads whole groups).
    """

    def __init__(self, df: DataFrame, keys: tuple[str, ...]):
        self._df = df
        self._keys = tuple(keys)

    @property
    def dataframe(self) -> DataFrame:
        return self._df

    @property
    def keys(self) -> tuple[str, ...]:
        return self._keys

    def __repr__(self) -> str:
        return (f"KeyedPartitionWindowedDataFrame[keys=({', '.join(self._keys)}); "
                f"{dataframe_schema(self._df).simpleString()}]")

    def _key_idx(self) -> list[int]:
        names = dataframe_schema(self._df).names
        return [names.index(k) for k in self._keys]

    # -- mapPartition -------------------------------------------------------------------------

    def _map_partition(self, operation: str, func: Callable[..., Iterable[Any]],
                       schema: Union[StructType, str]) -> DataFrame:
        from fullwindow import _keyed_worker

        label = f"keyed {operation}"
        _require_callable(label, "func", func, "a function (key, rows) -> iterable of rows")
        out = _parse_schema(label, schema)
        in_schema, key_idx = dataframe_schema(self._df), self._key_idx()
        return _keyed_python(self._df, self._keys, operation, out,
                             lambda enc: _keyed_worker.map_partition(func, in_schema, key_idx, enc,
                                                                     _PREFETCH_DEPTH), func)

    @jvm_errors("keyed mapPartition")
    def mapPartition(self, func: Callable[[Any, Iterator[Row]], Iterable[Any]],
                     schema: Union[StructType, str]) -> DataFrame:
        """Calls ``func(key, rows)`` once per key with a lazy iterator over that key's records
        (``Row``s) and returns what it yields (tuples, Rows or dicts of ``schema``). The records
        stream: a key larger than memory is fine as long as ``func`` does not keep them.

        Examples:
            >>> def count(key, rows):
            ...     yield (key, sum(1 for _ in rows))
            >>> out = df.keyBy("k").fullWindowPartition().mapPartition(count, "k long, n long")
            >>> sorted(out.collect())
            [Row(k=0, n=2), Row(k=1, n=2), Row(k=2, n=2)]
        """
        return self._map_partition("mapPartition", func, schema)

    @jvm_errors("keyed mapPartitionInArrow")
    def mapPartitionInArrow(self, func: Callable[[Any, Iterator[Any]], Iterable[Any]],
                            schema: Union[StructType, str]) -> DataFrame:
        """Like [`mapPartition`][fullwindow.KeyedPartitionWindowedDataFrame.mapPartition] with
        Arrow: ``func(key, batches)`` gets an iterator of ``pyarrow.RecordBatch`` holding only
        that key's records and yields batches (or Tables) of ``schema``.

        Examples:
            >>> import pyarrow as pa
            >>> import pyarrow.compute as pc
            >>> def total(key, batches):
            ...     s = sum(pc.sum(b["v"]).as_py() or 0 for b in batches)
            ...     yield pa.RecordBatch.from_pylist([{"k": key, "total": s}])
            >>> w = df.keyBy("k").fullWindowPartition()
            >>> sorted(w.mapPartitionInArrow(total, "k long, total long").collect())
            [Row(k=0, total=4), Row(k=1, total=7), Row(k=2, total=10)]
        """
        from fullwindow import _keyed_worker

        label = "keyed mapPartitionInArrow"
        _require_callable(label, "func", func,
                          "a function (key, iterator of pyarrow.RecordBatch) -> batches")
        out = _parse_schema(label, schema)
        in_schema, key_idx = dataframe_schema(self._df), self._key_idx()
        return _keyed_python(self._df, self._keys, "mapPartitionInArrow", out,
                             lambda enc: _keyed_worker.map_partition_in_arrow(
                                 func, in_schema, key_idx, enc, _PREFETCH_DEPTH), func)

    def _map_partition_in_pandas(self, operation: str, func: Callable[..., Any],
                                 schema: Union[StructType, str]) -> DataFrame:
        from fullwindow import _keyed_worker
        from fullwindow._worker import PandasOptions

        label = f"keyed {operation}"
        _require_callable(label, "func", func,
                          "a function (key, iterator of pandas.DataFrame) -> DataFrames")
        out = _parse_schema(label, schema)
        in_schema, key_idx = dataframe_schema(self._df), self._key_idx()
        options = PandasOptions.of(self._df.sparkSession)
        return _keyed_python(self._df, self._keys, operation, out,
                             lambda enc: _keyed_worker.map_partition_in_pandas(
                                 func, in_schema, key_idx, enc, _PREFETCH_DEPTH, options), func,
                             pandas=True)

    @jvm_errors("keyed mapPartitionInPandas")
    def mapPartitionInPandas(self, func: Callable[[Any, Iterator[Any]], Iterable[Any]],
                             schema: Union[StructType, str]) -> DataFrame:
        """Like :meth:`mapPartition` with pandas: ``func(key, frames)`` is called once per key
        with an iterator of ``pandas.DataFrame`` holding only that key's records, streamed in
        frames of at most one Arrow batch (``spark.sql.execution.arrow.maxRecordsPerBatch``
        rows when set, else 50,000 for narrow fixed-width rows and Spark's default for others),
        never the whole key at once; it yields DataFrames of ``schema``. ``key`` is the key's
        value (a tuple for several key columns). Unlike ``groupBy().applyInPandas``, a key
        larger than memory goes through as long as ``func`` does not keep its frames.

        Examples:
            >>> import pandas as pd
            >>> def total(key, frames):
            ...     s = sum(int(pdf["v"].sum()) for pdf in frames)
            ...     yield pd.DataFrame({"k": [key], "total": [s]})
            >>> out = df.keyBy("k").fullWindowPartition().mapPartitionInPandas(
            ...     total, "k long, total long")
            >>> sorted(tuple(r) for r in out.collect())
            [(0, 4), (1, 7), (2, 10)]
        """
        return self._map_partition_in_pandas("mapPartitionInPandas", func, schema)

    # -- sortPartition --------------------------------------------------------------------------

    @jvm_errors("keyed sortPartition")
    def sortPartition(self, key: Any, order: Order | str = Order.ASCENDING, *,
                      key_type: DataType | None = None) -> DataFrame:
        """Records grouped by key (hash-partitioned by it: one exchange) and sorted by ``key``
        within each key, with Spark's spilling sorter. ``key`` and ``order`` take every form the
        non-keyed ``sortPartition`` takes (index, name, Column, key selector, list of pairs).

        Examples:
            >>> out = df.keyBy("k").fullWindowPartition().sortPartition("v", Order.DESCENDING)
            >>> [tuple(r) for r in sorted(out.collect(), key=lambda r: r.k)]  # a stable sort
            [(0, 3), (0, 1), (1, 5), (1, 2), (2, 6), (2, 4)]
        """
        df = self._df
        be = backend(df)
        be.check(df)
        parted = be.keyed_repartition(df, self._keys)
        resolved = resolve_sort_keys("keyed sortPartition", parted, key, order, key_type)
        if resolved is None:
            return parted  # an empty input and a key selector: nothing to sort
        columns = [F.col(_quote(k)) for k in self._keys] + resolved.columns
        ascending = [True] * len(self._keys) + resolved.ascending
        out = be.sort_partition(resolved.df, columns, ascending)
        out = out.drop(*resolved.hidden) if resolved.hidden else out
        return _recoverable(out, "keyed sortPartition", self._keys,
                            key if callable(key) else None)

    # -- aggregate ------------------------------------------------------------------------------

    def _aggregate(self, operation: str, args: tuple[Any, ...],
                   schema: Union[StructType, str] | None) -> DataFrame:
        from fullwindow import _keyed_worker

        label = f"keyed {operation}"
        if not args:
            raise FullWindowTypeError(f"{label}: give aggregate Columns, or an AggregateFunction "
                                      "and a schema")
        first = args[0]
        if isinstance(first, COLUMN_TYPES):
            for i, c in enumerate(args):
                if not isinstance(c, COLUMN_TYPES):
                    raise FullWindowTypeError(
                        f"{label}: argument #{i} must be an aggregate Column such as "
                        f"F.sum('v'); got {type(c).__name__} {c!r}")
            out = backend(self._df).keyed_aggregate(self._df, self._keys, list(args))
            return _recoverable(out, f"keyed {operation}", self._keys)
        if len(args) == 2 and schema is None:
            first, schema = args
        elif len(args) != 1:
            raise FullWindowTypeError(
                f"{label}(func, schema) takes one AggregateFunction and a schema")
        _require_methods(label, "func", first, ("create_accumulator", "add", "get_result"),
                         "an AggregateFunction (create_accumulator, add, get_result, merge) or "
                         "aggregate Columns")
        result = _parse_schema(label, schema)
        key_fields = _key_fields(self._df, self._keys)
        clash = [f.name for f in result.fields if f.name in self._keys]
        if clash:
            raise FullWindowValueError(
                f"{label}: the result field {clash[0]!r} has the name of a key column; the "
                "output is the key columns then the result fields, so rename it")
        out = StructType(key_fields + list(result.fields))
        in_schema, key_idx = dataframe_schema(self._df), self._key_idx()
        bound = _combine.bound_of(self._df) if _combine.has_merge(first) else None
        if bound is not None:
            return _keyed_combined(
                self._df, self._keys, operation, _combine.partial_schema(in_schema, key_idx),
                lambda enc: _combine.combine_aggregate(first, in_schema, key_idx, enc,
                                                       _PREFETCH_DEPTH, bound),
                out,
                lambda enc: _combine.merge_aggregate(first, in_schema, key_idx, result, enc,
                                                     _PREFETCH_DEPTH), first)
        return _keyed_python(self._df, self._keys, operation, out,
                             lambda enc: _keyed_worker.aggregate(first, in_schema, key_idx, result,
                                                                 enc, _PREFETCH_DEPTH), first)

    @jvm_errors("keyed aggregate")
    def aggregate(self, *args: Any, schema: Union[StructType, str] | None = None) -> DataFrame:
        """Aggregates each key's records into one row: the key columns, then the aggregates.

        With built-in aggregate ``Column``s, evaluated in the JVM and combined before the
        exchange as ``groupBy(key).agg`` is (Spark's partial aggregation on each input
        partition, one exchange by the key of the partial rows, the final aggregation after it;
        ``spark.fullwindow.combine.enabled=false`` exchanges every record instead), or with a Python
        [`AggregateFunction`][fullwindow.AggregateFunction] and the schema of its result; the
        output is the key columns followed by the aggregates.

        ``Mean`` below is the example class of [`AggregateFunction`][fullwindow.AggregateFunction].

        Examples:
            >>> w = df.keyBy("k").fullWindowPartition()
            >>> sorted(w.aggregate(F.sum("v").alias("total")).collect())
            [Row(k=0, total=4), Row(k=1, total=7), Row(k=2, total=10)]
            >>> sorted(w.aggregate(Mean(), "mean double").collect())
            [Row(k=0, mean=2.0), Row(k=1, mean=3.5), Row(k=2, mean=5.0)]
        """
        return self._aggregate("aggregate", args, schema)

    # -- reduce ---------------------------------------------------------------------------------

    def _reduce(self, operation: str, func: Callable[[Row, Row], Any]) -> DataFrame:
        from fullwindow import _keyed_worker

        _require_callable(f"keyed {operation}", "func", func,
                          "a function (a: Row, b: Row) -> Row")
        in_schema, key_idx = dataframe_schema(self._df), self._key_idx()
        merge = (lambda enc: _keyed_worker.reduce(func, in_schema, key_idx, enc, _PREFETCH_DEPTH))
        bound = _combine.bound_of(self._df)
        if bound is not None:
            return _keyed_combined(
                self._df, self._keys, operation, in_schema,
                lambda enc: _combine.combine_reduce(func, in_schema, key_idx, enc,
                                                    _PREFETCH_DEPTH, bound),
                in_schema, merge, func)
        return _keyed_python(self._df, self._keys, operation, in_schema, merge, func)

    @jvm_errors("keyed reduce")
    def reduce(self, func: Callable[[Row, Row], Any]) -> DataFrame:
        """Combines each key's records pairwise with ``func(a, b) -> Row or tuple``: one row of
        the input schema per key.

        Examples:
            >>> w = df.keyBy("k").fullWindowPartition()
            >>> sorted(w.reduce(lambda a, b: a if a.v >= b.v else b).collect())
            [Row(k=0, v=3), Row(k=1, v=5), Row(k=2, v=6)]
        """
        return self._reduce("reduce", func)

    # -- process --------------------------------------------------------------------------------

    def _process(self, operation: str, func: ProcessWindowFunction,
                 schema: Union[StructType, str]) -> DataFrame:
        from fullwindow import _keyed_worker

        label = f"keyed {operation}"
        _require_methods(label, "func", func, ("process",),
                         "a ProcessWindowFunction (with process(key, ctx, rows))")
        out = _parse_schema(label, schema)
        policy = _time_policy(self._df.sparkSession)
        in_schema, key_idx = dataframe_schema(self._df), self._key_idx()
        return _keyed_python(self._df, self._keys, operation, out,
                             lambda enc: _keyed_worker.process(func, in_schema, key_idx, enc,
                                                               _PREFETCH_DEPTH, policy),
                             func, policy)

    @jvm_errors("keyed process")
    def process(self, func: ProcessWindowFunction, schema: Union[StructType, str]) -> DataFrame:
        """Calls a [`ProcessWindowFunction`][fullwindow.ProcessWindowFunction] once per key:
        ``process(key, ctx, rows)`` with ``ctx.key`` set, then that key's timers (end of input);
        ``open(ctx)`` and ``close()`` are called once per task.

        Examples:
            >>> class Count(ProcessWindowFunction):
            ...     def process(self, key, ctx, rows):
            ...         yield (ctx.key, sum(1 for _ in rows))
            >>> sorted(df.keyBy("k").fullWindowPartition().process(Count(), "k long, n long")
            ...        .collect())
            [Row(k=0, n=2), Row(k=1, n=2), Row(k=2, n=2)]
        """
        return self._process("process", func, schema)


class KeyedWindowedDataFrame:
    """``keyBy(...).window(EndOfStreamWindows.get())``: one window per key holding all its
    records, fired at end of input (FLIP-331). The same windows as
    ``keyBy(...).fullWindowPartition()``, with Flink's ``WindowedStream`` method names."""

    def __init__(self, df: DataFrame, keys: tuple[str, ...]):
        self._window = KeyedPartitionWindowedDataFrame(df, keys)

    def __repr__(self) -> str:
        return (f"KeyedWindowedDataFrame[EndOfStreamWindows; keys=({', '.join(self._window.keys)})"
                f"; {dataframe_schema(self._window.dataframe).simpleString()}]")

    @jvm_errors("keyed apply")
    def apply(self, func: Callable[[Any, Iterator[Row]], Iterable[Any]],
              schema: Union[StructType, str]) -> DataFrame:
        """``func(key, rows)`` once per key, streaming (as keyed ``mapPartition``).

        Examples:
            >>> def count(key, rows):
            ...     yield (key, sum(1 for _ in rows))
            >>> window = df.keyBy("k").window(EndOfStreamWindows.get())
            >>> sorted(window.apply(count, "k long, n long").collect())
            [Row(k=0, n=2), Row(k=1, n=2), Row(k=2, n=2)]
        """
        return self._window._map_partition("apply", func, schema)

    @jvm_errors("keyed applyInPandas")
    def applyInPandas(self, func: Callable[[Any, Iterator[Any]], Iterable[Any]],
                      schema: Union[StructType, str]) -> DataFrame:
        """``func(key, frames)`` once per key with the key's records streamed as pandas
        DataFrames (as keyed ``mapPartitionInPandas``).

        Examples:
            >>> import pandas as pd
            >>> def count(key, frames):
            ...     yield pd.DataFrame({"k": [key], "n": [sum(len(pdf) for pdf in frames)]})
            >>> out = df.keyBy("k").window(EndOfStreamWindows.get()).applyInPandas(
            ...     count, "k long, n long")
            >>> sorted(tuple(r) for r in out.collect())
            [(0, 2), (1, 2), (2, 2)]
        """
        return self._window._map_partition_in_pandas("applyInPandas", func, schema)

    @jvm_errors("keyed process")
    def process(self, func: ProcessWindowFunction, schema: Union[StructType, str]) -> DataFrame:
        """A [`ProcessWindowFunction`][fullwindow.ProcessWindowFunction] once per key (as keyed
        ``process``)."""
        return self._window._process("process", func, schema)

    @jvm_errors("keyed aggregate")
    def aggregate(self, *args: Any, schema: Union[StructType, str] | None = None) -> DataFrame:
        """Aggregate Columns (JVM) or an AggregateFunction and a schema, per key: the key
        columns, then the aggregates (as keyed ``aggregate``)."""
        return self._window._aggregate("aggregate", args, schema)

    @jvm_errors("keyed reduce")
    def reduce(self, func: Callable[[Row, Row], Any]) -> DataFrame:
        """One row of the input schema per key (as keyed ``reduce``)."""
        return self._window._reduce("reduce", func)


# ---- coGroup ----------------------------------------------------------------------------------

class CoGroupedDataFrames:
    """Two keyed DataFrames grouped by key; call ``.window(EndOfStreamWindows.get())`` next."""

    def __init__(self, left: KeyedDataFrame, right: KeyedDataFrame):
        self._left, self._right = left, right

    def __repr__(self) -> str:
        return f"CoGroupedDataFrames[{self._left!r}, {self._right!r}]"

    def window(self, assigner: EndOfStreamWindows) -> "CoGroupedWindowedDataFrames":
        _check_assigner("coGroup window", assigner)
        return CoGroupedWindowedDataFrames(self._left, self._right)

    def apply(self, *args: Any, **kwargs: Any) -> DataFrame:
        raise FullWindowTypeError(
            "coGroup: call .window(EndOfStreamWindows.get()) before .apply(func, schema)")


class CoGroupedWindowedDataFrames:
    """``a.keyBy(k).coGroup(b.keyBy(k)).window(EndOfStreamWindows.get())``."""

    def __init__(self, left: KeyedDataFrame, right: KeyedDataFrame):
        self._left, self._right = left, right

    @jvm_errors("coGroup")
    def apply(self, func: Callable[[Any, Iterator[Row], Iterator[Row]], Iterable[Any]],
              schema: Union[StructType, str]) -> DataFrame:
        """Calls ``func(key, left_rows, right_rows)`` once for every key present on either side
        (the other side's iterator is then empty), at end of input, and returns what it yields
        (tuples, Rows or dicts of ``schema``).

        Both inputs are hash-partitioned by key (co-partitioned) and each is sorted by its own
        spilling sorter; the two sorted streams are merged by key, left records of a key before
        its right ones. Memory: ``right_rows`` always streams. ``left_rows`` streams too when
        ``func`` reads it before ``right_rows``; whatever of the left records is still unread
        when ``right_rows`` is first read is kept in memory (so ``left_rows`` still sees it).
        Put the larger side on the left and read it first, or read only one side, and memory
        stays bounded whatever the size of a key. Each iterator can be read once.

        Examples:
            >>> users = spark.createDataFrame([(1, "ann"), (2, "bob")], "id long, name string")
            >>> orders = spark.createDataFrame([(1, 9.5), (1, 3.0), (3, 1.0)],
            ...                                "user_id long, amount double")
            >>> def join(key, left, right):
            ...     names = [r.name for r in left]
            ...     for r in right:
            ...         for n in names:
            ...             yield (key, n, r.amount)
            >>> out = (users.keyBy("id").coGroup(orders.keyBy("user_id"))
            ...        .window(EndOfStreamWindows.get())
            ...        .apply(join, "id long, name string, amount double"))
            >>> sorted(out.collect())
            [Row(id=1, name='ann', amount=3.0), Row(id=1, name='ann', amount=9.5)]
        """
        from fullwindow import _keyed_worker

        return self._co_group("apply", func, schema,
                              "a function (key, left_rows, right_rows) -> iterable of rows",
                              lambda keys, lschema, rschema: lambda enc:
                              _keyed_worker.co_group(func, keys, lschema, rschema, enc,
                                                     _PREFETCH_DEPTH))

    @jvm_errors("coGroup")
    def applyInPandas(self, func: Callable[[Any, Iterator[Any], Iterator[Any]], Iterable[Any]],
                      schema: Union[StructType, str]) -> DataFrame:
        """:meth:`apply` with pandas: ``func(key, left_frames, right_frames)`` once for every key
        present on either side, each side's records of the key streamed as pandas DataFrames of
        at most one Arrow batch (a side without records gives an empty iterator); it yields
        DataFrames of ``schema``. The memory bound is :meth:`apply`'s: read the left frames
        before the right ones (or only one side) and no key is held whole.

        Examples:
            >>> import pandas as pd
            >>> orders = spark.createDataFrame([(1, 10.0), (2, 5.0)], "order_id long, amount double")
            >>> payments = spark.createDataFrame([(1, 4.0), (1, 6.0), (3, 1.0)],
            ...                                  "order_id long, amount double")
            >>> def pay(key, orders, payments):
            ...     due = sum(float(o["amount"].sum()) for o in orders)
            ...     paid = sum(float(p["amount"].sum()) for p in payments)
            ...     yield pd.DataFrame({"order_id": [key], "open": [due - paid]})
            >>> out = (orders.keyBy("order_id").coGroup(payments.keyBy("order_id"))
            ...        .window(EndOfStreamWindows.get()).applyInPandas(pay, "order_id long, open double"))
            >>> sorted(tuple(r) for r in out.collect())
            [(1, 0.0), (2, 5.0), (3, -1.0)]
        """
        from fullwindow import _keyed_worker
        from fullwindow._worker import PandasOptions

        _require_callable("coGroup applyInPandas", "func", func,
                          "a function (key, left_frames, right_frames) taking and yielding "
                          "pandas.DataFrame")
        options = PandasOptions.of(self._left.dataframe.sparkSession)
        return self._co_group("applyInPandas", func, schema,
                              "a function (key, left_frames, right_frames) taking and yielding "
                              "pandas.DataFrame",
                              lambda keys, lschema, rschema: lambda enc:
                              _keyed_worker.co_group_in_pandas(func, keys, lschema,
                                                               rschema, enc, _PREFETCH_DEPTH,
                                                               options), pandas=True)

    @jvm_errors("coGroup")
    def applyInArrow(self, func: Callable[[Any, Iterator[Any], Iterator[Any]], Iterable[Any]],
                     schema: Union[StructType, str]) -> DataFrame:
        """:meth:`apply` with Arrow: ``func(key, left_batches, right_batches)`` once for every
        key present on either side, each side's records of the key streamed as
        ``pyarrow.RecordBatch`` objects of at most one Arrow batch, named as that side's columns
        (a side without records gives an empty iterator); it yields batches (or Tables) of
        ``schema``, cast to it as ``mapPartitionInArrow``'s are. The memory bound is
        :meth:`apply`'s: read the left batches before the right ones (or only one side) and no
        key is held whole.

        Examples:
            >>> import pyarrow as pa
            >>> import pyarrow.compute as pc
            >>> orders = spark.createDataFrame([(1, 10.0), (2, 5.0)], "order_id long, amount double")
            >>> payments = spark.createDataFrame([(1, 4.0), (1, 6.0), (3, 1.0)],
            ...                                  "order_id long, amount double")
            >>> def pay(key, orders, payments):
            ...     due = sum(pc.sum(b["amount"]).as_py() or 0.0 for b in orders)
            ...     paid = sum(pc.sum(b["amount"]).as_py() or 0.0 for b in payments)
            ...     yield pa.RecordBatch.from_pylist([{"order_id": key, "open": due - paid}])
            >>> out = (orders.keyBy("order_id").coGroup(payments.keyBy("order_id"))
            ...        .window(EndOfStreamWindows.get()).applyInArrow(pay, "order_id long, open double"))
            >>> sorted(tuple(r) for r in out.collect())
            [(1, 0.0), (2, 5.0), (3, -1.0)]
        """
        from fullwindow import _keyed_worker

        return self._co_group("applyInArrow", func, schema,
                              "a function (key, left_batches, right_batches) taking and yielding "
                              "pyarrow.RecordBatch",
                              lambda keys, lschema, rschema: lambda enc:
                              _keyed_worker.co_group_in_arrow(func, keys, lschema,
                                                              rschema, enc, _PREFETCH_DEPTH))

    def _co_group(self, operation: str, func: Callable[..., Any], schema: Union[StructType, str],
                  expected: str, make_runner: Callable[..., Any],
                  pandas: bool = False) -> DataFrame:
        """The coGroup of the two sides running ``make_runner(key schema, left schema, right
        schema)(encoder)`` in each task, as coGroup's ``operation`` (``pandas``: the function
        takes pandas frames)."""
        from fullwindow import _keyed_worker

        label = f"coGroup {operation}"
        _require_callable(label, "func", func, expected)
        out = _parse_schema(label, schema)
        left, right = self._left, self._right
        ldf, rdf = left.dataframe, right.dataframe
        lschema, rschema = dataframe_schema(ldf), dataframe_schema(rdf)
        keys = _keyed_worker.key_schema(_key_fields(ldf, left.keys))
        column = _udf_column(ldf, label, out, make_runner(keys, lschema, rschema), func)
        out = backend(ldf).co_group(ldf, rdf, left.keys, right.keys, column, pandas)
        name = "coGroup" if operation == "apply" else f"coGroup {operation}"
        return _recoverable(out, name, (left.keys, right.keys), func)


def key_by(df: DataFrame, *cols: Any) -> KeyedDataFrame:
    """``df.keyBy(*cols)`` as a function: see [`KeyedDataFrame`][fullwindow.KeyedDataFrame]."""
    return KeyedDataFrame(df, validate_keys("keyBy", df, cols))
