"""Python CPU of the keyed pandas forms' input side (key splitting + Arrow -> pandas) over one
run of keyed_map_partition_in_pandas_few_keys (200 single-key batches of 10,000 rows), for a
baseline checkout's python/ directory against this one's, interleaved; see
benchmarks/notes/keyed.md. Usage: python benchmarks/experiments/pandas_decode_stage.py BASE/python
"""
import os
import sys, time, statistics, importlib, numpy as np, pyarrow as pa
from pyspark.sql.types import *
n=10000
rng=np.random.default_rng(1)
batches=[pa.RecordBatch.from_arrays([pa.array(np.full(n, i//25, 'int64')), pa.array(rng.integers(0,1<<40,n)), pa.array(rng.random(n)*1000)], names=['k','v','x']) for i in range(200)]
schema = StructType([StructField('k',LongType()),StructField('v',LongType()),StructField('x',DoubleType())])
def load(path):
    for m in [m for m in list(sys.modules) if m.startswith('fullwindow')]: del sys.modules[m]
    sys.path.insert(0, path)
    import fullwindow._keyed_worker as kw, fullwindow._worker as w
    sys.path.pop(0)
    opt = w.PandasOptions('UTC', True, True, False, False, False)
    return kw.pandas_segments(schema, [0], opt)
here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")
old, new = load(sys.argv[1]), load(here)
res={'base':[], 'this':[]}
for r in range(7):
    for name, seg in (('base', old), ('this', new)) if r%2 else (('this', new), ('base', old)):
        t0=time.process_time()
        for b in batches: seg(b)
        res[name].append(time.process_time()-t0)
for k,v in res.items(): print(k, f"median {statistics.median(v)*1e3:.0f} ms per 2M rows [{min(v)*1e3:.0f}-{max(v)*1e3:.0f}]")
