"""The pipelines in examples/, run on small data with their results checked: sessionizing clicks
(keyed process with timers), top-N per partition, orders and payments with coGroup, and the
nightly job with recovery on, killed with SIGKILL midway and started again."""
from __future__ import annotations

import datetime as dt
import importlib.util
import os
import subprocess
import sys

import pytest

from helpers import fast_jvm, kill_when, parquet_rows

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")


def example(name: str):
    spec = importlib.util.spec_from_file_location(f"examples_{name}", os.path.join(EXAMPLES, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sessionize_clicks(spark):
    got = [tuple(r) for r in example("sessionize_clicks").main(spark)]
    t = dt.datetime(2024, 6, 1, 9, 0)
    m = dt.timedelta(minutes=1)
    assert got == [
        ("ana", t, t + 12 * m, 3, ["/p0", "/p1", "/p2"]),
        ("ana", t + 95 * m, t + 100 * m, 2, ["/p3", "/p4"]),
        ("bo", t + 3 * m, t + 3 * m, 1, ["/p0"]),
        ("bo", t + 40 * m, t + 41 * m, 2, ["/p1", "/p2"]),
        ("cy", t + 7 * m, t + 7 * m, 1, ["/p0"]),
    ]


def test_top_n_per_partition(spark):
    mod = example("top_n_per_partition")
    got = [tuple(r) for r in mod.main(spark)]
    sales = [(["north", "south", "east"][i // 1000], i, (i * 7919) % 1000 / 10) for i in range(3000)]
    expected = []
    for store in ("east", "north", "south"):
        mine = sorted((s for s in sales if s[0] == store), key=lambda s: (-s[2], s[1]))[:3]
        expected += [(store, i, a, rank) for rank, (_, i, a) in enumerate(mine, 1)]
    assert got == expected


def test_top_n_per_partition_in_pandas(spark):
    mod = example("top_n_per_partition")
    expected = [tuple(r) for r in mod.main(spark)]
    with_pandas = mod.top_sales(mod.sales(spark), use_pandas=True).orderBy("store", "rank")
    assert [tuple(r) for r in with_pandas.collect()] == expected


def test_orders_and_payments(spark):
    mod = example("orders_payments")
    got = [tuple(r) for r in mod.main(spark)]
    assert got == [
        (1, "ana", 30.0, 30.0, 1, "paid"),
        (2, "bo", 12.5, 10.0, 1, "partly paid"),
        (3, "cy", 99.0, 110.0, 2, "overpaid"),
        (4, "ana", 5.0, 0.0, 0, "unpaid"),
        (9, None, None, 7.0, 1, "payment without order"),
    ]


def test_orders_and_payments_in_pandas(spark):
    mod = example("orders_payments")
    got = [tuple(r) for r in mod.main(spark)]
    with_pandas = mod.reconciled(*mod.sample(spark), use_pandas=True).orderBy("order_id")
    assert [tuple(r) for r in with_pandas.collect()] == got


def _nightly(tmp_path, name: str, job_id: str, slow: float = 0.0) -> subprocess.Popen:
    env = fast_jvm(dict(os.environ, NIGHTLY_SLOW=str(slow), PYTHONPATH=os.pathsep.join(
        [os.path.join(ROOT, "python"), os.environ.get("PYTHONPATH", "")])))
    log = open(tmp_path / f"{name}.log", "w")
    return subprocess.Popen(
        [sys.executable, os.path.join(EXAMPLES, "nightly_recovery.py"), "--dir", str(tmp_path / "state"),
         "--job-id", job_id, "--out", str(tmp_path / f"out-{name}"), "--rows", "4000"],
        env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True)


def test_nightly_job_killed_and_resumed(tmp_path):
    from fullwindow.recovery import job_events

    def finished():
        try:
            return [e for e in job_events(str(tmp_path / "state"), "nightly")
                    if e["type"] == "taskFinished" and e["operator"] == "keyed mapPartitionInPandas"]
        except Exception:  # noqa: BLE001 - nothing written yet
            return []

    reference = _nightly(tmp_path, "reference", "reference")
    assert reference.wait(300) == 0, (tmp_path / "reference.log").read_text()[-3000:]
    expected = parquet_rows(str(tmp_path / "out-reference"))
    assert len(expected) == 40 * 7

    killed = _nightly(tmp_path, "killed", "nightly", slow=0.6)
    kill_when(killed, lambda: len(finished()) >= 1)
    done = {e["partition"] for e in finished()}
    assert 1 <= len(done) < 4

    resumed = _nightly(tmp_path, "resumed", "nightly")
    assert resumed.wait(300) == 0, (tmp_path / "resumed.log").read_text()[-3000:]
    assert "JOB DONE" in (tmp_path / "resumed.log").read_text()
    assert parquet_rows(str(tmp_path / "out-resumed")) == expected
    # the resumed run committed only the partitions the killed one had not finished
    again = [e["partition"] for e in finished()]
    assert sorted(again[len(done):]) == sorted(set(range(4)) - done), again
