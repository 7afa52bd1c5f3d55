"""How much of a keyed or coGroup case's time at a few large keys is the part every form
shares: the input(s) read, hash-exchanged by k and sorted by k, with no Python at all. Times
that floor, our forms and every native form of the shape the line has, interleaved in one
session, on the benchmark cases' inputs (benchmarks/notes/keyed.md, "The floor at 8 keys").
A Python step that cost nothing would put a form at the floor, so native / floor is the most
any form can lead a native by. The keyed shape also times Spark's own way of handing the same
sorted input to Python, every batch dropped there (``mapInArrow`` / ``mapInPandas`` of a function
that yields nothing): what Spark's generic row-to-Arrow path costs (it cost more than our whole
keyed forms: 1.21 s and 1.33 s against 0.78 s, notes/keyed.md). Each line also gives the CPU
of the driver JVM and of its Python workers per run (medians), as the harness reads them from
/proc.
Usage: python benchmarks/experiments/floor.py cogroup|keyed [ROUNDS] [KEYS]   (default 5 8)
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import fullwindow  # noqa: E402
from benchmarks.cases import keyed  # noqa: E402
from benchmarks.data import parquet_input, run_noop  # noqa: E402
from benchmarks.harness import _proc_tree_cpu  # noqa: E402
from benchmarks.natives import (cogroup_natives, keyed_arrow_natives,  # noqa: E402
                                keyed_pandas_natives)
from benchmarks.registry import Scale  # noqa: E402

shape = sys.argv[1] if len(sys.argv) > 1 else ""
if shape not in ("cogroup", "keyed"):
    sys.exit(__doc__.strip().splitlines()[-1])
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
keys = int(sys.argv[3]) if len(sys.argv) > 3 else 8
py = sys.executable
spark = fullwindow.session(master="local[2]", conf={
    "spark.driver.memory": "4g", "spark.sql.shuffle.partitions": 4,
    "spark.pyspark.python": py, "spark.pyspark.driver.python": py,
    "spark.sql.files.maxPartitionBytes": "1g", "spark.sql.files.openCostInBytes": "1g"})
scale = Scale(rows=2_000_000, partitions=4, quick=False,
              out_dir=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "out"), seed=42)


def sorted_by_key(df):
    return df.repartition(4, "k").sortWithinPartitions("k")


def _drop(batches):
    """Reads every batch Spark sends and yields nothing."""
    for _ in batches:
        pass
    return iter(())


if shape == "cogroup":
    data = keyed._cogroup_inputs(spark, scale, keys)
    variants = {
        "floor (exchange + sort, no Python)": lambda: run_noop(
            sorted_by_key(data[0]).unionByName(sorted_by_key(data[1]))),
        "ours apply (rows)": lambda: keyed._ours_cogroup(data),
        "ours applyInPandas": lambda: keyed._ours_cogroup_pandas(data),
        "ours applyInArrow": lambda: keyed._ours_cogroup_arrow(data),
        "cogroup().applyInPandas": lambda: keyed._native_cogroup(data)}
    natives = cogroup_natives()
else:
    data = parquet_input(spark, scale, f"keyed-k{keys}", keyed._columns(keys))
    variants = {
        "floor (exchange + sort, no Python)": lambda: run_noop(sorted_by_key(data)),
        "Spark mapInArrow over it, batches dropped": lambda: run_noop(
            sorted_by_key(data).mapInArrow(_drop, data.schema)),
        "Spark mapInPandas over it, frames dropped": lambda: run_noop(
            sorted_by_key(data).mapInPandas(_drop, data.schema)),
        "ours mapPartitionInPandas": lambda: keyed._ours_map_pandas(data),
        "ours mapPartitionInArrow": lambda: keyed._ours_map_arrow(data),
        "applyInPandas": lambda: keyed._native_map(data)}
    natives = keyed_pandas_natives() + keyed_arrow_natives()
for n in natives:
    variants[n.name] = (lambda run: lambda: run(data))(n.run)
times: dict = {k: [] for k in variants}
cpus: dict = {k: [] for k in variants}
jvm_pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
names = list(variants)
for r in range(rounds + 1):  # round 0 warms up
    order = names[r % len(names):] + names[:r % len(names)]
    for name in order:
        cpu0 = _proc_tree_cpu(jvm_pid)
        t = time.perf_counter()
        variants[name]()
        if r:
            times[name].append(time.perf_counter() - t)
            cpu1 = _proc_tree_cpu(jvm_pid)
            if cpu0 and cpu1:
                cpus[name].append((cpu1[0] - cpu0[0], cpu1[1] - cpu0[1]))
for name in names:
    cpu = (f"  CPU JVM {statistics.median(c[0] for c in cpus[name]):.2f} s, "
           f"Python {statistics.median(c[1] for c in cpus[name]):.2f} s" if cpus[name] else "")
    print(f"{name:48s} median {statistics.median(times[name]):.2f} s  "
          f"[{min(times[name]):.2f}-{max(times[name]):.2f}]{cpu}")
