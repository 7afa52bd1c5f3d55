"""Python CPU of keyed mapPartitionInPandas's whole worker loop (key splitting, Arrow -> pandas,
the benchmark's count_sum_frames, pandas -> Arrow) over one run of
keyed_map_partition_in_pandas_few_keys (2 M rows, 8 keys of 250,000, sorted by key) cut into
Arrow batches of each given size; see benchmarks/notes/keyed.md ("Larger default frames").
Usage: python benchmarks/experiments/pandas_frame_size.py [SIZE ...] (default 10000 50000)
"""
import os
import statistics
import sys
import time

import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from pyspark.sql.types import DoubleType, LongType, StructField, StructType  # noqa: E402

from benchmarks.cases.keyed import count_sum_frames  # noqa: E402
from fullwindow import _keyed_worker  # noqa: E402
from fullwindow._worker import PandasOptions, RowEncoder  # noqa: E402

ROWS, KEYS = 2_000_000, 8
rng = np.random.default_rng(1)
table = pa.table({"k": np.repeat(np.arange(KEYS, dtype="int64"), ROWS // KEYS),
                  "v": rng.integers(0, 1 << 40, ROWS), "x": (np.arange(ROWS) % 1000).astype("float64")})
IN = StructType([StructField("k", LongType()), StructField("v", LongType()), StructField("x", DoubleType())])
OUT = StructType([StructField("k", LongType()), StructField("n", LongType()), StructField("s", DoubleType())])
OPTIONS = PandasOptions("UTC", True, True, False, False, False)


def one_run(batches):
    encoder = RowEncoder("keyed mapPartitionInPandas", OUT, False, 10_000)
    run = _keyed_worker.map_partition_in_pandas(count_sum_frames, IN, [0], encoder, 2, OPTIONS)
    return sum(b.num_rows for b in run(iter(batches)))


sizes = [int(s) for s in sys.argv[1:]] or [10_000, 50_000]
cut = {n: table.to_batches(max_chunksize=n) for n in sizes}
times = {n: [] for n in sizes}
for r in range(8):
    for n in sizes if r % 2 else reversed(sizes):
        t0 = time.process_time()
        assert one_run(cut[n]) == KEYS
        if r:
            times[n].append(time.process_time() - t0)
for n, ts in times.items():
    print(f"{n:>7}-row batches: median {statistics.median(ts) * 1e3:.1f} ms CPU per 2 M rows "
          f"[{min(ts) * 1e3:.1f}-{max(ts) * 1e3:.1f}]")
