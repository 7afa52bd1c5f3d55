"""What a Spark Connect session's first fullwindow operation costs on a server whose Python has no
fullwindow: the package's zip (made once per client process), the ServerInfo round trip (once
per session) and sending the zip as a session artifact (once per session).

Starts one Connect server on a free port whose Python workers' interpreter has no fullwindow
(tests/connect/server.py's venv sharing .venv's site-packages), then opens ``--sessions``
pairs of sessions one after the other: in the first it times the ServerInfo round trip and the
artifact upload apart, in the second the first Python operation's definition (what the user
waits for; it includes both, plus the analysis every definition has) and the same definition
again (the analysis only):

    .venv/bin/python -m benchmarks.connect_artifact --sessions 5

Prints each session's figures and the medians.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=5, help="pairs of sessions")
    args = parser.parse_args()
    sys.path[:0] = [os.path.join(ROOT, "tests", "connect"), os.path.join(ROOT, "tests")]
    from server import ConnectServer, python_without_fullwindow

    from pyspark.sql import SparkSession

    import fullwindow  # noqa: F401 - the DataFrame methods
    from fullwindow._connect import artifact

    started = time.perf_counter()
    path = artifact.package_zip()
    zip_ms = (time.perf_counter() - started) * 1000
    size = os.path.getsize(path)
    bare = python_without_fullwindow(os.path.join(tempfile.mkdtemp(), "venv"))
    rows = []
    with ConnectServer(fullwindow=True, python=bare) as server:
        for i in range(args.sessions):
            # session A: the two steps apart
            spark = SparkSession.builder.remote(server.url).create()
            t0 = time.perf_counter()
            artifact.server_state(spark)
            t1 = time.perf_counter()
            artifact.prepare(spark, python=True)
            t2 = time.perf_counter()
            assert artifact.server_state(spark).shipped
            spark.stop()
            # session B: what a user waits for at the first Python operation, and the next
            spark = SparkSession.builder.remote(server.url).create()
            df = spark.range(0, 1000, 1, 2).selectExpr("id % 7 AS k", "id AS v")
            df.schema  # the input's schema, known before the timings

            def define():
                return df.keyBy("k").fullWindowPartition().mapPartition(
                    lambda key, rs: [(key, sum(1 for _ in rs))], "k long, n long")

            t3 = time.perf_counter()
            out = define()
            t4 = time.perf_counter()
            define()
            t5 = time.perf_counter()
            assert artifact.server_state(spark).shipped
            assert sorted(tuple(r) for r in out.collect()) == [
                (k, len(range(k, 1000, 7))) for k in range(7)]
            row = {"info_ms": (t1 - t0) * 1000, "send_ms": (t2 - t1) * 1000,
                   "first_op_ms": (t4 - t3) * 1000, "next_op_ms": (t5 - t4) * 1000}
            rows.append(row)
            print(f"session {i}: " + ", ".join(f"{k} {v:.0f}" for k, v in row.items()), flush=True)
            spark.stop()
    print(f"zip: {size} bytes, made in {zip_ms:.0f} ms (once per client process)")
    for key in rows[0]:
        values = [r[key] for r in rows]
        print(f"median {key}: {statistics.median(values):.0f} "
              f"[{min(values):.0f}-{max(values):.0f}]")
    print(f"load: {os.getloadavg()}")


if __name__ == "__main__":
    main()
