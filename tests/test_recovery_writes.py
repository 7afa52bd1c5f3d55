"""Exactly-once writes of a recovered job, with real processes: the driver of
tests/recovery_writes_job.py is killed with SIGKILL (its whole process group) before, during and
inside the commit of its writes, and started again; every target must then hold what an
uninterrupted run writes, once, and a write that committed must not run again (its UDF leaves no
marker in the resumed run)."""
from __future__ import annotations

import glob
import os

import pytest

from helpers import RecoveryJob, kill_when

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JOB = os.path.join(ROOT, "tests", "recovery_writes_job.py")


class Job(RecoveryJob):
    script = JOB
    fresh_output = False  # one set of targets across runs: that is the point here

    #: where the file writes go (None: under ``out``); a Hadoop URI for HDFS or S3
    targets: str | None = None

    def options(self, writes: str = "append,append", extra: str | None = None,
                action_slow: float | None = None, thread_order: str | None = None,
                row_slow: float | None = None, row_hold: str | None = None, **_) -> dict:
        return {"WRITES": writes, "FW_EXTRA_CONF": extra, "TARGETS": self.targets,
                "ACTION_SLOW": None if action_slow is None else str(action_slow),
                "THREAD_ORDER": thread_order,
                "ROW_SLOW": None if row_slow is None else str(row_slow), "ROW_HOLD": row_hold}

    def target(self, i: int, kind: str) -> str:
        if kind in ("saveAsTable", "insertInto", "sql", "ctas"):
            return os.path.join(self.out, "warehouse", f"t{i}")
        return f"{self.targets or self.out}/{i}-{kind}"

    def rows(self, i: int, kind: str) -> list[tuple]:
        """(k, v) rows of write ``i`` (k from the directory names where it is partitioned)."""
        import pyarrow.parquet as pq

        t = pq.read_table(self.target(i, kind))
        return sorted(zip((int(k) for k in t.column("k").to_pylist()), t.column("v").to_pylist()))

    def read(self, spark, i: int, kind: str) -> list[tuple]:
        """(k, v) rows of write ``i`` read with ``spark`` (a target on HDFS or S3)."""
        return sorted((r.k, r.v) for r in spark.read.parquet(self.target(i, kind)).collect())

    def records(self) -> list[str]:
        d = os.path.join(self.dir, self.name, "writes")
        return sorted(os.listdir(d)) if os.path.isdir(d) else []

    def markers(self, i: int, kind: str) -> list[str]:
        d = os.path.join(self.target(i, kind), "_fullwindow")
        return sorted(n for n in os.listdir(d) if not n.startswith(".")) if os.path.isdir(d) else []


def store_markers(spark, target: str) -> list[str]:
    """The names in ``target``'s ``_fullwindow/`` on any Hadoop file system ``spark`` reaches
    (HDFS, S3A), listed through its JVM."""
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(f"{target}/_fullwindow")
    fs = path.getFileSystem(spark._jsparkSession.sessionState().newHadoopConf())
    if not fs.exists(path):
        return []
    return sorted(str(s.getPath().getName()) for s in fs.listStatus(path)
                  if not str(s.getPath().getName()).startswith("."))


# what an uninterrupted run writes: A's rows (k = id % 5, v = id) and B's (v * 10)
A_ROWS = sorted((i % 5, i) for i in range(40))
B_ROWS = sorted((i % 5, i * 10) for i in range(40))


def expected(i: int) -> list[tuple]:
    return A_ROWS if i == 1 else B_ROWS


def kill_while_b_computes_then_resume(job: "Job", rows) -> None:
    """Write 1 (append) committed, the driver killed while B computes; the resumed run skips
    write 1 (nothing recomputed) and writes B once. ``rows(i)``: write i's rows."""
    p = job.start("r1", slow=2.0, writes="append,append")
    kill_when(p, lambda: bool(job.ran("B", "r1")))
    assert rows(1) == A_ROWS
    job.run("r2", writes="append,append")
    assert rows(1) == A_ROWS
    assert rows(2) == B_ROWS
    assert job.ran("W1", "r2") == [] and job.ran("A", "r2") == []


def each_target_has_its_markers(job: "Job", markers) -> None:
    """Each of the two appends' targets holds its own write's markers (its id, the one its
    ``writeCommitted`` event names: the job, the write's fingerprint and occurrence; one write
    job each: the commit protocol found its write by the target), ``markers(i)`` listing target
    i's ``_fullwindow/``."""
    ids = {e["number"]: e["id"] for e in job.events() if e["type"] == "writeCommitted"}
    assert ids[1] != ids[2], ids
    for i in (1, 2):
        names = markers(i)
        assert {n.split(".")[-2] for n in names} >= {"started", "committing", "committed"}, names
        assert {n.rsplit(".", 2)[0] for n in names} == {ids[i]}, (names, ids)


def test_a_committed_append_is_not_written_again_then_the_commit_window(tmp_path):
    """The issue's case: A is appended, the driver dies while B computes; the resumed run skips
    A's write (nothing recomputed) and writes B once. Then the commit window, on the job that
    leaves: the driver died after the sink committed write 2 and before the job recorded it,
    each state left as the crash would leave it:

    - after the sink's own marker said committed: skipped (the sink's marker). This third run
      writes nothing at all (write 1 skipped by the job's record of it; nothing computed), and
      recovery status lists both writes committed, write 1 skipped twice, write 2 once;
    - inside the job commit's last step, every file published, the marker still ``committing``:
      skipped (the files it names are all there);
    - inside the job commit, a file not yet published: what it published is removed and the
      write runs again; that run is killed by a real SIGKILL the moment its own write job's
      ``committing`` marker appears, and wherever in the job commit it died (before, during or
      after publishing), the run after it leaves exactly B's rows, once (and A's).

    One job, run six times (issue 49: these were three tests of nine runs. The window's had an
    uninterrupted first run of its own, the real kill a first run of its own, and the third run
    here was one of the finished job with every record kept, as the last runs of
    test_a_job_directory_of_the_earlier_numbering_resumes and
    test_two_identical_writes_match_by_occurrence still are)."""
    job = Job(tmp_path, "appends")
    kill_while_b_computes_then_resume(job, lambda i: job.rows(i, "append"))
    each_target_has_its_markers(job, lambda i: job.markers(i, "append"))
    assert any(r.startswith("1.") and r.endswith(".committed") for r in job.records())
    records = os.path.join(job.dir, job.name, "writes")
    markers = os.path.join(job.target(2, "append"), "_fullwindow")

    def crash_before_the_record() -> None:
        for r in job.records():
            if r.startswith("2.") and r.endswith(".committed"):
                os.remove(os.path.join(records, r))

    def crash_inside_the_job_commit() -> list[str]:
        """The committed marker back to committing; the write job's published files."""
        [done] = [m for m in job.markers(2, "append") if ".committed." in m]
        uuid = done.rsplit(".committed.", 1)[1]
        with open(os.path.join(markers, done)) as f:
            count = int(f.read())
        os.rename(os.path.join(markers, done),
                  os.path.join(markers, done.replace(".committed.", ".committing.")))
        files = sorted(glob.glob(os.path.join(job.target(2, "append"), f"*{uuid}*")))
        assert count == len(files) >= 2
        return files

    # a third run, write 2's record gone: it writes nothing at all
    crash_before_the_record()
    job.run("r3", writes="append,append")
    assert job.rows(1, "append") == A_ROWS and job.rows(2, "append") == B_ROWS
    assert job.ran("W1", "r3") == [] and job.ran("W2", "r3") == [] and job.ran("B", "r3") == []
    assert any(r.startswith("2.") and r.endswith(".committed") for r in job.records())
    skipped = [e for e in job.events() if e["type"] == "writeSkipped"]
    assert {e["number"] for e in skipped} >= {1, 2}
    # recovery status lists the writes: both committed, write 1 skipped twice, write 2 once
    from fullwindow.recovery import status
    from fullwindow.recovery._status import render

    st = status(job.dir, job.name)
    assert [(w["number"], w["sink"], w["state"], w["skipped"]) for w in st["writes"]] == [
        (1, "files", "committed", 2), (2, "files", "committed", 1)]
    assert st["writes"][0]["target"].endswith("1-append") and st["writes"][0]["mode"] == "Append"
    assert "committed" in render(st) and "1-append (Append)" in render(st)

    crash_before_the_record()
    crash_inside_the_job_commit()
    job.run("r4", writes="append,append")
    assert job.rows(2, "append") == B_ROWS and job.ran("W2", "r4") == []

    crash_before_the_record()
    published = crash_inside_the_job_commit()
    os.remove(published[0])  # not published yet when the driver died
    dead = {m.rsplit(".", 1)[1] for m in job.markers(2, "append")}  # its write job's UUID
    p = job.start("r5", writes="append,append")

    def own_commit_began() -> bool:  # this run's write job's marker, not the dead one's
        return any((".committing." in m or ".committed." in m) and m.rsplit(".", 1)[1] not in dead
                   for m in job.markers(2, "append"))

    kill_when(p, own_commit_began)
    assert job.ran("W2", "r5") != []  # it ran again
    assert not any(os.path.exists(f) for f in published[1:])  # what it published: removed first
    job.run("r6", writes="append,append")
    assert job.rows(2, "append") == B_ROWS and job.rows(1, "append") == A_ROWS


@pytest.fixture(scope="module")
def killed_in_write_2(tmp_path_factory):
    """A run killed while write 2's tasks ran (some of them committed under ``_temporary``),
    once for the module: each call gives a Job on a fresh copy of what it left, at the same
    paths (the job's records and markers name its targets). Two tests resume it, each its own
    way; one killed run serves both (issue 49: a driver start is ~20 CPU seconds)."""
    import shutil

    base = tmp_path_factory.mktemp("killed-in-write-2")
    job = Job(base, "dead")
    p = job.start("r1", slow=0.0, writes="append,append",
                  extra='{"spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "4"}')
    kill_when(p, lambda: len(job.ran("W2", "r1")) >= 1)
    snapshot = f"{base}.left"
    shutil.copytree(base, snapshot, symlinks=True)

    def fresh() -> Job:
        shutil.rmtree(base)
        shutil.copytree(snapshot, base, symlinks=True)
        return Job(base, "dead")

    return fresh


def test_a_dead_runs_task_outputs_are_not_published(killed_in_write_2):
    """Killed while write 2's tasks run: some of them committed under ``_temporary``; the
    resumed write publishes exactly its own rows."""
    job = killed_in_write_2()
    job.run("r2", writes="append,append")
    assert job.rows(2, "append") == B_ROWS
    assert not os.path.exists(os.path.join(job.target(2, "append"), "_temporary"))


def test_every_file_write_mode(tmp_path):
    """Killed during the fifth write: the four before it committed and are skipped, the rest
    are written once; partitionBy, dynamic partition overwrite, saveAsTable, insertInto, SQL
    INSERT and SQL's CREATE TABLE AS SELECT (which would fail if it ran again)."""
    kinds = ["overwrite", "partitioned", "dynamic", "ctas", "saveAsTable", "insertInto", "sql"]
    writes = ",".join(kinds)
    job = Job(tmp_path, "modes")
    p = job.start("r1", slow=0.3, writes=writes)
    kill_when(p, lambda: bool(job.ran("W5", "r1")))
    job.run("r2", writes=writes)
    for i, kind in enumerate(kinds, start=1):
        assert job.rows(i, kind) == expected(i), kind
    assert all(job.ran(f"W{i}", "r2") == [] for i in range(1, 5))


def refused_after_a_crash_before_the_record(job: "Job", run: str) -> None:
    """Write 2 (JDBC) as a crash between its commit and the job's record leaves it (started, not
    recorded as committed): run ``run`` with onUncheckedWrite=fail refuses it, naming the
    setting, before it writes anything (the Connect suite's refusal test:
    tests/connect/test_connect_recovery.py)."""
    records = os.path.join(job.dir, job.name, "writes")
    for r in job.records():
        if r.startswith("2.") and r.endswith(".committed"):
            os.remove(os.path.join(records, r))
    p = job.start(run, writes="append,jdbc",
                  extra='{"spark.fullwindow.recovery.onUncheckedWrite": "fail"}')
    assert p.wait(300) != 0
    log = open(job._log(run)).read()
    assert "[FULLWINDOW.RECOVERY_UNCHECKED_WRITE]" in log and "onUncheckedWrite" in log, log[-3000:]
    assert job.ran("W2", run) == []


def test_unchecked_sink(tmp_path):
    """JDBC keeps no record of its commits: writes 2 and 3 are JDBC appends (two tables). After a
    first run, write 3 is left as a crash between its commit and the job's record leaves it
    (started, not recorded as committed). The next run, under onUncheckedWrite=fail, skips
    write 2 (recorded as committed: skipped, even under fail) and refuses write 3, naming the
    setting, before it writes anything; the run after it, under rerun (the default), skips
    write 2 again and runs write 3 again (at least once). (Issue 49: writes 2 and 3 in one job,
    one run less: the skip had a run of its own.)"""
    writes = "append,jdbc,jdbc"
    job = Job(tmp_path, "jdbc")
    job.run("r1", writes=writes)
    records = os.path.join(job.dir, job.name, "writes")
    for r in job.records():
        if r.startswith("3.") and r.endswith(".committed"):
            os.remove(os.path.join(records, r))
    p = job.start("r2", writes=writes,
                  extra='{"spark.fullwindow.recovery.onUncheckedWrite": "fail"}')
    assert p.wait(300) != 0
    log = open(job._log("r2")).read()
    assert "[FULLWINDOW.RECOVERY_UNCHECKED_WRITE] write 3 of job jdbc (unchecked: " in log and \
        "JdbcRelationProvider T3, " in log and "onUncheckedWrite" in log, log[-3000:]
    assert any("write 2 of job jdbc (unchecked: " in line and "JdbcRelationProvider T2, " in line
               and "is skipped" in line for line in log.splitlines()), log[-3000:]
    assert job.ran("W2", "r2") == [] and job.ran("W3", "r2") == []
    job.run("r3", writes=writes)
    assert job.ran("W2", "r3") == []  # recorded as committed: skipped
    assert job.ran("W3", "r3") != []  # rerun: at least once


def lines(path: str) -> list[tuple]:
    """The ``k v`` lines a foreach / foreachPartition of the job appended to ``path``."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return sorted(tuple(int(x) for x in line.split()) for line in f if line.strip())


def test_foreach_actions_and_two_threads(tmp_path):
    """foreachPartition and foreach (of a DataFrame's rdd) are writes of the job, unchecked
    (their functions keep no record): killed during write 3 (foreach) after write 2
    (foreachPartition) committed; the resume under onUncheckedWrite=fail skips write 2 (nothing
    appended again, nothing computed) and refuses write 3; under rerun, write 3 runs again (at
    least once). The last run also makes writes 4 and 5 at once from two threads of the session
    (file appends into two targets): each target's markers are its own write's, each holds its
    rows once, and the session's commit protocol setting is as it was afterwards."""
    writes = "append,foreachPartition,foreach,threads"
    job = Job(tmp_path, "actions")
    out2, out3 = (os.path.join(job.out, f"{i}-{k}.txt") for i, k in
                  ((2, "foreachPartition"), (3, "foreach")))
    p = job.start("r1", writes=writes, action_slow=0.15)
    kill_when(p, lambda: bool(lines(out3)))
    assert lines(out2) == B_ROWS  # write 2 had finished
    partial = lines(out3)
    assert 0 < len(partial) < len(B_ROWS)
    assert [r.split(".")[0] + "." + r.split(".")[-1] for r in job.records()
            if not r.startswith(".")] == [
        "1.committed", "1.started", "2.committed", "2.started", "3.started"]

    refused_run = job.start("r2", writes=writes, action_slow=0.0,
                            extra='{"spark.fullwindow.recovery.onUncheckedWrite": "fail"}')
    assert refused_run.wait(300) != 0
    log = open(job._log("r2")).read()
    assert "[FULLWINDOW.RECOVERY_UNCHECKED_WRITE] write 3 of job actions (foreach: " in log, \
        log[-3000:]
    assert "write 2 of job actions (foreachPartition: " in log and "is skipped" in log
    assert lines(out2) == B_ROWS and lines(out3) == partial  # nothing written again
    assert job.ran("W2", "r2") == [] and job.ran("W3", "r2") == [] and job.ran("B", "r2") == []

    job.run("r3", writes=writes, action_slow=0.0)
    assert lines(out2) == B_ROWS
    assert sorted(set(lines(out3))) == B_ROWS and len(lines(out3)) == len(B_ROWS) + len(partial)
    assert job.ran("W2", "r3") == [] and job.ran("W3", "r3") != []
    from fullwindow.recovery import status

    st = {w["number"]: w for w in status(job.dir, job.name)["writes"]}
    assert [(st[n]["sink"], st[n]["state"]) for n in (2, 3)] == [
        ("foreachPartition", "committed"), ("foreach", "committed")]
    assert st[2]["skipped"] == 2 and st[2]["mode"] == "action"

    # writes 4 and 5, from two threads at once: each target's markers name its own write
    log = open(job._log("r3")).read()
    assert "PROTOCOL AFTER: org.apache.spark.sql.execution.datasources." \
        "SQLHadoopMapReduceCommitProtocol" in log, log[-3000:]  # Spark's default, as before
    ids = {}
    for n in (4, 5):
        assert job.rows(n, "threads") == A_ROWS, n
        marks = job.markers(n, "threads")
        states = sorted(m.split(".")[-2] for m in marks)
        assert states == ["committed", "committing", "started"], marks
        assert len({m.rsplit(".", 2)[0] for m in marks}) == 1, marks
        ids[n] = marks[0].rsplit(".", 2)[0]
    # two writes of the job, one target each: their ids (fingerprint, occurrence) are the ones
    # the job's events name for its writes 4 and 5
    committed = {e["number"]: e["id"] for e in job.events() if e["type"] == "writeCommitted"}
    assert ids[4] != ids[5] and {ids[4], ids[5]} == {committed[4], committed[5]}, (ids, committed)
    # they ran at once: each started before the other committed
    times = {n: {m.split(".")[-2]: os.path.getmtime(os.path.join(job.target(n, "threads"),
                                                                 "_fullwindow", m))
                 for m in job.markers(n, "threads")} for n in (4, 5)}
    assert times[4]["started"] < times[5]["committed"] and \
        times[5]["started"] < times[4]["committed"], times


def _lines_source():
    """A Python data source (pyspark.sql.datasource, Spark 4.0+) whose writer appends each
    partition's rows as ``k v`` lines to a file of its own under the ``path`` option, and keeps
    no record of what it committed: a DataSource V2 writer of the user's own."""
    from pyspark.sql.datasource import DataSource, DataSourceWriter, WriterCommitMessage

    class LinesWriter(DataSourceWriter):
        def __init__(self, path):
            self.path = path

        def write(self, iterator):
            import os
            import uuid

            os.makedirs(self.path, exist_ok=True)
            with open(os.path.join(self.path, f"part-{uuid.uuid4().hex}.txt"), "w") as f:
                for r in iterator:
                    f.write(f"{r.k} {r.v}\n")
            return WriterCommitMessage()

        def commit(self, messages):
            pass

    class Lines(DataSource):
        @classmethod
        def name(cls):
            return "fwlines"

        def writer(self, schema, overwrite):
            return LinesWriter(self.options["path"])

    return Lines


def test_a_python_data_source_writer_is_unchecked(spark, tmp_path):
    """A DataSource V2 writer that keeps no record of its commits (a Python data source) is an
    unchecked write: skipped when the job recorded it as committed (nothing computed), refused
    under onUncheckedWrite=fail when an earlier run only started it, run again under rerun (at
    least once). Each "run" is the job closed and started again in this driver."""
    pytest.importorskip("pyspark.sql.datasource",
                        reason="the Python Data Source API (a V2 writer of one's own) is 4.0+")
    from pyspark.errors import AnalysisException

    import fullwindow
    from fullwindow.recovery import job_events
    from fullwindow.recovery._jobs import _runtime

    spark.dataSource.register(_lines_source())
    rec, out = str(tmp_path / "recovery"), str(tmp_path / "lines")
    job_dir = os.path.join(rec, "pysource")
    keys = {"spark.fullwindow.recovery.enabled": "true", "spark.fullwindow.recovery.dir": rec,
            "spark.fullwindow.recovery.jobId": "pysource",
            "spark.fullwindow.eventStore.flushInterval": "100ms"}
    rows = spark.range(0, 30, 1, 3).selectExpr("id % 3 AS k", "id AS v")
    expected = sorted((i % 3, i) for i in range(30))

    def run(mode: str) -> None:
        spark.conf.set("spark.fullwindow.recovery.onUncheckedWrite", mode)
        fullwindow.recovery.start(spark)
        try:
            rows.write.format("fwlines").mode("append").option("path", out).save()
        finally:
            fullwindow.recovery.flush(spark)
            _runtime.close_job(job_dir)  # as if the driver started again

    def written() -> list[tuple]:
        return sorted(t for f in glob.glob(os.path.join(out, "*.txt")) for t in lines(f))

    for k, v in keys.items():
        spark.conf.set(k, v)
    try:
        run("rerun")
        assert written() == expected
        records = sorted(os.listdir(os.path.join(job_dir, "writes")))
        assert [r.split(".")[0] + "." + r.split(".")[-1] for r in records
                if not r.startswith(".")] == ["1.committed", "1.started"]
        run("fail")  # recorded as committed: skipped, even under fail
        assert written() == expected
        for r in records:  # a crash between the writer's commit and the job's record
            if r.endswith(".committed"):
                os.remove(os.path.join(job_dir, "writes", r))
        with pytest.raises(AnalysisException, match=r"RECOVERY_UNCHECKED_WRITE\] write 1 of "
                                                    r"job pysource \(unchecked: fwlines, "):
            run("fail")
        assert written() == expected  # refused before it wrote anything
        run("rerun")
        assert written() == sorted(expected * 2)  # at least once: here twice
        events = [(e["type"], e["sink"]) for e in job_events(rec, "pysource")
                  if e["type"] in ("writeCommitted", "writeSkipped")]
        assert events == [("writeCommitted", "unchecked"), ("writeSkipped", "unchecked"),
                          ("writeCommitted", "unchecked")], events
    finally:
        fullwindow.recovery.cleanup(spark)
        for k in [*keys, "spark.fullwindow.recovery.onUncheckedWrite"]:
            spark.conf.unset(k)


def test_a_recovered_write_shows_its_own_command(spark, tmp_path):
    """A write of a job with recovery on runs inside fullwindow's FullWindowWrite command, and
    still shows its own: query-execution listeners (which lineage tools such as OpenLineage
    are) get one success of the write's own command (InsertIntoHadoopFsRelationCommand), the
    SQL tab lists its execution under the write's, and EXPLAIN shows it; nothing shows it
    twice."""
    import time

    from pyspark.java_gateway import ensure_callback_server_started

    import fullwindow
    from fullwindow.recovery._jobs import _runtime

    rec, out = str(tmp_path / "recovery"), str(tmp_path / "out")
    keys = {"spark.fullwindow.recovery.enabled": "true", "spark.fullwindow.recovery.dir": rec,
            "spark.fullwindow.recovery.jobId": "lineage"}
    seen: list = []

    class Listener:
        def onSuccess(self, func, qe, duration):
            seen.append((func, qe.analyzed().nodeName()))

        def onFailure(self, func, qe, error):
            seen.append(("failed", func))

        class Java:
            implements = ["org.apache.spark.sql.util.QueryExecutionListener"]

    ensure_callback_server_started(spark.sparkContext._gateway)
    listener = Listener()
    manager = spark._jsparkSession.listenerManager()
    store = spark._jsparkSession.sharedState().statusStore()

    def last_execution() -> int:
        """The newest execution's id (the store lists them by id; it keeps only the newest
        spark.sql.ui.retainedExecutions, so their count is no id), or -1."""
        listed = store.executionsList()
        return listed.apply(listed.size() - 1).executionId() if listed.size() else -1

    before = last_execution()
    for k, v in keys.items():
        spark.conf.set(k, v)
    manager.register(listener)
    try:
        fullwindow.recovery.start(spark)
        spark.range(10).write.parquet(out)
        deadline = time.time() + 30  # listeners run on the listener bus's thread
        while len(seen) < 2 and time.time() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)  # and nothing more comes
        assert sorted(seen) == [("command", "FullWindowWrite"),
                                ("command", "InsertIntoHadoopFsRelationCommand")], seen
        executions = store.executionsList()
        listed = (executions.apply(i) for i in range(executions.size()))
        mine = [e for e in listed if e.executionId() > before]
        plans = {e.executionId(): e.physicalPlanDescription().splitlines()[1] for e in mine}
        assert sorted(plans.values()) == ["Execute FullWindowWrite (1)",
                                          "Execute InsertIntoHadoopFsRelationCommand (3)"], plans
        root = min(plans)
        assert all(e.rootExecutionId() == root for e in mine)
        spark.sql(f"CREATE TABLE lineage_t (id BIGINT) USING parquet LOCATION '{out}'")
        explained = spark.sql("EXPLAIN INSERT INTO lineage_t SELECT * FROM range(3)").first()[0]
        assert "FullWindowWrite" in explained and "InsertIntoHadoopFsRelationCommand" in explained
        assert spark.table("lineage_t").count() == 10  # EXPLAIN wrote nothing
    finally:
        manager.unregister(listener)
        spark.sql("DROP TABLE IF EXISTS lineage_t")
        fullwindow.recovery.flush(spark)
        _runtime.close_job(os.path.join(rec, "lineage"))
        for k in keys:
            spark.conf.unset(k)


def write_records(job: "Job") -> dict:
    """The job's write records by write identity: ``{(fingerprint, occurrence): {state:
    [numbers]}}`` (``<number>.<fingerprint>.<occurrence>.<state>``, number the write's place in
    the start order of the run that recorded it: one per run that recorded the state)."""
    out: dict = {}
    for r in job.records():
        if r.startswith("."):
            continue
        number, fp, k, state = r.split(".")
        out.setdefault((fp, int(k)), {}).setdefault(state, []).append(int(number))
    return {i: {st: sorted(ns) for st, ns in sts.items()} for i, sts in out.items()}


def test_writes_from_threads_match_in_another_start_order(tmp_path):
    """Writes 1 and 2 into two targets from two threads: 1 (fast) started first, 2 (slow) once 1
    had begun; the driver killed after 1 committed, while 2's tasks ran. The resumed run starts
    the threads in the other order (2 first, numbered 1 now; 1 second, numbered 2): write 1 is
    skipped all the same (its identity is its fingerprint and occurrence, not its number) and
    write 2 is written once, its dead write job's leftovers removed first."""
    job = Job(tmp_path, "thread-order")
    opts = {"writes": "twothreads", "row_slow": 0.25}
    # once write 1 has committed, write 2's rows wait for the kill: it cannot commit before
    # the kill, however fast or slow the machine is
    p = job.start("r1", thread_order="forward", row_hold="1", **opts)

    def first_committed() -> bool:  # the job's record of it: made after the sink's marker
        return any(r.endswith(".committed") for r in job.records()) and bool(job.ran("W2", "r1"))

    kill_when(p, first_committed)
    assert job.rows(1, "twothreads") == A_ROWS
    assert not any(".committed." in m for m in job.markers(2, "twothreads"))
    r1 = write_records(job)
    # run 1: write 1 numbered 1, committed; write 2 numbered 2, started only
    [(fp1, k1)] = [i for i, st in r1.items() if "committed" in st]
    [(fp2, k2)] = [i for i, st in r1.items() if "committed" not in st]
    assert fp1 != fp2 and k1 == k2 == 1
    assert r1[(fp1, 1)] == {"started": [1], "committed": [1]}
    assert r1[(fp2, 1)] == {"started": [2]}, r1
    dead = [m for m in job.markers(2, "twothreads")]
    assert [m.split(".")[-2] for m in dead] == ["started"], dead

    job.run("r2", thread_order="reverse", **opts)
    assert "THREAD 2 BEGUN" in open(job._log("r2")).read()
    # each target's rows once; write 1 not computed again, write 2 ran
    assert job.rows(1, "twothreads") == A_ROWS and job.rows(2, "twothreads") == A_ROWS
    assert job.ran("W1", "r2") == [] and job.ran("A", "r2") == []
    assert job.ran("W2", "r2") != []
    # records: write 2 numbered 1 in run 2 (started and committed), write 1 none new
    r2 = write_records(job)
    assert r2[(fp2, 1)] == {"started": [1, 2], "committed": [1]}, r2
    assert r2[(fp1, 1)] == {"started": [1], "committed": [1]}, r2
    # events of run 2: write 1 skipped as the run's 2nd write, write 2 committed as its 1st
    events = [e for e in job.events() if e["type"] in ("writeSkipped", "writeCommitted")]
    skipped = [(e["number"], e["writeFingerprint"], e["occurrence"]) for e in events
               if e["type"] == "writeSkipped"]
    assert skipped == [(2, fp1, 1)], events
    assert (1, fp2, 1) in [(e["number"], e["writeFingerprint"], e["occurrence"]) for e in events
                           if e["type"] == "writeCommitted"]
    # markers: target 1 holds run 1's write job only; target 2 the resumed write job's three
    # markers (the dead one's removed), under the same write id as run 1's
    for n in (1, 2):
        marks = job.markers(n, "twothreads")
        assert sorted(m.split(".")[-2] for m in marks) == ["committed", "committing", "started"], \
            marks
        assert len({m.rsplit(".", 1)[1] for m in marks}) == 1, marks  # one write job
    assert {m.rsplit(".", 2)[0] for m in job.markers(2, "twothreads")} == \
        {dead[0].rsplit(".", 2)[0]}
    assert not os.path.exists(os.path.join(job.target(2, "twothreads"), "_temporary"))
    from fullwindow.recovery import status

    st = {(w["fingerprint"], w["occurrence"]): w for w in status(job.dir, job.name)["writes"]}
    assert st[(fp1, 1)]["state"] == st[(fp2, 1)]["state"] == "committed"
    assert st[(fp1, 1)]["skipped"] == 1 and st[(fp2, 1)]["skipped"] == 0


def test_two_identical_writes_match_by_occurrence(tmp_path):
    """The same append (one DataFrame, one target: one fingerprint) made twice: killed while the
    second ran, after the first committed. The resumed run skips the first (occurrence 1) and
    writes the second (occurrence 2) once: the target holds the rows twice, not once or three
    times; a third run writes nothing."""
    job = Job(tmp_path, "twice")
    opts = {"writes": "twice", "row_slow": 0.2}
    p = job.start("r1", **opts)

    def second_began() -> bool:
        marks = job.markers(1, "twice")
        return len({m.rsplit(".", 2)[0] for m in marks}) == 2 and \
            len(job.ran("W1", "r1")) > 4

    kill_when(p, second_began)
    assert job.rows(1, "twice") == A_ROWS  # the first committed, the second not
    r1 = write_records(job)
    [fp] = {f for f, _ in r1}
    assert r1 == {(fp, 1): {"started": [1], "committed": [1]}, (fp, 2): {"started": [2]}}, r1

    job.run("r2", **opts)
    assert job.rows(1, "twice") == sorted(A_ROWS * 2)
    assert len(job.ran("W1", "r2")) == 4 and job.ran("A", "r2") == []  # one write's tasks
    events = [(e["type"], e["number"], e["occurrence"]) for e in job.events()
              if e["type"] in ("writeSkipped", "writeCommitted") and e["writeFingerprint"] == fp]
    assert ("writeSkipped", 1, 1) in events and ("writeCommitted", 2, 2) in events, events
    assert ("writeCommitted", 1, 2) not in events and ("writeSkipped", 2, 2) not in events
    # the target's markers: two write ids, occurrences 1 and 2 of the one fingerprint
    ids = {m.rsplit(".", 2)[0] for m in job.markers(1, "twice")}
    assert sorted(i.split(".")[-2:] for i in ids) == [[fp, "1"], [fp, "2"]], ids
    committed = [m for m in job.markers(1, "twice") if ".committed." in m]
    assert len(committed) == 2, committed

    job.run("r3", **opts)
    assert job.rows(1, "twice") == sorted(A_ROWS * 2)
    assert job.ran("W1", "r3") == []
    from fullwindow.recovery import status

    st = status(job.dir, job.name)["writes"]
    assert [(w["fingerprint"], w["occurrence"], w["state"], w["skipped"]) for w in st] == [
        (fp, 1, "committed", 2), (fp, 2, "committed", 1)], st


def test_a_job_directory_of_the_earlier_numbering_resumes(killed_in_write_2):
    """A job directory as fullwindow wrote it before writes were identified by fingerprint and
    occurrence (records ``<n>.<fingerprint>.<state>``, target markers
    ``<job>.<n>.<fingerprint>.<state>.<uuid>``), made here from a run killed while write 2's
    tasks ran, renamed to that form, write 1's committed record removed (the driver died
    between the sink's commit and the job's record). The resumed run skips write 1 (its sink's
    marker under the old id), undoes what write 2's dead write job left under its old id, and
    writes 2 once."""
    job = killed_in_write_2()
    records = os.path.join(job.dir, job.name, "writes")
    numbers = {}
    for r in job.records():  # <n>.<fp>.<k>.<state> -> <n>.<fp>.<state>
        if r.startswith("."):
            os.remove(os.path.join(records, r))
            continue
        n, fp, _, state = r.split(".")
        numbers[fp] = n
        if not (n == "1" and state == "committed"):
            os.rename(os.path.join(records, r), os.path.join(records, f"{n}.{fp}.{state}"))
        else:
            os.remove(os.path.join(records, r))
    for i in (1, 2):  # <job>.<fp>.<k>.<state>.<uuid> -> <job>.<n>.<fp>.<state>.<uuid>
        d = os.path.join(job.target(i, "append"), "_fullwindow")
        for m in os.listdir(d) if os.path.isdir(d) else []:
            if m.startswith("."):
                os.remove(os.path.join(d, m))
                continue
            jobpart, fp, _, state, uuid = m.split(".")
            os.rename(os.path.join(d, m),
                      os.path.join(d, f"{jobpart}.{numbers[fp]}.{fp}.{state}.{uuid}"))
    assert sorted(r.split(".")[0] + "." + r.split(".")[-1] for r in job.records()) == [
        "1.started", "2.started"]
    assert [m.split(".")[1] for m in job.markers(2, "append")] == ["2"]  # write 2's dead job
    from fullwindow.recovery import status

    legacy = status(job.dir, job.name)["writes"]
    assert [(w["number"], w["occurrence"], w["state"]) for w in legacy] == [
        (1, 1, "started"), (2, 1, "started")], legacy

    job.run("r2", writes="append,append")
    assert job.rows(1, "append") == A_ROWS and job.rows(2, "append") == B_ROWS
    assert job.ran("W1", "r2") == [] and job.ran("A", "r2") == []
    assert not os.path.exists(os.path.join(job.target(2, "append"), "_temporary"))
    log = open(job._log("r2")).read()
    assert "write 1 of job dead (files: " in log and "the files sink holds its commit" in log
    # write 2's dead write job (old id) is gone; its resumed one's markers are of the new form
    marks = job.markers(2, "append")
    assert sorted(m.split(".")[-2] for m in marks) == ["committed", "committing", "started"], marks
    assert {m.split(".")[2] for m in marks} == {"1"}, marks  # <job>.<fp>.<occurrence>....
    st = status(job.dir, job.name)["writes"]
    assert [(w["number"], w["occurrence"], w["state"]) for w in st] == [
        (1, 1, "committed"), (2, 1, "committed")], st
    job.run("r3", writes="append,append")  # everything skipped
    assert job.rows(1, "append") == A_ROWS and job.rows(2, "append") == B_ROWS
    assert job.ran("W1", "r3") == [] and job.ran("W2", "r3") == []
