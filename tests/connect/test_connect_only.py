"""What only a Spark Connect session has to say: recovery on a local Connect session,
operator metrics from the result's execution info, the session helper's arguments, and a user
function's exception with its Python traceback."""
from __future__ import annotations

import pytest
from pyspark.errors import PythonException

import fullwindow
from fullwindow import ConfigurationError, FullWindowValueError
from fullwindow._backend import ConnectBackend, backend
from helpers import needs_connect_result_metrics


@pytest.fixture(scope="module")
def df(spark):
    return spark.range(0, 40, 1, 4).selectExpr("id % 5 AS k", "id AS v")


def test_a_connect_dataframe_goes_to_the_connect_backend(df):
    assert isinstance(backend(df), ConnectBackend)
    out = df.fullWindowPartition().sortPartition("v")
    assert type(out).__module__ == "pyspark.sql.connect.dataframe"
    assert "FullWindowSortPartition" in out._explain_string(mode="simple")


def test_recovery_on_a_local_connect_session(spark, tmp_path):
    """remote="local[N]" runs the server in this process's JVM: this process is its recovery
    runtime. An operation commits; the job, closed and opened again as a new driver would,
    reads it back; status and the error kinds come through the server."""
    from fullwindow import recovery
    from fullwindow.recovery import RecoveryInputChangedError  # noqa: F401 - registered kinds
    from fullwindow.recovery._jobs import _runtime

    conf = {"spark.fullwindow.recovery.enabled": "true",
            "spark.fullwindow.recovery.dir": str(tmp_path),
            "spark.fullwindow.recovery.jobId": "connect-job"}
    df = spark.range(0, 40, 1, 4).selectExpr("id % 5 AS k", "id AS v")
    for k, v in conf.items():
        spark.conf.set(k, v)
    try:
        def op():
            return df.keyBy("k").fullWindowPartition().reduce(
                lambda a, b: a if a.v >= b.v else b)
        expected = sorted((k, 35 + k) for k in range(5))
        assert sorted(tuple(r) for r in op().collect()) == expected
        recovery.flush(spark)
        st = recovery.status(str(tmp_path), "connect-job", spark)
        [o] = [o for o in st["operations"] if o["operation"] != "shuffle input"]
        assert o["committed"] == o["partitions"] and o["intact"]
        _runtime.close_job(str(tmp_path / "connect-job"))  # as if the server had restarted
        again = op()
        assert "FullWindowRecoveredScan" in again._explain_string(mode="simple")
        assert sorted(tuple(r) for r in again.collect()) == expected
        assert recovery.cleanup(spark) is True and not (tmp_path / "connect-job").exists()
    finally:
        for key in conf:
            spark.conf.unset(key)
    assert df.fullWindowPartition().sortPartition("v").count() == 40


def test_recovery_errors_on_a_connect_session(spark, tmp_path):
    """Recovery's errors reach a Connect client as the classes a classic session raises: a
    directory that cannot be written (ConfigurationError), an input that changed since the
    job's earlier run with onInputChange=fail (RecoveryInputChangedError)."""
    from fullwindow.recovery import RecoveryInputChangedError
    from fullwindow.recovery._jobs import _runtime

    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    data = tmp_path / "input"
    spark.range(0, 20, 1, 2).write.parquet(str(data))
    settings = {"spark.fullwindow.recovery.enabled": "true",
                "spark.fullwindow.recovery.dir": str(blocker / "recovery"),
                "spark.fullwindow.recovery.jobId": "bad-dir"}

    def op():
        return spark.read.parquet(str(data)).fullWindowPartition().mapPartition(
            lambda rows: [(sum(1 for _ in rows),)], "n long")
    try:
        for k, v in settings.items():
            spark.conf.set(k, v)
        with pytest.raises(ConfigurationError, match="cannot be written"):
            op()
        spark.conf.set("spark.fullwindow.recovery.dir", str(tmp_path / "recovery"))
        spark.conf.set("spark.fullwindow.recovery.jobId", "changed")
        spark.conf.set("spark.fullwindow.recovery.onInputChange", "fail")
        assert sum(r.n for r in op().collect()) == 20
        _runtime.close_job(str(tmp_path / "recovery" / "changed"))  # a new run of the job
        # the input changes outside the job: a write with recovery on and its run not started
        # is refused (RECOVERY_NOT_STARTED), so the change is written with recovery off
        spark.conf.set("spark.fullwindow.recovery.enabled", "false")
        spark.range(20, 30, 1, 1).write.mode("append").parquet(str(data))
        spark.conf.set("spark.fullwindow.recovery.enabled", "true")
        with pytest.raises(RecoveryInputChangedError, match="changed"):
            op()
    finally:
        for k in list(settings) + ["spark.fullwindow.recovery.onInputChange"]:
            spark.conf.unset(k)
        _runtime.close_job(str(tmp_path / "recovery" / "changed"))


@needs_connect_result_metrics()
def test_operator_metrics_come_with_the_result(df):
    out = df.keyBy("k").fullWindowPartition().mapPartition(
        lambda key, rows: [(key, sum(1 for _ in rows))], "k long, n long")
    with pytest.raises(FullWindowValueError, match="run an action on it first"):
        fullwindow.operator_metrics(out)
    assert sorted(tuple(r) for r in out.collect()) == [(k, 8) for k in range(5)]
    m = fullwindow.operator_metrics(out)
    assert m["FullWindowKeyedMapPartition.numInputRows"] == 40
    assert m["FullWindowKeyedMapPartition.numOutputRows"] == 5


def test_user_function_exception_keeps_its_python_traceback(df):
    def explode(rows):
        for r in rows:
            if r.v == 7:
                raise KeyError(f"bad record {r.v}")
            yield (r.v,)

    out = df.fullWindowPartition().mapPartition(explode, "v long")
    with pytest.raises(PythonException) as e:
        out.collect()
    text = str(e.value)
    assert "KeyError: 'bad record 7'" in text
    assert "in explode" in text and 'raise KeyError(f"bad record {r.v}")' in text


def test_session_arguments():
    with pytest.raises(TypeError, match="not both"):
        fullwindow.session(master="local[1]", remote="local[1]")
    with pytest.raises(TypeError, match=r"remote must be 'local\[N\]' or 'sc://host:port'"):
        fullwindow.session(remote="http://example")


class _CountedRpcs:
    """Counts the Connect client's round trips by method (the real stub, wrapped)."""

    def __init__(self, spark):
        self._stub = spark.client._stub
        self.calls: list[str] = []
        self._saved = {}
        for name in ("AnalyzePlan", "Config", "ExecutePlan"):
            method = self._saved[name] = getattr(self._stub, name)
            setattr(self._stub, name, self._counted(name, method))

    def _counted(self, name, method):
        def call(*args, **kwargs):
            self.calls.append(name)
            return method(*args, **kwargs)
        return call

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for name, method in self._saved.items():
            setattr(self._stub, name, method)


def test_an_operation_reads_its_settings_in_one_round_trip(spark):
    """Recovery, Arrow batch settings, runtime mode and processing-time policy: one Config
    round trip per operation (not one per setting), and the input and output schemas one
    AnalyzePlan each; the action is one ExecutePlan."""
    # pyspark's client reads a few settings of its own once per session (first schema, first
    # column): an operation defined first has them, so the counts below start after one
    warm = spark.range(0, 4, 1, 2).selectExpr("id % 2 AS k", "id AS v")
    warm.keyBy("k").fullWindowPartition().mapPartition(lambda k, rows: [(k,)], "k long")
    df = spark.range(0, 40, 1, 4).selectExpr("id % 5 AS k", "id AS v")
    with _CountedRpcs(spark) as rpcs:
        out = df.fullWindowPartition().mapPartition(
            lambda rows: [(sum(1 for _ in rows),)], "n long")
    assert rpcs.calls.count("Config") == 1, rpcs.calls
    # on every line, 3.5 included (whose Connect DataFrame does not keep its schema: fullwindow
    # keeps it, _compat.dataframe_schema)
    assert rpcs.calls.count("AnalyzePlan") == 2, rpcs.calls
    assert sorted(r.n for r in out.collect()) == [10, 10, 10, 10]
    with _CountedRpcs(spark) as rpcs:
        keyed = df.keyBy("k").fullWindowPartition().reduce(lambda a, b: a if a.v > b.v else b)
    assert rpcs.calls.count("Config") == 1, rpcs.calls
    # the input's schema is known from the first operation: only the result is analyzed
    assert rpcs.calls.count("AnalyzePlan") == 1, rpcs.calls
    assert sorted(tuple(r) for r in keyed.collect()) == [(k, 35 + k) for k in range(5)]


def test_settings_are_read_again_by_the_next_operation(spark):
    """The snapshot lives for one call: a setting changed between two operations is seen."""
    df = spark.range(0, 20, 1, 2).selectExpr("id % 2 AS k", "id AS v")
    spark.conf.set("spark.fullwindow.runtimeMode", "SOMETIMES")
    try:
        with pytest.raises(ConfigurationError, match="runtimeMode is 'SOMETIMES'"):
            df.keyBy("k").reduce(lambda a, b: a)
    finally:
        spark.conf.unset("spark.fullwindow.runtimeMode")
    out = df.keyBy("k").reduce(lambda a, b: a if a.v > b.v else b)
    assert sorted(tuple(r) for r in out.collect()) == [(0, 18), (1, 19)]


def test_every_rerun_module_brings_its_classic_modules_cases():
    """Each test_connect_<name>.py holds no test of its own: it re-collects tests/test_<name>.py's
    cases (``from test_<name> import *``; flink_conformance: tests/flink_conformance.py's),
    which assert results, plans and errors. A star
    import that brought nothing (a renamed module, an ``__all__``) would silently run nothing."""
    import importlib
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    reruns = [f[len("test_connect_"):-3] for f in os.listdir(here)
              if f.startswith("test_connect_") and f[:-3] not in
              ("test_connect_only", "test_connect_proto", "test_connect_server",
               "test_connect_remote", "test_connect_recovery",
               # the server launcher's authentication: tests of its own
               "test_connect_auth",
               # a subset of its classic module's cases: their small memory pool (spill and
               # fallback cases) is not a Connect server's
               "test_connect_sort_columnar_arrow",
               # a subset: the DataFrame sweeps (the command lines' and settings' are classic)
               "test_connect_bad_input")]
    assert len(reruns) >= 8, reruns
    for name in reruns:
        rerun = importlib.import_module(f"test_connect_{name}")
        # the Flink cases live in tests/flink_conformance.py (its classic module adds a check
        # of the thin modules, which is not a case)
        classic = importlib.import_module(
            "flink_conformance" if name == "flink_conformance" else f"test_{name}")
        wanted = {n for n in dir(classic) if n.startswith("test_") and callable(getattr(classic, n))}
        assert wanted, name
        assert {n for n in wanted if getattr(rerun, n, None) is getattr(classic, n)} == wanted, name


def test_each_case_left_to_the_classic_run_exists_there():
    """conftest.JVM_ONLY names classic cases not rerun here: each names a test function of a
    classic module that has a rerun module (a renamed test would otherwise rerun unnoticed, or a
    stale name hide nothing)."""
    import importlib
    import os

    from conftest import JVM_ONLY

    here = os.path.dirname(os.path.abspath(__file__))
    assert JVM_ONLY
    for case in JVM_ONLY:
        module, name = case.split("::")
        assert os.path.isfile(os.path.join(here, "test_connect_" + module[len("test_"):])), case
        assert callable(getattr(importlib.import_module(module[:-3]), name, None)), case
