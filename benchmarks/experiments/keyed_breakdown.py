"""Where the time of the keyed cases goes: ``.venv/bin/python -m benchmarks.experiments.keyed_breakdown
[--keys 10000] [--rows 2000000] [--rounds 3]``.

On the Parquet input of the keyed cases (same files when --keys/--rows match a case), times
variants that each remove or change one part of the work, interleaved, and reports for each the
median wall time, JVM process CPU and Python workers CPU (read from /proc around each run):

- jvm_only:      repartition(4, k).sortWithinPartitions(k) to noop: the exchange and sort that
                 both keyed variants plan before their Python worker
- ours:          the case's fullwindow function (loop over the Row iterator, count and sum x)
- ours_skip:     fullwindow with a function that reads no row (yield (key, 0, 0.0)): the
                 framework (Arrow transfer, key cut, Row decoding on the prefetch thread)
                 without the user's per-row loop
- ours_arrow:    keyed mapPartitionInArrow, count and sum with pyarrow.compute per batch
- native:        the case's applyInPandas function
- native_const:  applyInPandas returning a constant one-row frame without touching the group:
                 applyInPandas' fixed cost per group
"""
from __future__ import annotations

import argparse
import statistics
import time

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

import fullwindow
from benchmarks.cases.keyed import _CONF, _COUNT_SUM_SCHEMA, _columns, count_sum, count_sum_pd
from benchmarks.data import parquet_input, run_noop
from benchmarks.harness import BASE_CONF, DEFAULT_OUT, _proc_tree_cpu
from benchmarks.registry import Scale


def skip(key, rows):
    yield (key, 0, 0.0)


def arrow_count_sum(key, batches):
    n, s = 0, 0.0
    for b in batches:
        n += b.num_rows
        s += pc.sum(b.column(2)).as_py() or 0.0
    yield pa.RecordBatch.from_pydict({"k": [key], "n": [n], "s": [s]},
                                     schema=pa.schema([("k", pa.int64()), ("n", pa.int64()),
                                                       ("s", pa.float64())]))


def const_pd(key, pdf):
    return pd.DataFrame({"k": [0], "n": [0], "s": [0.0]})


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--keys", type=int, default=10_000)
    p.add_argument("--rows", type=int, default=2_000_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", help="comma-separated variants")
    args = p.parse_args()
    spark = fullwindow.session(master="local[2]", conf={**BASE_CONF, **_CONF},
                               app_name="keyed breakdown")
    spark.sparkContext.setLogLevel("ERROR")
    df = parquet_input(spark, Scale(rows=args.rows, partitions=4, quick=False,
                                    out_dir=DEFAULT_OUT), f"keyed-k{args.keys}",
                       _columns(args.keys))
    w = df.keyBy("k").fullWindowPartition()
    variants = {
        "jvm_only": lambda: run_noop(df.repartition(4, "k").sortWithinPartitions("k")),
        "ours": lambda: run_noop(w.mapPartition(count_sum, _COUNT_SUM_SCHEMA)),
        "ours_skip": lambda: run_noop(w.mapPartition(skip, _COUNT_SUM_SCHEMA)),
        "ours_arrow": lambda: run_noop(w.mapPartitionInArrow(arrow_count_sum, _COUNT_SUM_SCHEMA)),
        "native": lambda: run_noop(df.groupBy("k").applyInPandas(count_sum_pd, _COUNT_SUM_SCHEMA)),
        "native_const": lambda: run_noop(df.groupBy("k").applyInPandas(const_pd,
                                                                         _COUNT_SUM_SCHEMA)),
    }
    if args.only:
        variants = {k: v for k, v in variants.items() if k in args.only.split(",")}
    jvm_pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    res = {v: [] for v in variants}
    names = list(variants)
    for r in range(args.rounds + 1):   # round 0 warms up
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
    print(f"{args.rows:,} rows, {args.keys:,} keys, {args.rounds} rounds (medians)")
    print(f"{'variant':14s} {'wall':>8s} {'JVM CPU':>8s} {'Py CPU':>8s}")
    for v in names:
        wall, jcpu, pcpu = (statistics.median(x[i] for x in res[v]) for i in range(3))
        print(f"{v:14s} {wall:7.2f}s {jcpu:7.2f}s {pcpu:7.2f}s")
    spark.stop()


if __name__ == "__main__":
    main()
