"""The Spark Connect smoke suite dev/test runs on every Spark line besides the default one (whose
whole Connect suite, tests/connect, runs), in that line's venv with the wheel installed: each
operation once from a Spark Connect client (non-keyed, keyed in BATCH and STREAMING mode,
coGroup, the SQL hint), operator metrics, error mappings, and a real Connect server process
without fullwindow's plugin. It asserts results and plans, so a line whose plugin, generated
protobuf code or Connect client internals do not fit fails here."""
from __future__ import annotations

import os
import zipfile

import pytest
from pyspark.errors import PythonException
from pyspark.sql import functions as F

import fullwindow
from fullwindow import (AggregateFunction, ConfigurationError, EndOfStreamWindows,
                        KeyNotSortableError, Order, ProcessWindowFunction)
from fullwindow._backend import PLUGIN_CLASS, ConnectBackend, backend
from fullwindow.errors import FullWindowValueError

EOS = EndOfStreamWindows.get()


@pytest.fixture(scope="module")
def df(spark):
    return spark.range(0, 60, 1, 3).selectExpr("id % 4 AS k", "id * 7 % 50 AS v")


def plan(out) -> str:
    return out._explain_string(mode="simple")


def test_the_lines_jar_carries_the_plugin_and_the_session_is_connect(spark, df):
    with zipfile.ZipFile(fullwindow.jar_path()) as z:
        assert PLUGIN_CLASS.replace(".", "/") + ".class" in z.namelist()
    assert type(spark).__module__.startswith("pyspark.sql.connect")
    assert isinstance(backend(df), ConnectBackend)


def test_sort_partition(df):
    out = df.fullWindowPartition().sortPartition([("k", Order.ASCENDING), ("v", Order.DESCENDING)])
    tagged = out.select(F.spark_partition_id().alias("p"),
                        F.monotonically_increasing_id().alias("i"), "k", "v").collect()
    parts: dict = {}
    for r in sorted(tagged, key=lambda r: (r.p, r.i)):
        parts.setdefault(r.p, []).append((r.k, r.v))
    assert len(parts) == 3 and sum(map(len, parts.values())) == 60
    for p in parts.values():
        assert p == sorted(p, key=lambda kv: (kv[0], -kv[1]))
    assert "FullWindowSortPartition" in plan(out) and "Exchange" not in plan(out)


def count_sum(rows):
    n = t = 0
    for r in rows:
        n, t = n + 1, t + r.v
    yield (n, t)


def test_map_partition_and_arrow(df):
    rows = df.fullWindowPartition().mapPartition(count_sum, "n long, t long").collect()
    assert sorted(r.n for r in rows) == [20, 20, 20]
    assert sum(r.t for r in rows) == sum(r.v for r in df.collect())

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


class Count(ProcessWindowFunction):
    def process(self, key, ctx, rows):
        yield (key, sum(1 for _ in rows), ctx.firing_info.name)


def test_aggregate_reduce_and_process(df):
    jvm = df.fullWindowPartition().aggregate(F.sum("v").alias("s"), F.count("*").alias("n"))
    assert sorted(r.n for r in jvm.collect()) == [20, 20, 20]
    assert "FullWindowAggregate" in plan(jvm)
    py = df.fullWindowPartition().aggregate(Avg(), "avg double").collect()
    assert len(py) == 3
    red = df.fullWindowPartition().reduce(lambda a, b: (a.k, a.v + b.v)).collect()
    assert sum(r.v for r in red) == sum(r.v for r in df.collect())
    proc = df.fullWindowPartition().process(Count(), "k long, n long, why string").collect()
    assert sorted((r.n, r.why) for r in proc) == [(20, "ON_TIME")] * 3


def test_keyed_operations(df):
    total = {k: sum(r.v for r in df.collect() if r.k == k) for k in range(4)}

    def per_key(key, rows):
        rows = list(rows)
        yield (key, len(rows), sum(r.v for r in rows))
    out = df.keyBy("k").fullWindowPartition().mapPartition(per_key, "k long, n long, t long")
    assert {r.k: (r.n, r.t) for r in out.collect()} == {k: (15, total[k]) for k in range(4)}
    assert "FullWindowKeyedMapPartition" in plan(out)
    agg = df.keyBy("k").window(EOS).aggregate(F.sum("v").alias("s"))
    assert {r.k: r.s for r in agg.collect()} == total
    red = df.keyBy("k").window(EOS).reduce(lambda a, b: (a.k, a.v + b.v))
    assert {r.k: r.v for r in red.collect()} == total
    srt = df.keyBy("k").fullWindowPartition().sortPartition("v")
    assert sorted(r.v for r in srt.collect()) == sorted(r.v for r in df.collect())
    proc = df.keyBy("k").window(EOS).process(Count(), "k long, n long, why string")
    assert sorted(tuple(r) for r in proc.collect()) == [(k, 15, "ON_TIME") for k in range(4)]


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


def test_cogroup(spark, df):
    right = spark.range(0, 8).selectExpr("id % 4 AS k", "id AS w")

    def join(key, left, right):
        yield (key, len(list(left)), sum(r.w for r in right))
    out = df.keyBy("k").coGroup(right.keyBy("k")).window(EOS).apply(join, "k long, n long, w long")
    assert {r.k: (r.n, r.w) for r in out.collect()} == {k: (15, k + k + 4) for k in range(4)}


def test_sql_hint(spark, df):
    df.createOrReplaceTempView("smoke_connect_t")
    q = spark.sql("SELECT /*+ FULL_WINDOW_PARTITION */ sum(v) AS s, count(*) AS n "
                  "FROM smoke_connect_t")
    assert sorted(r.n for r in q.collect()) == [20, 20, 20]
    assert "Exchange" not in plan(q)


def test_operator_metrics(df):
    out = df.keyBy("k").fullWindowPartition().mapPartition(
        lambda key, rows: [(key, sum(1 for _ in rows))], "k long, n long")
    with pytest.raises(FullWindowValueError, match="run an action on it first"):
        fullwindow.operator_metrics(out)
    assert sorted(tuple(r) for r in out.collect()) == [(k, 15) for k in range(4)]
    m = fullwindow.operator_metrics(out)
    assert m["FullWindowKeyedMapPartition.numInputRows"] == 60
    assert m["FullWindowKeyedMapPartition.numOutputRows"] == 4


def test_error_mappings(spark, df):
    bad = spark.createDataFrame([({"a": 1},)], "m map<string,int>")
    with pytest.raises(KeyNotSortableError):
        bad.fullWindowPartition().sortPartition("m").collect()

    def explode(rows):
        for r in rows:
            if r.v == 7:
                raise KeyError(f"bad record {r.v}")
            yield (r.v,)
    with pytest.raises(PythonException) as e:
        df.fullWindowPartition().mapPartition(explode, "v long").collect()
    assert "KeyError: 'bad record 7'" in str(e.value) and "in explode" in str(e.value)
    spark.conf.set("spark.fullwindow.recovery.enabled", "true")
    try:
        with pytest.raises(ConfigurationError, match="needs a classic SparkSession"):
            df.fullWindowPartition().sortPartition("v")
    finally:
        spark.conf.unset("spark.fullwindow.recovery.enabled")


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
