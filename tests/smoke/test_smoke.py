"""The smoke suite dev/test runs on every Spark line besides the default one, in that line's own
venv with the wheel installed: each operation once, non-keyed and keyed, coGroup, the SQL hint,
an error mapping, and a short kill-and-resume of a recovering job. It asserts results and plans,
so a line whose jar or Python internals do not fit fails here."""
from __future__ import annotations

import os

import pyspark
import pytest
from pyspark.sql import functions as F

import fullwindow
from fullwindow import AggregateFunction, EndOfStreamWindows, KeyNotSortableError, Order
from fullwindow.errors import FullWindowSetupError
from helpers import executed_plan, kill_when, partitions, run_python

EOS = EndOfStreamWindows.get()


@pytest.fixture(scope="module")
def df(spark):
    return spark.range(0, 60, 1, 3).selectExpr("id % 4 AS k", "id * 7 % 50 AS v")


def test_the_running_lines_jar_is_loaded(spark):
    line = ".".join(pyspark.__version__.split(".")[:2])
    assert f"fullwindow-spark{line}_" in os.path.basename(fullwindow.jar_path())
    assert fullwindow.jar_path() in spark.conf.get("spark.jars")
    with pytest.raises(FullWindowSetupError, match=r"supports Spark 3\.5, 4\.0, .*4\.3; .*3\.4\.1"):
        fullwindow.jar_path("3.4.1")


def test_sort_partition(df):
    out = df.fullWindowPartition().sortPartition([("k", Order.ASCENDING), ("v", Order.DESCENDING)])
    parts = partitions(out)
    assert len(parts) == 3 and sum(map(len, parts)) == 60
    for p in parts:
        assert p == sorted(p, key=lambda r: (r[0], -r[1]))
    assert "FullWindowSortPartition" in executed_plan(out) and "Exchange" not in executed_plan(out)


def count_sum(rows):
    n = t = 0
    for r in rows:
        n, t = n + 1, t + r.v
    yield (n, t)


def test_map_partition_and_arrow(df):
    assert sorted(df.fullWindowPartition().mapPartition(count_sum, "n long, t long").collect()) \
        == sorted((20, sum(v for _, v in p)) for p in partitions(df))

    def arrow(batches):
        import pyarrow as pa
        for b in batches:
            yield pa.RecordBatch.from_pydict({"n": [b.num_rows]})
    rows = df.fullWindowPartition().mapPartitionInArrow(arrow, "n long").collect()
    assert sum(r.n for r in rows) == 60


class Avg(AggregateFunction):
    def create_accumulator(self):
        return (0, 0)

    def add(self, value, acc):
        return (acc[0] + value.v, acc[1] + 1)

    def get_result(self, acc):
        return (acc[0] / acc[1],)

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])


def test_aggregate_reduce_and_process(df):
    jvm = df.fullWindowPartition().aggregate(F.sum("v").alias("s"), F.count("*").alias("n"))
    assert sorted(r.n for r in jvm.collect()) == [20, 20, 20]
    py = df.fullWindowPartition().aggregate(Avg(), "avg double").collect()
    assert len(py) == 3
    red = df.fullWindowPartition().reduce(lambda a, b: (a.k, a.v + b.v)).collect()
    assert sum(r.v for r in red) == sum(r.v for r in df.collect())


def test_keyed_operations(df):
    total = {k: sum(r.v for r in df.collect() if r.k == k) for k in range(4)}

    def per_key(key, rows):
        rows = list(rows)
        yield (key, len(rows), sum(r.v for r in rows))
    out = df.keyBy("k").fullWindowPartition().mapPartition(per_key, "k long, n long, t long")
    assert {r.k: (r.n, r.t) for r in out.collect()} == {k: (15, total[k]) for k in range(4)}
    agg = df.keyBy("k").window(EOS).aggregate(F.sum("v").alias("s"))
    assert {r.k: r.s for r in agg.collect()} == total
    red = df.keyBy("k").window(EOS).reduce(lambda a, b: (a.k, a.v + b.v))
    assert {r.k: r.v for r in red.collect()} == total
    srt = df.keyBy("k").fullWindowPartition().sortPartition("v")
    assert sorted(r.v for r in srt.collect()) == sorted(r.v for r in df.collect())


def test_cogroup(spark, df):
    right = spark.range(0, 8).selectExpr("id % 4 AS k", "id AS w")

    def join(key, left, right):
        yield (key, len(list(left)), sum(r.w for r in right))
    out = df.keyBy("k").coGroup(right.keyBy("k")).window(EOS).apply(join, "k long, n long, w long")
    assert {r.k: (r.n, r.w) for r in out.collect()} == {k: (15, k + k + 4) for k in range(4)}


def test_sql_hint(spark, df):
    df.createOrReplaceTempView("smoke_t")
    q = spark.sql("SELECT /*+ FULL_WINDOW_PARTITION */ sum(v) AS s, count(*) AS n FROM smoke_t")
    assert sorted(r.n for r in q.collect()) == [20, 20, 20]
    assert "Exchange" not in executed_plan(q)


def test_error_mapping(spark):
    bad = spark.createDataFrame([({"a": 1},)], "m map<string,int>")
    with pytest.raises(KeyNotSortableError):
        bad.fullWindowPartition().sortPartition("m").collect()
    # a Column key of a map type: Spark's analyzer refuses it, its condition mapped to ours
    with pytest.raises(KeyNotSortableError, match="does not support ordering"):
        bad.fullWindowPartition().sortPartition(F.map_concat("m", "m"))


def test_recovery_kill_and_resume(tmp_path):
    from test_recovery_crash import PARTS, Job

    reference = Job(tmp_path / "ref", "reference", recovery=False)
    reference.run("r1")
    job = Job(tmp_path / "crash", "midway")
    p = job.start("r1", slow=1.5)
    kill_when(p, lambda: len(job.finished(job.fingerprints()[1])) >= 1)
    a, b = job.fingerprints()
    done_b = job.finished(b)
    assert job.finished(a) == PARTS and 1 <= len(done_b) < 4
    job.run("r2")
    assert job.output() == reference.output()
    assert job.ran("A", "r2") == []
    assert job.ran("B", "r2") == sorted(PARTS - done_b)


def test_pandas_forms_or_their_documented_refusal(spark, df):
    """The pandas forms where pyspark has its Arrow-to-pandas conversion (4.2 and later); on a
    line without it each raises FullWindowSetupError saying so, before anything runs."""
    import importlib

    def total(key, frames):
        import pandas as pd

        yield pd.DataFrame({"k": [key], "n": [sum(len(f) for f in frames)]})

    calls = [
        lambda: df.fullWindowPartition().mapPartitionInPandas(
            lambda frames: (f[["k"]] for f in frames), "k long"),
        lambda: df.keyBy("k").fullWindowPartition().mapPartitionInPandas(total, "k long, n long"),
        lambda: df.keyBy("k").coGroup(df.keyBy("k")).window(EOS).applyInPandas(
            lambda key, left, right: total(key, left), "k long, n long"),
    ]
    try:  # pyspark.sql.conversion: 4.0 and later; ArrowBatchTransformer in it: 4.2 and later
        has_pandas_conversion = hasattr(importlib.import_module("pyspark.sql.conversion"),
                                        "ArrowBatchTransformer")
    except ImportError:
        has_pandas_conversion = False
    if has_pandas_conversion:
        assert calls[0]().count() == 60
        assert sorted(tuple(r) for r in calls[1]().collect()) == [(k, 15) for k in range(4)]
        assert sorted(tuple(r) for r in calls[2]().collect()) == [(k, 15) for k in range(4)]
    else:
        for call in calls:
            with pytest.raises(FullWindowSetupError, match="pandas forms need pyspark's"):
                call()


def test_spark_connect_plugin_on_every_line(tmp_path):
    """Every line's jar carries the Spark Connect plugin and configure() puts it on a local
    Connect server (tests/smoke_connect runs the operations over Connect); a jar without it is
    refused before any server starts."""
    import zipfile

    from pyspark.sql import SparkSession

    from fullwindow._backend import PLUGIN_CLASS, PLUGIN_CONF
    from fullwindow._session import _require_connect_plugin

    with zipfile.ZipFile(fullwindow.jar_path()) as z:
        assert PLUGIN_CLASS.replace(".", "/") + ".class" in z.namelist()
    builder = SparkSession.builder.remote("local[2]")
    assert fullwindow.configure(builder)._options[PLUGIN_CONF] == PLUGIN_CLASS
    bare = tmp_path / "bare.jar"
    with zipfile.ZipFile(bare, "w") as z:
        z.writestr("fullwindow/sql/FullWindowExtensions.class", b"")
    with pytest.raises(FullWindowSetupError, match="bare.jar has no Spark Connect plugin"):
        _require_connect_plugin(str(bare))


def test_row_converters_need_the_connect_client_libraries_on_3_5():
    """pyspark 3.5 keeps the Arrow/row converters in its Connect client, which imports grpc:
    without it configure() raises FullWindowSetupError naming the spark35 extra, before any
    JVM starts; later lines have them in pyspark.sql.conversion and need no grpc."""
    r = run_python("""
        import sys
        sys.modules["grpc"] = None   # as if grpcio were not installed
        import fullwindow
        from pyspark import SparkContext
        from pyspark.sql import SparkSession
        try:
            fullwindow.configure(SparkSession.builder)
            print("CONFIGURED")
        except fullwindow.FullWindowSetupError as e:
            print("REFUSED", e)
        print("JVM", SparkContext._jvm is not None)
    """)
    try:
        import pyspark.sql.conversion  # noqa: F401
    except ImportError:
        assert "REFUSED" in r.stdout and 'pip install "fullwindow[spark35]"' in r.stdout, \
            r.stdout + r.stderr[-2000:]
    else:
        assert "CONFIGURED" in r.stdout, r.stdout + r.stderr[-2000:]
    assert "JVM False" in r.stdout


def test_numeric_columns_reach_python_as_arrow_gives_them():
    """fullwindow turns boolean, integer and floating columns into Python values through NumPy
    (this line's pyarrow may make one scalar object per value): same values, types and Nones as
    Arrow's own to_pylist, chunked or not."""
    import math

    import pyarrow as pa

    from fullwindow._compat import to_pylist

    columns = [pa.array([1, None, -3], pa.int8()), pa.array([2**63 - 1, None, -2**63], pa.int64()),
               pa.array([2**64 - 1, 0], pa.uint64()), pa.array([1.5, None, float("nan"), 3.4e38], pa.float32()),
               pa.array([0.1, None], pa.float64()), pa.array([True, None, False]),
               pa.array([], pa.int32()), pa.array([None, None], pa.int16()),
               pa.chunked_array([[1, 2], [None, 4]], pa.int32()), pa.array(["a", None])]
    for column in columns:
        ours, arrows = to_pylist(column), column.to_pylist()
        assert len(ours) == len(arrows), column.type
        for a, b in zip(ours, arrows):
            assert type(a) is type(b), column.type
            assert a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b)), column.type
