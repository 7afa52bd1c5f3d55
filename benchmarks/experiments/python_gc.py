"""How much of the Python side of python_aggregate / python_reduce is CPython's cyclic garbage
collector: ``.venv/bin/python -m benchmarks.experiments.python_gc [--rows N] [--rounds N]``.

Decoding a batch allocates one Row (a GC-tracked tuple) per record, so with the default
thresholds (700, 10, 10) the collector runs every 700 Rows and its older generations walk every
object the worker has imported (pyspark, pandas, pyarrow: ~76,000). The experiment needs no
operator change: the user function itself sets the worker's collector up on its first call (the
setting lives in the reused Python worker process, so every variant sets it explicitly):

- default: gc.unfreeze(); gc.set_threshold(700, 10, 10)   (CPython's defaults)
- frozen:  gc.freeze()   (objects alive now, i.e. the imports, are left out of later collections)

for fullwindow's aggregate(AggregateFunction) and reduce, and for the native rdd.mapPartitions
fold (which pays the same collector costs when it unpickles Rows), on the python_aggregate
case's input. Reports median wall time, JVM CPU and Python workers CPU (from /proc).
"""
from __future__ import annotations

import argparse
import functools
import gc
import statistics
import time

import fullwindow
from benchmarks.cases.partition import _CONF, _SumCount, _columns, _max_by_v
from benchmarks.data import parquet_input, run_noop
from benchmarks.harness import BASE_CONF, DEFAULT_OUT, _proc_tree_cpu
from benchmarks.registry import Scale


def _setup_gc(mode: str) -> None:
    if mode == "frozen":
        gc.freeze()
    else:
        gc.unfreeze()
        gc.set_threshold(700, 10, 10)


class _Agg(_SumCount):
    def __init__(self, mode: str):
        self.mode = mode

    def create_accumulator(self):
        _setup_gc(self.mode)
        return super().create_accumulator()


def _reducer(mode: str):
    state = {"set": False}

    def red(a, b):
        if not state["set"]:
            _setup_gc(mode)
            state["set"] = True
        return _max_by_v(a, b)
    return red


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=1_500_000)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    spark = fullwindow.session(master="local[2]", conf={**BASE_CONF, **_CONF},
                               app_name="python gc experiment")
    spark.sparkContext.setLogLevel("ERROR")
    df = parquet_input(spark, Scale(rows=args.rows, partitions=4, quick=False,
                                    out_dir=DEFAULT_OUT), "partition", _columns)

    def native_agg(mode):
        agg = _Agg(mode)

        def fold(rows):
            acc = None
            for r in rows:
                acc = agg.add(r, agg.create_accumulator() if acc is None else acc)
            if acc is not None:
                yield agg.get_result(acc)
        run_noop(spark.createDataFrame(df.rdd.mapPartitions(fold), "s double, n long"))

    def native_reduce(mode):
        f = _reducer(mode)

        def red(rows):
            it = iter(rows)
            first = next(it, None)
            if first is not None:
                yield functools.reduce(f, it, first)
        run_noop(spark.createDataFrame(df.rdd.mapPartitions(red), df.schema))

    variants = {}
    for mode in ("default", "frozen"):
        variants[f"ours aggregate, {mode}"] = (lambda m=mode: run_noop(
            df.fullWindowPartition().aggregate(_Agg(m), "s double, n long")))
        variants[f"ours reduce, {mode}"] = (lambda m=mode: run_noop(
            df.fullWindowPartition().reduce(_reducer(m))))
        variants[f"native aggregate, {mode}"] = (lambda m=mode: native_agg(m))
        variants[f"native reduce, {mode}"] = (lambda m=mode: native_reduce(m))
    jvm_pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    names = list(variants)
    res = {v: [] for v in names}
    for r in range(args.rounds + 1):
        order = names[r % len(names):] + names[:r % len(names)]
        for v in order:
            spark.sparkContext._jvm.System.gc()
            c0 = _proc_tree_cpu(jvm_pid)
            t = time.perf_counter()
            variants[v]()
            el = time.perf_counter() - t
            c1 = _proc_tree_cpu(jvm_pid)
            if r > 0:
                res[v].append((el, c1[0] - c0[0], c1[1] - c0[1]))
    print(f"{args.rows:,} rows, 4 partitions, {args.rounds} rounds (medians)")
    print(f"{'variant':28s} {'wall':>7s} {'JVM CPU':>8s} {'Py CPU':>7s}")
    for v in sorted(names):
        wall, jcpu, pcpu = (statistics.median(x[i] for x in res[v]) for i in range(3))
        print(f"{v:28s} {wall:6.2f}s {jcpu:7.2f}s {pcpu:6.2f}s")
    spark.stop()


if __name__ == "__main__":
    main()
