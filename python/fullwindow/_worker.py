"""The Python-worker side of fullwindow's Python operations.

Every non-keyed Python operation runs as one Arrow-iterator function per partition (Spark's
mapInArrow path). The functions here turn the incoming Arrow batches into rows, ahead of the
user's function and through a bounded queue, and turn what the function returns back into Arrow
batches of the declared schema. Spark's own Arrow <-> Python converters do the value conversion.
"""
from __future__ import annotations

import gc
import itertools
import keyword
import queue
import threading
from functools import partial
from typing import Any, Callable, Iterable, Iterator

import pyarrow as pa
from pyspark.sql.types import Row, StructType

from fullwindow._compat import (arrow_to_pandas, arrow_value_converter, consolidate,
                                enforce_schema, numpy_column_converter, numpy_view, pandas_to_arrow,
                                rows_to_arrow, to_arrow_schema, to_pylist)
from fullwindow.errors import FullWindowTypeError, SchemaMismatchError

_MISSING = object()


def partition_id() -> int:
    from pyspark import TaskContext

    tc = TaskContext.get()
    return tc.partitionId() if tc is not None else -1


# ---- Arrow -> rows ----------------------------------------------------------------------------

try:
    # namedtuple's field descriptor: reads the tuple's item directly. property(itemgetter(i))
    # goes through Row.__getitem__, which is Python code (it also takes names): ten times slower.
    from collections import _tuplegetter  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - CPython has had it since 3.8
    def _tuplegetter(index: int, doc: str) -> Any:
        return property(lambda row: tuple.__getitem__(row, index), doc=doc)


def _row_getitem(row: Any, item: Any, _get: Any = tuple.__getitem__) -> Any:
    """``row[i]``: a position straight from the tuple; names (``row["k"]``) as Row reads them.
    Row's own ``__getitem__`` goes through ``isinstance`` and ``super()`` for every position
    read: 0.22 against 0.13 microseconds, and a reduce such as ``lambda a, b: (a[0], a[1],
    a[2] + b[2])`` reads four per call."""
    if type(item) is int:
        return _get(row, item)
    return Row.__getitem__(row, item)


def _row_class(fields: list[str]) -> type:
    """A ``Row`` subclass for one schema: real ``pyspark.sql.Row`` instances (``r.name``, ``r[0]``,
    ``asDict()``, pickling), made with ``tuple.__new__`` and read through per-field descriptors
    (as a namedtuple's), so building and reading millions of them stays cheap."""
    attrs: dict[str, Any] = {"__fields__": list(fields), "__slots__": (),
                             "__getitem__": _row_getitem}
    taken = set(dir(Row))
    for i, name in enumerate(fields):
        if name.isidentifier() and not keyword.iskeyword(name) and name not in taken \
                and name not in attrs:
            attrs[name] = _tuplegetter(i, f"Field {name!r} (index {i})")
    return type("Row", (Row,), attrs)


_gc_tuned = False
_GC_YOUNG_THRESHOLD = 20_000


def _tune_worker_gc() -> None:
    """Sets the worker process's cyclic garbage collector up for decoding, once per process.

    Decoding allocates one GC-tracked ``Row`` per record (a tuple subclass: CPython never
    untracks those), so with the default thresholds (700, 10, 10) the collector runs every 700
    records, and each full collection walked every long-lived object of the worker again
    (pyspark, pyarrow, pandas: some 75,000). So, measured with
    a profile script since removed (`git show 867a0e0:benchmarks/experiments/python_worker_profile.py`;
    findings in benchmarks/notes/partition.md):

    - the objects alive now are left out of all later collections (``gc.freeze()``, after a
      full collection so that nothing already garbage is kept): about 30% less Python CPU
      for an aggregate, 40% less for decoding alone;
    - young collections run every 20,000 allocations (twice the default Arrow batch) instead
      of 700, unless set higher already: about 15% less again. Cyclic garbage still gets
      collected, a little later."""
    global _gc_tuned
    if _gc_tuned:
        return
    _gc_tuned = True
    gc.collect()
    gc.freeze()
    young, *older = gc.get_threshold()
    if 0 < young < _GC_YOUNG_THRESHOLD:
        gc.set_threshold(_GC_YOUNG_THRESHOLD, *older)


class RowDecoder:
    """Decodes Arrow record batches of ``schema`` into lists of ``Row``s."""

    def __init__(self, schema: StructType):
        _tune_worker_gc()
        self._to_pylist = to_pylist
        self._converters = [arrow_value_converter(f.dataType) for f in schema.fields]
        self.row_class = _row_class(schema.names)
        self._new = partial(tuple.__new__, self.row_class)

    def __call__(self, batch: pa.RecordBatch) -> list:
        columns = []
        for column, conv in zip(batch.columns, self._converters):
            values = self._to_pylist(column)
            columns.append(values if conv is None else [conv(v) for v in values])
        if not columns:
            return [self._new(())] * batch.num_rows
        # tuple.__new__(row_class, values) per record, with no partial() in between
        return list(map(tuple.__new__, itertools.repeat(self.row_class, batch.num_rows),
                        zip(*columns)))


class _Failure:
    def __init__(self, exc: BaseException):
        self.exc = exc


_END = object()


class Prefetcher:
    """Reads and decodes input batches on a background thread into a queue of at most
    ``depth`` decoded batches, so that decoding overlaps the user's function and memory stays
    bounded whatever the partition size."""

    def __init__(self, source: Iterator[Any], decode: Callable[[Any], Any], depth: int = 2):
        self._source, self._decode = source, decode
        self._queue: queue.Queue = queue.Queue(maxsize=max(1, depth))
        self._discard = False
        self._thread = threading.Thread(target=self._run, name="fullwindow-prefetch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for item in self._source:
                if self._discard:
                    continue  # the function is done: drain the input, keep nothing
                self._queue.put(self._decode(item))
            self._queue.put(_END)
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            self._queue.put(_Failure(exc))

    def __iter__(self) -> Iterator[Any]:
        while True:
            item = self._queue.get()
            if item is _END:
                return
            if isinstance(item, _Failure):
                raise item.exc
            yield item

    def finish(self) -> None:
        """The function returned: read the rest of the input (Spark expects it consumed)."""
        self._discard = True
        while self._thread.is_alive():
            try:
                self._queue.get(timeout=0.05)
            except queue.Empty:
                pass
        self._thread.join()


# ---- rows -> Arrow ----------------------------------------------------------------------------

class RowEncoder:
    """Encodes rows (tuples, Rows or dicts) a function returned into Arrow batches of the
    declared schema, and explains precisely what does not fit when something does not."""

    def __init__(self, operation: str, schema: StructType, large_var_types: bool, batch_size: int):
        self.operation, self.schema = operation, schema
        self.large = large_var_types
        self.batch_size = batch_size if batch_size > 0 else 10_000
        self.arrow_schema = to_arrow_schema(schema, large_var_types)

    def _where(self) -> str:
        return f"{self.operation}: partition {partition_id()}"

    def encode(self, rows: list) -> pa.RecordBatch:
        try:
            table = rows_to_arrow(rows, self.schema, self.large)
        except Exception as err:  # noqa: BLE001 - diagnosed below, then re-raised
            self._diagnose(rows, err)
            raise
        return table.combine_chunks().to_batches()[0]

    def _diagnose(self, rows: list, err: Exception) -> None:
        names = self.schema.names
        for row in rows:
            if isinstance(row, dict):
                values = [row.get(n) for n in names]
            elif isinstance(row, tuple):
                if len(row) != len(names):
                    raise SchemaMismatchError(
                        f"{self._where()}: the row {row!r} has {len(row)} fields but the schema "
                        f"{self.schema.simpleString()} has {len(names)}") from None
                values = list(row)
            else:
                raise SchemaMismatchError(
                    f"{self._where()}: expected each output row to be a tuple, Row or dict for "
                    f"schema {self.schema.simpleString()}; got {type(row).__name__} {row!r}") from None
            for field, value in zip(self.schema.fields, values):
                try:
                    rows_to_arrow([(value,)], StructType([field]), self.large)
                except Exception:  # noqa: BLE001
                    raise SchemaMismatchError(
                        f"{self._where()}: field '{field.name}' expects "
                        f"{field.dataType.simpleString()}"
                        f"{'' if field.nullable else ' (not null)'}, got {value!r} "
                        f"({type(value).__name__}) in row {row!r}") from None
        raise SchemaMismatchError(f"{self._where()}: output does not fit schema "
                                  f"{self.schema.simpleString()}: {err}") from None

    def encode_all(self, rows: Iterable[Any]) -> Iterator[pa.RecordBatch]:
        it = iter(rows)
        while True:
            chunk = list(itertools.islice(it, self.batch_size))
            if not chunk:
                return
            yield self.encode(chunk)

    def encode_one(self, value: Any) -> pa.RecordBatch:
        if not isinstance(value, (tuple, dict)) and len(self.schema.fields) == 1:
            value = (value,)  # a single-field schema takes a bare value
        return self.encode([value])


def _iterable(operation: str, what: str, value: Any) -> Iterable[Any]:
    if value is None:
        return ()
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
        raise FullWindowTypeError(
            f"{operation}: {what} must return an iterable of rows (tuples, Rows or dicts), "
            f"got {type(value).__name__} {value!r}")
    return value


class _Run:
    """One partition's input, decoded ahead of the function; always drained at the end."""

    def __init__(self, batches: Iterator[pa.RecordBatch], in_schema: StructType, depth: int):
        self.decoder = RowDecoder(in_schema)
        self.prefetch = Prefetcher(batches, self.decoder, depth)

    def rows(self) -> Iterator[Any]:
        return itertools.chain.from_iterable(self.prefetch)

    def batches(self) -> Iterator[list]:
        return iter(self.prefetch)

    def __enter__(self) -> "_Run":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.prefetch.finish()


# ---- the operations ---------------------------------------------------------------------------

def map_partition(func, in_schema, encoder: RowEncoder, depth: int):
    def run(batches):
        with _Run(batches, in_schema, depth) as r:
            out = _iterable(encoder.operation, "func", func(r.rows()))
            yield from encoder.encode_all(out)
    return run


def checked_batches(encoder: RowEncoder, item: Any) -> Iterator[pa.RecordBatch]:
    """What an Arrow function yielded (a RecordBatch or Table), cast to the declared schema, or a
    SchemaMismatchError naming the operation, the partition and the two schemas."""
    for b in item.to_batches() if isinstance(item, pa.Table) else [item]:
        if not isinstance(b, pa.RecordBatch):
            raise SchemaMismatchError(
                f"{encoder.operation}: partition {partition_id()}: func must yield "
                f"pyarrow.RecordBatch (or Table), got {type(b).__name__}")
        try:
            yield enforce_schema(b, encoder.arrow_schema)
        except Exception as err:  # noqa: BLE001
            raise SchemaMismatchError(
                f"{encoder.operation}: partition {partition_id()}: a batch with schema "
                f"[{b.schema.to_string(show_schema_metadata=False).replace(chr(10), ', ')}]"
                f" does not fit {encoder.schema.simpleString()}: {err}") from None


def map_partition_in_arrow(func, encoder: RowEncoder, depth: int):
    def run(batches):
        prefetch = Prefetcher(batches, lambda b: b, depth)
        out = _iterable(encoder.operation, "func", func(iter(prefetch)))
        for item in out:
            yield from checked_batches(encoder, item)
        prefetch.finish()
    return run


def aggregate(agg, in_schema, encoder: RowEncoder, depth: int):
    def run(batches):
        with _Run(batches, in_schema, depth) as r:
            add = agg.add
            acc = _MISSING
            for rows in r.batches():
                if acc is _MISSING:
                    acc = agg.create_accumulator()
                for row in rows:
                    acc = add(row, acc)  # the returned accumulator is the one used
            if acc is not _MISSING:
                yield encoder.encode_one(agg.get_result(acc))
    return run


def _row_coercer(operation: str, in_schema: StructType, row_class: type):
    """What reduce's func returns, made a Row of the input again (it is handed back as `a`)."""
    names = in_schema.names
    new_row = partial(tuple.__new__, row_class)

    def as_row(value):
        if isinstance(value, Row) and getattr(value, "__fields__", None) == names:
            return value
        if isinstance(value, tuple) and len(value) == len(names):
            return new_row(value)
        if isinstance(value, dict):
            return new_row([value.get(n) for n in names])
        raise FullWindowTypeError(
            f"{operation}: partition {partition_id()}: func returned {value!r}; it must "
            f"return the combined row, a Row or tuple of {in_schema.simpleString()}")
    return as_row


def reduce(func, in_schema, encoder: RowEncoder, depth: int):
    def run(batches):
        with _Run(batches, in_schema, depth) as r:
            row_class = r.decoder.row_class
            as_row = _row_coercer("reduce", in_schema, row_class)
            width, new_row = len(in_schema.fields), tuple.__new__

            it = r.rows()
            acc = next(it, _MISSING)
            if acc is _MISSING:
                return
            for row in it:
                acc = func(acc, row)
                kind = type(acc)
                if kind is not row_class:  # one of the two Rows, or a tuple of the width, mostly
                    acc = (new_row(row_class, acc) if kind is tuple and len(acc) == width
                           else as_row(acc))
            yield encoder.encode_one(acc)
    return run


def process(pwf, in_schema, encoder: RowEncoder, depth: int, policy):
    from fullwindow.functions import Context

    def run(batches):
        ctx = Context(partition_id(), None, policy)
        pwf.open(ctx)
        try:
            with _Run(batches, in_schema, depth) as r:
                it = r.rows()
                first = next(it, _MISSING)
                if first is not _MISSING:  # an empty partition has no window to fire
                    out = pwf.process(None, ctx, itertools.chain((first,), it))
                    yield from encoder.encode_all(_iterable("process", "process()", out))
                    yield from encoder.encode_all(end_of_input(pwf, ctx, policy))
        finally:
            pwf.close()
    return run


def end_of_input(pwf, ctx, policy) -> Iterator[Any]:
    """Timers at end of input: the watermark jumps to its maximum, so every event-time timer
    fires (in time order); then processing-time timers fire under FIRE_AND_QUIESCE (and new
    registrations are ignored) or are dropped under IGNORE."""
    while ctx._event_timers:
        ts = min(ctx._event_timers)
        ctx._event_timers.discard(ts)
        yield from _iterable("process", "on_timer()", pwf.on_timer(ts, ctx))
    ctx._quiesced = True
    if policy.end_of_input == "FIRE_AND_QUIESCE":
        for ts in sorted(ctx._processing_timers):
            yield from _iterable("process", "on_timer()", pwf.on_timer(ts, ctx))
    ctx._processing_timers.clear()


# ---- pandas forms -----------------------------------------------------------------------------

class PandasOptions:
    """The session settings that govern Arrow <-> pandas conversion, read on the driver when the
    operation is defined (the worker has no session): the same ones pyspark's ``applyInPandas``
    honours, so frames get the same dtypes and results are checked and cast the same way."""

    def __init__(self, timezone: str | None, safecheck: bool, assign_by_name: bool,
                 int_to_decimal: bool, prefer_int_ext: bool, large_var_types: bool):
        self.timezone = timezone
        self.safecheck = safecheck
        self.assign_by_name = assign_by_name
        self.int_to_decimal = int_to_decimal
        self.prefer_int_ext = prefer_int_ext
        self.large_var_types = large_var_types

    @classmethod
    def of(cls, spark) -> "PandasOptions":
        def value(key: str, default: str | None) -> str | None:
            try:  # without a default, Spark answers with the entry's own default when unset
                return spark.conf.get(key)
            except Exception:  # noqa: BLE001 - a key this Spark line does not know
                return default

        def flag(key: str, default: str) -> bool:
            return (value(key, default) or default).strip().lower() == "true"

        return cls(
            timezone=value("spark.sql.session.timeZone", None),
            safecheck=flag("spark.sql.execution.pandas.convertToArrowArraySafely", "true"),
            assign_by_name=flag("spark.sql.legacy.execution.pandas.groupedMap.assignColumnsByName",
                                "true"),
            int_to_decimal=flag("spark.sql.execution.pythonUDF.pandas.intToDecimalCoercionEnabled",
                                "false"),
            prefer_int_ext=flag("spark.sql.execution.pythonUDF.pandas.preferIntExtensionDtype",
                                "false"),
            large_var_types=flag("spark.sql.execution.arrow.useLargeVarTypes", "false"))


class PandasDecoder:
    """Arrow record batches of ``schema`` -> pandas DataFrames with the dtypes and values
    pyspark's own Arrow -> pandas conversion gives (the one ``mapInPandas`` and
    ``applyInPandas`` use: timestamps localized to the session time zone, structs as dicts).

    Columns of plain numbers, booleans and binary are taken straight from pyarrow as numpy
    arrays (``numpy_column_converter``: what pyspark's conversion gives for them, without its
    per-column Series); the others go through pyspark's conversion. The frame is built from
    the arrays in one step: for a 10,000-row batch of three numeric columns this costs a tenth
    of converting column by column and concatenating (benchmarks/notes/keyed.md)."""

    def __init__(self, schema: StructType, options: PandasOptions):
        self.schema, self.options = schema, options
        self.names = schema.names
        converters = [numpy_column_converter(f.dataType, options.prefer_int_ext)
                      for f in schema.fields]
        self._numpy = [(i, c) for i, c in enumerate(converters) if c is not None]
        self._other = [i for i, c in enumerate(converters) if c is None]
        self._other_schema = StructType([schema.fields[i] for i in self._other])

    def __call__(self, batch: pa.RecordBatch):
        import pandas as pd

        if not self.names:
            return pd.DataFrame(index=pd.RangeIndex(batch.num_rows))
        if not self._other:  # numbers only: one copy, straight into pandas' consolidated blocks
            frame = pd.DataFrame({i: numpy_view(batch.column(i)) for i, _ in self._numpy},
                                 index=pd.RangeIndex(batch.num_rows), copy=True)
            frame.columns = self.names
            return frame
        columns: dict[int, Any] = {i: conv(batch.column(i)) for i, conv in self._numpy}
        series = arrow_to_pandas(batch.select(self._other), self.options.timezone,
                                 self._other_schema, self.options.prefer_int_ext)
        columns.update(zip(self._other, series))
        frame = pd.DataFrame({i: columns[i] for i in range(len(self.names))},
                             index=pd.RangeIndex(batch.num_rows), copy=False)
        frame.columns = self.names  # the schema's names, duplicates included
        return consolidate(frame)


class PandasEncoder:
    """pandas DataFrames a function yielded -> Arrow batches of the declared schema, converted
    by pyspark's pandas -> Arrow conversion with ``applyInPandas``'s rules (columns matched by
    name when the frame's labels are strings, else by position; values cast to the field types).
    What does not fit raises ``SchemaMismatchError`` naming the operation, the partition, the
    field and what was found."""

    def __init__(self, encoder: RowEncoder, options: PandasOptions):
        self.operation, self.schema = encoder.operation, encoder.schema
        self.options = options
        self.batch_size = encoder.batch_size

    def _where(self) -> str:
        return f"{self.operation}: partition {partition_id()}"

    def _columns(self, frame) -> list:
        names = self.schema.names
        labels = list(frame.columns)
        if labels == names:
            return [frame.iloc[:, i] for i in range(len(names))]
        if self.options.assign_by_name and any(isinstance(c, str) for c in labels):
            missing = [n for n in names if n not in labels]
            extra = [str(c) for c in labels if c not in names]
            if missing:
                raise SchemaMismatchError(
                    f"{self._where()}: the DataFrame func returned has no column "
                    f"'{missing[0]}' of the schema {self.schema.simpleString()}; its columns are "
                    f"{', '.join(map(str, labels)) or '(none)'}"
                    + (f" (unexpected: {', '.join(extra)})" if extra else ""))
            if extra:
                raise SchemaMismatchError(
                    f"{self._where()}: the DataFrame func returned has columns "
                    f"{', '.join(extra)} that the schema {self.schema.simpleString()} does not; "
                    "drop them or add them to the schema")
            return [frame[n] for n in names]
        if len(labels) != len(names):
            raise SchemaMismatchError(
                f"{self._where()}: the DataFrame func returned has {len(labels)} columns but the "
                f"schema {self.schema.simpleString()} has {len(names)}")
        return [frame.iloc[:, i] for i in range(len(names))]

    def encode(self, frame) -> pa.RecordBatch:
        import pandas as pd

        if not isinstance(frame, pd.DataFrame):
            raise SchemaMismatchError(
                f"{self._where()}: func must yield pandas.DataFrame objects of "
                f"{self.schema.simpleString()}; got {type(frame).__name__}")
        if len(frame.columns) == 0 and len(frame) == 0:
            return pa.RecordBatch.from_pylist([], schema=self._arrow_schema())
        columns = self._columns(frame)
        o = self.options
        try:
            return pandas_to_arrow(columns, self.schema, o.timezone, o.safecheck,
                                   o.large_var_types, o.int_to_decimal)
        except Exception as err:  # noqa: BLE001 - narrowed to the field below
            self._diagnose(columns, err)
            raise

    def _arrow_schema(self) -> pa.Schema:
        return to_arrow_schema(self.schema, self.options.large_var_types)

    def _diagnose(self, columns: list, err: Exception) -> None:
        o = self.options
        for column, field in zip(columns, self.schema.fields):
            try:
                pandas_to_arrow([column], StructType([field]), o.timezone, o.safecheck,
                                o.large_var_types, o.int_to_decimal)
            except Exception as field_err:  # noqa: BLE001
                sample = column.head(3).tolist() if hasattr(column, "head") else column
                raise SchemaMismatchError(
                    f"{self._where()}: field '{field.name}' expects "
                    f"{field.dataType.simpleString()}{'' if field.nullable else ' (not null)'}, "
                    f"got a column of dtype {getattr(column, 'dtype', type(column).__name__)} "
                    f"(first values {sample!r}): {_first_line(field_err)}") from None
        raise SchemaMismatchError(f"{self._where()}: the DataFrame does not fit schema "
                                  f"{self.schema.simpleString()}: {_first_line(err)}") from None

    def _normalized(self, frame):
        """``frame`` checked, with the schema's column names in the schema's order (so that
        frames can be concatenated); ``None`` for a frame with no rows."""
        import pandas as pd

        if not isinstance(frame, pd.DataFrame):
            raise SchemaMismatchError(
                f"{self._where()}: func must yield pandas.DataFrame objects of "
                f"{self.schema.simpleString()}; got {type(frame).__name__}")
        if len(frame) == 0:
            if len(frame.columns):
                self._columns(frame)  # still a mistake worth naming
            return None
        names = self.schema.names
        if list(frame.columns) == names:
            return frame
        return pd.DataFrame(dict(zip(range(len(names)), self._columns(frame))),
                            index=frame.index).set_axis(names, axis=1)

    def encode_all(self, frames: Iterable[Any]) -> Iterator[pa.RecordBatch]:
        """Encodes the frames a function yielded. Small frames (one row per key, say) are
        gathered and concatenated up to about ``maxRecordsPerBatch`` rows and converted once:
        converting a frame has a fixed cost that dwarfs a few rows' worth (a 3-column frame
        of one row costs as much as ~15 rows of a concatenated one), and the JVM reads fewer,
        larger batches. Order is kept."""
        pending: list = []
        size = 0
        for frame in frames:
            frame = self._normalized(frame)
            if frame is None:
                continue
            if len(frame) >= self.batch_size:
                if pending:
                    yield self._encode_many(pending)
                    pending, size = [], 0
                yield self.encode(frame)
                continue
            pending.append(frame)
            size += len(frame)
            if size >= self.batch_size:
                yield self._encode_many(pending)
                pending, size = [], 0
        if pending:
            yield self._encode_many(pending)

    def _encode_many(self, frames: list) -> pa.RecordBatch:
        import pandas as pd

        if len(frames) == 1:
            return self.encode(frames[0])
        return self.encode(pd.concat(frames, ignore_index=True, copy=False))


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def _frames(operation: str, what: str, value: Any) -> Iterable[Any]:
    """What a pandas function returned: an iterable of DataFrames (a single DataFrame is a
    mistake worth naming, since iterating it gives its column labels)."""
    import pandas as pd

    if isinstance(value, pd.DataFrame):
        raise FullWindowTypeError(
            f"{operation}: {what} must return an iterator of pandas.DataFrame (e.g. yield the "
            "frame), got a single DataFrame")
    return _iterable(operation, what, value)


def map_partition_in_pandas(func, in_schema: StructType, encoder: RowEncoder, depth: int,
                            options: PandasOptions):
    out = PandasEncoder(encoder, options)

    def run(batches):
        prefetch = Prefetcher(batches, PandasDecoder(in_schema, options), depth)
        frames = _frames(encoder.operation, "func", func(iter(prefetch)))
        yield from out.encode_all(frames)
        prefetch.finish()
    return run
