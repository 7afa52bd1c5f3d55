"""The test suite's pyspark daemon (``spark.python.daemon.module``): pyspark's own daemon, after
importing in the daemon process what nearly every worker of this suite imports after its fork.

A pyspark worker is forked from the daemon and then imports ``pyspark.worker`` and, through
pyarrow's pandas shim (any ``pyarrow.array`` of a Python list asks whether pandas is there),
pandas: about 1 CPU second a worker on the 2-core test machine from compiled modules
(dev/bytecode.py; 3 from sources), and a run forks hundreds of workers (a session's first Python
task, a worker lost to a failing task, a driver started by a crash test). Imported here once,
every fork shares them (tests/test_partition_python.py 59 -> 52 CPU s, tests/test_recovery_crash.py
283 -> 273).

pyspark imports the worker after the fork on purpose: numpy's OpenBLAS and pyarrow's jemalloc
start threads when they load, and a process must not fork while other threads run. In this
process only, both are kept from starting any (``OPENBLAS_NUM_THREADS=1``, jemalloc's
``background_thread:false``) while the modules load, and the daemon checks it is alone before it
serves; the environment the workers inherit is the one it was started with. ``gc.freeze()``
keeps the imported objects out of every worker's garbage collections (and their pages shared).
"""
import gc
import importlib
import os
import sys

_SINGLE_THREADED = {"OPENBLAS_NUM_THREADS": "1", "JE_ARROW_MALLOC_CONF": "background_thread:false"}
_given = {k: os.environ.get(k) for k in _SINGLE_THREADED}
os.environ.update(_SINGLE_THREADED)
# what this interpreter has of them: a test may run workers on a Python without pandas, where a
# worker that needs it fails as it would under pyspark's own daemon. Not fullwindow: a Spark
# Connect session may ship its own as an artifact, which each worker must import, not the
# server's (and a test runs a server whose Python has none)
for _name in ("numpy", "pandas", "pyarrow", "pyspark.worker"):
    try:
        importlib.import_module(_name)
    except ImportError:
        pass
for _key, _value in _given.items():  # the workers' environment, as the daemon was given it
    if _value is None:
        os.environ.pop(_key, None)
    else:
        os.environ[_key] = _value
_threads = os.listdir(f"/proc/{os.getpid()}/task") if os.path.isdir("/proc") else ["main"]
if len(_threads) != 1:
    sys.exit(f"preload_daemon: {len(_threads)} threads after the imports; forking is unsafe")
gc.freeze()

from pyspark.daemon import manager  # noqa: E402

if __name__ == "__main__":
    manager()
