"""tests/thin: fullwindow from a thin install (Spark's pure-Python Connect client, pyspark-client,
with the fullwindow-client wheel: no pyspark, no py4j, no JVM) against a real Spark Connect
server of the client's line. dev/test runs it in a pytest process of its own with the Python of
.venvs/client-<line> (dev/venvs --client); the server runs from that line's full venv
(.venvs/spark-<line>, the fullwindow wheel: its jar, its Python workers), started by
tests/thin/serve.py there: one server for the process.

Elsewhere (a full pyspark, e.g. a bare ``pytest tests``) these tests are skipped at collection;
tests/conftest.py's classic session fixtures are replaced here (the thin install has no jar and
can start no session of its own)."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
ROOT = os.path.dirname(TESTS)
SMOKE = os.path.join(TESTS, "smoke")
# the classic smoke suite's cases run here as they are; Python workers unpickle their functions
# by reference, so the server (and through it its workers) gets the folders on its path too
sys.path[:0] = [SMOKE]
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in [TESTS, SMOKE, HERE, os.environ.get("PYTHONPATH", "")] if p)


def _thin() -> bool:
    """pyspark-client, not pyspark (pyspark's own test, not the package's under test)."""
    try:
        from pyspark.util import is_remote_only
    except ImportError:  # 3.5: no thin client
        return False
    return is_remote_only()


def pytest_collection_modifyitems(config, items):
    mine = [i for i in items if str(i.fspath).startswith(HERE + os.sep)]
    why = None
    if len(mine) != len(items):
        why = "tests/thin runs in a pytest process of its own (dev/test runs it)"
    elif not _thin():
        why = ("tests/thin runs with a thin client's Python (pyspark-client, no pyspark): "
               "dev/venvs --client makes .venvs/client-<line>, and dev/test runs it there")
    if why:
        for item in mine:
            item.add_marker(pytest.mark.skip(reason=why))


def server_python() -> str:
    """A full pyspark of the thin client's Spark line, with the fullwindow wheel (dev/venvs):
    $FULLWINDOW_THIN_SERVER_PYTHON, else that line's venv of this checkout."""
    given = os.environ.get("FULLWINDOW_THIN_SERVER_PYTHON")
    if given:
        return os.path.abspath(given)
    import pyspark

    line = ".".join(pyspark.__version__.split(".")[:2])
    venv = os.path.join(ROOT, ".venvs", f"spark-{line}")
    if not os.path.isdir(venv):
        venv = os.path.join(ROOT, ".venv")  # the default line's
    return os.path.join(venv, "bin", "python")


@pytest.fixture(scope="session", autouse=True)
def _jar_built():
    """Replaces tests/conftest.py's: a thin install has no jar (the server's venv has)."""
    yield


@pytest.fixture(scope="session")
def server_url():
    python = server_python()
    if not os.path.isfile(python):
        pytest.fail(f"no server Python at {python}: run dev/venvs --wheel <line> (dev/test does)")
    err = tempfile.TemporaryFile(mode="w+")
    p = subprocess.Popen([python, os.path.join(HERE, "serve.py")], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=err, text=True, cwd=ROOT)
    try:
        line = p.stdout.readline()
        if not line.startswith("URL "):
            p.wait(60)
            err.seek(0)
            pytest.fail(f"the Connect server did not start (exit {p.returncode}):\n"
                        + err.read()[-6000:])
        yield line.split()[1]
    finally:
        p.stdin.close()  # serve.py stops its server
        try:
            p.wait(90)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(30)
        err.close()


@pytest.fixture(scope="session")
def spark(server_url):
    import fullwindow

    s = fullwindow.session(remote=server_url)
    yield s
    s.stop()
