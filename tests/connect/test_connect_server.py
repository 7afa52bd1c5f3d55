"""A real Spark Connect server process (pyspark's sbin/start-connect-server.sh on 127.0.0.1 and a
free port) and a client in another process: with fullwindow's three settings a keyed
mapPartition and a coGroup run; without them the first fullwindow call says what to add."""
from __future__ import annotations

import json

import pytest

import fullwindow
import os
import subprocess
import sys

from server import ConnectServer, clean_env

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CLIENT = """
import json, sys
import fullwindow
from fullwindow import EndOfStreamWindows, FullWindowSetupError
from fullwindow._connect.artifact import server_state
spark = fullwindow.session(remote=sys.argv[1] if len(sys.argv) > 1 else {url!r})

def refusal(spark):
    # recovery on a server started with Spark's script: refused, naming fullwindow's launcher
    from fullwindow import ConfigurationError
    for k, v in (("enabled", "true"), ("dir", "/tmp/fw-never"), ("jobId", "j")):
        spark.conf.set("spark.fullwindow.recovery." + k, v)
    try:
        spark.range(4).fullWindowPartition().sortPartition("id")
        return None
    except ConfigurationError as err:
        return str(err)
    finally:
        for k in ("enabled", "dir", "jobId"):
            spark.conf.unset("spark.fullwindow.recovery." + k)

df = spark.range(0, 100, 1, 4).selectExpr("id % 7 AS k", "id AS v")
other = spark.range(0, 30, 1, 2).selectExpr("id % 10 AS k", "id AS w")
try:
    keyed = df.keyBy("k").fullWindowPartition().mapPartition(
        lambda key, rows: (lambda vs: [(key, len(vs), sum(vs))])([r.v for r in rows]),
        "k long, n long, total long")
    co = df.keyBy("k").coGroup(other.keyBy("k")).window(EndOfStreamWindows.get()).apply(
        lambda key, left, right: [(key, sum(1 for _ in left), sum(1 for _ in right))],
        "k long, nl long, nr long")
    print("RESULT " + json.dumps({{
        "keyed": sorted(map(list, keyed.collect())),
        "cogroup": sorted(map(list, co.collect())),
        "plan": keyed._explain_string(mode="simple"),
        "python_version": server_state(spark).python_version,
        "shipped": server_state(spark).shipped,
        "refusal": refusal(spark)}}))
except FullWindowSetupError as err:
    print("SETUP " + json.dumps(str(err)))
finally:
    spark.stop()
"""


def run_client(url: str) -> tuple[str, object]:
    # a client process of its own, without what this process's local Connect session set
    env = clean_env(PYTHONPATH=os.path.join(ROOT, "python"))
    r = subprocess.run([sys.executable, "-c", CLIENT.format(url=url)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=240)
    for line in r.stdout.splitlines():
        if line.startswith(("RESULT ", "SETUP ")):
            kind, _, payload = line.partition(" ")
            return kind, json.loads(payload)
    pytest.fail(f"the client printed no result (exit {r.returncode}):\n{r.stdout[-3000:]}\n"
                f"{r.stderr[-3000:]}")


def test_keyed_map_partition_and_cogroup_on_a_connect_server_process():
    with ConnectServer(fullwindow=True) as server:
        kind, out = run_client(server.url)
        assert kind == "RESULT", (out, server.log())
    expected = [[k, len(range(k, 100, 7)), sum(range(k, 100, 7))] for k in range(7)]
    assert out["keyed"] == expected
    expected_co = sorted([k, len(range(k, 100, 7)) if k < 7 else 0, len(range(k, 30, 10))]
                         for k in range(10))
    assert out["cogroup"] == expected_co
    assert "FullWindowKeyedMapPartition" in out["plan"]
    # the server's workers run this interpreter, which imports this fullwindow: nothing sent
    assert out["python_version"] == fullwindow.__version__ and out["shipped"] is False
    assert "python -m fullwindow.server" in out["refusal"]
    assert server.proc is None  # stopped


def test_server_without_the_plugin_says_which_three_settings_to_add():
    with ConnectServer(fullwindow=False) as server:
        kind, message = run_client(server.url)
    assert kind == "SETUP", message
    assert "--jars " in message and "fullwindow" in message
    assert "spark.sql.extensions=fullwindow.sql.FullWindowExtensions" in message
    assert ("spark.connect.extensions.relation.classes="
            "org.apache.spark.sql.fullwindow.connect.FullWindowRelationPlugin") in message


def test_plugin_without_the_extension_says_so():
    with ConnectServer(fullwindow=True, extension=False) as server:
        kind, message = run_client(server.url)
    assert kind == "SETUP", message
    assert "extension is not registered with the server's session" in message
    assert "spark.sql.extensions=fullwindow.sql.FullWindowExtensions" in message


def test_launcher_workers_use_its_interpreter_whatever_is_on_path():
    """``/path/to/venv/bin/python -m fullwindow.server`` with no PYSPARK_PYTHON and a PATH whose
    ``python3`` is the system's (no pyarrow, no pyspark): its Python workers still run the
    launcher's interpreter (Spark Connect's planner reads PYSPARK_PYTHON, which the launcher
    sets)."""
    with ConnectServer(launcher=True, unset=("PYSPARK_PYTHON",),
                       env={"PATH": "/usr/bin:/bin"}) as server:
        kind, out = run_client(server.url)
        assert kind == "RESULT", (out, server.log())
    expected = [[k, len(range(k, 100, 7)), sum(range(k, 100, 7))] for k in range(7)]
    assert out["keyed"] == expected
    assert out["python_version"] == fullwindow.__version__
