"""The Spark Connect smoke suite dev/test runs on every Spark line besides the default one (whose
whole Connect suite, tests/connect, runs), in that line's venv with the wheel installed: each
operation once from a Spark Connect client (non-keyed, keyed in BATCH and STREAMING mode,
coGroup, the SQL hint), operator metrics, error mappings, recovery (a local Connect session, and
a real server started with fullwindow's launcher, killed midway and resumed), and a real Connect
server process without fullwindow's plugin. It asserts results and plans, so a line whose plugin, generated
protobuf code or Connect client internals do not fit fails here."""
from __future__ import annotations

import os
import zipfile

import pytest
from pyspark.errors import PythonException

import fullwindow
from fullwindow import ConfigurationError, EndOfStreamWindows, ProcessWindowFunction
from fullwindow._backend import PLUGIN_CLASS, ConnectBackend, backend
from fullwindow.errors import FullWindowValueError
from helpers import needs_connect_result_metrics
# the classic smoke suite's cases that a Connect session runs as they are (with this folder's
# `spark` fixture: a local Connect server)
from test_smoke import (df, test_aggregate_reduce_and_process, test_cogroup,  # noqa: F401
                        test_error_mapping, test_keyed_operations, test_map_partition_and_arrow,
                        test_pandas_forms,
                        test_pandas_frames_and_results_are_this_lines_applyInPandas,
                        test_sort_partition, test_sql_hint)
# recovery from Connect clients: on the local Connect session, and a launcher-started server of
# this line (python -m fullwindow.server) killed midway through a client's job
from test_connect_only import test_recovery_on_a_local_connect_session  # noqa: F401
from test_connect_recovery import (server,  # noqa: F401
                                   test_a_job_resumes_after_its_connect_server_is_killed)

EOS = EndOfStreamWindows.get()


def plan(out) -> str:
    return out._explain_string(mode="simple")


def test_the_lines_jar_carries_the_plugin_and_the_session_is_connect(spark, df):
    with zipfile.ZipFile(fullwindow.jar_path()) as z:
        assert PLUGIN_CLASS.replace(".", "/") + ".class" in z.namelist()
    assert type(spark).__module__.startswith("pyspark.sql.connect")
    assert isinstance(backend(df), ConnectBackend)


class Count(ProcessWindowFunction):
    def process(self, key, ctx, rows):
        yield (key, sum(1 for _ in rows), ctx.firing_info.name)


def test_process(df):
    out = df.fullWindowPartition().process(Count(), "k long, n long, why string")
    assert sorted((r.n, r.why) for r in out.collect()) == [(20, "ON_TIME")] * 3
    keyed = df.keyBy("k").window(EOS).process(Count(), "k long, n long, why string")
    assert sorted(tuple(r) for r in keyed.collect()) == [(k, 15, "ON_TIME") for k in range(4)]


def test_keyed_reduce_batch_and_streaming_mode(spark):
    data = spark.createDataFrame([(i % 2, i) for i in range(6)], "k long, v long").coalesce(1)
    final = data.keyBy("k").reduce(lambda a, b: (a.k, a.v + b.v))
    assert sorted(tuple(r) for r in final.collect()) == [(0, 6), (1, 9)]
    spark.conf.set("spark.fullwindow.runtimeMode", "STREAMING")
    try:
        running = data.keyBy("k").reduce(lambda a, b: (a.k, a.v + b.v))
        assert "KeyedRunningReduce" in plan(running)
        assert sorted(tuple(r) for r in running.collect()) == \
            sorted([(0, 0), (0, 2), (0, 6), (1, 1), (1, 4), (1, 9)])
    finally:
        spark.conf.unset("spark.fullwindow.runtimeMode")


@needs_connect_result_metrics()
def test_operator_metrics(df):
    out = df.keyBy("k").fullWindowPartition().mapPartition(
        lambda key, rows: [(key, sum(1 for _ in rows))], "k long, n long")
    with pytest.raises(FullWindowValueError, match="run an action on it first"):
        fullwindow.operator_metrics(out)
    assert sorted(tuple(r) for r in out.collect()) == [(k, 15) for k in range(4)]
    m = fullwindow.operator_metrics(out)
    assert m["FullWindowKeyedMapPartition.numInputRows"] == 60
    assert m["FullWindowKeyedMapPartition.numOutputRows"] == 4


@needs_connect_result_metrics(refused=True)
def test_operator_metrics_refused_where_the_client_keeps_no_result_metrics(df):
    out = df.keyBy("k").fullWindowPartition().mapPartition(
        lambda key, rows: [(key, sum(1 for _ in rows))], "k long, n long")
    assert sorted(tuple(r) for r in out.collect()) == [(k, 15) for k in range(4)]
    with pytest.raises(FullWindowValueError, match="does not keep the metrics"):
        fullwindow.operator_metrics(out)


def test_error_mappings(spark, df):
    def explode(rows):
        for r in rows:
            if r.v == 7:
                raise KeyError(f"bad record {r.v}")
            yield (r.v,)
    with pytest.raises(PythonException) as e:
        df.fullWindowPartition().mapPartition(explode, "v long").collect()
    assert "KeyError: 'bad record 7'" in str(e.value) and "in explode" in str(e.value)


CLIENT = """
import json, sys
import fullwindow
from fullwindow import FullWindowSetupError
spark = fullwindow.session(remote=sys.argv[1])
try:
    out = spark.range(0, 10, 1, 2).fullWindowPartition().sortPartition("id")
    print("RESULT " + json.dumps(out.count()))
except FullWindowSetupError as err:
    print("SETUP " + json.dumps(str(err)))
finally:
    spark.stop()
"""


def test_server_without_the_plugin_says_which_settings_to_add(tmp_path):
    """A real Connect server process of this line, started without fullwindow's settings, and a
    client in another process (this venv's fullwindow, as a user has it)."""
    import json
    import subprocess
    import sys

    from server import ConnectServer, clean_env

    with ConnectServer(fullwindow=False) as server:
        r = subprocess.run([sys.executable, "-c", CLIENT, server.url], cwd=tmp_path,
                           env=clean_env(), capture_output=True, text=True, timeout=240)
    said = [line.partition(" ") for line in r.stdout.splitlines()
            if line.startswith(("RESULT ", "SETUP "))]
    assert said, f"the client printed no result (exit {r.returncode}):\n{r.stderr[-3000:]}"
    kind, _, payload = said[0]
    message = json.loads(payload)
    assert kind == "SETUP", message
    assert "spark.sql.extensions=fullwindow.sql.FullWindowExtensions" in message
    assert f"spark.connect.extensions.relation.classes={PLUGIN_CLASS}" in message
    assert os.path.basename(fullwindow.jar_path()) in message
