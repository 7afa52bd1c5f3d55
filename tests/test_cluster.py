"""sortPartition on a real Spark standalone cluster: a master and a worker started from the
pyspark install on 127.0.0.1; the driver is a separate Python process whose session gets the jar
to the executors through fullwindow's own configuration (no --jars, no --packages)."""
from __future__ import annotations

import glob
import json
import os

import pytest

import fullwindow

from cluster import StandaloneCluster
from helpers import run_python


@pytest.fixture(scope="module")
def cluster():
    with StandaloneCluster(workers=1, cores=2, memory="1g") as c:
        yield c


def test_sort_partition_on_a_standalone_cluster(cluster):
    r = run_python(f"""
        import json, os
        import fullwindow
        from fullwindow import Order
        spark = fullwindow.session(master="{cluster.url}", conf={{
            "spark.ui.enabled": "false", "spark.executor.memory": "512m",
            "spark.cores.max": "2", "spark.driver.host": "127.0.0.1"}})
        df = spark.range(0, 5000, 1, 4).selectExpr("id", "(id * 7919) % 1013 AS k")
        out = df.fullWindowPartition().sortPartition([("k", Order.DESCENDING), ("id", Order.ASCENDING)])
        parts = out.rdd.mapPartitions(lambda it: [[(r.k, r.id) for r in it]]).collect()
        executors = spark.sparkContext._jsc.sc().getExecutorIds().size()
        print("RESULT", json.dumps({{"parts": parts, "executors": executors,
                                    "plan": out._jdf.queryExecution().executedPlan().toString()}}))
        spark.stop()
    """, timeout=240)
    line = next((l for l in r.stdout.splitlines() if l.startswith("RESULT ")), None)
    assert line, r.stderr[-4000:]
    res = json.loads(line[len("RESULT "):])
    parts = res["parts"]
    assert len(parts) == 4
    assert sorted(i for p in parts for _, i in p) == list(range(5000))
    for p in parts:
        assert p == sorted(p, key=lambda t: (-t[0], t[1]))
    assert "FullWindowSortPartition" in res["plan"] and "Exchange" not in res["plan"]
    # the work ran in executor processes the worker launched, which fetched the package's jar
    assert res["executors"] >= 1
    jar = os.path.basename(fullwindow.jar_path())
    fetched = glob.glob(os.path.join(cluster.logdir, "work", "app-*", "*", jar))
    assert fetched, f"no executor fetched {jar} under {cluster.logdir}/work"
