"""Recovery with its directory on a real HDFS (tests/hdfs.py starts one as its own process): the
driver of tests/recovery_job.py is SIGKILLed midway and resumed, committed files are lost or
damaged, the event store is torn by a killed writer; results must equal an uninterrupted run's
and only the work that was not durably committed may run again."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

from hdfs import MiniHDFS, rewrite
from helpers import ROOT, fast_jvm, kill_group, kill_when, record_offsets, run_begun, wait_until
from test_recovery_cluster import cluster  # noqa: F401 - the two-worker standalone cluster fixture
from test_recovery_crash import PARTS, Job, reference  # noqa: F401 - reference: fixture


@pytest.fixture(scope="module")
def hdfs():
    cluster = MiniHDFS().start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def files(spark, hdfs):
    """HDFS from the test process: the recovery code's own file-system wrapper."""
    from fullwindow.recovery._fs import filesystem

    return filesystem(hdfs.uri + "/", spark)


class HdfsJob(Job):
    """The crash tests' job with its recovery directory on HDFS (output and markers stay local)."""

    def __init__(self, base, name: str, hdfs_uri: str):
        super().__init__(base, name)
        self.dir = f"{hdfs_uri}/fw-recovery-{uuid.uuid4().hex[:8]}"

    def job_dir(self) -> str:
        return f"{self.dir}/{self.name}"

    def log_text(self, run: str) -> str:
        with open(self._log(run), errors="replace") as f:
            return f.read()[-4000:]

    def options(self, lease_timeout=None) -> dict:
        return {"LEASE_TIMEOUT": lease_timeout}


@pytest.fixture(scope="module")
def midway(tmp_path_factory, hdfs, files):
    """The killed-midway chain on HDFS, run once for the module and recorded for
    test_killed_midway_resumes_from_hdfs: one driver (r1) holds the job, a second (r2) started
    beside it is refused, r1 is SIGKILLed midway through B, r3 takes over and finishes. The job
    it leaves finished is the one test_corrupt_record_lost_and_damaged_files_on_hdfs then harms
    and resumes (issue 49: that test's own first, uninterrupted run is not needed)."""
    from types import SimpleNamespace

    from fullwindow.recovery import lease

    tmp_path = tmp_path_factory.mktemp("midway")
    job = HdfsJob(tmp_path, "midway", hdfs.uri)
    m = SimpleNamespace(job=job)
    gate = str(tmp_path / "gate")  # B's partitions wait for it: none commits before the refusal
    p = job.start("r1", slow=1.5, gate=gate)
    second = None
    m.pid = p.pid
    try:
        # the first driver holds the lease and has begun its run (its first event is written)
        # (polled every half second: a poll of HDFS costs CPU, and nothing here is timed)
        wait_until(lambda: run_begun(files, job.job_dir()), 240, "the first driver's run began",
                   p, lambda: job.log_text("r1"), every=0.5)
        m.held = lease.read(files, job.job_dir())
        second = job.start("r2")
        m.second_rc = second.wait(240)
        m.second_log = job.log_text("r2")
        m.first_ran_on = p.poll() is None  # the first run goes on undisturbed
        open(gate, "w").close()
        kill_when(p, lambda: len(job.finished(job.fingerprints()[1])) >= 1)
    finally:
        kill_group(p)
        if second is not None:
            kill_group(second)
    m.a, m.b = job.fingerprints()
    m.done_a, m.done_b = job.finished(m.a), job.finished(m.b)
    # the committed outputs and B's committed shuffle input, as they are before the resume
    m.outputs = [(e["path"], files.exists(e["path"])) for e in job.events()
                 if e["type"] == "taskFinished" and e["fingerprint"] == m.b]
    m.committed_input = files.listdir(f"{job.job_dir()}/operators/{m.b}/input0")

    job.run("r3")  # the killed holder's process is gone: taken over at once
    m.r3_log = job.log_text("r3")
    m.epoch = lease.read(files, job.job_dir())["epoch"]
    m.output = job.output()
    m.ran_a, m.ran_b = job.ran("A", "r3"), job.ran("B", "r3")
    m.inputs = [e["fingerprint"] for e in job.events()
                if e["type"] == "vertexInitialized" and e["operator"] == "shuffle input"]
    return m


def test_killed_midway_resumes_from_hdfs(midway, reference, hdfs):
    """One driver holds the job on HDFS: a second one started beside it is refused, naming the
    holder, and the first goes on; the first is SIGKILLed midway through B; the next run takes
    the job over at once (the holder's process is gone) and computes only B's partitions that
    were not committed, reading B's shuffle input back from HDFS. (One killed run for both:
    issue 49; the chain runs in the module's ``midway`` fixture.)"""
    m = midway
    held = m.held
    assert held["live"] and held["pid"] == m.pid and held["epoch"] == 1
    assert m.second_rc != 0
    log = m.second_log
    assert "RecoveryConflictError" in log and "another driver holds job 'midway'" in log
    assert f"pid {m.pid}," in log and "JOB DONE" not in log
    assert m.first_ran_on  # the first run goes on undisturbed
    a, b = m.a, m.b
    done_b = m.done_b
    assert m.done_a == PARTS and 1 <= len(done_b) < 4
    # the committed outputs and B's committed shuffle input are on HDFS (copied there by the
    # executors: no hard links across file systems)
    outputs = m.outputs
    assert outputs and all(path.startswith(hdfs.uri) and exists for path, exists in outputs)
    committed_input = m.committed_input
    assert any(n.endswith(".data") for n in committed_input), committed_input
    assert any(n.endswith(".index") for n in committed_input), committed_input

    # r3: the killed holder's process is gone: taken over at once
    assert "taking over from" in m.r3_log
    assert m.epoch == 2
    assert m.output == reference
    assert m.ran_a == []  # A wholly recovered from HDFS: nothing upstream of it ran
    assert m.ran_b == sorted(PARTS - done_b)
    # B's shuffle input was read back from HDFS, not shuffled again: its vertex was
    # initialized by the first run only
    assert m.inputs == [f"{b}/input0"]


def test_whole_job_killed_midway_resumes_from_hdfs_on_a_standalone_cluster(tmp_path, hdfs, files,
                                                                           cluster):
    """Whole-job recovery (``scope=job``, tests/test_recovery_jobscope.py's plain job) with the
    job directory on HDFS and the job on the two-worker standalone cluster: each finished map
    task's output is uploaded there by a thread of its executor after the task ended (no hard
    link across file systems; the task does not wait), which then tells the driver over Spark's
    RPC; the driver is killed midway through the slow map stage. The resume reads the join's two
    shuffles back from HDFS, runs only the slow stage's missing map tasks, and puts each kept
    map output of that partly kept shuffle under its executor's block resolver by copying it
    from HDFS (not written again from its rows)."""
    from test_recovery_jobscope import Job as WholeJob
    from test_recovery_jobscope import killed_midway_and_resumed

    job = WholeJob(tmp_path, "whole")
    job.dir = f"{hdfs.uri}/fw-recovery-{uuid.uuid4().hex[:8]}"
    job.more_env = {"MASTER": cluster.url}
    job.more_settings = {"spark.executor.cores": "1", "spark.executor.memory": "900m"}
    killed_midway_and_resumed(job, files)
    kept = [e for e in job.events() if e["type"] == "taskFinished"]
    # the events came from the executors' JVMs, not the driver's
    assert kept and all(e["executor"] != "driver" for e in kept), kept[:3]


def test_corrupt_record_lost_and_damaged_files_on_hdfs(midway, reference, files):
    """One finished job (the ``midway`` chain's, finished by its resume r3), harmed three ways
    in turn, each followed by a resume: a corrupt record in its HDFS event segment (only that
    record's partition runs again), a deleted output file, a damaged one (the same size, other
    bytes: caught by the CRC32 only)."""
    from fullwindow.recovery.eventstore import decode_records

    job = midway.job
    a, b = job.fingerprints()

    # the newest segment: the one of r3, the run that finished the job (a killed run's may
    # end torn); it recorded B's partitions r1 had not committed, one at least
    segments = sorted(n for n in files.listdir(f"{job.job_dir()}/events")
                      if n.startswith("segment-"))
    path = f"{job.job_dir()}/events/{segments[-1]}"
    data = files.read(path)
    events, problems = decode_records(data)
    assert not problems
    first_b = min(i for i, e in enumerate(events) if e["type"] == "taskFinished"
                  and e["fingerprint"] == b)
    lost = events[first_b]["partition"]
    damaged = bytearray(data)
    damaged[record_offsets(data)[first_b] + 20] ^= 0xFF
    rewrite(files, path, bytes(damaged))
    job.run("r4")
    assert job.output() == reference
    # the corrupt record alone was skipped: only its partition ran again
    assert job.ran("B", "r4") == [lost] and job.ran("A", "r4") == []

    def output_of(partition: int) -> str:
        return [e for e in job.events() if e["type"] == "taskFinished"
                and e["fingerprint"] == b and e["partition"] == partition][-1]["path"]

    files.delete(output_of(2))
    before = len(job.events())
    job.run("r5")
    assert job.output() == reference
    assert job.ran("A", "r5") == [] and job.ran("B", "r5") == [2]
    assert any(e["type"] == "vertexReset" and e["partitions"] == [2]
               for e in job.events()[before:])

    victim = output_of(1)
    data = bytearray(files.read(victim))
    data[len(data) // 2] ^= 0xFF
    rewrite(files, victim, bytes(data))  # same size, other bytes: caught by the CRC32 only
    job.run("r6")
    assert job.output() == reference
    assert job.ran("A", "r6") == [] and job.ran("B", "r6") == [1]


_TORN_WRITER = """
import os, signal, sys
sys.path.insert(0, {python!r})
import fullwindow
from fullwindow.recovery._fs import filesystem
from fullwindow.recovery.eventstore import encode_record

spark = fullwindow.session(master="local[1]", conf={{"spark.ui.enabled": "false"}})
fs = filesystem({path!r}, spark)
out = fs.create({path!r})
for i in range(5):
    out.write(encode_record({{"type": "probe", "i": i}}))
record = encode_record({{"type": "probe", "i": 5}})
out.write(record[: len(record) // 2])   # the writer dies inside a record
out.sync()                               # hflush + hsync: readers see these bytes
print("SYNCED", flush=True)
os.kill(os.getpid(), signal.SIGKILL)    # never closed: HDFS keeps the file under lease
"""


def test_torn_tail_left_by_a_killed_writer(hdfs, files, spark):
    """A writer killed with a half-written record in an unclosed HDFS file: reading the segment
    back (while HDFS still holds the dead writer's lease on it) gives every whole record and skips
    only the torn one, with a warning."""
    from fullwindow.recovery.eventstore import EventStore, EventStoreWarning

    events_dir = f"{hdfs.uri}/fw-torn-{uuid.uuid4().hex[:8]}/events"
    path = f"{events_dir}/segment-00000000000001-0001.log"
    code = _TORN_WRITER.format(python=os.path.join(ROOT, "python"), path=path)
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT,
                       env=fast_jvm(dict(os.environ)), capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == -signal.SIGKILL and "SYNCED" in p.stdout, p.stderr[-3000:]
    with pytest.warns(EventStoreWarning):
        got = EventStore.read_all(events_dir)
    assert [e["i"] for e in got] == [0, 1, 2, 3, 4]



# ---- a standalone cluster committing to HDFS --------------------------------------------------

def test_cluster_resumes_from_hdfs_through_an_executor_kill(tmp_path, hdfs, files, cluster):
    """Two one-core workers; executors commit to HDFS and the driver verifies from it. The
    driver is killed with some partitions committed; in the resumed run an executor is killed
    while it runs a task: that partition is retried elsewhere, and the output is still exact."""
    from collections import Counter

    from test_recovery_cluster import (PARTS, Driver, N, ROWS, expected_rows, is_gone, log_tail,
                                       wait_for)

    d = Driver(tmp_path, cluster, "hdfs-cluster")
    d.dir = f"{hdfs.uri}/fw-cluster-{uuid.uuid4().hex[:8]}"
    try:
        p1 = d.start("r1", slow=1.0)
        wait_for(p1, "2 to 5 partitions committed",
                 lambda: 2 <= len({e["partition"] for e in d.finished()}) <= 5, 240,
                 d.log_path("r1"))
        d.kill(p1)
        done = {e["partition"] for e in d.finished()}
        assert 2 <= len(done) < N - 2, sorted(done)
        assert all(e["path"].startswith(hdfs.uri) and files.exists(e["path"])
                   for e in d.finished())

        p2 = d.start("r2", slow=3.0)

        def running_on_two_executors():
            ended = {m["tid"] for m in d.markers("E", "r2")}
            running = [m for m in d.markers("S", "r2") if m["tid"] not in ended]
            return running if len({m["pid"] for m in running}) >= 2 else None

        running = wait_for(p2, "tasks of the resumed run on two executors",
                           running_on_two_executors, 180, d.log_path("r2"))
        victim = max(running, key=lambda m: m["mtime"])
        lost, pid = victim["partition"], victim["pid"]
        assert pid in cluster.executor_pids()
        os.kill(pid, signal.SIGKILL)
        deadline = time.time() + 10
        while not is_gone(pid) and time.time() < deadline:
            time.sleep(0.1)
        assert is_gone(pid)
        rc = p2.wait(timeout=300)
        assert rc == 0 and "JOB DONE" in d.log("r2"), log_tail(d.log_path("r2"))
    finally:
        d.kill_all()

    assert d.output() == expected_rows()
    s2 = d.markers("S", "r2")
    # only the partitions not committed before the driver died ran again; the one whose executor
    # was killed ran twice (its first attempt died with the executor), on another JVM the second time
    assert sorted(set(m["partition"] for m in s2)) == sorted(PARTS - done)
    attempts = [m for m in s2 if m["partition"] == lost]
    assert len(attempts) >= 2 and any(m["pid"] != pid for m in attempts), attempts
    events = d.events()
    finished = [e for e in events if e["type"] == "taskFinished"]
    assert Counter(e["partition"] for e in finished) == Counter(PARTS), finished
    assert sum(e["rows"] for e in finished) == N * ROWS
    assert all(e["path"].startswith(hdfs.uri) for e in finished)
    inits = [e for e in events if e["type"] == "vertexInitialized"]
    assert [e["recovered"] for e in inits] == [0, len(done)], inits


# ---- one driver per job id, on HDFS -----------------------------------------------------------

def test_racing_leases_on_hdfs_one_wins(hdfs, spark):
    """Eight takers race for the same free epoch on HDFS: its create-if-absent lets one win."""
    import threading

    from fullwindow.recovery import _fs, lease
    from fullwindow.recovery.errors import RecoveryConflictError

    fs = _fs.filesystem(hdfs.uri + "/", spark)
    job_dir = f"{hdfs.uri}/fw-race-{uuid.uuid4().hex[:8]}/job"
    takers = [lease.Lease(fs, job_dir, 30.0, f"app-{i}") for i in range(8)]
    barrier = threading.Barrier(len(takers))
    results: list = []

    def take(one):
        barrier.wait()
        try:
            one.acquire("race")
            results.append(("won", one))
        except RecoveryConflictError as err:
            results.append(("lost", err))

    threads = [threading.Thread(target=take, args=(one,)) for one in takers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    winners = [one for kind, one in results if kind == "won"]
    assert len(results) == 8 and len(winners) == 1, results
    holder = lease.read(fs, job_dir)
    assert holder["live"] and holder["appId"] == winners[0].app_id and holder["epoch"] == 1
    losers = [err for kind, err in results if kind == "lost"]
    assert all("another driver holds job 'job'" in str(err) for err in losers), \
        [str(err) for err in losers]
    winners[0].release()
    assert lease.read(fs, job_dir)["state"] == "released"


def test_fencing_on_hdfs(hdfs, files):
    """A later run's fence hides what an earlier driver appends to its open HDFS segment after
    the later run started (tests/test_recovery_eventstore.py ``fenced_runs``); and HDFS gives
    what recovery needs the HDFS way."""
    from test_recovery_eventstore import fenced_runs

    base = f"{hdfs.uri}/fence-{uuid.uuid4().hex[:6]}"
    storage = files.storage(base)
    assert {k: storage[k] for k in ("events", "create", "lease", "commit")} == {
        "events": "append", "create": "exclusive", "lease": "mtime", "commit": "rename"}
    fenced_runs(f"{base}/events", files)


def test_a_driver_stopped_past_its_lease_is_fenced_on_hdfs(tmp_path, reference, hdfs, files):
    """A driver SIGSTOPped past its lease timeout while its HDFS segment is open; a second takes
    the job over and finishes; the first, woken, fails with its lease lost, and whatever it
    appended meanwhile does not count: a later run recomputes nothing and the output is exact."""
    from fullwindow.recovery import lease

    timeout = 8.0
    job = HdfsJob(tmp_path, "fenced", hdfs.uri)
    gate = str(tmp_path / "gate")  # B's partitions wait for it: work left to commit on waking
    first = job.start("r1", slow=1.0, gate=gate, lease_timeout=f"{timeout:g}s")
    try:
        # the first driver holds the lease and has begun its run (its first event is written),
        # not merely made its lease file: stopped inside that create, it could not run at all
        wait_until(lambda: run_begun(files, job.job_dir()), 180, "the first driver's run began",
                   first, lambda: job.log_text("r1"), every=0.5)
        os.killpg(first.pid, signal.SIGSTOP)
        wait_until(lambda: lease.read(files, job.job_dir())["state"] == "expired", timeout + 30,
                   "the stopped driver's lease expired", every=0.5)
        job.run("r2", lease_timeout=f"{timeout:g}s")
        assert job.output() == reference
        open(gate, "w").close()
        os.killpg(first.pid, signal.SIGCONT)
        rc = first.wait(180)
        log = job.log("r1")
        assert rc != 0 and "JOB DONE" not in log, log[-3000:]
        assert "lease on job 'fenced' was lost" in log, log[-3000:]
    finally:
        kill_group(first)
    job.run("r3", lease_timeout=f"{timeout:g}s")
    assert job.output() == reference
    assert job.ran("A", "r3") == [] and job.ran("B", "r3") == []


def test_exactly_once_appends_on_hdfs(tmp_path, hdfs, spark):
    """The job's recovery directory and its write targets on HDFS: write 1 committed before the
    kill is skipped on the resume, write 2 is written once."""
    import test_recovery_writes as w

    job = w.Job(tmp_path, "writes")
    job.dir = f"{hdfs.uri}/fw-recovery-{uuid.uuid4().hex[:8]}"
    job.targets = f"{hdfs.uri}/fw-out-{uuid.uuid4().hex[:8]}"
    job.records = lambda: []  # on HDFS: not listed from here
    w.kill_while_b_computes_then_resume(job, lambda i: job.read(spark, i, "append"))
    w.each_target_has_its_markers(job, lambda i: w.store_markers(spark, job.target(i, "append")))


def test_cleanup_deletes_only_a_job_on_hdfs(hdfs, files, spark):
    """Issue 51 on HDFS: bad job ids and directories that hold no job are refused with nothing
    deleted; the command line refuses a directory that is no job too (its own session)."""
    from test_recovery_safe import _cli, cleanup_cases_on, intact, job_tree

    cleanup_cases_on(files, spark, f"{hdfs.uri}/safe-{uuid.uuid4().hex[:6]}")
    p = job_tree(files, f"{hdfs.uri}/safe-cli-{uuid.uuid4().hex[:6]}")
    r = _cli("cleanup", "--dir", p["rec"], "--job-id", "photos", timeout=300)
    assert r.returncode == 2 and "is not a recovery job's directory" in r.stderr, r.stderr[-3000:]
    intact(files, p)
