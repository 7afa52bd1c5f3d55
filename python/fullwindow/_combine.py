"""Combining before the exchange: the map side of a keyed Python aggregate (with ``merge``) and
of a keyed BATCH ``reduce``, and the merge of the partial results after the exchange.

The map side runs once per input partition (a non-keyed Python step, no exchange below it) and
folds the partition's records into one accumulator per key in a dict bounded in keys and in
(estimated) bytes: when the dict is full its partial results are handed on and it starts
empty, so a heavy key never grows it and a partition with too many keys is combined in pieces.
When a full dict shows that combining hardly reduces the records (more than
``PASS_THROUGH_RATIO`` of them came out), or the first ``EARLY_ROWS`` records nearly all had keys
of their own, the rest of the partition passes through as it came (the Arrow batches forwarded,
not decoded), as Spark's partial aggregation stops when its hash map is full and reduces
little. After the exchange (hash-partitioned and sorted by key, as every
keyed operation), ``merge`` / ``func`` combine each key's partial results.

- reduce: the accumulator is a row of the input schema, so the partial results are rows of the
  input schema (Arrow); the step after the exchange is the keyed reduce itself.
- aggregate: the partial results are the key columns and the pickled accumulator; records that
  passed through keep their columns and have no accumulator. After the exchange a partial
  result is merged (``merge``), a record added (``add``).

A stub ``merge`` never breaks a job (FLIP-380's full-window aggregate never calls ``merge``, and
Flink code often has one that throws or returns null there): before anything folds, the map side
calls ``merge`` on two copies of a real accumulator of the partition (its first record added);
if it raises or returns None, every record of that partition passes through and the step after
the exchange adds them (``add``) as the uncombined path does: no partial result is ever merged
by a stub, the result is the uncombined one, and a warning says why.
"""
from __future__ import annotations

import itertools
import logging
import pickle
from typing import Any, Callable, List, Optional

from pyspark.sql.types import (BinaryType, BooleanType, ByteType, DateType, DecimalType,
                               DoubleType, FloatType, IntegerType, LongType, ShortType,
                               StringType, StructField, StructType, TimestampNTZType,
                               TimestampType)

from fullwindow.errors import ConfigurationError, FullWindowTypeError, FullWindowValueError

ENABLED = "spark.fullwindow.combine.enabled"
MAX_KEYS = "spark.fullwindow.combine.maxKeys"
MAX_BYTES = "spark.fullwindow.combine.maxBytes"
DEFAULT_MAX_KEYS = 100_000
DEFAULT_MAX_BYTES = "64m"

#: A full dict that let more than this share of the records it took out as partial results
#: stops combining for the rest of the partition (records pass through).
PASS_THROUGH_RATIO = 0.5
#: Without waiting for the dict to fill: once this many records were read, a dict holding more
#: than ``EARLY_RATIO`` keys per record (next to every key distinct so far) stops combining too.
EARLY_ROWS = 20_000
EARLY_RATIO = 0.95

#: Accumulators pickled per input batch to estimate the dict's bytes (the oldest keys': a
#: heavy key whose accumulator grows is among them).
_SAMPLE = 8
_ENTRY_BYTES = 64  # the dict's own bytes per entry, beyond the accumulator's pickled size

_MISSING = object()

_LOG = logging.getLogger("fullwindow.combine")


class _StubMerge(Exception):
    """Raised by an aggregate's map side when the probe of ``merge`` failed (it raised or
    returned None): the partition's records then all pass through, none was handed on yet."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason

SETTINGS: dict[str, Optional[str]] = {ENABLED: "true", MAX_KEYS: None, MAX_BYTES: None}


class Bound:
    """How large a map side's dict may grow: ``max_keys`` keys, ``max_bytes`` estimated bytes."""

    def __init__(self, max_keys: int, max_bytes: int):
        self.max_keys, self.max_bytes = max_keys, max_bytes

    def __repr__(self) -> str:
        return f"Bound(max_keys={self.max_keys}, max_bytes={self.max_bytes})"


def bound_of(df: Any) -> Optional[Bound]:
    """The combine bound in force for an operation on ``df``, read when it is defined; None when
    its records must all cross the exchange: the switch is off, the runtime mode is not BATCH
    (a STREAMING full window is refused by the analyzer as before), or ``df`` is known to be a
    stream (on Connect a stream is refused when the operation's plan is analyzed)."""
    from fullwindow._backend import backend, conf_get
    from fullwindow.recovery.eventstore import _parse_size

    spark = df.sparkSession
    raw = (conf_get(spark, ENABLED, "true") or "true").strip().lower()
    if raw not in ("true", "false"):
        raise ConfigurationError(f"{ENABLED} is '{raw}'; expected true or false.")
    if raw == "false":
        return None
    mode = (conf_get(spark, "spark.fullwindow.runtimeMode", "AUTOMATIC") or "AUTOMATIC")
    if mode.strip().upper() not in ("AUTOMATIC", "BATCH") or backend(df).is_streaming(df):
        return None
    keys_raw = conf_get(spark, MAX_KEYS, None)
    try:
        max_keys = DEFAULT_MAX_KEYS if keys_raw in (None, "") else int(str(keys_raw).strip())
    except ValueError:
        max_keys = 0
    if max_keys <= 0:
        raise ConfigurationError(f"{MAX_KEYS} is '{keys_raw}'; expected a positive number of keys "
                                 f"such as {DEFAULT_MAX_KEYS}.")
    max_bytes = _parse_size(conf_get(spark, MAX_BYTES, None) or DEFAULT_MAX_BYTES, MAX_BYTES)
    if max_bytes <= 0:
        raise ConfigurationError(f"{MAX_BYTES} is '{max_bytes}'; expected a positive size such as "
                                 f"{DEFAULT_MAX_BYTES}.")
    return Bound(max_keys, max_bytes)


def has_merge(func: Any) -> bool:
    """Whether an AggregateFunction can merge partial accumulators: ``merge`` is callable and is
    not AggregateFunction's own (which raises NotImplementedError)."""
    from fullwindow.functions import AggregateFunction

    if not callable(getattr(func, "merge", None)):
        return False
    if "merge" in getattr(func, "__dict__", {}):
        return True
    return getattr(type(func), "merge", None) is not AggregateFunction.merge


def accumulator_field(in_schema: StructType) -> str:
    """The name of the accumulator column of an aggregate's partial results: one the input does
    not have."""
    names = set(in_schema.names)
    name = "__fullwindow_acc"
    while name in names:
        name += "_"
    return name


def partial_schema(in_schema: StructType, key_idx: list[int]) -> StructType:
    """An aggregate's partial results: the input's columns (nullable but the keys: a partial
    result has only its key), then the pickled accumulator (null for a record that passed
    through)."""
    keys = set(key_idx)
    fields = [f if i in keys else StructField(f.name, f.dataType, True)
              for i, f in enumerate(in_schema.fields)]
    return StructType(fields + [StructField(accumulator_field(in_schema), BinaryType(), True)])


# ---- the grouping key of a decoded record -----------------------------------------------------

# Key types whose Python values are hashable and compare as Spark groups them.
_PLAIN = (BooleanType, ByteType, DateType, DecimalType, IntegerType, LongType, ShortType,
          StringType, TimestampNTZType, TimestampType)


class _NaN:
    """Stands for NaN in a key: Spark groups all NaNs together, Python's NaN != NaN."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _NaN)

    def __hash__(self) -> int:
        return 0x7FF8


_NAN = _NaN()


def _float(v: Any) -> Any:
    return _NAN if v != v else v  # -0.0 == 0.0 and hashes alike already


def _frozen(v: Any) -> Any:
    """A hashable value grouping as Spark groups ``v`` (arrays, structs, binary, NaNs inside)."""
    if isinstance(v, float):
        return _NAN if v != v else v
    if isinstance(v, (list, tuple)):
        return tuple(_frozen(x) for x in v)
    if isinstance(v, bytearray):
        return bytes(v)
    return v


def group_key(schema: StructType, key_idx: list[int]) -> Callable[[Any], Any]:
    """Decoded record -> its grouping key (hashable; one column: the value, else a tuple)."""
    from fullwindow._worker import _tuplegetter

    def norm(i: int) -> Optional[Callable[[Any], Any]]:
        dt = schema.fields[i].dataType
        if isinstance(dt, _PLAIN):
            return None
        return _float if isinstance(dt, (FloatType, DoubleType)) else _frozen

    getters = [_tuplegetter(i, None).__get__ for i in key_idx]  # C-level tuple item reads
    norms = [norm(i) for i in key_idx]
    if len(key_idx) == 1:
        get, n = getters[0], norms[0]
        if n is None:
            return get
        return lambda row: n(get(row))
    pairs = list(zip(getters, norms))
    if all(n is None for n in norms):
        return lambda row: tuple([g(row) for g in getters])
    return lambda row: tuple([g(row) if n is None else n(g(row)) for g, n in pairs])


# ---- the map side -----------------------------------------------------------------------------

class _Switch:
    """Set once combining stops for the rest of the partition: the prefetch thread then stops
    decoding the batches it reads (a batch or two it already decoded are simply not used)."""

    def __init__(self) -> None:
        self.passing = False


def _estimated_bytes(table: dict, size_of: Callable[[Any, Any], int]) -> int:
    n = len(table)
    if n == 0:
        return 0
    sample = list(itertools.islice(table.items(), _SAMPLE))
    per = sum(size_of(k, v) for k, v in sample) / len(sample)
    return int((per + _ENTRY_BYTES) * n)


def _map_side(batches, decoder, bound: Bound, depth: int, fold: Callable, flush: Callable,
              size_of: Callable, pass_batch: Callable):
    """The map-side loop both forms share: ``fold(rows, table, on_full)`` folds decoded records
    into ``table`` (calling ``on_full()`` before it adds a key to a table at the key bound);
    ``flush(table)`` encodes the table's partial results (and empties it); ``size_of(key,
    value)`` estimates a table entry's bytes; ``pass_batch(batch)`` is an input batch passed
    through, encoded. Once the table has been full, each batch ends with a look at how much
    combining reduces: too little, and the rest of the partition passes through (so too after
    the first EARLY_ROWS records when nearly every one had a key of its own)."""
    from fullwindow._worker import Prefetcher

    switch = _Switch()
    table: dict = {}
    rows_in = 0
    rows_out = 0  # partial results handed on
    early = True  # the early look (EARLY_ROWS) is still to come
    flushed: list = []  # the batches of the tables flushed while a batch was folded

    def decode(batch):
        return batch, (None if switch.passing else decoder(batch))

    def flush_table() -> list:
        nonlocal rows_out
        rows_out += len(table)
        out = list(flush(table))
        table.clear()
        return out

    def on_full() -> None:
        flushed.append(flush_table())

    prefetch = Prefetcher(batches, decode, depth)
    for batch, rows in prefetch:
        if switch.passing:
            yield from pass_batch(batch)
            continue
        if rows is None:
            rows = decoder(batch)
        rows_in += len(rows)
        try:
            fold(rows, table, on_full)
        except _StubMerge:
            # merge is a stub (probed on the partition's first record, before any partial
            # result was handed on): nothing combines here, every record crosses as it came
            table.clear()
            flushed.clear()
            switch.passing = True
            yield from pass_batch(batch)
            continue
        was_full = bool(flushed)
        while flushed:
            yield from flushed.pop(0)
        if table and _estimated_bytes(table, size_of) > bound.max_bytes:
            yield from flush_table()
            was_full = True
        if (was_full or rows_out) and rows_out + len(table) > PASS_THROUGH_RATIO * rows_in:
            switch.passing = True
        elif early and rows_in >= EARLY_ROWS:
            early = False
            switch.passing = len(table) > EARLY_RATIO * rows_in
        if switch.passing:
            yield from flush_table()
    if table:
        yield from flush_table()
    prefetch.finish()


def _as_schema(columns: list, arrow_schema: Any) -> Any:
    """Input columns passed through, as a batch of exactly ``arrow_schema`` (the partial
    results' batches have it, and every batch of a task must: nullability included)."""
    import pyarrow as pa

    columns = [c if c.type == f.type else c.cast(f.type) for c, f in zip(columns, arrow_schema)]
    return pa.RecordBatch.from_arrays(columns, schema=arrow_schema)


def _key_changed(operation: str, key: Any, value: Any) -> FullWindowValueError:
    from fullwindow._worker import partition_id

    return FullWindowValueError(
        f"{operation}: partition {partition_id()}: func returned {value!r}, whose key is not its "
        f"inputs' key {key!r}; combining before the exchange needs func to keep the key "
        "(records are grouped by the key of what it returns), or set "
        f"{ENABLED}=false to reduce with the key changed")


def combine_reduce(func, in_schema: StructType, key_idx: list[int], encoder, depth: int,
                   bound: Bound):
    """The map side of a keyed reduce: ``func`` folds each key's records of the partition into
    one row of the input schema."""
    from fullwindow._worker import RowDecoder, _row_coercer

    operation = encoder.operation
    max_keys = bound.max_keys
    key_of = group_key(in_schema, key_idx)

    width = len(in_schema.fields)
    new_row = tuple.__new__

    def run(batches):
        decoder = RowDecoder(in_schema)
        row_class = decoder.row_class
        as_row = _row_coercer(operation, in_schema, row_class)

        # Per record only what a reduce must do: the user's func, and its result made a Row
        # again when it is a plain tuple of the row's width (the common case, inline: a call to
        # as_row cost more than a fifth of the fold). That func kept the key is checked once
        # per key when the table is handed on (a key changed on the way stays under its old
        # entry until then, so the check sees it), not after every call.
        def fold(rows, table, on_full):
            get = table.get
            for row in rows:
                k = key_of(row)
                acc = get(k, _MISSING)
                if acc is _MISSING:
                    if len(table) >= max_keys:
                        on_full()
                    table[k] = row
                    continue
                acc = func(acc, row)
                kind = type(acc)
                if kind is not row_class:
                    acc = (new_row(row_class, acc) if kind is tuple and len(acc) == width
                           else as_row(acc))
                table[k] = acc

        def flush(table):
            for k, acc in table.items():
                if key_of(acc) != k:
                    raise _key_changed(operation, k, acc)
            return encoder.encode_all(list(table.values()))

        def size_of(_k, row):
            try:
                return len(pickle.dumps(tuple(row), pickle.HIGHEST_PROTOCOL))
            except Exception:  # noqa: BLE001 - an estimate: a value pickle cannot size
                return 64 * len(row)

        yield from _map_side(batches, decoder, bound, depth, fold, flush, size_of,
                             lambda batch: [_as_schema(batch.columns, encoder.arrow_schema)])
    return run


def _dumper(operation: str) -> Callable[[Any, Any], bytes]:
    """Accumulator -> bytes: pickle, else cloudpickle (a class defined in the driver's
    ``__main__`` reaches the worker by value, which pickle cannot name), else a clear error
    naming the partition, the key and the accumulator."""
    from pyspark import cloudpickle

    from fullwindow._worker import partition_id

    dumps = pickle.dumps
    protocol = pickle.HIGHEST_PROTOCOL

    def dump(key: Any, acc: Any) -> bytes:
        try:
            return dumps(acc, protocol)
        except Exception:  # noqa: BLE001 - retried by value, then explained
            try:
                return cloudpickle.dumps(acc, protocol)
            except Exception as err:  # noqa: BLE001
                raise FullWindowTypeError(
                    f"{operation}: partition {partition_id()}: the accumulator {acc!r} of key "
                    f"{key!r} cannot be pickled to cross the exchange ({type(err).__name__}: "
                    f"{err}); make the accumulator picklable (numbers, tuples, lists, dicts, "
                    f"dataclasses ...), or set {ENABLED}=false") from None
    return dump


def merge_fails(agg: Any, dump: Callable[[Any, Any], bytes], key: Any, acc: Any) -> Optional[str]:
    """Why ``agg.merge`` cannot combine partial results (None when it can): it is called on two
    copies of ``acc``, a real accumulator of the partition (one record added), made through the
    pickle that carries partial results across the exchange, so a merge that changes its
    arguments changes nothing the aggregate uses. A merge that raises (any exception:
    ``NotImplementedError``, an ``UnsupportedOperationException``-like one) or returns None (a
    ``pass`` stub) is a stub."""
    blob = dump(key, acc)
    try:
        merged = agg.merge(pickle.loads(blob), pickle.loads(blob))
    except Exception as err:  # noqa: BLE001 - any failure of a stub
        return f"raised {type(err).__name__}" + (f": {err}" if str(err) else "")
    if merged is None:
        return "returned None"
    return None


def combine_aggregate(agg, in_schema: StructType, key_idx: list[int], encoder, depth: int,
                      bound: Bound):
    """The map side of a keyed aggregate with ``merge``: ``add`` folds each key's records of the
    partition into one accumulator; the partial results are the key and the pickled
    accumulator, in the columns of :func:`partial_schema`."""
    from fullwindow._worker import RowDecoder, partition_id

    operation = encoder.operation
    max_keys = bound.max_keys
    key_of = group_key(in_schema, key_idx)
    n_in = len(in_schema.fields)
    keys = list(key_idx)
    dump = _dumper(operation)

    def run(batches):
        firsts: dict = {}  # key -> its first record (the key's values as the user sees them)
        add, create = agg.add, agg.create_accumulator
        probed = False

        def fold(rows, table, on_full):
            nonlocal probed
            get = table.get
            if not probed and rows:
                # the partition's first record: probe merge on it before anything folds further
                probed = True
                row = rows[0]
                acc = add(row, create())
                reason = merge_fails(agg, dump, key_of(row), acc)
                if reason is not None:
                    _LOG.warning(
                        "%s: partition %s: %s.merge %s; aggregating without combining (every "
                        "record crosses the exchange, merge is never called on a partial "
                        "result): Flink's full-window aggregate never calls merge either, and "
                        "code ported from Flink often has a stub there", operation,
                        partition_id(), type(agg).__name__, reason)
                    raise _StubMerge(reason)
                firsts[key_of(row)] = row
                table[key_of(row)] = acc
                rows = rows[1:]
            for row in rows:
                k = key_of(row)
                acc = get(k, _MISSING)
                if acc is _MISSING:
                    if len(table) >= max_keys:
                        on_full()
                    firsts[k] = row
                    acc = create()
                table[k] = add(row, acc)  # the returned accumulator is the one used

        def partials(table):
            blank: List[Any] = [None] * (n_in + 1)
            for k, acc in table.items():
                values = list(blank)
                first = firsts[k]
                for i in keys:
                    values[i] = first[i]
                values[n_in] = dump(first[keys[0]] if len(keys) == 1
                                    else tuple(first[i] for i in keys), acc)
                yield tuple(values)

        def flush(table):
            out = list(encoder.encode_all(partials(table)))
            firsts.clear()
            return out

        def size_of(k, acc):
            return len(dump(k, acc))

        def pass_batch(batch):
            import pyarrow as pa

            nulls = pa.nulls(batch.num_rows, pa.binary())
            return [_as_schema(list(batch.columns) + [nulls], encoder.arrow_schema)]

        yield from _map_side(batches, RowDecoder(in_schema), bound, depth, fold, flush, size_of,
                             pass_batch)
    return run


# ---- after the exchange -----------------------------------------------------------------------

def merge_aggregate(agg, in_schema: StructType, key_idx: list[int], result_schema: StructType,
                    encoder, depth: int):
    """After the exchange: each key's partial results (and records that passed through), sorted
    by key, combined with ``merge`` (and ``add``), then ``get_result``: the key columns, then the
    result's fields."""
    from fullwindow._keyed_worker import (KeySplitter, _bounds, _key_tuple, _Prefetched,
                                          _result_values, groups)
    from fullwindow._worker import RowDecoder, partition_id

    operation = encoder.operation
    single = len(key_idx) == 1
    n_in = len(in_schema.fields)
    merged_schema = partial_schema(in_schema, key_idx)

    def segments():
        splitter = KeySplitter(merged_schema, key_idx)
        decoder = RowDecoder(in_schema)
        records = list(range(n_in))

        def decode(batch: Any) -> list:
            starts, ukeys, gkeys, _ = splitter.split(batch)
            if not starts:
                return []
            accs = batch.column(n_in)
            blobs = accs.to_pylist()
            if accs.null_count:
                rows = decoder(batch.select(records))
                items = list(zip(blobs, rows))
            else:
                items = [(b, None) for b in blobs]
            return [(g, u, items[s:e])
                    for g, u, (s, e) in zip(gkeys, ukeys, _bounds(starts, batch.num_rows))]
        return decode

    def load(key: Any, blob: bytes) -> Any:
        try:
            return pickle.loads(blob)
        except Exception as err:  # noqa: BLE001
            raise FullWindowTypeError(
                f"{operation}: partition {partition_id()}: the accumulator of key {key!r} "
                f"({len(blob)} pickled bytes) cannot be unpickled after the exchange "
                f"({type(err).__name__}: {err}); set {ENABLED}=false to aggregate without "
                "crossing it") from None

    def results(segs):
        add, merge, create = agg.add, agg.merge, agg.create_accumulator
        for key, items in groups(segs):
            acc = _MISSING
            for blob, row in items:
                if blob is not None:
                    part = load(key, blob)
                    if acc is _MISSING:
                        acc = part
                    else:
                        acc = merge(acc, part)
                        if acc is None:
                            raise FullWindowValueError(
                                f"{operation}: partition {partition_id()}: merge returned None "
                                f"for key {key!r}, after it returned an accumulator for the "
                                "same function on the map side; merge must return the merged "
                                "accumulator (or be a stub on every input), or set "
                                f"{ENABLED}=false")
                else:
                    acc = add(row, create() if acc is _MISSING else acc)
            yield _key_tuple(key, single) + tuple(
                _result_values(operation, agg.get_result(acc), result_schema))

    def run(batches):
        with _Prefetched(batches, segments(), depth) as p:
            yield from encoder.encode_all(results(p.segments()))
    return run


__all__ = ["Bound", "bound_of", "combine_aggregate", "combine_reduce", "group_key", "has_merge",
           "merge_aggregate", "merge_fails", "partial_schema"]
