"""What a per-record Python aggregate costs in Python alone, with no Spark: the floor under every
form that calls a Python function once per record (fullwindow's AggregateFunction, reduce,
``rdd.aggregateByKey``), against which the keyed Python aggregate bars are read
(benchmarks/notes/keyed.md, "Where the Python aggregate bars stand").

The records are the keyed_combine cases' (k: long over 10,000 keys, v: random long, x: double) in
10,000-row Arrow batches, as Spark's Arrow runner hands them to a Python worker. Steps, each
timed over all the records (best of ``--rounds``, one core):

- ``to_pylist``: the batches' columns as Python values, nothing else;
- ``tuple`` / ``namedtuple`` / ``fullwindow Row``: one record object per row (the cheapest
  object; the cheapest with named fields; what fullwindow's functions receive);
- ``... + add``: the same, folded into a dict per key with the cases' ``add`` (count and sum x),
  as every per-record combining form must.

    .venv/bin/python -m benchmarks.record_floor [--rows 2000000] [--rounds 3]
"""
from __future__ import annotations

import argparse
import random
import time
from collections import namedtuple
from typing import Callable

import pyarrow as pa
from pyspark.sql.types import DoubleType, LongType, StructField, StructType

from benchmarks.natives import count_sum_add


def _batches(rows: int, batch: int = 10_000) -> list:
    rnd = random.Random(7)
    ks = [rnd.randrange(10_000) for _ in range(rows)]
    vs = [rnd.getrandbits(62) for _ in range(rows)]
    xs = [float(i % 1000) for i in range(rows)]
    return [pa.RecordBatch.from_arrays(
        [pa.array(ks[i:i + batch], pa.int64()), pa.array(vs[i:i + batch], pa.int64()),
         pa.array(xs[i:i + batch], pa.float64())], names=["k", "v", "x"])
        for i in range(0, rows, batch)]


def _steps() -> dict[str, Callable[[list], None]]:
    from fullwindow._worker import RowDecoder

    rec = namedtuple("rec", "k v x")
    decoder = RowDecoder(StructType([StructField("k", LongType()), StructField("v", LongType()),
                                     StructField("x", DoubleType())]))

    def columns(b):
        return zip(*(c.to_pylist() for c in b.columns))

    def to_pylist(batches):
        for b in batches:
            for c in b.columns:
                c.to_pylist()

    def tuples(batches):
        for b in batches:
            for _ in columns(b):
                pass

    def named(batches):
        for b in batches:
            for _ in map(rec._make, columns(b)):
                pass

    def rows(batches):
        for b in batches:
            for _ in decoder(b):
                pass

    def fold(records):
        def run(batches):
            table: dict = {}
            get = table.get
            for b in batches:
                for r in records(b):
                    k = r[0]
                    table[k] = count_sum_add(get(k, (0, 0.0)), r)
        return run

    return {"to_pylist": to_pylist, "tuple": tuples, "namedtuple": named,
            "fullwindow Row": rows,
            "namedtuple + add": fold(lambda b: map(rec._make, columns(b))),
            "fullwindow Row + add": fold(decoder)}


def _best_cpu(step: Callable[[list], None], batches: list, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        step(batches)
        best = min(best, time.process_time() - start)
    return best


def parquet_floor(paths: list[str], rounds: int = 3) -> float:
    """The per-record floor of a keyed_combine case, on its own input: its Parquet files (k, v,
    x; ``df.inputFiles()``: paths or file: URIs) read with pyarrow in 10,000-row batches, each
    record decoded into a fullwindow Row and folded per key with the cases' ``add``; the best
    CPU seconds of ``rounds``, one process. The harness measures it in the case's child
    (``Case.record_floor``)."""
    from urllib.parse import urlparse

    import pyarrow.parquet as pq

    batches = [b.select(["k", "v", "x"]) for f in sorted(paths)
               for b in pq.read_table(urlparse(f).path).to_batches(max_chunksize=10_000)]
    return _best_cpu(_steps()["fullwindow Row + add"], batches, rounds)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=2_000_000)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)
    batches = _batches(args.rows)
    print(f"{args.rows:,} records (k, v, x) in {len(batches)} Arrow batches; best of "
          f"{args.rounds} rounds, one core")
    print(f"{'step':24s} {'CPU s':>7s} {'us/record':>10s}")
    for name, step in _steps().items():
        best = _best_cpu(step, batches, args.rounds)
        print(f"{name:24s} {best:7.3f} {best / args.rows * 1e6:10.3f}")


if __name__ == "__main__":
    main()
