"""Recovery from Spark Connect clients, with real processes: a server started with fullwindow's
launcher (``python -m fullwindow.server``: recovery's Python runtime beside the server's JVM)
is SIGKILLed midway through a client's job and started again; the client program's next run
resumes (output exact, finished partitions not run again). Sessions of one server keep their
jobs apart: the same job id from a second session is refused while the first runs it, and
taken over once that session is closed."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from test_recovery_crash import PARTS, Job  # the classic crash tests' job
from test_recovery_jobscope import Job as WholeJob  # the whole-job recovery tests' plain job
from test_recovery_writes import A_ROWS as WRITES_A, B_ROWS as WRITES_B, Job as WritesJob
from test_recovery_writes import lines, refused_after_a_crash_before_the_record
from server import _LOCAL_CONNECT_ENV, ConnectServer, clean_env
from helpers import fast_jvm, wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _reference() -> list[tuple]:
    """What tests/recovery_job.py writes: per k of id % 13 over range(4000) with v = 2 id,
    the count and total of v, and k again."""
    acc: dict[int, list[int]] = {}
    for i in range(4000):
        n_t = acc.setdefault(i % 13, [0, 0])
        n_t[0] += 1
        n_t[1] += 2 * i
    return sorted((k, n, t, k) for k, (n, t) in acc.items())


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    ctl = str(tmp_path_factory.mktemp("ctl"))
    # recovery turned on in the server's settings: its sessions inherit it (the server's own
    # session opens no job of its own)
    # FAST_JVM_OPTIONS: the server is killed and started again by the tests (issue 49)
    s = ConnectServer(launcher=True, env={"FW_CTL": ctl, **fast_jvm({})},
                      conf={"spark.sql.shuffle.partitions": "4",
                            "spark.fullwindow.recovery.enabled": "true"})
    s.ctl = ctl
    s.start()
    yield s
    s.cleanup()


class _OnServer:
    """A crash-test job (a ``helpers.RecoveryJob``) run as a client of ``server``."""

    def __init__(self, base, name: str, server: ConnectServer):
        super().__init__(base, name)
        self.server = server

    def env(self, run: str, slow: float, variant: str, **options) -> dict:
        # nothing of this process's local Connect session (its token turns TLS on)
        env = {k: v for k, v in super().env(run, slow, variant, **options).items()
               if k not in _LOCAL_CONNECT_ENV}
        env.update(FW_REMOTE=self.server.url, FW_CTL=self.server.ctl)
        return env


class ConnectJob(_OnServer, Job):
    """tests/recovery_job.py (the classic crash tests' job) as a client of ``server``."""


def _kill_and_resume(job: "ConnectJob", server: ConnectServer) -> tuple[str, str]:
    """Runs ``job`` until B has a finished partition, SIGKILLs the server, starts it again and
    runs the client program again: the output is exact, A (wholly committed) did not run again,
    B ran just its unfinished partitions. Returns A's and B's fingerprints."""
    client = job.start("r1", slow=1.5)
    wait_until(lambda: job.finished(job.fingerprints()[1]), 240, "a partition of B finished",
               client, lambda: job.log("r1"))
    server.kill()  # the driver crashes (launcher, JVM and workers: one process group)
    a, b = job.fingerprints()
    done_b = job.finished(b)
    assert job.finished(a) == PARTS and 1 <= len(done_b) < 4, (
        done_b, job.finished(a), open(job._log("r1")).read()[-3000:], server.log()[-3000:])
    # the client outlives its server: its running action fails, it does not finish the job
    try:
        client.wait(60)
    except subprocess.TimeoutExpired:
        client.kill()
        client.wait(30)
    assert "JOB DONE" not in open(job._log("r1")).read()
    server.restart()
    job.run("r2")
    assert job.output() == _reference()
    assert job.ran("A", "r2") == []  # A wholly recovered: nothing upstream of it ran
    assert job.ran("B", "r2") == sorted(PARTS - done_b)
    return a, b


def test_a_job_resumes_after_its_connect_server_is_killed(server, tmp_path):
    job = ConnectJob(tmp_path, "connect-midway", server)
    a, b = _kill_and_resume(job, server)
    # each run's first record names the Connect session that ran it
    from fullwindow.recovery.eventstore import decode_records

    seg_dir = os.path.join(job.dir, job.name, "events")
    firsts = [decode_records(open(os.path.join(seg_dir, n), "rb").read())[0][0]
              for n in sorted(os.listdir(seg_dir))]
    assert [e["type"] for e in firsts] == ["runStarted"] * 2
    assert all(e.get("connectSession") for e in firsts)
    assert firsts[0]["connectSession"] != firsts[1]["connectSession"]
    # the status tool reads a Connect job's directory like any other
    out = subprocess.run([sys.executable, "-m", "fullwindow.recovery", "verify", "--dir",
                          job.dir, "--job-id", job.name, "--json"], capture_output=True,
                         text=True, env=clean_env(), cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    ops = {o["fingerprint"]: o for o in json.loads(out.stdout)["operations"]}
    assert ops[a]["committed"] == ops[b]["committed"] == 4 and ops[b]["intact"]


class PlainHdfsConnectJob(_OnServer, WholeJob):
    """tests/recovery_jobscope_job.py, the whole-job recovery tests' plain job (no full-window
    operation), as a client of ``server``, its recovery directory on a real HDFS (tests/hdfs.py);
    its events are read with this process's classic session (the local Connect server's
    driver)."""

    def __init__(self, base, name: str, server: ConnectServer, hdfs_uri: str, classic):
        super().__init__(base, name, server)
        self.dir = f"{hdfs_uri}/fw-connect-{name}"
        self.classic = classic

    def options(self, **options) -> dict:
        # the settings go to fullwindow.session(remote=...): no spark-submit in a client
        return {**super().options(**options), "PYSPARK_SUBMIT_ARGS": None,
                "FW_EXTRA_CONF": json.dumps({"spark.fullwindow.eventStore.flushInterval":
                                             "200ms"})}

    def events(self) -> list[dict]:
        import warnings

        from fullwindow.recovery import job_events

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return job_events(self.dir, self.name, self.classic)


def test_a_plain_job_on_hdfs_resumes_after_its_connect_server_is_killed_mid_map_stage(
        server, spark, tmp_path):
    """Whole-job recovery (the default scope) from a Connect client, the job directory on HDFS:
    the server is SIGKILLed once 2 of the slow map stage's 4 outputs are kept there, and started
    again; the client program's next run reads the join's two shuffles back (their upstream UDF
    runs no task), runs only the slow stage's missing map tasks, places the kept ones as they are
    (the server's log has no fallback warning), and writes an uninterrupted run's output."""
    from pyspark.sql.session import SparkSession as ClassicSession

    from hdfs import MiniHDFS
    from test_recovery_jobscope import PARTS as MAP_TASKS
    from test_recovery_jobscope import expected_output

    classic = ClassicSession._instantiatedSession  # the local Connect server's driver
    cluster = MiniHDFS().start()
    try:
        job = PlainHdfsConnectJob(tmp_path, "connect-hdfs", server, cluster.uri, classic)
        client = job.start("r1", slow=4.0)
        wait_until(lambda: len(job.finished(job.slow_shuffle())) >= 2, 240,
                   "2 of the slow stage's map outputs kept", client, lambda: job.log("r1"))
        server.kill()  # the driver crashes (launcher, JVM and workers: one process group)
        slow = job.slow_shuffle()
        done = job.finished(slow)
        assert 2 <= len(done) < len(MAP_TASKS), (done, job.log("r1")[-3000:])
        assert job.ran("U", "r1")
        try:
            client.wait(60)
        except subprocess.TimeoutExpired:
            client.kill()
            client.wait(30)
        assert "JOB DONE" not in job.log("r1")
        kept = [e for e in job.events()
                if e["type"] == "taskFinished" and e["fingerprint"] == slow]
        # uploaded to HDFS after each map task ended, not by the task (the event says how long)
        assert len(kept) == len(done) and all(
            e["path"].startswith(cluster.uri) and isinstance(e.get("uploadMs"), int)
            for e in kept), kept
        server.restart()
        job.run("r2")
        assert job.output() == expected_output()
        assert job.ran("A", "r2") == []  # the join's shuffles read back: their UDF ran no task
        assert job.ran("U", "r2") == sorted(set(MAP_TASKS) - done)
        assert "could not place the kept map output" not in server.log()
        last = [e for e in job.shuffles() if e["fingerprint"] == slow][-1]
        assert last["recovered"] == len(done) and last["stable"] is True
    finally:
        cluster.stop()


class _AwayFromLocal:
    """Without what this process's local Connect session put in the environment: its token
    (it would turn TLS on for another server) and SPARK_LOCAL_REMOTE (stopping any session
    would stop the local server too)."""

    def __enter__(self) -> None:
        self.saved = {k: os.environ.pop(k) for k in _LOCAL_CONNECT_ENV if k in os.environ}

    def __exit__(self, *exc) -> None:
        os.environ.update(self.saved)


def _session(url: str, conf: dict):
    from pyspark.sql import SparkSession

    with _AwayFromLocal():
        spark = SparkSession.builder.remote(url).create()
    for k, v in conf.items():
        spark.conf.set(k, v)
    return spark


def _stop(spark) -> None:
    with _AwayFromLocal():
        spark.stop()


def _conf(directory: str, job_id: str) -> dict:
    return {"spark.fullwindow.recovery.enabled": "true",
            "spark.fullwindow.recovery.dir": directory,
            "spark.fullwindow.recovery.jobId": job_id}


def _op(spark):
    import fullwindow  # noqa: F401 - the DataFrame methods

    return spark.range(0, 40, 1, 2).fullWindowPartition().mapPartition(
        lambda rows: [(sum(1 for _ in rows),)], "n long")


def test_a_write_before_the_sessions_job_started_is_refused_then_recorded(server, tmp_path):
    """A client session given its job's settings once made (``spark.conf.set``) has not started
    the job on the server: its first write fails with ``RECOVERY_NOT_STARTED`` (raised by the
    server, naming what to do) and writes nothing; after ``fullwindow.recovery.start(spark)``
    the same write runs as one of the job's, recorded."""
    from pyspark.errors import AnalysisException

    from fullwindow import recovery

    d = str(tmp_path / "recovery")
    out = str(tmp_path / "out")
    spark = _session(server.url, _conf(d, "late"))
    try:
        with pytest.raises(AnalysisException, match=r"RECOVERY_NOT_STARTED\] a write: .*"
                                                    r"python -m fullwindow.server"):
            spark.range(4).write.parquet(out)
        assert not os.path.exists(out)
        assert recovery.start(spark) is True
        spark.range(4).write.parquet(out)
        states = sorted(n.rsplit(".", 1)[-1] for n in os.listdir(os.path.join(d, "late", "writes"))
                        if not n.endswith(".crc"))  # the server writes through Hadoop's local FS
        assert states == ["committed", "started"], states
    finally:
        _stop(spark)


def test_sessions_of_one_server_keep_their_jobs_apart(server, tmp_path):
    from fullwindow import recovery
    from fullwindow.recovery import RecoveryConflictError

    d = str(tmp_path / "recovery")
    one = _session(server.url, _conf(d, "shared"))
    two = _session(server.url, _conf(d, "shared"))
    other = _session(server.url, _conf(d, "other"))
    try:
        assert sorted(r.n for r in _op(one).collect()) == [20, 20]
        with pytest.raises(RecoveryConflictError, match=r"run by Spark Connect session "
                                                        + one.client._session_id):
            _op(two)
        # another job id in another session: a job of its own, beside the first
        assert sorted(r.n for r in _op(other).collect()) == [20, 20]
        recovery.flush(other)
        assert recovery.status(d, "other", other)["operations"][0]["committed"] == 2
        with pytest.raises(RecoveryConflictError):
            recovery.cleanup(two)  # not while the first session runs it
        _stop(one)  # the first session ends: the second takes the job over and reads it back
        deadline = time.time() + 30
        while True:
            try:
                out = _op(two)
                break
            except RecoveryConflictError:
                assert time.time() < deadline, "the closed session's job was not released"
                time.sleep(0.5)
        assert "FullWindowRecoveredScan" in out._explain_string(mode="simple")
        assert sorted(r.n for r in out.collect()) == [20, 20]
        assert recovery.cleanup(two) is True and not os.path.exists(os.path.join(d, "shared"))
    finally:
        for s in (one, two, other):
            try:
                _stop(s)
            except Exception:  # noqa: BLE001
                pass


class ConnectWritesJob(_OnServer, WritesJob):
    """tests/recovery_writes_job.py (the classic write tests' job) as a client of ``server``."""


def test_a_committed_write_is_not_written_again_after_the_server_is_killed(server, tmp_path):
    """Write 1 (append) committed, the server killed while B computes; restarted, the client's
    next run skips write 1 (nothing computed) and writes B once."""
    job = ConnectWritesJob(tmp_path, "connect-writes", server)
    client = job.start("r1", slow=2.0, writes="append,append")
    wait_until(lambda: job.ran("B", "r1"), 240, "B's function ran", client,
               lambda: job.log("r1"))
    server.kill()
    try:
        client.wait(60)
    except subprocess.TimeoutExpired:
        client.kill()
        client.wait(30)
    assert job.rows(1, "append") == WRITES_A
    server.restart()
    job.run("r2", writes="append,append")
    assert job.rows(1, "append") == WRITES_A and job.rows(2, "append") == WRITES_B
    assert job.ran("W1", "r2") == [] and job.ran("A", "r2") == []


def test_an_unchecked_write_refused_over_connect(server, tmp_path):
    """onUncheckedWrite=fail from a Connect client: the resumed run's JDBC write that an earlier
    run started and never recorded as finished fails, naming the setting."""
    job = ConnectWritesJob(tmp_path, "connect-jdbc", server)
    job.run("r1", writes="append,jdbc")
    refused_after_a_crash_before_the_record(job, "r2")


def test_foreach_partition_over_connect(server, tmp_path):
    """A Connect client's foreachPartition (4.x: a mapInArrow the client collects) is a write of
    the job all the same, numbered and decided by the server's runtime: run once, skipped by the
    next run (nothing appended again), refused under onUncheckedWrite=fail once the job's record
    of its commit is gone (a crash between the two)."""
    job = ConnectWritesJob(tmp_path, "connect-actions", server)
    out = os.path.join(job.out, "2-foreachPartition.txt")
    job.run("r1", writes="append,foreachPartition")
    assert lines(out) == WRITES_B
    job.run("r2", writes="append,foreachPartition")
    assert lines(out) == WRITES_B and job.ran("W2", "r2") == []
    assert "write 2 of job connect-actions (foreachPartition: " in server.log()
    records = os.path.join(job.dir, job.name, "writes")
    for r in job.records():
        if r.startswith("2.") and r.endswith(".committed"):
            os.remove(os.path.join(records, r))
    p = job.start("r3", writes="append,foreachPartition",
                  extra='{"spark.fullwindow.recovery.onUncheckedWrite": "fail"}')
    assert p.wait(300) != 0
    log = open(job._log("r3")).read()
    assert "[FULLWINDOW.RECOVERY_UNCHECKED_WRITE] write 2 of job connect-actions " \
        "(foreachPartition: " in log, log[-3000:]
    assert lines(out) == WRITES_B and job.ran("W2", "r3") == []
