"""What only a Spark Connect session has to say: recovery refused at the first operation,
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


def test_recovery_needs_a_classic_session(spark, df, tmp_path):
    spark.conf.set("spark.fullwindow.recovery.enabled", "true")
    spark.conf.set("spark.fullwindow.recovery.dir", str(tmp_path))
    spark.conf.set("spark.fullwindow.recovery.jobId", "connect-job")
    try:
        with pytest.raises(ConfigurationError, match=r"recovery\.enabled=true needs a classic "
                                                     r"SparkSession"):
            df.keyBy("k").fullWindowPartition().reduce(lambda a, b: a)
        with pytest.raises(ConfigurationError, match="needs a classic SparkSession"):
            df.fullWindowPartition().sortPartition("v")
    finally:
        for key in ("enabled", "dir", "jobId"):
            spark.conf.unset(f"spark.fullwindow.recovery.{key}")
    assert df.fullWindowPartition().sortPartition("v").count() == 40


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
