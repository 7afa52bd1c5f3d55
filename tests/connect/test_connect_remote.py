"""A remote Spark Connect server that has fullwindow's jar and three settings but no fullwindow
in its Python: real server processes (on free ports), clients in processes of their own
(tests/connect/remote_client.py). Every operation runs, the client's package travelling to the
session's workers as a session artifact; two sessions at once each get their own; a server
whose jar is another version gives FullWindowSetupError naming both versions."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile

import pyspark
import pytest

import fullwindow
from server import ConnectServer, clean_env, python_without_fullwindow

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def start_client(url: str, mode: str) -> subprocess.Popen:
    env = clean_env()
    # the client imports the installed fullwindow: no folder holding a fullwindow package stays
    # on its path (others do, e.g. the Connect client libraries of a line whose venv has none)
    kept = [p for p in env.pop("PYTHONPATH", "").split(os.pathsep)
            if p and not os.path.isdir(os.path.join(p, "fullwindow"))]
    if kept:
        env["PYTHONPATH"] = os.pathsep.join(kept)
    return subprocess.Popen([sys.executable, os.path.join(HERE, "remote_client.py"), url, mode],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def client_result(proc: subprocess.Popen, server: ConnectServer) -> tuple[str, object]:
    out, err = proc.communicate(timeout=300)
    for line in out.splitlines():
        if line.startswith(("RESULT ", "SETUP ")):
            kind, _, payload = line.partition(" ")
            return kind, json.loads(payload)
    pytest.fail(f"the client printed no result (exit {proc.returncode}):\n{out[-3000:]}\n"
                f"{err[-5000:]}\n{server.log()}")


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory):
    return python_without_fullwindow(str(tmp_path_factory.mktemp("bare") / "venv"))


@pytest.fixture(scope="module")
def server(bare_python):
    with ConnectServer(fullwindow=True, python=bare_python) as s:
        yield s


def every_operation_result(server: ConnectServer) -> dict:
    """Runs every operation from a client process against ``server`` (whose Python has no
    fullwindow), checks each one's result and the package's trip, and returns what the client
    reported (tests/smoke_connect reuses it on every other line)."""
    kind, out = client_result(start_client(server.url, "all"), server)
    assert kind == "RESULT", out
    # the server's workers import no fullwindow: the package went to the session
    assert out["python_version"] is None
    assert out["jar_version"] == fullwindow.__version__
    assert out["shipped"] is True and 20_000 < out["sent_bytes"] < 2_000_000
    r = out["results"]
    keys = range(7)
    per_key = [[k, len(range(k, 100, 7)), sum(range(k, 100, 7))] for k in keys]
    counts = [[k, len(range(k, 100, 7))] for k in keys]
    for name in ("partition_rows", "partition_arrow", "partition_pandas", "partition_process"):
        assert len(r[name]) == 4, (name, r[name])  # one row per input partition
        assert [sum(c) for c in zip(*r[name])] == [100, 4950], (name, r[name])
    assert sorted(v for _, v in r["partition_reduce"]) == [24, 49, 74, 99]
    assert r["partition_sort"] == [[v] for v in range(100)]
    for name in ("keyed_rows", "keyed_arrow", "keyed_process"):
        assert r[name] == per_key, (name, r[name])
    for name in ("keyed_pandas", "keyed_window_apply", "keyed_window_pandas", "keyed_aggregate"):
        assert r[name] == counts, (name, r[name])
    assert r["keyed_reduce"] == [[k, max(range(k, 100, 7))] for k in keys]
    # the running reduce: one row per input record; each key's largest is its final row
    assert len(r["keyed_running"]) == 100
    assert {k: max(v for kk, v in r["keyed_running"] if kk == k) for k in keys} == \
        {k: max(range(k, 100, 7)) for k in keys}
    cogroup = [[k, len(range(k, 100, 7)) if k < 7 else 0, len(range(k, 30, 10))]
               for k in range(10)]
    forms = sorted(n for n in r if n.startswith("cogroup_"))
    assert forms == ["cogroup_arrow", "cogroup_pandas", "cogroup_rows"]
    for name in forms:
        assert r[name] == cogroup, (name, r[name])
    return out


def test_every_operation_runs_on_a_server_whose_python_has_no_fullwindow(server):
    out = every_operation_result(server)
    assert out["spark_version"] == pyspark.__version__  # the server is this venv's Spark


def test_two_sessions_at_once_each_get_the_package(server):
    """Two client processes at once, each with two sessions: a session's workers import
    fullwindow only after that session's own first fullwindow operation."""
    procs = [start_client(server.url, "sessions") for _ in range(2)]
    results = [client_result(p, server) for p in procs]
    expected = [[k, 10] for k in range(4)]
    for kind, out in results:
        assert kind == "RESULT", out
        assert out["a_counts"] == expected and out["b_counts"] == expected
        assert out["a_import"] == fullwindow.__version__
        # B, at the same time on the same server, had not got A's artifact
        assert out["b_import_before"] == "ERROR ModuleNotFoundError", out
        assert out["b_import_after"] == fullwindow.__version__


def _jar_of_version(folder: str, version: str) -> str:
    """A copy of the package's jar whose manifest says another Implementation-Version."""
    src = fullwindow.jar_path()
    dst = os.path.join(folder, os.path.basename(src))
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename == "META-INF/MANIFEST.MF":
                text = data.decode()
                assert f"Implementation-Version: {fullwindow.__version__}" in text, text
                data = text.replace(f"Implementation-Version: {fullwindow.__version__}",
                                    f"Implementation-Version: {version}").encode()
            zout.writestr(item, data)
    return dst


def test_a_server_jar_of_another_version_is_a_setup_error(tmp_path, bare_python):
    jar = _jar_of_version(str(tmp_path), "0.0.9")
    with ConnectServer(fullwindow=True, python=bare_python, jar=jar) as other:
        kind, message = client_result(start_client(other.url, "all"), other)
    assert kind == "SETUP", message
    assert "jar version 0.0.9" in message
    assert f"fullwindow Python package version {fullwindow.__version__}" in message
