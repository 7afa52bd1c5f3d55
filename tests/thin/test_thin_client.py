"""fullwindow from a thin install (pyspark-client and the fullwindow-client wheel, no pyspark, no
py4j) against a real Spark Connect server with fullwindow: each operation kind once (the classic
smoke suite's cases, as tests/smoke_connect runs them), the error mappings, and what a thin
install refuses (a session it would have to start itself)."""
from __future__ import annotations

import importlib.util
import sys

import pytest

import fullwindow
from fullwindow import FullWindowSetupError, FullWindowTypeError, FullWindowValueError
# each operation kind once, with the `spark` fixture of this folder (the remote server)
from test_smoke import (df, test_aggregate_reduce_and_process, test_cogroup,  # noqa: F401
                        test_error_mapping, test_keyed_operations, test_map_partition_and_arrow,
                        test_pandas_forms, test_sort_partition)


def test_the_install_is_thin():
    assert importlib.util.find_spec("py4j") is None
    with pytest.raises(ImportError):
        import pyspark.sql.classic  # noqa: F401
    with pytest.raises(ImportError):
        import pyspark.core  # noqa: F401
    # the wheel under test, not the checkout's package
    assert fullwindow.__file__.startswith(sys.prefix), fullwindow.__file__


def test_the_session_is_the_remote_servers(spark):
    assert type(spark).__module__.startswith("pyspark.sql.connect")
    assert spark.version.startswith(".".join(__import__("pyspark").__version__.split(".")[:2]))


def test_bad_arguments_raise_the_documented_errors(df):
    with pytest.raises(FullWindowValueError,
                       match="key 'nope' is not a column of the input; columns are k, v"):
        df.fullWindowPartition().sortPartition("nope")
    with pytest.raises(FullWindowTypeError, match="mapPartition: func must be"):
        df.fullWindowPartition().mapPartition(None, "n long")  # type: ignore[arg-type]


@pytest.mark.parametrize("kwargs", [{}, {"master": "local[2]"}, {"remote": "local[2]"}])
def test_a_session_of_its_own_needs_the_full_pyspark(kwargs):
    with pytest.raises(FullWindowSetupError) as e:
        fullwindow.session(**kwargs)
    message = str(e.value)
    assert "pip install fullwindow" in message and "sc://" in message, message


def test_setup_error_names_the_jar_without_a_local_path():
    """A server without fullwindow's plugin: what to add, the jar by name (a thin install has
    none of its own), and no local server to fall back on."""
    import os

    from fullwindow._jvm_errors import setup_error_for_connect

    message = str(setup_error_for_connect())
    assert os.path.basename(fullwindow.jar_path()) in message
    assert fullwindow.jar_path() not in message and "local[2]" not in message, message


def test_recovery_from_a_thin_client(server_url, tmp_path):
    """The server, started with fullwindow's launcher, runs recovery for a thin client: an
    operation commits; a later session with the same job id (the program run again) reads it
    back instead of running it; status comes through the server."""
    from pyspark.sql import SparkSession

    from fullwindow import recovery

    conf = {"spark.fullwindow.recovery.enabled": "true",
            "spark.fullwindow.recovery.dir": str(tmp_path),
            "spark.fullwindow.recovery.jobId": "thin-job"}
    url = server_url
    expected = [(k, 35 + k) for k in range(5)]

    def run(session):
        for k, v in conf.items():
            session.conf.set(k, v)
        out = session.range(0, 40, 1, 4).selectExpr("id % 5 AS k", "id AS v").keyBy("k") \
            .fullWindowPartition().reduce(lambda a, b: a if a.v >= b.v else b)
        return out, sorted(tuple(r) for r in out.collect())

    first = SparkSession.builder.remote(url).create()
    out, rows = run(first)
    assert rows == expected
    recovery.flush(first)
    [op] = [o for o in recovery.status(str(tmp_path), "thin-job", first)["operations"]
            if o["operation"] != "shuffle input"]
    assert op["committed"] == op["partitions"] and op["intact"]
    first.stop()  # the program ends: its session's job is closed on the server
    second = SparkSession.builder.remote(url).create()
    try:
        import time

        deadline = time.time() + 30
        while True:
            try:
                out, rows = run(second)
                break
            except recovery.RecoveryConflictError:
                assert time.time() < deadline
                time.sleep(0.5)
        assert rows == expected
        assert "FullWindowRecoveredScan" in out._explain_string(mode="simple")
        assert recovery.cleanup(second) is True
    finally:
        second.stop()


def test_the_server_refuses_a_client_without_its_token(server_url, spark, monkeypatch):
    """The server (python -m fullwindow.server) takes a token: this thin session sends it (every
    test here runs through it); a session without it, or with another, is refused."""
    from pyspark.errors.exceptions.connect import SparkConnectException
    from pyspark.sql import SparkSession

    assert ";token=" in server_url and server_url.startswith("sc://localhost:")
    assert spark.range(3).count() == 3
    monkeypatch.delenv("SPARK_CONNECT_AUTHENTICATE_TOKEN", raising=False)
    base = server_url.split("/;")[0]
    for url, says in ((base, "No authentication token provided"),
                      (base + "/;token=not-the-token", "Invalid authentication token")):
        other = SparkSession.builder.remote(url).create()
        try:
            with pytest.raises(SparkConnectException, match=says):
                other.range(1).collect()
        finally:
            other.stop()
