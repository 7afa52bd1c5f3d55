"""Python workers unpickle the smoke suite's functions by reference: let them import its module
(tests/conftest.py does the same for tests/; the JVM and its workers inherit the environment).

The whole smoke suite runs with gRPC not importable: a classic session needs no Spark Connect
client library on any line (on 3.5 too, whose pyspark keeps its only Arrow/row converters in its
Connect client). A package ``grpc`` whose import raises ImportError goes first on this process's
path and on PYTHONPATH before any session starts, so the shared session's JVM, its Python
workers and the drivers the tests start all find it first; every smoke test runs under it and
test_a_classic_session_runs_every_operation_without_grpc checks it holds, in the driver and in a
worker. Only here: tests/smoke_connect and the classic suite keep gRPC."""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

GRPC_BLOCKED = "grpc is not installed here (tests/smoke/conftest.py)"
_BLOCKER = tempfile.TemporaryDirectory(prefix="fw-smoke-no-grpc-")  # removed when pytest exits
os.mkdir(os.path.join(_BLOCKER.name, "grpc"))
with open(os.path.join(_BLOCKER.name, "grpc", "__init__.py"), "w") as f:
    f.write(f"raise ImportError({GRPC_BLOCKED!r})\n")
if any(m.split(".")[0] == "grpc" for m in sys.modules):  # too late to block it in this process
    raise RuntimeError("grpc was imported before tests/smoke/conftest.py could block it")
sys.path.insert(0, _BLOCKER.name)
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in [_BLOCKER.name, HERE, os.environ.get("PYTHONPATH", "")] if p)
