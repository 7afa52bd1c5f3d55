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

    def options(self, writes: str = "append,append", extra: str | None = None, **_) -> dict:
        return {"WRITES": writes, "FW_EXTRA_CONF": extra, "TARGETS": self.targets}

    def target(self, i: int, kind: str) -> str:
        if kind in ("saveAsTable", "insertInto", "sql", "ctas"):
            return os.path.join(self.out, "warehouse", f"t{i}")
        return f"{self.targets or self.out}/{i}-{kind}"

    def rows(self, i: int, kind: str) -> list[tuple]:
        """(k, v) rows of write ``i`` (k from the directory names where it is partitioned)."""
        import pyarrow.parquet as pq

        t = pq.read_table(self.target(i, kind))
        return sorted(zip((int(k) for k in t.column("k").to_pylist()), t.column("v").to_pylist()))

    def ran(self, stage: str, run: str) -> list[int]:
        return sorted(int(n.split("-")[1]) for n in os.listdir(self.marks)
                      if n.startswith(stage + "-") and n.split("-")[2] == run)

    def read(self, spark, i: int, kind: str) -> list[tuple]:
        """(k, v) rows of write ``i`` read with ``spark`` (a target on HDFS or S3)."""
        return sorted((r.k, r.v) for r in spark.read.parquet(self.target(i, kind)).collect())

    def records(self) -> list[str]:
        d = os.path.join(self.dir, self.name, "writes")
        return sorted(os.listdir(d)) if os.path.isdir(d) else []

    def markers(self, i: int, kind: str) -> list[str]:
        d = os.path.join(self.target(i, kind), "_fullwindow")
        return sorted(n for n in os.listdir(d) if not n.startswith(".")) if os.path.isdir(d) else []


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


def test_a_committed_append_is_not_written_again(tmp_path):
    """The issue's case: A is appended, the driver dies while B computes; the resumed run skips
    A's write (nothing recomputed) and writes B once."""
    job = Job(tmp_path, "appends")
    kill_while_b_computes_then_resume(job, lambda i: job.rows(i, "append"))
    assert any(r.startswith("1.") and r.endswith(".committed") for r in job.records())
    # a third run of the finished job writes nothing at all
    job.run("r3", writes="append,append")
    assert job.rows(1, "append") == A_ROWS and job.rows(2, "append") == B_ROWS
    assert job.ran("W1", "r3") == [] and job.ran("W2", "r3") == [] and job.ran("B", "r3") == []
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


def test_a_dead_runs_task_outputs_are_not_published(tmp_path):
    """Killed while write 2's tasks run: some of them committed under ``_temporary``; the
    resumed write publishes exactly its own rows."""
    job = Job(tmp_path, "partial")
    p = job.start("r1", slow=0.0, writes="append,append",
                  extra='{"spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "4"}')
    kill_when(p, lambda: len(job.ran("W2", "r1")) >= 1, timeout=240)
    job.run("r2", writes="append,append")
    assert job.rows(2, "append") == B_ROWS
    assert not os.path.exists(os.path.join(job.target(2, "append"), "_temporary"))


def test_the_commit_window(tmp_path):
    """The driver died after the sink committed write 2 and before the job recorded it, each
    state left as the crash would leave it (on one job, run four times):

    - after the sink's own marker said committed: skipped (the sink's marker);
    - inside the job commit's last step, every file published, the marker still ``committing``:
      skipped (the files it names are all there);
    - inside the job commit, a file not yet published: what it published is removed and the
      write runs again, once."""
    job = Job(tmp_path, "window")
    job.run("r1", writes="append,append")
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

    crash_before_the_record()
    job.run("r2", writes="append,append")
    assert job.rows(2, "append") == B_ROWS and job.ran("W2", "r2") == []
    assert any(r.startswith("2.") and r.endswith(".committed") for r in job.records())

    crash_before_the_record()
    crash_inside_the_job_commit()
    job.run("r3", writes="append,append")
    assert job.rows(2, "append") == B_ROWS and job.ran("W2", "r3") == []

    crash_before_the_record()
    os.remove(crash_inside_the_job_commit()[0])  # not published yet when the driver died
    job.run("r4", writes="append,append")
    assert job.rows(2, "append") == B_ROWS and job.ran("W2", "r4") != []


def test_killed_as_the_job_commit_starts(tmp_path):
    """A real SIGKILL the moment write 2's ``committing`` marker appears: wherever in the job
    commit the driver died (before, during or after publishing), the resumed run leaves exactly
    B's rows, once."""
    job = Job(tmp_path, "commit-kill")
    p = job.start("r1", writes="append,append")
    kill_when(p, lambda: any(".committing." in m or ".committed." in m
                             for m in job.markers(2, "append")))
    job.run("r2", writes="append,append")
    assert job.rows(2, "append") == B_ROWS
    assert job.rows(1, "append") == A_ROWS


def test_every_file_write_mode(tmp_path):
    """Killed during the fifth write: the four before it committed and are skipped, the rest
    are written once; partitionBy, dynamic partition overwrite, saveAsTable, insertInto, SQL
    INSERT and SQL's CREATE TABLE AS SELECT (which would fail if it ran again)."""
    kinds = ["overwrite", "partitioned", "dynamic", "ctas", "saveAsTable", "insertInto", "sql"]
    writes = ",".join(kinds)
    job = Job(tmp_path, "modes")
    p = job.start("r1", slow=0.3, writes=writes)
    kill_when(p, lambda: bool(job.ran("W5", "r1")), timeout=280)
    job.run("r2", writes=writes)
    for i, kind in enumerate(kinds, start=1):
        assert job.rows(i, kind) == expected(i), kind
    assert all(job.ran(f"W{i}", "r2") == [] for i in range(1, 5))


def refused_after_a_crash_before_the_record(job: "Job", run: str) -> None:
    """Write 2 (JDBC) as a crash between its commit and the job's record leaves it (started, not
    recorded as committed): run ``run`` with onUncheckedWrite=fail refuses it, naming the
    setting, before it writes anything."""
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
    """JDBC keeps no record of its commits: a write the job recorded as committed is skipped;
    one it only recorded as started runs again (at least once), or fails under
    onUncheckedWrite=fail."""
    job = Job(tmp_path, "jdbc")
    job.run("r1", writes="append,jdbc")
    job.run("r2", writes="append,jdbc")
    assert job.ran("W2", "r2") == []  # recorded as committed: skipped
    refused_after_a_crash_before_the_record(job, "r3")
    job.run("r4", writes="append,jdbc")
    assert job.ran("W2", "r4") != []  # rerun: at least once
