"""The pure-Python part of fullwindow's non-keyed Python worker, without Spark:
``.venv/bin/python -m benchmarks.experiments.python_worker_profile [--rows N] [--rounds N]
[--op aggregate,reduce,map] [--gc default,frozen] [--profile OP]``.

Builds one partition of the python_aggregate / python_reduce case's columns (k long in [0,1000),
v random long, x double; 375,000 rows = 1.5M / 4 partitions) as an Arrow IPC stream of
10,000-row batches, and feeds it, read batch by batch from an in-memory stream as the worker
reads its socket, to the runner functions of ``fullwindow._worker``. Imports what a pyspark
worker imports first (pyspark.worker, so pandas and pyarrow too), so the cyclic collector has
about as many old objects to walk as in a real worker. Reports the process CPU time per run
(median over rounds), which is what "Python workers CPU" in RESULTS.md measures, minus the IPC
socket and Spark's own framing.
"""
from __future__ import annotations

import argparse
import gc
import statistics
import time

import numpy as np
import pyarrow as pa
import pyspark.worker  # noqa: F401  (what a real worker has imported)
from pyspark.sql.types import DoubleType, LongType, StructField, StructType

from benchmarks.cases.partition import _SumCount, _max_by_v, _rows_fn
from fullwindow import _worker

SCHEMA = StructType([StructField("k", LongType()), StructField("v", LongType()),
                     StructField("x", DoubleType())])


def make_stream(rows: int, batch: int) -> bytes:
    rng = np.random.default_rng(1)
    sink = pa.BufferOutputStream()
    arrow_schema = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("x", pa.float64())])
    with pa.ipc.new_stream(sink, arrow_schema) as w:
        for start in range(0, rows, batch):
            n = min(batch, rows - start)
            ids = np.arange(start, start + n)
            w.write_batch(pa.record_batch([
                pa.array(rng.integers(0, 1000, n)), pa.array(rng.integers(-2**62, 2**62, n)),
                pa.array((ids % 1000).astype(np.float64))], schema=arrow_schema))
    return sink.getvalue()


def batches(buf: bytes):
    return iter(pa.ipc.open_stream(pa.BufferReader(buf)))


def runners(_worker=_worker):
    agg_out = StructType([StructField("s", DoubleType()), StructField("n", LongType())])
    map_out = StructType([StructField("k", LongType()), StructField("x2", DoubleType())])
    return {
        "aggregate": _worker.aggregate(_SumCount(), SCHEMA,
                                       _worker.RowEncoder("aggregate", agg_out, False, 10_000), 2),
        "reduce": _worker.reduce(_max_by_v, SCHEMA,
                                 _worker.RowEncoder("reduce", SCHEMA, False, 10_000), 2),
        "map": _worker.map_partition(_rows_fn, SCHEMA,
                                     _worker.RowEncoder("mapPartition", map_out, False, 10_000), 2),
        "decode": _decode_only(_worker),
    }


def _decode_only(worker):
    def run(source):
        dec = worker.RowDecoder(SCHEMA)
        for b in source:
            dec(b)
        return iter(())
    return run


def run_once(runner, buf) -> tuple[float, float]:
    c, t = time.process_time(), time.perf_counter()
    for _ in runner(batches(buf)):
        pass
    return time.process_time() - c, time.perf_counter() - t


def _load_worker(path: str):
    """A ``_worker`` module from a file (e.g. ``git show 7268be7:python/fullwindow/_worker.py``)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("fullwindow._worker_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _set_gc(mode: str, workers) -> None:
    for w in workers:  # the worker tunes the collector on its first decoder: not here
        w._gc_tuned = True
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    if mode in ("frozen", "tuned"):
        gc.collect()
        gc.freeze()
    if mode == "tuned":
        gc.set_threshold(20_000, 10, 10)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=375_000)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--op", default="decode,aggregate,reduce,map")
    p.add_argument("--gc", default="default,frozen,tuned",
                   help="default: CPython's (700, 10, 10), nothing frozen; frozen: gc.freeze() "
                        "first; tuned: frozen and (20000, 10, 10), as fullwindow's worker does")
    p.add_argument("--worker", action="append", default=[],
                   help="also measure the _worker module in this file (repeatable)")
    p.add_argument("--profile", default=None, help="cProfile one run of this op instead")
    args = p.parse_args()
    buf = make_stream(args.rows, 10_000)
    workers = {"current": _worker, **{path: _load_worker(path) for path in args.worker}}
    rs = {name: runners(w) for name, w in workers.items()}
    if args.profile:
        import cProfile
        import pstats

        _set_gc(args.gc.split(",")[-1], workers.values())
        run_once(rs["current"][args.profile], buf)
        pr = cProfile.Profile()
        pr.enable()
        run_once(rs["current"][args.profile], buf)
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(18)
        return
    print(f"{len(gc.get_objects()):,} GC-tracked objects after imports; {args.rows:,} rows in "
          f"10,000-row batches; process CPU per run, min and median of {args.rounds} rounds "
          f"(variants interleaved)")
    variants = [(w, mode, op) for w in workers for mode in args.gc.split(",")
                for op in args.op.split(",")]
    res: dict = {v: [] for v in variants}
    for r in range(args.rounds + 1):
        for v in variants:
            w, mode, op = v
            _set_gc(mode, workers.values())
            cpu, _ = run_once(rs[w][op], buf)
            if r > 0:
                res[v].append(cpu)
    for (w, mode, op), cpus in res.items():
        med = statistics.median(cpus)
        print(f"{w:12.12s} {mode:8s} {op:10s} CPU min {min(cpus) * 1000:6.1f} ms  "
              f"median {med * 1000:6.1f} ms  ({med / args.rows * 1e9:5.0f} ns/row)")


if __name__ == "__main__":
    main()
