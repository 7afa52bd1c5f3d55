"""The smoke suite dev/test runs on every Spark line besides the default one, in that line's own
venv with the wheel installed: each operation once, non-keyed and keyed, coGroup, the SQL hint,
an error mapping, and two short kill-and-resume runs of recovering jobs (a full-window one, and a
plain one under whole-job recovery). It asserts results and plans, so a line whose jar or Python
internals do not fit fails here."""
from __future__ import annotations

import os

import pyspark
import pytest
from pyspark.sql import functions as F

import fullwindow
from fullwindow import (AggregateFunction, EndOfStreamWindows, KeyNotSortableError, Order,
                        ProcessWindowFunction)
from fullwindow.errors import FullWindowSetupError
from helpers import executed_plan, kill_when, partitions

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


def test_keyed_python_aggregate_and_reduce_combine_before_the_exchange(df):
    total = {k: sum(r.v for r in df.collect() if r.k == k) for k in range(4)}
    avg = df.keyBy("k").fullWindowPartition().aggregate(Avg(), "avg double")
    assert {r.k: r.avg for r in avg.collect()} == {k: total[k] / 15 for k in range(4)}
    red = df.keyBy("k").reduce(lambda a, b: (a.k, a.v + b.v))
    assert {r.k: r.v for r in red.collect()} == total
    for out, node in ((avg, "FullWindowKeyedAggregate"), (red, "FullWindowKeyedReduce")):
        plan = executed_plan(out)
        assert plan.index("Exchange") < plan.index(f"{node}Combine"), plan


def test_cogroup(spark, df):
    right = spark.range(0, 8).selectExpr("id % 4 AS k", "id AS w")

    def join(key, left, right):
        yield (key, len(list(left)), sum(r.w for r in right))
    out = df.keyBy("k").coGroup(right.keyBy("k")).window(EOS).apply(join, "k long, n long, w long")
    assert {r.k: (r.n, r.w) for r in out.collect()} == {k: (15, k + k + 4) for k in range(4)}

    def join_batches(key, left, right):  # the Arrow form: each side's records as Arrow batches
        import pyarrow as pa
        yield pa.RecordBatch.from_pydict({"k": [key], "n": [sum(b.num_rows for b in left)],
                                          "w": [sum(sum(b.column("w").to_pylist()) for b in right)]})
    out = df.keyBy("k").coGroup(right.keyBy("k")).window(EOS).applyInArrow(
        join_batches, "k long, n long, w long")
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
    # the uninterrupted run's output is computed (expected_rows), not run: the default line's
    # test_recovery_crash runs the job for it once
    from test_recovery_crash import PARTS, Job, expected_rows

    job = Job(tmp_path / "crash", "midway")
    p = job.start("r1", slow=1.5)
    kill_when(p, lambda: len(job.finished(job.fingerprints()[1])) >= 1)
    a, b = job.fingerprints()
    done_b = job.finished(b)
    assert job.finished(a) == PARTS and 1 <= len(done_b) < 4
    job.run("r2")
    assert job.output() == expected_rows()
    assert job.ran("A", "r2") == []
    assert job.ran("B", "r2") == sorted(PARTS - done_b)


def test_whole_job_kill_and_resume(tmp_path):
    """Whole-job recovery (the default scope) on this line: a plain job (Python UDFs, a shuffle
    join, an aggregation, a Parquet write; no full-window operation) killed once 2 of its slow
    map stage's 4 outputs are kept; the resume reads the join's shuffles back, runs only the
    missing map tasks, and writes the uninterrupted run's output (tests/test_recovery_jobscope.py
    has the checks)."""
    from test_recovery_jobscope import Job as WholeJob
    from test_recovery_jobscope import killed_midway_and_resumed

    killed_midway_and_resumed(WholeJob(tmp_path / "whole", "whole"))


def total(key, frames):
    import pandas as pd

    yield pd.DataFrame({"k": [key], "n": [sum(len(f) for f in frames)]})


def frame_sizes(key, frames):
    import pandas as pd

    sizes = [len(f) for f in frames]
    yield pd.DataFrame({"k": [key], "frames": [len(sizes)], "largest": [max(sizes)],
                        "n": [sum(sizes)]})


def test_pandas_forms(spark, df):
    """The pandas forms run on every line: non-keyed and keyed mapPartitionInPandas, keyed and
    coGroup applyInPandas; a key's records come in frames of at most one Arrow batch."""
    out = df.fullWindowPartition().mapPartitionInPandas(
        lambda frames: (f[["k"]] for f in frames), "k long")
    assert out.count() == 60
    keyed = df.keyBy("k")
    per_key = [(k, 15) for k in range(4)]
    assert sorted(tuple(r) for r in keyed.fullWindowPartition().mapPartitionInPandas(
        total, "k long, n long").collect()) == per_key
    assert sorted(tuple(r) for r in keyed.window(EOS).applyInPandas(
        total, "k long, n long").collect()) == per_key
    assert sorted(tuple(r) for r in keyed.coGroup(df.keyBy("k")).window(EOS).applyInPandas(
        lambda key, left, right: total(key, left), "k long, n long").collect()) == per_key
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "4")
    try:  # streamed: 15 records of a key in frames of at most 4 rows, never the whole key
        rows = keyed.window(EOS).applyInPandas(
            frame_sizes, "k long, frames long, largest long, n long").collect()
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    assert sorted(r.k for r in rows) == [0, 1, 2, 3]
    assert all(r.n == 15 and r.largest <= 4 and r.frames >= 4 for r in rows), rows


MIXED = ("k long, i long, s string, t timestamp, d decimal(10,2), st struct<a:int>, "
         "arr array<long>, b binary, dt date, f double")


def describe(pdf):
    """A frame's dtypes and values, rows in ``i`` order, as text to compare."""
    import pandas as pd

    pdf = pdf.sort_values("i").reset_index(drop=True)
    text = "; ".join(f"{c}:{pdf[c].dtype}:{[repr(v) for v in pdf[c]]}" for c in pdf.columns)
    return pd.DataFrame({"k": [int(pdf["k"].iloc[0])], "desc": [text]})


def keyed_frames(key, frames):
    import pandas as pd

    yield pd.concat(list(frames), ignore_index=True)


def test_pandas_frames_and_results_are_this_lines_applyInPandas(spark):
    """The frames a pandas form hands out (dtypes, values, nulls, time zone) and the rows its
    results give are those of this line's own groupBy().applyInPandas."""
    import datetime
    import decimal

    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        data = spark.createDataFrame(
            [(k, i, f"s{i}" if i % 3 else None,
              datetime.datetime(2024, 3, 10, i % 24, 30) if i % 4 else None,
              decimal.Decimal(i) / 4 if i % 5 else None, {"a": i} if i % 2 else None,
              [i, i + 1] if i % 3 != 1 else None, bytes([i]) if i % 2 else None,
              datetime.date(2024, 1, 1 + i % 28), float(i) / 2 if i % 6 else None)
             for k in range(3) for i in range(k * 10, k * 10 + 10)], MIXED).repartition(2)
        theirs = data.groupBy("k").applyInPandas(describe, "k long, desc string")
        ours = data.keyBy("k").window(EOS).applyInPandas(
            lambda key, frames: [describe(next(keyed_frames(key, frames)))],
            "k long, desc string")
        assert sorted(tuple(r) for r in ours.collect()) == \
            sorted(tuple(r) for r in theirs.collect())
        back = data.keyBy("k").window(EOS).applyInPandas(keyed_frames, MIXED)
        same = data.groupBy("k").applyInPandas(lambda pdf: pdf, MIXED)
        assert sorted(back.collect(), key=lambda r: r.i) == sorted(same.collect(),
                                                                    key=lambda r: r.i)
    finally:
        spark.conf.unset("spark.sql.session.timeZone")


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


class SumV(AggregateFunction):
    def create_accumulator(self):
        return 0

    def add(self, value, acc):
        return acc + value.v

    def get_result(self, acc):
        return (acc,)

    def merge(self, a, b):
        return a + b


class CountRows(ProcessWindowFunction):
    def process(self, key, ctx, rows):
        yield (key, sum(1 for _ in rows))


def count_frames(key, parts):
    import pandas as pd

    yield pd.DataFrame({"k": [key], "n": [sum(len(p) for p in parts)]})


def grpc_import(_rows):
    """In a Python worker: what ``import grpc`` does there, and any grpc module it holds."""
    import sys

    try:
        import grpc  # noqa: F401
        said = "importable"
    except ImportError as err:
        said = f"ImportError: {err}"
    yield (said, ",".join(sorted(m for m in sys.modules if m.split(".")[0] == "grpc")))


def test_a_classic_session_runs_every_operation_without_grpc(spark):
    """A classic session needs no Spark Connect client library on any line (on 3.5 too, whose
    pyspark keeps its only Arrow/row converters in its Connect client): with gRPC not importable,
    in the driver and in the Python workers (tests/smoke/conftest.py blocks it for the whole
    suite, whose session is this one), every operation runs."""
    import sys

    with pytest.raises(ImportError):
        import grpc  # noqa: F401
    assert sorted(m for m in sys.modules if m.split(".")[0] == "grpc") == []

    import pyarrow as pa

    df = spark.range(0, 40, 1, 2).selectExpr(
        "id % 4 AS k", "id AS v", "timestamp_seconds(id) AS t", "named_struct('a', id) AS s")
    w, k = df.fullWindowPartition(), df.keyBy("k")
    probes = w.mapPartition(grpc_import, "said string, modules string").collect()
    assert len(probes) == 2 and all(r.said.startswith("ImportError") and r.modules == ""
                                    for r in probes), probes
    right = spark.range(0, 8).selectExpr("id % 4 AS k", "id AS w")
    out = {
        "sortPartition": w.sortPartition("v").count(),
        "mapPartition": sum(r.n for r in w.mapPartition(
            lambda rows: [(sum(1 for r in rows if r.t.year == 1970 and r.s.a == r.v),)],
            "n long").collect()),
        "mapPartitionInArrow": sum(r.n for r in w.mapPartitionInArrow(
            lambda bs: (pa.RecordBatch.from_pydict({"n": [b.num_rows]}) for b in bs),
            "n long").collect()),
        "mapPartitionInPandas": w.mapPartitionInPandas(lambda fs: (f[["k"]] for f in fs),
                                                       "k long").count(),
        "aggregate": sum(r.s for r in w.aggregate(F.sum("v").alias("s")).collect()),
        "aggregate Python": sum(r.s for r in w.aggregate(SumV(), "s long").collect()),
        "reduce": sum(r.v for r in w.reduce(lambda a, b: (a.k, a.v + b.v, a.t, a.s)).collect()),
        "process": sorted(list(r) for r in w.process(CountRows(), "k long, n long").collect()),
        "keyed mapPartition": sorted(list(r) for r in k.fullWindowPartition().mapPartition(
            lambda key, rows: [(key, sum(1 for _ in rows))], "k long, n long").collect()),
        "keyed mapPartitionInPandas": sorted(
            list(r) for r in k.fullWindowPartition().mapPartitionInPandas(
                count_frames, "k long, n long").collect()),
        "keyed aggregate": sorted(list(r) for r in k.window(EOS).aggregate(
            SumV(), "s long").collect()),
        "keyed reduce": sorted(r.v for r in k.window(EOS).reduce(
            lambda a, b: (a.k, a.v + b.v, a.t, a.s)).collect()),
        "keyed process": sorted(list(r) for r in k.window(EOS).process(
            CountRows(), "k long, n long").collect()),
        "keyed applyInPandas": sorted(list(r) for r in k.window(EOS).applyInPandas(
            count_frames, "k long, n long").collect()),
        "coGroup apply": sorted(list(r) for r in k.coGroup(right.keyBy("k")).window(EOS).apply(
            lambda key, l, r: [(key, sum(1 for _ in l), sum(x.w for x in r))],
            "k long, n long, w long").collect()),
        "coGroup applyInPandas": sorted(
            list(r) for r in k.coGroup(right.keyBy("k")).window(EOS).applyInPandas(
                lambda key, l, r: count_frames(key, l), "k long, n long").collect()),
    }
    per_key = [[k, 10] for k in range(4)]
    total = sum(range(40))
    assert out == {
        "sortPartition": 40, "mapPartition": 40, "mapPartitionInArrow": 40,
        "mapPartitionInPandas": 40, "aggregate": total, "aggregate Python": total,
        "reduce": total, "process": [[None, 20], [None, 20]], "keyed mapPartition": per_key,
        "keyed mapPartitionInPandas": per_key,
        "keyed aggregate": [[k, sum(range(k, 40, 4))] for k in range(4)],
        "keyed reduce": [sum(range(k, 40, 4)) for k in range(4)], "keyed process": per_key,
        "keyed applyInPandas": per_key,
        "coGroup apply": [[k, 10, k + k + 4] for k in range(4)],
        "coGroup applyInPandas": per_key}
    assert sorted(m for m in sys.modules if m.split(".")[0] == "grpc") == []


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


def test_recovery_on_s3_or_its_refusal(spark, tmp_path):
    """Recovery with its directory on S3 (moto's server, through this line's S3A). Hadoop 3.4.2
    and later (Spark 4.1+) have S3A's conditional writes: a finished job's rerun recovers every
    partition and computes none. Hadoop 3.4.1 (Spark 4.0) has none: the job is refused when it
    opens, with a ConfigurationError naming what is missing and the Hadoop it needs. Spark 3.5's
    Hadoop 3.3.4 has no S3A on the AWS SDK v2 (the same refusal, not run here: its SDK v1 bundle
    is 280 MB)."""
    from s3 import SESSION, MotoS3, S3AUnsupported
    from test_recovery_s3 import S3Job

    if isinstance(SESSION["error"], S3AUnsupported):
        pytest.skip(str(SESSION["error"]))
    assert SESSION["classpath"], SESSION["error"]
    hadoop = spark.sparkContext._jvm.org.apache.hadoop.util.VersionInfo.getVersion()
    with MotoS3() as server:
        server.bucket = server.make_bucket("fw-smoke")
        job = S3Job(tmp_path, "smoke", server)
        if tuple(int(x) for x in hadoop.split(".")[:3]) >= (3, 4, 2):
            job.run("r1")
            first = job.output()
            job.run("r2")
            assert job.ran("A", "r2") == [] and job.ran("B", "r2") == []
            assert first and job.output() == first
        else:
            p = job.start("r1")
            assert p.wait(300) != 0
            log = job.log("r1")
            assert "ConfigurationError" in log and f"Hadoop {hadoop}" in log, log[-3000:]
            assert "has no conditional writes" in log and "create-if-absent" in log
