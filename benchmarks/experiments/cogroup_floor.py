"""How much of coGroup's time at 8 large keys is the part every form shares: both inputs
read, hash-exchanged by k and sorted by k, with no Python at all. Times that floor, our
coGroup's three forms and Spark's cogroup().applyInArrow interleaved in one session, on the
cogroup_in_arrow_few_keys case's inputs (benchmarks/notes/keyed.md, "coGroup at 8 keys").
Usage: python benchmarks/experiments/cogroup_floor.py [ROUNDS] [KEYS]   (default 5 8)
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import fullwindow  # noqa: E402
from benchmarks.cases import keyed  # noqa: E402
from benchmarks.data import run_noop  # noqa: E402
from benchmarks.natives import cogroup_natives  # noqa: E402
from benchmarks.registry import Scale  # noqa: E402

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
keys = int(sys.argv[2]) if len(sys.argv) > 2 else 8
py = sys.executable
spark = fullwindow.session(master="local[2]", conf={
    "spark.driver.memory": "4g", "spark.sql.shuffle.partitions": 4,
    "spark.pyspark.python": py, "spark.pyspark.driver.python": py,
    "spark.sql.files.maxPartitionBytes": "1g", "spark.sql.files.openCostInBytes": "1g"})
scale = Scale(rows=2_000_000, partitions=4, quick=False,
              out_dir=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "out"), seed=42)
data = keyed._cogroup_inputs(spark, scale, keys)
a, b = data


def floor():
    run_noop(a.repartition(4, "k").sortWithinPartitions("k")
             .unionByName(b.repartition(4, "k").sortWithinPartitions("k")))


variants = {"floor (exchange + sort, no Python)": floor,
            "ours apply (rows)": lambda: keyed._ours_cogroup(data),
            "ours applyInPandas": lambda: keyed._ours_cogroup_pandas(data),
            "ours applyInArrow": lambda: keyed._ours_cogroup_arrow(data)}
for n in cogroup_natives():
    variants[n.name] = (lambda run: lambda: run(data))(n.run)
times = {k: [] for k in variants}
names = list(variants)
for r in range(rounds + 1):
    order = names[r % len(names):] + names[:r % len(names)]
    for name in order:
        t = time.perf_counter()
        variants[name]()
        if r:
            times[name].append(time.perf_counter() - t)
for name in names:
    print(f"{name:45s} median {statistics.median(times[name]):.2f} s  "
          f"[{min(times[name]):.2f}-{max(times[name]):.2f}]")
