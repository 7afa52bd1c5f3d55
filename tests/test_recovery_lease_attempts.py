"""The lease and restarted drivers, on a real HDFS (tests/hdfs.py): the next attempt of the same
application takes a live lease at once; any other run is refused while it is live, or waits for
it with ``spark.fullwindow.recovery.leaseWait``. The holders here cannot be freed by the
dead-process check (which frees a lease whose holder ran on this host and is gone): they are
recorded on another host, or they are this very test process, alive. Also the key's checks, and
the same rules where a local recovery directory is checked before the JVM starts."""
from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
import uuid

import pytest

import fullwindow
from fullwindow.errors import ConfigurationError
from fullwindow.recovery import _fs, lease
from fullwindow.recovery.config import LEASE_WAIT, settings_from
from fullwindow.recovery.errors import RecoveryConflictError
from test_recovery_hdfs import hdfs  # noqa: F401 - the module's MiniHDFS fixture

APP = "application_1700000000000_0007"
OTHER_APP = "application_1700000000000_0008"


@pytest.fixture(scope="module")
def fs(spark, hdfs):
    return _fs.filesystem(hdfs.uri + "/", spark)


@pytest.fixture
def job_dir(hdfs):
    return f"{hdfs.uri}/fw-leases/{uuid.uuid4().hex[:8]}"


def remote_holder(fs, job_dir: str, app: str = APP, attempt: str | None = "1",
                  timeout_ms: int = 600_000, epoch: int = 1) -> None:
    """A live lease written as a driver on another host writes it (renewed now)."""
    fs.makedirs(lease.lease_dir(job_dir))
    info = {"host": "elsewhere.example", "pid": 4242, "pidStart": "1", "appId": app,
            "attemptId": attempt, "started": int(time.time() * 1000), "timeoutMs": timeout_ms}
    path = lease._epoch_path(lease.lease_dir(job_dir), epoch)
    assert fs.create_with(path, json.dumps(info).encode("utf-8"))


def test_the_next_attempt_takes_a_live_lease_held_on_another_host_at_once(fs, job_dir):
    remote_holder(fs, job_dir)
    before = lease.read(fs, job_dir)
    assert before["live"] and before["state"] == "live" and before["attemptId"] == "1"
    assert before["expires"] - time.time() * 1000 > 500_000  # ten minutes of life left
    nxt = lease.Lease(fs, job_dir, 60, APP, attempt_id="2")
    t0 = time.monotonic()
    nxt.acquire("recovery.start")
    try:
        assert time.monotonic() - t0 < 10  # at once: no waiting for the ten minutes
        assert nxt.took_over == "earlier attempt" and nxt.epoch == 2
        now = lease.read(fs, job_dir)
        assert (now["appId"], now["attemptId"], now["live"]) == (APP, "2", True)
        assert fs.listdir(lease.lease_dir(job_dir)) == ["epoch-000000002"]
    finally:
        nxt.release()


def test_the_next_attempt_takes_over_from_a_live_earlier_attempt_of_this_host(fs, job_dir):
    """The earlier attempt is this test process, alive and renewing: the dead-process check
    cannot free it; the attempt rule does, and the earlier attempt finds its lease lost."""
    lost = []
    first = lease.Lease(fs, job_dir, 600, APP, on_lost=lambda why, taken: lost.append(taken),
                        attempt_id="1")
    first.acquire("x")
    assert lease.read(fs, job_dir)["live"]
    second = lease.Lease(fs, job_dir, 600, APP, attempt_id="2")
    second.acquire("x")
    try:
        assert second.took_over == "earlier attempt"
        assert first.renew() is False and lost == [True]
        assert "another driver took it over" in first.lost and "attempt 2" in first.lost
        # an attempt never takes over from a later one
        third = lease.Lease(fs, job_dir, 600, APP, attempt_id="1")
        with pytest.raises(RecoveryConflictError, match=f"application {APP} attempt 2"):
            third.acquire("x")
    finally:
        second.release()
        first.release()


@pytest.mark.parametrize("app,attempt", [
    (OTHER_APP, "2"),  # another application, whatever its attempt
    (APP, "1"),        # the same attempt again
    (APP, None),       # the same application id without attempts (client mode)
])
def test_any_other_run_is_refused_while_the_lease_is_live(fs, job_dir, app, attempt):
    remote_holder(fs, job_dir)
    with pytest.raises(RecoveryConflictError) as err:
        lease.Lease(fs, job_dir, 60, app, attempt_id=attempt).acquire("recovery.start")
    msg = str(err.value)
    assert msg.startswith("recovery.start: another driver holds job")
    assert f"host elsewhere.example, pid 4242, application {APP} attempt 1" in msg
    assert LEASE_WAIT in msg and "waited" not in msg
    assert lease.read(fs, job_dir)["epoch"] == 1  # the holder keeps it


def test_lease_wait_takes_the_lease_once_it_expires(fs, job_dir):
    remote_holder(fs, job_dir, app=OTHER_APP, timeout_ms=3000)
    waiter = lease.Lease(fs, job_dir, 60, APP, wait=60)
    t0 = time.monotonic()
    waiter.acquire("x")
    took = time.monotonic() - t0
    try:
        # it waited for the holder's three seconds, and not much more (polls are ~0.5 s apart)
        assert 1.5 <= took < 15, took
        assert waiter.took_over == "expired"
    finally:
        waiter.release()


def test_lease_wait_takes_the_lease_once_its_holder_releases_it(fs, job_dir):
    holder = lease.Lease(fs, job_dir, 600, OTHER_APP)
    holder.acquire("x")
    timer = threading.Timer(1.0, holder.release)
    timer.start()
    waiter = lease.Lease(fs, job_dir, 60, APP, wait=120)
    t0 = time.monotonic()
    try:
        waiter.acquire("x")
        took = time.monotonic() - t0
        assert 0.8 <= took < 15, took
        assert waiter.took_over == "released"
    finally:
        timer.join()
        waiter.release()


def test_lease_wait_fails_once_the_wait_is_over(fs, job_dir):
    remote_holder(fs, job_dir, app=OTHER_APP)
    waiter = lease.Lease(fs, job_dir, 60, APP, wait=1.5)
    t0 = time.monotonic()
    with pytest.raises(RecoveryConflictError) as err:
        waiter.acquire("recovery.start")
    assert 1.5 <= time.monotonic() - t0 < 10
    msg = str(err.value)
    assert "application " + OTHER_APP in msg
    assert f"This run waited 1.5 s ({LEASE_WAIT}) for it to end." in msg


def test_a_session_with_lease_wait_waits_for_the_holder(spark, fs, hdfs):
    """The key through a session: an operation opens the job and waits for the lease."""
    job = f"wait-{uuid.uuid4().hex[:8]}"
    directory = f"{hdfs.uri}/fw-sessions"
    job_dir = f"{directory}/{job}"
    holder = lease.Lease(fs, job_dir, 600, OTHER_APP)
    holder.acquire("x")
    timer = threading.Timer(1.5, holder.release)
    keys = {"spark.fullwindow.recovery.enabled": "true", "spark.fullwindow.recovery.dir": directory,
            "spark.fullwindow.recovery.jobId": job}
    try:
        for k, v in keys.items():
            spark.conf.set(k, v)
        with pytest.raises(RecoveryConflictError, match="another driver holds job"):
            spark.range(10).fullWindowPartition().sortPartition("id").collect()
        spark.conf.set(LEASE_WAIT, "60s")
        timer.start()
        t0 = time.monotonic()
        rows = spark.range(10, numPartitions=2).fullWindowPartition().sortPartition("id").collect()
        assert sorted(r.id for r in rows) == list(range(10))
        assert time.monotonic() - t0 >= 1.0
        now = lease.read(fs, job_dir)
        assert now["appId"] == spark.sparkContext.applicationId and now["live"]
    finally:
        timer.cancel()
        if timer.ident is not None:
            timer.join()
        fullwindow.recovery.cleanup(spark)
        for k in (*keys, LEASE_WAIT):
            spark.conf.unset(k)
        holder.release()


# -- the key --------------------------------------------------------------------------------------

def _settings(**extra):
    conf = {"spark.fullwindow.recovery.enabled": "true", "spark.fullwindow.recovery.dir": "/d",
            "spark.fullwindow.recovery.jobId": "j", **extra}
    return settings_from(conf.get, "x")


def test_lease_wait_values():
    assert _settings().lease_wait == 0.0
    assert _settings(**{LEASE_WAIT: "90s"}).lease_wait == 90.0
    assert _settings(**{LEASE_WAIT: "2min"}).lease_wait == 120.0
    assert _settings(**{LEASE_WAIT: "0"}).lease_wait == 0.0


@pytest.mark.parametrize("value,expected", [
    ("soon", "expected a duration"),
    ("-5s", "expected a duration of 0 or more"),
    ("inf", "expected a duration of 0 or more"),
])
def test_bad_lease_wait_values_name_the_key(value, expected):
    with pytest.raises(ConfigurationError) as err:
        _settings(**{LEASE_WAIT: value})
    assert str(err.value).startswith(f"{LEASE_WAIT} is '{value}'; {expected}")
    with pytest.raises(ConfigurationError, match=LEASE_WAIT):
        fullwindow.configure(__import__("pyspark").sql.SparkSession.builder, {
            "spark.fullwindow.recovery.enabled": True, "spark.fullwindow.recovery.dir": "/d",
            "spark.fullwindow.recovery.jobId": "j", LEASE_WAIT: value})


# -- a local directory, checked before the JVM starts ------------------------------------------

def test_check_before_the_jvm_knows_attempts_and_waits(tmp_path, monkeypatch):
    job_dir = os.path.join(str(tmp_path), "j")
    remote_holder(_fs.LocalFS(), job_dir)
    settings = settings_from({"spark.fullwindow.recovery.enabled": "true",
                              "spark.fullwindow.recovery.dir": str(tmp_path),
                              "spark.fullwindow.recovery.jobId": "j"}.get, "x")
    with pytest.raises(RecoveryConflictError):
        lease.check_free(settings, "building the fullwindow session")
    # the application master of the same application's attempt 2 (YARN names its container so)
    monkeypatch.setenv("CONTAINER_ID", "container_e03_1700000000000_0007_02_000001")
    assert lease.attempt_from_env() == (APP, "2")
    lease.check_free(settings, "building the fullwindow session")
    monkeypatch.setenv("CONTAINER_ID", "container_1700000000000_0008_02_000001")
    assert lease.attempt_from_env() == (OTHER_APP, "2")
    with pytest.raises(RecoveryConflictError):
        lease.check_free(settings, "building the fullwindow session")
    # with a wait (no attempts now): refused after it, then free once the holder's lease expires
    monkeypatch.delenv("CONTAINER_ID")
    waiting = settings_from({"spark.fullwindow.recovery.enabled": "true",
                             "spark.fullwindow.recovery.dir": str(tmp_path),
                             "spark.fullwindow.recovery.jobId": "j", LEASE_WAIT: "1s"}.get, "x")
    t0 = time.monotonic()
    with pytest.raises(RecoveryConflictError, match=rf"waited 1 s \({LEASE_WAIT}\)"):
        lease.check_free(waiting, "building the fullwindow session")
    assert time.monotonic() - t0 >= 1.0
    remote_holder(_fs.LocalFS(), job_dir, app=OTHER_APP, timeout_ms=1500, epoch=2)
    lease.check_free(dataclasses.replace(waiting, lease_wait=30.0),
                     "building the fullwindow session")
    assert lease.read(_fs.LocalFS(), job_dir)["state"] == "expired"
