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


def runners():
    agg_out = StructType([StructField("s", DoubleType()), StructField("n", LongType())])
    map_out = StructType([StructField("k", LongType()), StructField("x2", DoubleType())])
    return {
        "aggregate": _worker.aggregate(_SumCount(), SCHEMA,
                                       _worker.RowEncoder("aggregate", agg_out, False, 10_000), 2),
        "reduce": _worker.reduce(_max_by_v, SCHEMA,
                                 _worker.RowEncoder("reduce", SCHEMA, False, 10_000), 2),
        "map": _worker.map_partition(_rows_fn, SCHEMA,
                                     _worker.RowEncoder("mapPartition", map_out, False, 10_000), 2),
        "decode": _decode_only,
    }


def _decode_only(source):
    dec = _worker.RowDecoder(SCHEMA)
    for b in source:
        dec(b)
    return iter(())


def run_once(runner, buf) -> tuple[float, float]:
    c, t = time.process_time(), time.perf_counter()
    for _ in runner(batches(buf)):
        pass
    return time.process_time() - c, time.perf_counter() - t


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=375_000)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--op", default="decode,aggregate,reduce,map")
    p.add_argument("--gc", default="default,frozen")
    p.add_argument("--profile", default=None, help="cProfile one run of this op instead")
    args = p.parse_args()
    buf = make_stream(args.rows, 10_000)
    rs = runners()
    if args.profile:
        import cProfile
        import pstats

        if "frozen" not in args.gc.split(","):
            _worker._gc_frozen = True
        run_once(rs[args.profile], buf)
        pr = cProfile.Profile()
        pr.enable()
        run_once(rs[args.profile], buf)
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(18)
        return
    print(f"{len(gc.get_objects()):,} GC-tracked objects after imports; {args.rows:,} rows")
    for mode in args.gc.split(","):
        # fullwindow freezes once per process on its first decoder: mark it done to measure
        # without (a worker as it was before the freeze)
        _worker._gc_frozen = True
        if mode == "frozen":
            gc.collect()
            gc.freeze()
        else:
            gc.unfreeze()
        for op in args.op.split(","):
            run_once(rs[op], buf)
            res = [run_once(rs[op], buf) for _ in range(args.rounds)]
            cpu = statistics.median(r[0] for r in res)
            wall = statistics.median(r[1] for r in res)
            print(f"{mode:8s} {op:10s} CPU {cpu * 1000:7.1f} ms  wall {wall * 1000:7.1f} ms  "
                  f"({cpu / args.rows * 1e9:6.0f} ns/row)")


if __name__ == "__main__":
    main()
