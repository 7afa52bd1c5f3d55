"""Recovery after a driver crash, with real processes: the driver of tests/recovery_job.py is
killed with SIGKILL (its whole process group: Python driver, JVM and Python workers) at several
points and started again; the output must equal an uninterrupted run's, and the markers the user
functions leave show that finished partitions did not run again."""
from __future__ import annotations

import os

import pytest

from fullwindow.recovery import job_events
from helpers import RecoveryJob, kill_when, record_offsets

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JOB = os.path.join(ROOT, "tests", "recovery_job.py")
PARTS = {0, 1, 2, 3}


class Job(RecoveryJob):
    script = JOB

    def fingerprints(self) -> tuple[str | None, str | None]:
        """(A, B): A's vertex has no committed inputs, B's has A as input (B's own shuffle
        input, committed as vertex ``<B>/input0``, is neither)."""
        a = b = None
        for e in self.events():
            if e["type"] == "vertexInitialized" and e["operator"] != "shuffle input":
                if e["inputs"]:
                    b = e["fingerprint"]
                else:
                    a = e["fingerprint"]
        return a, b


def expected_rows() -> list[tuple]:
    """What tests/recovery_job.py writes, computed here: (k, n, total, k2) for each k = id % 13
    of ids 0 to 3999, with v = 2 * id (n: the count, total: the sum of v; k2 = k)."""
    return sorted((k, len(range(k, 4000, 13)), sum(2 * i for i in range(k, 4000, 13)), k)
                  for k in range(13))


@pytest.fixture(scope="module")
def reference():
    """An uninterrupted run's output. Computed, not run: a driver started in every module only
    for it cost a JVM start each (issue 49);
    test_an_uninterrupted_run_without_recovery_writes_the_reference runs the job once for it."""
    return expected_rows()


def test_an_uninterrupted_run_without_recovery_writes_the_reference(tmp_path, reference):
    job = Job(tmp_path, "reference", recovery=False)
    job.run("r1")
    rows = job.output()
    assert len(rows) == 13 and sum(r[1] for r in rows) == 4000
    assert rows == reference


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    """One job killed during the upstream stage A (some of A's partitions finished, none of B's)
    and resumed to the end: what test_killed_during_the_upstream_stage asserts, read before
    test_truncated_event_file_and_corrupt_record damages the job this leaves (its two runs' event
    files) and resumes it again (issue 49: that test's own first run was a driver start of
    ~15 CPU seconds that only set up a finished job)."""
    job = Job(tmp_path_factory.mktemp("upstream"), "upstream")
    p = job.start("r1", slow=2.0)
    kill_when(p, lambda: len(job.finished(job.fingerprints()[0])) >= 1)
    a, b = job.fingerprints()
    done_a, done_b = job.finished(a), job.finished(b)
    job.run("r2")
    # (A, B) again once B has run (at the kill B may have no vertex yet: b is None then)
    return {"job": job, "done_a": done_a, "done_b": done_b, "output": job.output(),
            "fingerprints": job.fingerprints()}


def test_killed_during_the_upstream_stage(upstream, reference):
    job, done_a = upstream["job"], upstream["done_a"]
    assert 1 <= len(done_a) < 4 and not upstream["done_b"]
    # (done_b is of B's fingerprint at the kill, which B may not have had yet: the markers say
    # B's function had not run at all, its stage waiting for the whole of A)
    assert job.ran("B", "r1") == []
    assert upstream["output"] == reference  # (r2's)
    # exactly the partitions of A that had not finished ran again
    assert job.ran("A", "r2") == sorted(PARTS - done_a)
    assert job.ran("B", "r2") == [0, 1, 2, 3]


def test_killed_midway_through_a_stage_then_in_the_final_write_then_damage_and_changes(
        tmp_path, reference):
    """One job, killed twice, then harmed (issue 49: a driver start is ~15 CPU seconds; the
    midway kill had a resumed run of its own, the final write's kill a first run of its own):

    - killed midway through B (A finished): the resumed run runs nothing of A and only B's
      partitions that had not finished;
    - that run killed during the final write (B finished): the next runs only the write;
    - a deleted and a damaged output file of B: only those two partitions run again;
    - a changed program: the changed operation reuses nothing, the unchanged one recovers."""
    job = Job(tmp_path, "midway")
    p = job.start("r1", slow=1.5)
    kill_when(p, lambda: len(job.finished(job.fingerprints()[1])) >= 1)
    a, b = job.fingerprints()
    done_b = job.finished(b)
    assert job.finished(a) == PARTS and 1 <= len(done_b) < 4

    p = job.start("r2", slow=1.0)
    kill_when(p, lambda: job.finished(b) == PARTS and bool(job.ran("W", "r2")))
    assert job.ran("A", "r2") == []  # A wholly recovered: nothing upstream of it ran
    assert job.ran("B", "r2") == sorted(PARTS - done_b)
    job.run("r3")
    assert job.output() == reference
    assert job.ran("A", "r3") == [] and job.ran("B", "r3") == []
    assert job.ran("W", "r3") == [0, 1]  # the write itself runs again (both its tasks)
    # B's shuffle input (written by A's stage in r1) was committed in full and read back: the
    # resumed runs did not shuffle it again (that would have initialized the input's vertex
    # again)
    inputs = [e for e in job.events()
              if e["type"] == "vertexInitialized" and e["operator"] == "shuffle input"]
    assert [e["fingerprint"] for e in inputs] == [f"{b}/input0"]

    # a deleted output file (partition 2) and a damaged one (partition 1: one byte flipped, the
    # size unchanged, caught by its checksum), in one run (a driver start is ~15 CPU seconds,
    # issue 49): those two partitions run again, no other, and the output is exact
    deleted = next(e for e in job.events() if e["type"] == "taskFinished"
                   and e["fingerprint"] == b and e["partition"] == 2)["path"]
    os.remove(deleted)
    damaged = [e for e in job.events() if e["type"] == "taskFinished"
               and e["fingerprint"] == b and e["partition"] == 1][-1]["path"]
    data = bytearray(open(damaged, "rb").read())
    data[len(data) // 2] ^= 0xFF
    open(damaged, "wb").write(bytes(data))
    assert os.path.getsize(damaged) == len(data)
    job.run("r4")
    assert job.output() == reference
    assert job.ran("A", "r4") == [] and job.ran("B", "r4") == [1, 2]
    resets = [e["partitions"] for e in job.events() if e["type"] == "vertexReset"]
    assert resets == [[1, 2]], resets

    # a changed program: the changed operation reuses nothing, the unchanged one still recovers
    job.run("r5", variant="2")
    assert job.output() == reference
    assert job.ran("A", "r5") == [] and job.ran("B", "r5") == [0, 1, 2, 3]


def _segments(job: Job) -> list[str]:
    d = os.path.join(job.dir, job.name, "events")
    return sorted(os.path.join(d, n) for n in os.listdir(d) if n.startswith("segment-"))


def test_truncated_event_file_and_corrupt_record(upstream, reference):
    """On the job test_killed_during_the_upstream_stage leaves finished: r1 (killed during A)
    and r2 (resumed to the end) each wrote one event file; r2's, the last, is damaged."""
    from fullwindow.recovery.eventstore import EventStoreWarning, decode_records

    job, (a, b) = upstream["job"], upstream["fingerprints"]
    first, seg = _segments(job)  # one event file per run
    data = open(seg, "rb").read()
    events, problems = decode_records(data)
    assert not problems
    # the last B task-finished record is torn in half
    last_b = max(i for i, e in enumerate(events) if e["type"] == "taskFinished"
                 and e["fingerprint"] == b)
    lost_b = events[last_b]["partition"]
    cut = record_offsets(data)[last_b] + 10
    # ... and a record in the middle (an A task-finished) is corrupted
    first_a = min(i for i, e in enumerate(events) if e["type"] == "taskFinished"
                  and e["fingerprint"] == a)
    lost_a = events[first_a]["partition"]
    damaged = bytearray(data[:cut])
    damaged[record_offsets(data)[first_a] + 20] ^= 0xFF
    open(seg, "wb").write(bytes(damaged))
    with pytest.warns(EventStoreWarning):
        job_events(job.dir, job.name)
    job.run("r3")
    assert job.output() == reference
    # the finished events left: r1's (its file untouched) and r2's intact ones
    left = decode_records(open(first, "rb").read())[0] + decode_records(bytes(damaged))[0]
    # events after the torn record are lost too (they were in the tail): B partitions without
    # an intact finished event ran again, the others did not
    survived_b = {e["partition"] for e in left
                  if e["type"] == "taskFinished" and e["fingerprint"] == b}
    assert lost_b not in survived_b
    survived_a = {e["partition"] for e in left
                  if e["type"] == "taskFinished" and e["fingerprint"] == a}
    assert survived_a == PARTS - {lost_a}  # the corrupt record alone was skipped
    assert job.ran("B", "r3") == sorted(PARTS - survived_b)
    # A lost one finished event, so it is not wholly recovered; but its only consumer, B, reads
    # its committed shuffle input back (written by A's stage in r2, its events intact), so A
    # need not run at all (test_killed_during_the_upstream_stage's r2 had A partly done and B's
    # input not)
    assert job.ran("A", "r3") == []


def test_cleanup_removes_the_job_directory(tmp_path):
    code = f"""
import fullwindow, os
spark = fullwindow.session(master="local[1]", conf={{
    "spark.ui.enabled": "false", "spark.fullwindow.recovery.enabled": "true",
    "spark.fullwindow.recovery.dir": {str(tmp_path)!r}, "spark.fullwindow.recovery.jobId": "done"}})
df = spark.range(10).fullWindowPartition().sortPartition("id")
assert df.count() == 10
fullwindow.recovery.flush(spark)
assert os.path.isdir({os.path.join(str(tmp_path), "done")!r})
assert fullwindow.recovery.cleanup(spark) is True
assert not os.path.exists({os.path.join(str(tmp_path), "done")!r})
assert fullwindow.recovery.cleanup(spark) is False
print("CLEAN")
"""
    from helpers import fast_jvm, run_python

    r = run_python(code, env=fast_jvm({}))
    assert r.returncode == 0 and "CLEAN" in r.stdout, r.stderr[-3000:]
