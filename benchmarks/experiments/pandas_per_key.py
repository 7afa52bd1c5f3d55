"""What a pandas coGroup form must spend per key, whoever runs it: each side's records handed
over as a pandas DataFrame (as fullwindow does, slices of a batch decoded once; and, for
comparison, two frames built per key with fullwindow's decoder and with pyarrow's own
``to_pandas``), the user's function run on them (the cogroup_in_pandas case's
``cogroup_count_sum_frames``: two ``len`` + ``sum`` and a one-row ``pd.DataFrame``), and the
one-row results gathered (one ``pd.concat``), at the case's 10,000-key sizes (200 left and 100
right records a key). Python CPU per key, no Spark (benchmarks/notes/keyed.md, "The coGroup
applyInPandas bar at 10,000 keys").
Usage: python benchmarks/experiments/pandas_per_key.py [CALLS]   (default 3000)
"""
import os
import sys
import time

import numpy as np
import pandas as pd
import pyarrow as pa

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from pyspark.sql.types import DoubleType, LongType, StructField, StructType  # noqa: E402

from benchmarks.cases.keyed import cogroup_count_sum_frames  # noqa: E402
from fullwindow._keyed_worker import _frame_run  # noqa: E402
from fullwindow._worker import PandasDecoder, PandasOptions  # noqa: E402

CALLS = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
SIDE = StructType([StructField("k", LongType()), StructField("v", LongType()),
                   StructField("x", DoubleType())])
decode = PandasDecoder(SIDE, PandasOptions("UTC", True, True, False, False, False))


def side(rows: int) -> pa.RecordBatch:
    return pa.record_batch({"k": np.zeros(rows, "int64"), "v": np.arange(rows, dtype="int64"),
                            "x": (np.arange(rows) % 1000).astype("float64")})


def per_call_us(f) -> float:
    f()
    t = time.process_time()
    for _ in range(CALLS):
        f()
    return (time.process_time() - t) / CALLS * 1e6


left, right = side(200), side(100)
left_frame, right_frame = decode(left), decode(right)
# what fullwindow does: each 50,000-row batch decoded once, a key's rows handed out as a slice
left_batch, right_batch = decode(side(50_000)), decode(side(50_000))
figures = {
    "both sides as slices of a decoded batch (ours)": per_call_us(
        lambda: (_frame_run(left_batch, 1000, 1200), _frame_run(right_batch, 500, 600))),
    "both sides to frames (fullwindow's decoder)": per_call_us(lambda: (decode(left),
                                                                      decode(right))),
    "both sides to frames (pyarrow to_pandas)": per_call_us(lambda: (left.to_pandas(),
                                                                    right.to_pandas())),
    "the user's function on the two frames": per_call_us(
        lambda: list(cogroup_count_sum_frames(0, iter([left_frame]), iter([right_frame])))),
}
results = [pd.DataFrame({"k": [1], "nl": [1], "sl": [1.0], "nr": [1], "sr": [1.0]})
           for _ in range(CALLS)]
t = time.process_time()
pd.concat(results, ignore_index=True)
figures["gathering the one-row results (pd.concat)"] = (time.process_time() - t) / CALLS * 1e6
for name, us in figures.items():
    print(f"{name:48s} {us:6.0f} us a key")
