"""Recovery after a driver crash for keyed full-window operations and coGroup, with real
processes: the driver of tests/recovery_keyed_job.py (keyed mapPartition K, then a coGroup C of
its result with a small table) is killed with SIGKILL midway and started again with the same job
id. The output must equal an uninterrupted run's, and the markers the user functions leave (one
per key handled) show which partitions ran again. Also: partition layouts that change between
runs under adaptive execution reuse nothing, and the SQL hint forms recover."""
from __future__ import annotations

import os
import time

import pytest

from fullwindow.recovery import job_events
from helpers import RecoveryJob, kept_conf, kill_when

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JOB = os.path.join(ROOT, "tests", "recovery_keyed_job.py")


class Job(RecoveryJob):
    script = JOB

    def __init__(self, base, name: str, recovery: bool = True, commit_input: bool = True):
        super().__init__(base, name, recovery)
        self.commit_input = commit_input

    def options(self, coalesce: str | None = None) -> dict:
        return {"COALESCE": coalesce, "COMMIT_INPUT": None if self.commit_input else "false"}

    def fingerprint(self, operator: str) -> str | None:
        """The last fingerprint initialized for ``operator`` ("keyed mapPartition", "coGroup")."""
        fp = None
        for e in self.events():
            if e["type"] == "vertexInitialized" and e["operator"] == operator:
                fp = e["fingerprint"]
        return fp

    def vertex(self, fp: str) -> dict:
        return [e for e in self.events()
                if e["type"] == "vertexInitialized" and e["fingerprint"] == fp][-1]

    def ran(self, stage: str, run: str) -> list[tuple[int, int]]:
        """(partition, key) each time ``stage``'s function handled a key during ``run``."""
        out = []
        for n in os.listdir(self.marks):
            s, part, key, r, _ = n.split("-")
            if s == stage and r == run:
                out.append((int(part), int(key)))
        return sorted(out)


def keys_of(pairs, partitions) -> list[tuple[int, int]]:
    return sorted(pk for pk in pairs if pk[0] in partitions)


@pytest.fixture(scope="module")
def reference(spark):
    """An uninterrupted run without recovery: its rows and which partition each key is in. The
    job's own operations (tests/recovery_keyed_job.py ``operations``: K, then C over it) in the
    test's session, with the job's partitioning settings (4 shuffle partitions, adaptive
    execution on, no coalescing): a driver started only for it cost a JVM start (issue 49).
    Each K and C call gives one row, so the rows of each operation with the partition they were
    computed in are the (partition, key) pairs the job's markers name."""
    from pyspark.sql import functions as F

    from recovery_keyed_job import operations

    assert spark.conf.get("spark.fullwindow.recovery.enabled", "false") != "true"
    settings = {"spark.sql.shuffle.partitions": "4", "spark.sql.adaptive.enabled": "true",
                "spark.sql.adaptive.coalescePartitions.enabled": "false"}
    with kept_conf(spark, settings):
        for key, value in settings.items():
            spark.conf.set(key, value)
        k, c = operations(spark)
        got = c.withColumn("p", F.spark_partition_id()).collect()  # C's rows, where computed
        rows = sorted(tuple(r)[:-1] for r in got)
        c_keys = sorted((r.p, r.k) for r in got)
        k_keys = sorted((r.p, r.k) for r in
                        k.select(F.spark_partition_id().alias("p"), "k").collect())
    assert len(rows) == 13 and sum(r[1] for r in rows) == 4000 and all(r[4] == 2 for r in rows)
    # (k, n, total, wsum, wn): count and sum of v = 2 * id over the ids 0 to 3999 with
    # id % 13 = k; the small table's w = k and k + 13
    assert rows == sorted((k, len(range(k, 4000, 13)), sum(2 * i for i in range(k, 4000, 13)),
                           2 * k + 13, 2) for k in range(13))
    # each key once; 4 partitions (no coalescing)
    assert sorted(key for _, key in k_keys) == list(range(13)) and {p for p, _ in k_keys} <= {
        0, 1, 2, 3}
    assert sorted(key for _, key in c_keys) == list(range(13)) and {p for p, _ in c_keys} <= {
        0, 1, 2, 3}
    return rows, k_keys, c_keys


def test_killed_midway_through_a_keyed_stage(tmp_path, reference):
    rows, k_keys, c_keys = reference
    job = Job(tmp_path, "keyed")
    p = job.start("r1", slow=0.7)
    kill_when(p, lambda: len(job.finished(job.fingerprint("keyed mapPartition"))) >= 1)
    k = job.fingerprint("keyed mapPartition")
    done = job.finished(k)
    assert job.vertex(k)["numPartitions"] == 4 and 1 <= len(done) < 4
    assert job.fingerprint("coGroup") is None
    job.run("r2")
    assert job.output() == rows
    # the keyed function ran again for exactly the keys of the partitions that had not finished
    # (each once), and never for a key of a finished partition
    assert job.ran("K", "r2") == keys_of(k_keys, set(range(4)) - done)
    assert job.ran("K", "r1")  # (it did run in r1 before the kill)
    assert job.ran("C", "r2") == c_keys


def test_killed_during_a_cogroup_then_a_lost_file_and_a_changed_function(tmp_path, reference):
    rows, k_keys, c_keys = reference
    job = Job(tmp_path, "cogroup")
    p = job.start("r1", slow=0.4)
    kill_when(p, lambda: len(job.finished(job.fingerprint("coGroup"))) >= 1)
    k, c = job.fingerprint("keyed mapPartition"), job.fingerprint("coGroup")
    assert job.finished(k) == {0, 1, 2, 3}
    done = job.finished(c)
    assert 1 <= len(done) < 4
    job.run("r2")
    assert job.output() == rows
    assert job.ran("K", "r2") == []  # K wholly recovered: its input is not even read
    assert job.ran("C", "r2") == keys_of(c_keys, set(range(4)) - done)

    # a deleted committed output of the coGroup: that partition alone runs again
    part = next(p for p, _ in c_keys)
    victim = [e for e in job.events() if e["type"] == "taskFinished"
              and e["fingerprint"] == c and e["partition"] == part][-1]["path"]
    os.remove(victim)
    job.run("r3")
    assert job.output() == rows
    assert job.ran("K", "r3") == [] and job.ran("C", "r3") == keys_of(c_keys, {part})
    assert any(e["type"] == "vertexReset" and e["fingerprint"] == c and e["partitions"] == [part]
               for e in job.events())

    # a changed keyed function: K reuses nothing, nor does the coGroup downstream of it
    job.run("r4", variant="2")
    assert job.output() == rows
    assert job.ran("K", "r4") == k_keys and job.ran("C", "r4") == c_keys
    assert job.fingerprint("keyed mapPartition") != k and job.fingerprint("coGroup") != c


def _append_events(job: Job, events: list[dict]) -> None:
    from fullwindow.recovery.eventstore import encode_record

    d = os.path.join(job.dir, job.name, "events")
    with open(os.path.join(d, f"segment-{int(time.time() * 1000):015d}-0-forged.log"), "wb") as f:
        for e in events:
            f.write(encode_record(e))


def _lose(job: Job, fp: str, partition: int) -> None:
    """Deletes the last committed output of ``partition`` of operator ``fp``."""
    os.remove([e for e in job.events() if e["type"] == "taskFinished" and e["fingerprint"] == fp
               and e["partition"] == partition][-1]["path"])


def test_a_different_partition_layout_reuses_nothing(tmp_path, reference):
    """Adaptive execution coalesces the keyed stage's shuffle partitions by size, so a run can
    lay the operation out differently from the run that committed it: then partition i holds
    other keys, and nothing committed is reused (partly recovered operations only: a wholly
    recovered one is read back whole, whatever its partitions). Without its shuffle input
    committed, as here: a committed input is read back split as the run that committed it read
    it, so the layout stays the same (tests/test_recovery_input.py)."""
    rows, _, _ = reference
    job = Job(tmp_path, "layout", commit_input=False)
    job.run("r1", coalesce="1")  # a tiny advisory size: small partitions only are merged
    k = job.fingerprint("keyed mapPartition")
    n1, first = job.vertex(k)["numPartitions"], job.vertex(k)["layout"]
    k_keys = job.ran("K", "r1")
    assert n1 >= 2 and sorted(key for _, key in k_keys) == list(range(13))

    # a lost output makes K partly recovered (and one of C, downstream, so that C, and so K,
    # run at all). Coalesced the same way again, the other partitions are reused
    lost = k_keys[0][0]
    c = job.fingerprint("coGroup")
    _lose(job, k, lost)
    _lose(job, c, 0)
    job.run("r1b", coalesce="1")
    assert job.output() == rows
    assert job.vertex(k)["layout"] == first and job.vertex(k)["recovered"] == n1 - 1
    assert job.ran("K", "r1b") == [pk for pk in k_keys if pk[0] == lost]

    # the same loss, and this run coalesces everything into one partition: nothing is reused
    _lose(job, k, lost)
    _lose(job, c, 0)
    job.run("r2", coalesce="64m")
    assert job.output() == rows
    assert job.vertex(k)["numPartitions"] == 1 and job.vertex(k)["recovered"] == 0
    assert sorted(key for _, key in job.ran("K", "r2")) == list(range(13))  # every key ran

    # the same partition count under another layout: forge a record of the r1 partitions
    # (all but the lost one, so K is only partly recovered) as if laid out otherwise
    r1 = [e for e in job.events() if e["type"] == "taskFinished" and e["fingerprint"] == k
          and e.get("layout") == first and e["partition"] != lost]
    assert len(r1) == n1 - 1
    forged = [{"type": "vertexInitialized", "fingerprint": k, "operator": "keyed mapPartition",
               "numPartitions": n1, "layout": "0123456789abcdef", "inputs": []}]
    forged += [dict(e, layout="0123456789abcdef") for e in r1]
    _append_events(job, forged)
    _lose(job, c, 0)  # C's only r2 partition: C runs again, so K runs
    job.run("r3", coalesce="1")
    assert job.output() == rows
    assert job.vertex(k)["layout"] == first and job.vertex(k)["recovered"] == 0
    assert job.ran("K", "r3") == k_keys  # every partition ran: nothing reused


SQL_JOB = r"""
import os, sys
import fullwindow
from pyspark.sql import functions as F
spark = fullwindow.session(master="local[2]", conf={
    "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4",
    "spark.fullwindow.recovery.enabled": "true", "spark.fullwindow.recovery.dir": os.environ["FW_DIR"],
    "spark.fullwindow.recovery.jobId": "sql", "spark.fullwindow.eventStore.flushInterval": "200ms"})
spark.sparkContext.setLogLevel("ERROR")
# no fullwindow.recovery.start(spark): fullwindow.session() opens the job itself
spark.range(0, 3000, numPartitions=3).select((F.col("id") % 7).alias("k"), "id") \
    .createOrReplaceTempView("t")
s = spark.sql("SELECT /*+ FULL_WINDOW_PARTITION */ k, id FROM t ORDER BY id DESC")
a = spark.sql("SELECT /*+ FULL_WINDOW_PARTITION */ k, sum(id) AS total, count(*) AS n "
              "FROM t GROUP BY k")
print("PLAN", s._jdf.queryExecution().analyzed().toString().splitlines()[0])
print("PLAN", a._jdf.queryExecution().analyzed().toString().splitlines()[0])
print("SORTED", [list(p) == sorted(p, reverse=True)
                 for p in s.rdd.map(lambda r: r.id).glom().collect()])
print("AGG", sorted(tuple(r) for r in a.collect()))
fullwindow.recovery.flush(spark)
print("SQL DONE")
"""


def test_sql_hint_forms_are_committed_and_recovered(tmp_path):
    from helpers import run_python

    d = str(tmp_path / "rec")
    r1 = run_python(SQL_JOB, env={"FW_DIR": d})
    assert r1.returncode == 0 and "SQL DONE" in r1.stdout, r1.stderr[-3000:]
    plans = [line for line in r1.stdout.splitlines() if line.startswith("PLAN")]
    assert plans == ["PLAN FullWindowCommit sql sortPartition " + plans[0].split()[-1],
                     "PLAN FullWindowCommit sql aggregate " + plans[1].split()[-1]]
    events = job_events(d, "sql")
    ops = {e["operator"] for e in events if e["type"] == "vertexInitialized"}
    assert ops == {"sql sortPartition", "sql aggregate"}
    assert len([e for e in events if e["type"] == "taskFinished"]) == 6
    out1 = [line for line in r1.stdout.splitlines() if line.startswith(("SORTED", "AGG"))]

    r2 = run_python(SQL_JOB, env={"FW_DIR": d})
    assert r2.returncode == 0 and "SQL DONE" in r2.stdout, r2.stderr[-3000:]
    plans = [line for line in r2.stdout.splitlines() if line.startswith("PLAN")]
    assert all(p.startswith("PLAN FullWindowRecoveredScan sql ") for p in plans), plans
    assert [line for line in r2.stdout.splitlines() if line.startswith(("SORTED", "AGG"))] == out1
    assert "SORTED [True, True, True]" in out1

    # a lost output of the hinted sort: that partition alone is computed again
    sort_fp = next(e["fingerprint"] for e in events if e["operator"] == "sql sortPartition")
    lost = [e for e in events if e["type"] == "taskFinished" and e["fingerprint"] == sort_fp][0]
    os.remove(lost["path"])
    r3 = run_python(SQL_JOB, env={"FW_DIR": d})
    assert r3.returncode == 0 and "SQL DONE" in r3.stdout, r3.stderr[-3000:]
    assert [line for line in r3.stdout.splitlines() if line.startswith(("SORTED", "AGG"))] == out1
    after = job_events(d, "sql")[len(events):]
    assert [e["partitions"] for e in after if e["type"] == "vertexReset"] == [[lost["partition"]]]
    assert [e["recovered"] for e in after if e["type"] == "vertexInitialized"] == [2]
    assert [e["partition"] for e in after if e["type"] == "taskFinished"] == [lost["partition"]]


# ---- every keyed form, in this process: committed, then read back whole -------------------------

class _Mean(__import__("fullwindow").AggregateFunction):
    def create_accumulator(self):
        return (0, 0)

    def add(self, row, acc):
        return (acc[0] + row.v, acc[1] + 1)

    def get_result(self, acc):
        return {"n": acc[1], "mean": acc[0] / acc[1]}

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])


class _Count(__import__("fullwindow").ProcessWindowFunction):
    def process(self, key, ctx, rows):
        yield (key, sum(1 for _ in rows))


def _count(key, rows):
    yield (key, sum(1 for _ in rows))


def _arrow_count(key, batches):
    import pyarrow as pa

    yield pa.RecordBatch.from_pylist([{"k": key, "n": sum(b.num_rows for b in batches)}])


def _bigger(a, b):
    return a if a.v >= b.v else b


def _cogroup(key, left, right):
    yield (key, sum(1 for _ in left), sum(1 for _ in right))


def _keyed_forms(spark):
    from pyspark.sql import functions as F

    from fullwindow import EndOfStreamWindows

    df = spark.range(0, 300, numPartitions=3).select((F.col("id") % 5).alias("k"),
                                                     (F.col("id") * 3 % 7).alias("v"))
    other = spark.range(0, 20, numPartitions=2).select((F.col("id") % 4).alias("k"), "id")
    kp, w = df.keyBy("k").fullWindowPartition(), df.keyBy("k").window(EndOfStreamWindows.get())
    return {
        "keyed mapPartition": kp.mapPartition(_count, "k long, n long"),
        "keyed mapPartitionInArrow": kp.mapPartitionInArrow(_arrow_count, "k long, n long"),
        "keyed sortPartition": kp.sortPartition("v"),
        "keyed sortPartition selector": kp.sortPartition(lambda r: -r.v, key_type=None),
        "keyed aggregate": kp.aggregate(F.sum("v").alias("total")),
        "keyed aggregate function": kp.aggregate(_Mean(), "mean double, n long"),
        "keyed reduce": kp.reduce(_bigger),
        "keyed process": kp.process(_Count(), "k long, n long"),
        "keyed apply": w.apply(_count, "k long, n long"),
        "window process": w.process(_Count(), "k long, n long"),
        "window aggregate": w.aggregate(_Mean(), "mean double, n long"),
        "window reduce": w.reduce(_bigger),
        "keyBy reduce": df.keyBy("k").reduce(_bigger),
        "coGroup": df.keyBy("k").coGroup(other.keyBy("k")).window(EndOfStreamWindows.get())
                     .apply(_cogroup, "k long, l long, r long"),
    }


def _running_reduce(spark):
    from pyspark.sql import functions as F

    spark.conf.set("spark.fullwindow.runtimeMode", "STREAMING")
    try:
        df = spark.range(0, 60, numPartitions=3).select((F.col("id") % 4).alias("k"),
                                                       (F.col("id") * 5 % 11).alias("v"))
        return df.keyBy("k").reduce(_bigger)  # one running row per input record
    finally:
        spark.conf.unset("spark.fullwindow.runtimeMode")


def test_every_keyed_form_is_committed_then_recovered(spark, tmp_path):
    import fullwindow
    from fullwindow.recovery._jobs import _runtime

    keys = {"spark.fullwindow.recovery.enabled": "true",
            "spark.fullwindow.recovery.dir": str(tmp_path),
            "spark.fullwindow.recovery.jobId": "forms",
            "spark.fullwindow.eventStore.flushInterval": "100ms"}
    for k, v in keys.items():
        spark.conf.set(k, v)
    try:
        def top(df):
            return df._jdf.queryExecution().analyzed().toString().splitlines()[0]

        first = _keyed_forms(spark)
        first["keyBy reduce STREAMING"] = _running_reduce(spark)
        results = {}
        for name, df in first.items():
            assert top(df).startswith("FullWindowCommit "), (name, top(df))
            results[name] = sorted(tuple(r) for r in df.collect())
        assert results["keyed mapPartition"] == [(k, 60) for k in range(5)]
        assert len(results["keyBy reduce STREAMING"]) == 60
        fullwindow.recovery.flush(spark)
        fingerprints = {top(df).split()[-1] for df in first.values()}
        # one per distinct computation: the window spellings of reduce, process and aggregate
        # and keyBy().reduce are the same operations as their fullWindowPartition() forms
        assert len(fingerprints) == len(first) - 4
        _runtime.close_job(str(tmp_path / "forms"))  # as if the driver started again
        if not _runtime.jobs:
            assert _runtime.stop.is_set()  # no open job: the JVM is no longer polled

        again = _keyed_forms(spark)
        again["keyBy reduce STREAMING"] = _running_reduce(spark)
        for name, df in again.items():
            assert top(df).startswith("FullWindowRecoveredScan "), (name, top(df))
            assert sorted(tuple(r) for r in df.collect()) == results[name], name
        assert _runtime.thread.is_alive() and not _runtime.stop.is_set()  # polling again
    finally:
        fullwindow.recovery.cleanup(spark)
        for k in keys:
            spark.conf.unset(k)
    if not _runtime.jobs:
        _runtime.thread.join(5)
        assert not _runtime.thread.is_alive()
