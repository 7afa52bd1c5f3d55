"""A Spark Connect client process for tests/connect/test_connect_remote.py: runs fullwindow's
operations on a remote server and prints one line, ``RESULT <json>`` or ``SETUP <json>``.

``python remote_client.py URL all``: every Python form (non-keyed, keyed, coGroup; rows,
pandas and Arrow), plus the two JVM-only ones, on one session.
``python remote_client.py URL sessions``: two sessions of this process at once; the second
runs a plain pyspark UDF that imports fullwindow before any fullwindow operation of its own."""
from __future__ import annotations

import json
import sys
import time


def every_operation(spark) -> dict:
    import pyarrow as pa
    from pyspark.sql import functions as F

    from fullwindow import EndOfStreamWindows, ProcessWindowFunction
    from fullwindow._connect.artifact import server_state

    df = spark.range(0, 100, 1, 4).selectExpr("id % 7 AS k", "id AS v")
    other = spark.range(0, 30, 1, 2).selectExpr("id % 10 AS k", "id AS w")
    keyed = df.keyBy("k")

    class Count(ProcessWindowFunction):
        def process(self, key, ctx, rows):
            vs = [r.v for r in rows]
            yield (key if key is not None else -1, len(vs), sum(vs))

    def arrow_totals(batches):
        n = total = 0
        for b in batches:
            n += b.num_rows
            total += sum(b.column("v").to_pylist())
        yield pa.RecordBatch.from_pydict({"n": [n], "total": [total]})

    def pandas_totals(frames):
        import pandas as pd

        n = total = 0
        for f in frames:
            n, total = n + len(f), total + int(f["v"].sum())
        yield pd.DataFrame({"n": [n], "total": [total]})

    started = time.perf_counter()
    first = df.fullWindowPartition().mapPartition(
        lambda rows: (lambda vs: [(len(vs), sum(vs))])([r.v for r in rows]), "n long, total long")
    first_ms = (time.perf_counter() - started) * 1000
    lazy = {
        "partition_rows": first,
        "partition_arrow": df.fullWindowPartition().mapPartitionInArrow(
            arrow_totals, "n long, total long"),
        "partition_pandas": df.fullWindowPartition().mapPartitionInPandas(
            pandas_totals, "n long, total long"),
        "partition_reduce": df.fullWindowPartition().reduce(
            lambda a, b: a if a.v >= b.v else b).selectExpr("k", "v"),
        "partition_process": df.fullWindowPartition().process(Count(), "k long, n long, total long")
        .selectExpr("n", "total"),
        "partition_sort": df.fullWindowPartition().sortPartition("v").selectExpr("v"),
        "keyed_rows": keyed.fullWindowPartition().mapPartition(
            lambda key, rows: (lambda vs: [(key, len(vs), sum(vs))])([r.v for r in rows]),
            "k long, n long, total long"),
        "keyed_arrow": keyed.fullWindowPartition().mapPartitionInArrow(
            lambda key, batches: (lambda t: [pa.RecordBatch.from_pydict(
                {"k": [key], "n": [t[0]], "total": [t[1]]})])(
                [sum(x) for x in zip(*[(b.num_rows, sum(b.column("v").to_pylist()))
                                       for b in batches])]),
            "k long, n long, total long"),
        "keyed_pandas": keyed.fullWindowPartition().mapPartitionInPandas(
            lambda key, frames: [__import__("pandas").DataFrame(
                {"k": [key], "n": [sum(len(f) for f in frames)]})],
            "k long, n long"),
        "keyed_reduce": keyed.fullWindowPartition().reduce(lambda a, b: a if a.v >= b.v else b),
        "keyed_process": keyed.fullWindowPartition().process(Count(), "k long, n long, total long"),
        "keyed_window_apply": keyed.window(EndOfStreamWindows.get()).apply(
            lambda key, rows: [(key, sum(1 for _ in rows))], "k long, n long"),
        "keyed_window_pandas": keyed.window(EndOfStreamWindows.get()).applyInPandas(
            lambda key, frames: [__import__("pandas").DataFrame(
                {"k": [key], "n": [sum(len(f) for f in frames)]})],
            "k long, n long"),
        "keyed_aggregate": keyed.fullWindowPartition().aggregate(F.count("v").alias("n")),
        "cogroup_rows": keyed.coGroup(other.keyBy("k")).window(EndOfStreamWindows.get()).apply(
            lambda key, left, right: [(key, sum(1 for _ in left), sum(1 for _ in right))],
            "k long, nl long, nr long"),
        "cogroup_pandas": keyed.coGroup(other.keyBy("k")).window(
            EndOfStreamWindows.get()).applyInPandas(
            lambda key, left, right: [__import__("pandas").DataFrame(
                {"k": [key], "nl": [sum(len(f) for f in left)],
                 "nr": [sum(len(f) for f in right)]})],
            "k long, nl long, nr long"),
    }
    outs = dict(lazy)
    # the running (upsert) keyed reduce of STREAMING runtime mode: one row per input record
    spark.conf.set("spark.fullwindow.runtimeMode", "STREAMING")
    try:
        outs["keyed_running"] = keyed.reduce(lambda a, b: a if a.v >= b.v else b)
    finally:
        spark.conf.unset("spark.fullwindow.runtimeMode")
    windowed = keyed.coGroup(other.keyBy("k")).window(EndOfStreamWindows.get())
    outs["cogroup_arrow"] = windowed.applyInArrow(
        lambda key, left, right: [pa.RecordBatch.from_pydict(
            {"k": [key], "nl": [sum(b.num_rows for b in left)],
             "nr": [sum(b.num_rows for b in right)]})],
        "k long, nl long, nr long")
    result = {name: sorted(list(r) for r in out.collect()) for name, out in outs.items()}
    state = server_state(spark)
    return {"results": result, "first_ms": first_ms, "spark_version": spark.version,
            "shipped": state.shipped, "sent_bytes": state.sent_bytes,
            "jar_version": state.jar_version, "python_version": state.python_version}


def two_sessions(url: str) -> dict:
    """Session A runs a fullwindow operation (which sends the package to A); session B, open at
    the same time, runs a plain pyspark UDF importing fullwindow before and after its own first
    fullwindow operation."""
    from pyspark.errors import PythonException
    from pyspark.sql import SparkSession

    a = SparkSession.builder.remote(url).create()
    b = SparkSession.builder.remote(url).create()
    assert a.session_id != b.session_id

    def imports_fullwindow(spark) -> str:
        def probe(batches):
            import pyarrow as pa

            import fullwindow
            for batch in batches:
                yield pa.RecordBatch.from_pydict({"v": [fullwindow.__version__] * batch.num_rows})
        try:
            return spark.range(1).mapInArrow(probe, "v string").collect()[0].v
        except PythonException as err:
            return "ERROR " + ("ModuleNotFoundError" if "No module named 'fullwindow'" in str(err)
                               else str(err)[:400])

    def keyed_counts(spark):
        df = spark.range(0, 40, 1, 2).selectExpr("id % 4 AS k", "id AS v")
        return sorted(list(r) for r in df.keyBy("k").fullWindowPartition().mapPartition(
            lambda key, rows: [(key, sum(1 for _ in rows))], "k long, n long").collect())

    out = {"a_counts": keyed_counts(a), "a_import": imports_fullwindow(a),
           "b_import_before": imports_fullwindow(b)}
    out["b_counts"] = keyed_counts(b)
    out["b_import_after"] = imports_fullwindow(b)
    a.stop()
    b.stop()
    return out


def main() -> None:
    url, mode = sys.argv[1], sys.argv[2]
    import fullwindow
    from fullwindow import FullWindowSetupError

    try:
        if mode == "sessions":
            out = two_sessions(url)
        else:
            spark = fullwindow.session(remote=url)
            try:
                out = every_operation(spark)
            finally:
                spark.stop()
        print("RESULT " + json.dumps(out), flush=True)
    except FullWindowSetupError as err:
        print("SETUP " + json.dumps(str(err)), flush=True)


if __name__ == "__main__":
    main()
