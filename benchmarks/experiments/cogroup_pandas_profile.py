"""Python CPU of coGroup's applyInPandas worker loop (key splitting, each side's Arrow -> pandas,
the benchmark's cogroup_count_sum_frames, pandas -> Arrow) over one partition's worth of the
cogroup_in_pandas case (2,500 keys, 500,000 left and 250,000 right records, sorted by key, in the
merged layout the JVM sends), with a cProfile of the slowest calls; see
benchmarks/notes/keyed.md ("coGroup's pandas form at 10,000 keys").
Usage: python benchmarks/experiments/cogroup_pandas_profile.py [KEYS] [--profile]
"""
import cProfile
import os
import pstats
import sys
import time

import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from pyspark.sql.types import DoubleType, LongType, StructField, StructType  # noqa: E402

from benchmarks.cases.keyed import _COGROUP_SCHEMA, cogroup_count_sum_frames  # noqa: E402
from fullwindow import _keyed_worker  # noqa: E402
from fullwindow._ddl import parse_simple_schema  # noqa: E402
from fullwindow._worker import PandasOptions, RowEncoder  # noqa: E402

keys = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 2500
LEFT, RIGHT = 500_000, 250_000
rng = np.random.default_rng(1)
lk = np.sort(rng.integers(0, keys, LEFT))
rk = np.sort(rng.integers(0, keys, RIGHT))
side, k = [], []
# merged order: per key, left records then right ones
order_keys = np.concatenate([lk, rk])
order_side = np.concatenate([np.zeros(LEFT, "int32"), np.ones(RIGHT, "int32")])
idx = np.lexsort((order_side, order_keys))
kk, ss = order_keys[idx], order_side[idx]
n = len(kk)
table = pa.table({"__side": ss, "K0,L0,R0": kk, "L1,R1": rng.integers(0, 1 << 40, n),
                  "L2,R2": (np.arange(n) % 1000).astype("float64")})
batches = table.to_batches(max_chunksize=50_000)
SIDE = StructType([StructField("k", LongType()), StructField("v", LongType()),
                   StructField("x", DoubleType())])
KEYS = _keyed_worker.key_schema([StructField("k", LongType())])
OUT = parse_simple_schema(_COGROUP_SCHEMA)
OPTIONS = PandasOptions("UTC", True, True, False, False, False)


def one_run():
    encoder = RowEncoder("coGroup applyInPandas", OUT, False, 10_000)
    run = _keyed_worker.co_group_in_pandas(cogroup_count_sum_frames, KEYS, SIDE, SIDE, encoder, 2,
                                           OPTIONS)
    return sum(b.num_rows for b in run(iter(batches)))


one_run()
t = time.process_time()
out = one_run()
print(f"{keys} keys, {n:,} records: {out} output rows, {time.process_time() - t:.2f} s CPU")
if "--profile" in sys.argv:
    prof = cProfile.Profile()
    prof.enable()
    one_run()
    prof.disable()
    pstats.Stats(prof).sort_stats(sys.argv[-1] if sys.argv[-1] in ("cumulative", "tottime") else "tottime").print_stats(25)
