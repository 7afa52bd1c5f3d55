"""The Python-worker side of keyed full windows and coGroup.

The JVM hands each task its partition clustered by key and sorted by key (Spark's spilling
sort), as Arrow batches. Here each batch is cut into runs of equal key (with Arrow compute when
the key types allow it, in Python otherwise) on the background prefetch thread, which decodes
them as well; the task's thread then groups consecutive runs of equal key and hands the user
function one lazy iterator per key. A key's records are never all held: at any time only the
batches in the bounded prefetch queue are decoded, whatever the size of the key.
"""
from __future__ import annotations

import collections
import functools
import itertools
import operator
from typing import Any, Callable, Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import (BinaryType, BooleanType, ByteType, DateType, DecimalType,
                               DoubleType, FloatType, IntegerType, LongType, Row, ShortType,
                               StringType, StructField, StructType, TimestampNTZType,
                               TimestampType)

from fullwindow._compat import arrow_value_converter, to_pylist
from fullwindow._worker import (PandasDecoder, PandasEncoder, PandasOptions, Prefetcher,
                                RowDecoder, RowEncoder, _frames, _iterable, _row_coercer,
                                checked_batches, end_of_input, partition_id)
from fullwindow.errors import SchemaMismatchError

# Key types whose Arrow arrays pyarrow compares with not_equal, with Python's equality.
_ARROW_COMPARABLE = (BinaryType, BooleanType, ByteType, DateType, DecimalType, DoubleType,
                     FloatType, IntegerType, LongType, ShortType, StringType, TimestampNTZType,
                     TimestampType)


class _NaN:
    """Stands for NaN in a key: Spark groups all NaNs together, Python's NaN != NaN."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _NaN)

    def __hash__(self) -> int:
        return 0x7FF8

    def __repr__(self) -> str:
        return "NaN"


_NAN = _NaN()
_first = operator.itemgetter(0)


class KeySplitter:
    """Finds the runs of equal key in a batch sorted by key.

    ``key_idx`` are the key columns; ``extra_idx`` columns (coGroup's side) also end a run when
    they change but are not part of the key. ``split(batch)`` returns the run starts, each run's
    key as the user sees it (a scalar for one key column, a tuple for several) and its grouping
    key (the same, with NaN made equal to NaN), and the extra columns' values at each start.
    """

    def __init__(self, schema: StructType, key_idx: list[int], extra_idx: tuple = ()):
        self.key_idx = list(key_idx)
        self.extra_idx = list(extra_idx)
        self.compare_idx = self.extra_idx + self.key_idx
        fields = schema.fields
        self.single = len(self.key_idx) == 1
        self.fast = all(isinstance(fields[i].dataType, _ARROW_COMPARABLE)
                        for i in self.compare_idx)
        self.floats = {i for i in self.compare_idx
                       if isinstance(fields[i].dataType, (FloatType, DoubleType))}
        self._to_pylist = to_pylist
        self._conv = {i: arrow_value_converter(fields[i].dataType) for i in self.compare_idx}

    def _values(self, column: pa.Array, i: int) -> list:
        values = self._to_pylist(column)
        conv = self._conv[i]
        return values if conv is None else [conv(v) for v in values]

    @staticmethod
    def _norm(v: Any) -> Any:
        return _NAN if v != v else v  # only NaN differs from itself among scalar keys

    def _starts_fast(self, batch: pa.RecordBatch) -> list[int]:
        n = batch.num_rows
        changed = None
        for i in self.compare_idx:
            col = batch.column(i)
            a, b = col.slice(1), col.slice(0, n - 1)
            diff = pc.fill_null(pc.not_equal(a, b), False)
            if col.null_count:
                diff = pc.or_(diff, pc.not_equal(pc.is_valid(a), pc.is_valid(b)))
            if i in self.floats:
                both_nan = pc.and_(pc.fill_null(pc.is_nan(a), False),
                                   pc.fill_null(pc.is_nan(b), False))
                diff = pc.and_(diff, pc.invert(both_nan))
            changed = diff if changed is None else pc.or_(changed, diff)
        return [0] + [p + 1 for p in pc.indices_nonzero(changed).to_pylist()]

    def _one_run(self, batch: pa.RecordBatch) -> bool:
        """Whether the whole batch is one run: its first and last records have the same
        (non-null, non-NaN) compared values. The input is clustered by them (sorted), so a value
        found at both ends holds in between: a batch inside a large key (the common case with
        few keys) is then not compared record by record."""
        last = batch.num_rows - 1
        for i in self.compare_idx:
            col = batch.column(i)
            a, b = col[0].as_py(), col[last].as_py()
            if a is None or a != b:  # NaN != NaN: left to the record-by-record comparison
                return False
        return True

    def split(self, batch: pa.RecordBatch):
        n = batch.num_rows
        if n == 0:
            return [], [], [], [[] for _ in self.extra_idx]
        if self.fast:
            starts = self._starts_fast(batch) if n > 1 and not self._one_run(batch) else [0]
            at = pa.array(starts, pa.int64()) if len(starts) < n else None
            values = {i: self._values(batch.column(i) if at is None else batch.column(i).take(at), i)
                      for i in self.compare_idx}
        else:
            full = {i: self._values(batch.column(i), i) for i in self.compare_idx}
            floats = self.floats
            norm = self._norm
            columns = [[norm(v) for v in full[i]] if i in floats else full[i]
                       for i in self.compare_idx]
            cmp = list(zip(*columns))
            starts = [0] + [j for j in range(1, n) if cmp[j] != cmp[j - 1]]
            values = {i: [full[i][j] for j in starts] for i in self.compare_idx}
        if self.single:
            k = self.key_idx[0]
            ukeys = values[k]
            gkeys = [self._norm(v) for v in ukeys] if k in self.floats else ukeys
        else:
            ukeys = list(zip(*(values[i] for i in self.key_idx)))
            if self.floats:
                gkeys = [tuple(self._norm(v) if i in self.floats else v
                               for i, v in zip(self.key_idx, key)) for key in ukeys]
            else:
                gkeys = ukeys
        extras = [values[i] for i in self.extra_idx]
        return starts, ukeys, gkeys, extras


def _bounds(starts: list[int], n: int) -> Iterator[tuple[int, int]]:
    return zip(starts, starts[1:] + [n])


def row_segments(in_schema: StructType, key_idx: list[int], ncols: int | None = None):
    """Batch -> [(group key, key, rows)], decoding the whole batch once. With ``ncols``, only the
    first ``ncols`` columns are the user's (hidden columns after them are dropped)."""
    decoder = RowDecoder(in_schema)
    splitter = KeySplitter(in_schema, key_idx)

    def decode(batch: pa.RecordBatch) -> list:
        if ncols is not None and batch.num_columns > ncols:
            batch = batch.select(list(range(ncols)))
        starts, ukeys, gkeys, _ = splitter.split(batch)
        if not starts:
            return []
        rows = decoder(batch)
        n = len(rows)
        if len(starts) == 1:
            return [(gkeys[0], ukeys[0], rows)]
        return [(g, u, rows[s:e]) for g, u, (s, e) in zip(gkeys, ukeys, _bounds(starts, n))]

    decode.row_class = decoder.row_class  # type: ignore[attr-defined]
    return decode


def arrow_segments(in_schema: StructType, key_idx: list[int]):
    """Batch -> [(group key, key, [batch slice])], with no row decoding."""
    splitter = KeySplitter(in_schema, key_idx)

    def decode(batch: pa.RecordBatch) -> list:
        starts, ukeys, gkeys, _ = splitter.split(batch)
        if len(starts) == 1:
            return [(gkeys[0], ukeys[0], [batch])]
        n = batch.num_rows
        return [(g, u, [batch.slice(s, e - s)])
                for g, u, (s, e) in zip(gkeys, ukeys, _bounds(starts, n))]

    return decode


class _Prefetched:
    """One task's input, cut into key runs ahead of the function; always drained at the end."""

    def __init__(self, batches: Iterator[pa.RecordBatch], decode: Callable, depth: int):
        self.prefetch = Prefetcher(batches, decode, depth)

    def segments(self) -> Iterator[tuple]:
        return itertools.chain.from_iterable(self.prefetch)

    def __enter__(self) -> "_Prefetched":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.prefetch.finish()


def groups(segments: Iterator[tuple]) -> Iterator[tuple[Any, Iterator[Any]]]:
    """Consecutive runs of equal group key -> (key, lazy iterator over the key's records). The
    iterator is valid until the next key is asked for (what the function left unread is
    skipped)."""
    third = operator.itemgetter(2)
    for _, group in itertools.groupby(segments, key=_first):
        first = next(group)
        yield first[1], itertools.chain(first[2], itertools.chain.from_iterable(map(third, group)))


def _key_tuple(key: Any, single: bool) -> tuple:
    return (key,) if single else tuple(key)


# ---- the keyed operations ---------------------------------------------------------------------

def map_partition(func, in_schema, key_idx, encoder: RowEncoder, depth: int):
    def run(batches):
        with _Prefetched(batches, row_segments(in_schema, key_idx), depth) as p:
            out = itertools.chain.from_iterable(
                _iterable(encoder.operation, "func", func(key, rows))
                for key, rows in groups(p.segments()))
            yield from encoder.encode_all(out)
    return run


def _concat(batches: list) -> pa.RecordBatch:
    if len(batches) == 1:
        return batches[0]
    return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]


def _arrow_outputs(encoder: RowEncoder, items: Iterator[Any]) -> Iterator[pa.RecordBatch]:
    """What Arrow functions yielded (batches or Tables), cast to the declared schema, with the
    small batches of many small keys gathered into fewer, larger ones (up to the batch size)."""
    target = encoder.batch_size
    pending: list[pa.RecordBatch] = []
    size = 0
    for item in items:
        for b in checked_batches(encoder, item):
            if b.num_rows >= target and not pending:
                yield b
                continue
            pending.append(b)
            size += b.num_rows
            if size >= target:
                yield _concat(pending)
                pending, size = [], 0
    if pending:
        yield _concat(pending)


def map_partition_in_arrow(func, in_schema, key_idx, encoder: RowEncoder, depth: int):
    operation = encoder.operation

    def run(batches):
        with _Prefetched(batches, arrow_segments(in_schema, key_idx), depth) as p:
            yield from _arrow_outputs(encoder, itertools.chain.from_iterable(
                _iterable(operation, "func", func(key, slices))
                for key, slices in groups(p.segments())))
    return run


def _result_values(operation: str, value: Any, schema: StructType) -> tuple:
    names = schema.names
    if isinstance(value, Row) and hasattr(value, "__fields__"):
        d = value.asDict()
        if all(n in d for n in names):
            return tuple(d[n] for n in names)
        return tuple(value)
    if isinstance(value, tuple):
        return value
    if isinstance(value, dict):
        return tuple(value.get(n) for n in names)
    if len(names) == 1:
        return (value,)
    raise SchemaMismatchError(
        f"{operation}: partition {partition_id()}: get_result returned {value!r} "
        f"({type(value).__name__}); expected a tuple, Row or dict of {schema.simpleString()}")


def aggregate(agg, in_schema, key_idx, result_schema: StructType, encoder: RowEncoder, depth: int):
    single = len(key_idx) == 1
    operation = encoder.operation

    def results(segments):
        add = agg.add
        for key, rows in groups(segments):
            acc = agg.create_accumulator()
            for row in rows:
                acc = add(row, acc)  # the returned accumulator is the one used
            yield _key_tuple(key, single) + tuple(
                _result_values(operation, agg.get_result(acc), result_schema))

    def run(batches):
        with _Prefetched(batches, row_segments(in_schema, key_idx), depth) as p:
            yield from encoder.encode_all(results(p.segments()))
    return run


def reduce(func, in_schema, key_idx, encoder: RowEncoder, depth: int):
    def run(batches):
        decode = row_segments(in_schema, key_idx)
        as_row = _row_coercer(encoder.operation, in_schema, decode.row_class)

        def results(segments):
            for _, rows in groups(segments):
                acc = next(rows)
                for row in rows:
                    acc = as_row(func(acc, row))
                yield acc

        with _Prefetched(batches, decode, depth) as p:
            yield from encoder.encode_all(results(p.segments()))
    return run


def running_reduce(func, in_schema, key_idx, encoder: RowEncoder, depth: int):
    """STREAMING mode's keyed reduce on a bounded input: each key's records arrive in input
    order (a hidden position column follows the user's columns and is dropped here); the running
    value is emitted after every record (an upsert stream, FLIP-134)."""
    ncols = len(in_schema.fields)

    def run(batches):
        decode = row_segments(in_schema, key_idx, ncols)
        as_row = _row_coercer(encoder.operation, in_schema, decode.row_class)

        def results(segments):
            for _, rows in groups(segments):
                acc = next(rows)
                yield acc
                for row in rows:
                    acc = as_row(func(acc, row))
                    yield acc

        with _Prefetched(batches, decode, depth) as p:
            yield from encoder.encode_all(results(p.segments()))
    return run


def process(pwf, in_schema, key_idx, encoder: RowEncoder, depth: int, policy):
    from fullwindow.functions import Context

    def run(batches):
        pid = partition_id()
        pwf.open(Context(pid, None, policy))
        try:
            with _Prefetched(batches, row_segments(in_schema, key_idx), depth) as p:
                def outputs():
                    for key, rows in groups(p.segments()):
                        ctx = Context(pid, key, policy)
                        yield from _iterable("process", "process()", pwf.process(key, ctx, rows))
                        # the key's window has fired: its timers fire now (end of input for it)
                        yield from end_of_input(pwf, ctx, policy)
                yield from encoder.encode_all(outputs())
        finally:
            pwf.close()
    return run


# ---- coGroup ----------------------------------------------------------------------------------

def _row_run(rows: list, s: int, e: int) -> list:
    return rows[s:e]


def _side_columns(names: list[str]) -> tuple[list[int], list[int]]:
    """Each side's columns in the merged batch, in the side's own order, read from the column
    names the JVM gives them (``K0,L0,R0``: key 0, left column 0 and right column 0 share a
    column; see CoGroupLayout in FullWindowCoGroupExec.scala)."""
    found: dict[str, dict[int, int]] = {"L": {}, "R": {}}
    for at, name in enumerate(names[1:], start=1):
        for tag in name.split(","):
            if tag[:1] in found:
                found[tag[:1]][int(tag[1:])] = at
    return ([found["L"][j] for j in range(len(found["L"]))],
            [found["R"][j] for j in range(len(found["R"]))])


def cogroup_segments(keys: StructType, left: StructType, right: StructType,
                     make_decoder: Callable = RowDecoder, cut: Callable = _row_run,
                     in_place: bool = False):
    """Merged batch ``[side, keys..., shared columns...]`` -> [(group key, key, side, records)]:
    runs of equal (side, key); each side's records decoded from its own columns only
    (``make_decoder(side schema)``: Rows by default) and cut into runs by ``cut(decoded, start,
    end)`` (an iterable of what the function's iterators yield). ``keys`` is the schema of the
    side column and the key columns, the merged batch's first columns. A batch holding both
    sides is filtered to each side's records before decoding; with ``in_place`` (a decoder that
    copies nothing) a side is decoded whole and its runs cut where they lie in the batch."""
    splitter = KeySplitter(keys, list(range(1, len(keys.fields))), extra_idx=(0,))
    left_decoder, right_decoder = make_decoder(left), make_decoder(right)
    columns: dict[tuple, tuple[list[int], list[int]]] = {}

    def side_rows(batch, side, cols, decoder, sides):
        if side not in sides:
            return []
        part = batch.select(cols)
        if not in_place and any(s != side for s in sides):
            part = part.filter(pc.equal(batch.column(0), side))
        return decoder(part)

    def decode(batch: pa.RecordBatch) -> list:
        starts, ukeys, gkeys, (sides,) = splitter.split(batch)
        if not starts:
            return []
        names = tuple(batch.schema.names)
        if names not in columns:
            columns[names] = _side_columns(list(names))
        left_cols, right_cols = columns[names]
        present = set(sides)
        rows = (side_rows(batch, 0, left_cols, left_decoder, present),
                side_rows(batch, 1, right_cols, right_decoder, present))
        if in_place:
            return [(g, u, side, cut(rows[side], s, e))
                    for g, u, side, (s, e) in zip(gkeys, ukeys, sides,
                                                  _bounds(starts, batch.num_rows))]
        at = [0, 0]
        out = []
        for g, u, side, (s, e) in zip(gkeys, ukeys, sides, _bounds(starts, batch.num_rows)):
            i = at[side]
            at[side] = i + (e - s)
            out.append((g, u, side, cut(rows[side], i, at[side])))
        return out

    return decode


class _Sides:
    """One key's two runs, left then right, read from the shared stream of its segments.

    ``left()`` streams the left run. ``right()``, when first read, keeps whatever of the left run
    has not been read yet (so ``left()`` still sees it) and then streams the right run. Memory
    is therefore bounded on the right side always, and on the left side when the function reads
    the left records before the right ones."""

    def __init__(self, segments: Iterator[tuple]):
        self._segments = segments
        self._left_open = True
        self._buffered: collections.deque = collections.deque()
        self._right_first = None

    def _next_left(self):
        seg = next(self._segments, None)
        if seg is None:
            self._left_open = False
            return None
        if seg[2] == 1:
            self._left_open = False
            self._right_first = seg[3]
            return None
        return seg[3]

    def left(self) -> Iterator[Any]:
        while True:
            if self._buffered:
                rows = self._buffered.popleft()
            elif self._left_open:
                rows = self._next_left()
                if rows is None:
                    return
            else:
                return
            yield from rows

    def right(self) -> Iterator[Any]:
        while self._left_open:
            rows = self._next_left()
            if rows is not None:
                self._buffered.append(rows)
        if self._right_first is not None:
            rows, self._right_first = self._right_first, None
            yield from rows
        for seg in self._segments:
            yield from seg[3]


def _co_group_outputs(func, segments: Iterator[tuple], results: Callable) -> Iterator[Any]:
    """``func(key, left, right)`` once per key of the merged segments, flattened through
    ``results(what func returned)``."""
    for _, group in itertools.groupby(segments, key=_first):
        first = next(group)
        sides = _Sides(itertools.chain((first,), group))
        yield from results(func(first[1], sides.left(), sides.right()))


def co_group(func, keys: StructType, left: StructType, right: StructType, encoder: RowEncoder,
             depth: int):
    results = functools.partial(_iterable, encoder.operation, "func")

    def run(batches):
        with _Prefetched(batches, cogroup_segments(keys, left, right), depth) as p:
            yield from encoder.encode_all(_co_group_outputs(func, p.segments(), results))
    return run


# ---- pandas forms -----------------------------------------------------------------------------

def _frame_run(frame, s: int, e: int) -> list:
    """Rows ``s:e`` of a decoded frame as a frame of their own, indexed from 0 as the frames
    ``applyInPandas`` hands out. It is a view of the batch's frame (a copy costs five times as
    much per key, measured), which nothing else reads: no run overlaps another. pandas marks a
    slice as a possible copy and would warn when the function assigns to it; it is the
    function's own frame, so the mark is cleared."""
    import pandas as pd

    if s == 0 and e == len(frame):
        return [frame]
    piece = frame.iloc[s:e]
    piece._is_copy = None  # not a slice to warn about: the function owns these rows
    piece.index = pd.RangeIndex(e - s)
    return [piece]


def pandas_segments(in_schema: StructType, key_idx: list[int], options: PandasOptions):
    """Batch -> [(group key, key, [frame])]: the batch converted to pandas once, then cut into
    one frame per run of equal key."""
    decoder = PandasDecoder(in_schema, options)
    splitter = KeySplitter(in_schema, key_idx)

    def decode(batch: pa.RecordBatch) -> list:
        starts, ukeys, gkeys, _ = splitter.split(batch)
        if not starts:
            return []
        frame = decoder(batch)
        return [(g, u, _frame_run(frame, s, e))
                for g, u, (s, e) in zip(gkeys, ukeys, _bounds(starts, batch.num_rows))]

    return decode


def map_partition_in_pandas(func, in_schema, key_idx, encoder: RowEncoder, depth: int,
                            options: PandasOptions):
    """``func(key, frames)`` once per key; ``frames`` streams the key's records as pandas
    DataFrames of at most one Arrow batch each (never the whole key at once)."""
    out = PandasEncoder(encoder, options)
    operation = encoder.operation

    def run(batches):
        with _Prefetched(batches, pandas_segments(in_schema, key_idx, options), depth) as p:
            frames = itertools.chain.from_iterable(
                _frames(operation, "func", func(key, pieces))
                for key, pieces in groups(p.segments()))
            yield from out.encode_all(frames)
    return run


def co_group_in_pandas(func, keys: StructType, left: StructType, right: StructType,
                       encoder: RowEncoder, depth: int, options: PandasOptions):
    """coGroup's ``applyInPandas``: ``func(key, left_frames, right_frames)`` with each side's
    records of the key streamed as pandas DataFrames (the memory bound of ``apply``)."""
    out = PandasEncoder(encoder, options)
    results = functools.partial(_frames, encoder.operation, "func")
    segments = cogroup_segments(keys, left, right,
                                make_decoder=lambda schema: PandasDecoder(schema, options),
                                cut=_frame_run)

    def run(batches):
        with _Prefetched(batches, segments, depth) as p:
            yield from out.encode_all(_co_group_outputs(func, p.segments(), results))
    return run


# ---- Arrow form -------------------------------------------------------------------------------

def _arrow_side(schema: StructType) -> Callable[[pa.RecordBatch], pa.RecordBatch]:
    """A side's columns of the merged batch, named as the side's own DataFrame names them."""
    names = schema.names

    def decode(part: pa.RecordBatch) -> pa.RecordBatch:
        return pa.RecordBatch.from_arrays(part.columns, names=names)
    return decode


def _batch_run(batch: pa.RecordBatch, s: int, e: int) -> list:
    """Records ``s:e`` of a side's batch, as a zero-copy slice (the batch itself when whole)."""
    if s == 0 and e == batch.num_rows:
        return [batch]
    return [batch.slice(s, e - s)]


def co_group_in_arrow(func, keys: StructType, left: StructType, right: StructType,
                      encoder: RowEncoder, depth: int):
    """coGroup's ``applyInArrow``: ``func(key, left_batches, right_batches)`` with each side's
    records of the key streamed as ``pyarrow.RecordBatch`` slices (the memory bound of
    ``apply``); what it yields is cast to the declared schema."""
    results = functools.partial(_iterable, encoder.operation, "func")
    segments = cogroup_segments(keys, left, right, make_decoder=_arrow_side,
                                cut=_batch_run, in_place=True)

    def run(batches):
        with _Prefetched(batches, segments, depth) as p:
            yield from _arrow_outputs(encoder, _co_group_outputs(func, p.segments(), results))
    return run


def key_schema(key_fields: list[StructField]) -> StructType:
    """The first columns of coGroup's merged stream: the side, then the keys."""
    from pyspark.sql.types import IntegerType as Int

    return StructType([StructField("__side", Int(), False)]
                      + [StructField(f"__key{i}", f.dataType, True)
                         for i, f in enumerate(key_fields)])


__all__ = ["KeySplitter", "aggregate", "co_group", "co_group_in_arrow", "co_group_in_pandas",
           "key_schema", "map_partition", "map_partition_in_arrow", "map_partition_in_pandas",
           "process", "reduce", "running_reduce"]
