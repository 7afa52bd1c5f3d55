"""Recovery with its directory on S3, through Hadoop's S3A connector, against a real S3 API server
(moto's, tests/s3.py: its own process on 127.0.0.1). S3 has no append, flush, rename or setTimes:
events go out as one object per flush (created if absent), the lease is taken with a conditional
create (If-None-Match) and renewed with a conditional overwrite (If-Match), committed files are
written in place. The driver of tests/recovery_job.py runs as its own process and is SIGKILLed,
SIGSTOPped past its lease timeout, raced by a second driver; results must equal an uninterrupted
run's, and only work that was not durably committed may run again. The test process reads the
bucket through the recovery code's own Hadoop file system (tests/conftest.py puts the S3A jars on
the shared session's class path)."""
from __future__ import annotations

import json
import os
import signal
import threading
import time
import uuid

import pytest

from helpers import kill_group, kill_when, wait_until
from s3 import MotoS3
from test_recovery_crash import PARTS, Job, reference  # noqa: F401 - reference: fixture



@pytest.fixture(scope="module")
def s3(spark):
    """The S3 server, a bucket, and the shared session's S3A settings pointing at it."""
    from s3 import SESSION, S3AUnsupported

    if SESSION["classpath"] is None:
        err = SESSION["error"]
        if isinstance(err, S3AUnsupported):
            pytest.skip(f"this line's Hadoop has no S3A on the AWS SDK v2: {err}")
        pytest.fail(f"the S3A jars are not on the session's class path: {err or 'FULLWINDOW_TESTS_S3=0'}")
    server = MotoS3().start()
    try:
        hc = spark.sparkContext._jsc.hadoopConfiguration()
        for k, v in server.hadoop_conf().items():
            hc.set(k, v)
        server.bucket = server.make_bucket(f"fw-{uuid.uuid4().hex[:10]}")
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def files(spark, s3):
    from fullwindow.recovery._fs import filesystem

    return filesystem(s3.bucket + "/", spark)


class S3Job(Job):
    """The crash tests' job with its recovery directory in the S3 bucket (output and markers
    stay local)."""

    def __init__(self, base, name: str, s3: MotoS3, **conf):
        super().__init__(base, name)
        self.dir = f"{s3.bucket}/fw-{uuid.uuid4().hex[:8]}"
        self.s3_conf = s3.conf(conf)
        self.s3_env = s3.driver_env()

    def options(self, lease_timeout=None) -> dict:
        return {"LEASE_TIMEOUT": lease_timeout, "FW_EXTRA_CONF": json.dumps(self.s3_conf),
                **self.s3_env}

    def job_dir(self) -> str:
        return f"{self.dir}/{self.name}"

    def holder(self, files):
        from fullwindow.recovery import lease

        return lease.read(files, self.job_dir())


def _kill(p):
    kill_group(p)


def test_the_store_reports_what_recovery_needs_and_the_lease_races_on_conditional_writes(
        files, s3):
    """S3A of Hadoop 3.5 with conditional create: events as objects, conditional create, a lease
    renewed by ETag, committed files written in place; of eight writers racing to create one
    object exactly one wins, and an overwrite with a stale ETag loses."""
    base = f"{s3.bucket}/race-{uuid.uuid4().hex[:6]}"
    storage = files.storage(base)
    assert {k: storage[k] for k in ("events", "create", "lease", "commit")} == {
        "events": "objects", "create": "conditional", "lease": "etag", "commit": "direct"}
    wins = []

    def racer(i):
        wins.append((i, files.create_with(f"{base}/epoch-1", f"writer {i}".encode())))

    threads = [threading.Thread(target=racer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, won in wins if won]
    assert len(winners) == 1, wins
    assert files.read(f"{base}/epoch-1") == f"writer {winners[0]}".encode()
    etag = files.etag(f"{base}/epoch-1")
    newer = files.overwrite_if_match(f"{base}/epoch-1", b"renewed", etag)
    assert newer and newer != etag
    assert files.overwrite_if_match(f"{base}/epoch-1", b"stale", etag) is None
    assert files.read(f"{base}/epoch-1") == b"renewed"


def test_fencing_on_the_store(files, s3):
    from test_recovery_eventstore import fenced_runs

    fenced_runs(f"{s3.bucket}/fence-{uuid.uuid4().hex[:6]}/events", files, objects=True)


def test_racing_drivers_one_wins_then_killed_midway_resumes_from_s3(tmp_path, reference, s3,
                                                                     files):
    """Two drivers started together with one job id: exactly one takes the lease (epoch 1) and
    runs on; the other fails with RecoveryConflictError (never a raw JVM error), whichever way it
    lost. The winner is then SIGKILLed midway through B. Its events reached the bucket before the
    crash (an object per flush, no stream left open), so the next run takes the job over at once
    (the holder's process is gone; epoch 2: the loser never held the lease) and recomputes none of
    the finished partitions; committed files were written in place. (One killed run for both:
    issue 49.)"""
    job = S3Job(tmp_path, "midway", s3)
    # B's partitions wait for the gate: the winner is still running (and has B left to commit)
    # when the loser has failed, however loaded the machine is
    gate = str(tmp_path / "gate")
    # a lease timeout far longer than the test: the resume must find the killed holder's lease
    # dead (its process gone), never merely expired, however long a loaded machine takes to get
    # from the kill to the resume's lease (CI once took more than the default 60 s)
    runs = {r: job.start(r, slow=1.5, gate=gate, lease_timeout="600s") for r in ("r1a", "r1b")}
    try:
        ended = wait_until(lambda: [r for r, q in runs.items() if q.poll() is not None], 300,
                           "one of the two racing drivers failed")
        logs = {r: job.log(r) for r in runs}
        assert len(ended) == 1, {r: log[-2000:] for r, log in logs.items()}
        [loser] = ended
        [winner] = [r for r in runs if r != loser]
        p = runs[winner]
        assert runs[loser].returncode != 0
        assert "RecoveryConflictError" in logs[loser] and "JOB DONE" not in logs[loser], \
            logs[loser][-3000:]
        held = job.holder(files)
        assert held["live"] and held["epoch"] == 1 and held["pid"] == p.pid, held
        assert p.poll() is None  # the winner goes on undisturbed
        open(gate, "w").close()
        kill_when(p, lambda: len(job.finished(job.fingerprints()[1])) >= 1)
    finally:
        for q in runs.values():
            _kill(q)
    a, b = job.fingerprints()
    done_a, done_b = job.finished(a), job.finished(b)
    assert done_a == PARTS and done_b, job.log(winner)[-3000:]
    events = [n for n in files.listdir(f"{job.job_dir()}/events")]
    assert events and all(n.endswith(".log") and n.count(".") == 2 for n in events), events
    job.run("r2")
    assert "taking over from" in job.log("r2") and "(its lease was dead)" in job.log("r2")
    assert job.holder(files)["epoch"] == 2
    assert job.output() == reference
    assert job.ran("A", "r2") == []  # A wholly recovered: its upstream did not run
    assert set(job.ran("B", "r2")) == PARTS - done_b
    # committed files written in place: no temporary name left behind, none renamed
    ops = f"{job.job_dir()}/operators"
    names = [n for d in files.listdir(ops) for n in files.listdir(f"{ops}/{d}")]
    assert names and not any(n.startswith(".") or n.endswith(".tmp") for n in names)


def test_whole_job_killed_midway_resumes_from_s3(tmp_path, s3, files):
    """Whole-job recovery (``scope=job``, tests/test_recovery_jobscope.py's plain job) with the
    job directory in the bucket: each finished map task's output is uploaded there; the driver is
    killed midway through the slow map stage. The resume reads the join's two shuffles back from
    S3, runs only the slow stage's missing map tasks, and puts each kept map output of that
    partly kept shuffle under Spark's block resolver by copying it from the bucket."""
    from test_recovery_jobscope import Job as WholeJob
    from test_recovery_jobscope import killed_midway_and_resumed

    job = WholeJob(tmp_path, "whole")
    job.dir = f"{s3.bucket}/fw-{uuid.uuid4().hex[:8]}"
    job.more_settings, job.more_env = s3.conf(), s3.driver_env()
    killed_midway_and_resumed(job, files)


def test_a_live_lease_outlives_its_timeout_then_a_stopped_driver_is_fenced(tmp_path, reference,
                                                                           s3, files):
    """Renewal overwrites the lease object (If-Match), so a running driver keeps its lease past
    the timeout and a second driver is refused; stopped (SIGSTOP) past the timeout it loses it, a
    third driver takes over and finishes, and when the first wakes it can make none of its writes
    count: it fails, and a later run finds everything committed by the successor and, a resume
    of a finished job, uploads nothing under operators/ (the requests the server counts)."""
    timeout = 8.0
    job = S3Job(tmp_path, "fenced", s3)
    # B's partitions wait for the gate: still running after the checks below, and with work to
    # commit when it wakes, however loaded the machine is
    gate = str(tmp_path / "gate")
    first = job.start("r1", slow=0.5, gate=gate, lease_timeout=f"{timeout:g}s")
    try:
        deadline = time.time() + 180
        while not (job.holder(files) or {}).get("live"):
            assert first.poll() is None and time.time() < deadline, job.log("r1")[-3000:]
            time.sleep(0.3)
        taken = time.time()
        time.sleep(timeout + 2)  # past the timeout: only renewals keep it live
        held = job.holder(files)
        assert held["live"] and held["epoch"] == 1 and held["pid"] == first.pid, held
        second = job.start("r2", lease_timeout=f"{timeout:g}s")
        assert second.wait(180) != 0
        log = job.log("r2")
        assert "RecoveryConflictError" in log and "another driver holds job 'fenced'" in log, \
            log[-3000:]
        assert first.poll() is None and time.time() - taken > timeout
        os.killpg(first.pid, signal.SIGSTOP)  # hung: renews nothing
        stopped = time.time()
        wait_until(lambda: job.holder(files)["state"] == "expired", timeout + 30,
                   "the stopped driver's lease expired")
        job.run("r3", lease_timeout=f"{timeout:g}s")
        assert "taking over from" in job.log("r3")
        assert job.output() == reference
        assert job.holder(files)["epoch"] == 2
        open(gate, "w").close()
        os.killpg(first.pid, signal.SIGCONT)
        rc = first.wait(180)
        assert rc != 0 and "JOB DONE" not in job.log("r1"), job.log("r1")[-3000:]
        assert "lease on job 'fenced' was lost" in job.log("r1")
        assert time.time() - stopped > timeout
    finally:
        _kill(first)
    assert job.output() == reference
    # the successor's events are intact and the first driver's late ones do not count: a run
    # now recovers everything and computes nothing; a resume of a finished job reads everything
    # back, so it uploads nothing under operators/ (counted by the server)
    s3.reset_counters()
    job.run("r4", lease_timeout=f"{timeout:g}s")
    assert job.output() == reference
    assert job.ran("A", "r4") == [] and job.ran("B", "r4") == []
    again = [r for r in s3.requests() if "/operators/" in r[1] and r[0] == "PUT"]
    assert again == []


def test_conditional_create_off_is_refused_at_session_start(spark, s3):
    """With S3A's conditional create turned off the store cannot give create-if-absent, durable
    events (no hsync, no conditional objects) or a renewable lease (no setTimes, no If-Match):
    recovery refuses it when the job opens, naming what is missing and the setting to change."""
    import fullwindow.recovery as recovery
    from fullwindow.errors import ConfigurationError

    bucket = s3.make_bucket(f"fw-off-{uuid.uuid4().hex[:8]}")
    hc = spark.sparkContext._jsc.hadoopConfiguration()
    hc.set(f"fs.s3a.bucket.{bucket[len('s3a://'):]}.create.conditional.enabled", "false")
    keys = {"spark.fullwindow.recovery.enabled": "true",
            "spark.fullwindow.recovery.dir": f"{bucket}/fw",
            "spark.fullwindow.recovery.jobId": "refused"}
    for k, v in keys.items():
        spark.conf.set(k, v)
    try:
        with pytest.raises(ConfigurationError) as err:
            recovery.start(spark)
    finally:
        for k in keys:
            spark.conf.unset(k)
    text = str(err.value)
    assert "spark.hadoop.fs.s3a.create.conditional.enabled=true" in text
    for need in ("durable event writes", "create-if-absent", "renewable lease"):
        assert need in text, text
    assert "S3AFileSystem" in text and "refuses it rather than give a weaker guarantee" in text


def _kind(path: str) -> str:
    for part in ("lease", "events", "operators"):
        if f"/{part}/" in path or path.endswith(f"/{part}") or f"%2F{part}%2F" in path \
                or f"prefix={part}" in path:
            return part
    return "other"


def test_requests_per_committed_partition_then_a_damaged_object_is_computed_again(
        tmp_path, reference, s3, files):
    """What recovery costs in S3 requests, counted by the server: per committed file (the job
    commits 16: A's and B's 4 partitions, B's shuffle input's 4 map outputs of 2 files), per
    event flush and per lease renewal. docs/recovery.md "What it costs on S3" quotes these. Then
    one byte of a committed object (B's partition 2) is changed, its size kept: the status tool
    reads the job's directory on S3 and reports that partition damaged; the resume catches it by
    its CRC32 and runs only that partition again, and its only uploads under operators/ are that
    partition's file. (The same job's uninterrupted run serves both: issue 49. The resume of a
    finished job with nothing damaged, which uploads nothing there, is counted in
    test_a_live_lease_outlives_its_timeout_then_a_stopped_driver_is_fenced's last run.)"""
    job = S3Job(tmp_path, "requests", s3)
    s3.reset_counters()
    started = time.time()
    job.run("r1")
    seconds = time.time() - started
    reqs = s3.requests()
    table: dict = {}
    for method, path, _ in reqs:
        if job.name not in path and "prefix=" not in path:
            continue
        key = (_kind(path), method)
        table[key] = table.get(key, 0) + 1
    committed = [e for e in job.events() if e["type"] == "taskFinished"]
    files_committed = sum(2 if "indexPath" in e else 1 for e in committed)
    event_objects = len(files.listdir(f"{job.job_dir()}/events"))
    print(f"\nrun of {seconds:.0f} s: {files_committed} committed files, "
          f"{event_objects} event objects")
    for (kind, method), n in sorted(table.items()):
        print(f"  {kind:10s} {method:7s} {n}")
    assert files_committed == 16
    # each committed file: one upload, no copy or delete (written in place, no rename)
    assert table.get(("operators", "PUT"), 0) <= files_committed + 4  # + directory markers
    assert table.get(("operators", "DELETE"), 0) == 0
    assert not any("x-amz-copy-source" in p for _, p, _ in reqs)
    # events: one PUT per flush, no more objects than flushes (at most one per 200 ms here)
    assert table.get(("events", "PUT"), 0) <= event_objects + 2
    assert event_objects <= seconds / 0.2 + 2

    # one byte of B's committed partition 2 changed, the size kept
    a, b = job.fingerprints()
    [victim] = [e for e in committed if e["fingerprint"] == b and e["partition"] == 2]
    data = bytearray(files.read(victim["path"]))
    data[len(data) // 2] ^= 0xFF
    files.delete(victim["path"])
    assert files.create_with(victim["path"], bytes(data))
    # the status tool reads the job's directory on S3 the same way: B damaged at partition 2
    from fullwindow.recovery import verify

    st = verify(job.dir, job.name)
    [op_b] = [op for op in st["operations"] if op["fingerprint"] == b]
    assert not op_b["intact"] and list(op_b["damaged"]) == [2] and op_b["committed"] == 4
    assert st["lease"]["state"] == "released" and st["problems"] == []
    s3.reset_counters()
    job.run("r2")
    assert job.output() == reference
    assert job.ran("B", "r2") == [2] and job.ran("A", "r2") == []
    # the resume uploads under operators/ the recomputed partition's file and nothing else
    [redone] = [e for e in job.events() if e["type"] == "taskFinished" and e not in committed]
    assert redone["fingerprint"] == b and redone["partition"] == 2, redone
    again = [p for m, p, _ in s3.requests() if "/operators/" in p and m == "PUT"]
    assert again == ["/" + redone["path"][len("s3a://"):]], (again, redone["path"])


def test_an_input_on_s3_that_changed_changes_the_fingerprint(spark, s3):
    """Inputs on S3 are fingerprinted by their listing (path, size, modification time, ETag): a
    file added to the input directory, or one rewritten, changes the fingerprint of the
    operation that reads it (and so nothing committed over the old input is reused); an
    unchanged directory read again keeps it."""
    from fullwindow.recovery._jobs import _fingerprints

    base = f"{s3.bucket}/input-{uuid.uuid4().hex[:6]}"
    spark.range(0, 100, 1, 2).write.parquet(base)

    def fingerprints():
        op = spark.read.parquet(base).fullWindowPartition().sortPartition("id")
        full, structure, inputs = _fingerprints(op, "sortPartition")
        return full, structure, inputs

    first = fingerprints()
    assert fingerprints() == first and first[2], first
    spark.range(100, 150, 1, 1).write.mode("append").parquet(base)
    added = fingerprints()
    assert added[0] != first[0] and added[1] == first[1]  # same program, other input
    assert added[2] != first[2]


def test_exactly_once_appends_on_s3(tmp_path, s3, spark):
    """The recovery directory and the write targets in the bucket (S3A, Hadoop's classic file
    commit: a copy for each rename): write 1 committed before the kill is skipped on the resume,
    write 2 is written once, nothing of the killed run's tasks published."""
    import test_recovery_writes as w

    job = w.Job(tmp_path, "writes")
    job.dir = f"{s3.bucket}/fw-{uuid.uuid4().hex[:8]}"
    job.targets = f"{s3.bucket}/out-{uuid.uuid4().hex[:8]}"
    conf = json.dumps(s3.conf({}))
    job.options = lambda writes="append,append", **_: {
        "WRITES": writes, "FW_EXTRA_CONF": conf, "TARGETS": job.targets, **s3.driver_env()}
    w.kill_while_b_computes_then_resume(job, lambda i: job.read(spark, i, "append"))
    w.each_target_has_its_markers(job, lambda i: w.store_markers(spark, job.target(i, "append")))


def test_cleanup_deletes_only_a_job_on_s3(s3, files, spark):
    """Issue 51 on S3: bad job ids and directories that hold no job are refused with nothing
    deleted; the job alone is deleted."""
    from test_recovery_safe import cleanup_cases_on

    cleanup_cases_on(files, spark, f"{s3.bucket}/safe-{uuid.uuid4().hex[:6]}")
