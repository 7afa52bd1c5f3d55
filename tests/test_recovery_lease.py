"""One driver per job id (the lease on ``<dir>/<jobId>``): the lease itself on a local
directory (acquire, conflict, release, expiry, a dead holder, a race), then real driver processes
of tests/recovery_job.py, one job's drivers in turn: a second driver while the first runs fails
with RecoveryConflictError naming the first; a hung (SIGSTOPped) driver blocks a restart until
its lease expires and no longer, and once it wakes up it finds its lease lost and stops instead
of finishing; a SIGKILLed driver (here the hung one's successor) is taken over at once on its own
host."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from fullwindow.errors import FullWindowError
from fullwindow.recovery import _fs, lease
from fullwindow.recovery.errors import RecoveryConflictError
from helpers import kill_group, kill_when, wait_until
from test_recovery_crash import PARTS, reference  # noqa: F401 - reference: the fixture
from test_recovery_crash import Job as CrashJob


def _lease(tmp_path, timeout=5.0, app="app-1", job="job"):
    return lease.Lease(_fs.LocalFS(), os.path.join(str(tmp_path), job), timeout, app)


def _fake_holder(tmp_path, epoch, renewed_ms, host="elsewhere.example", pid=1, timeout_ms=5000,
                 job="job"):
    d = lease.lease_dir(os.path.join(str(tmp_path), job))
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"epoch-{epoch:09d}")
    with open(path, "w") as f:
        json.dump({"host": host, "pid": pid, "appId": "app-old", "started": renewed_ms,
                   "timeoutMs": timeout_ms}, f)
    os.utime(path, ns=(renewed_ms * 1_000_000,) * 2)
    return path


def test_second_lease_conflicts_and_names_the_holder_then_release_frees_it(tmp_path):
    first = _lease(tmp_path, app="app-first")
    first.acquire("test")
    try:
        holder = lease.read(_fs.LocalFS(), first.job_dir)
        assert holder["live"] and holder["state"] == "live" and holder["pid"] == os.getpid()
        assert holder["host"] == socket.gethostname() and holder["appId"] == "app-first"
        with pytest.raises(RecoveryConflictError) as err:
            _lease(tmp_path, app="app-second").acquire("recovery.start")
        assert isinstance(err.value, FullWindowError)
        msg = str(err.value)
        assert msg.startswith("recovery.start: another driver holds job 'job'")
        assert f"pid {os.getpid()}" in msg and "app-first" in msg and socket.gethostname() in msg
        # renewal moves the modification time forward
        before = lease.read(_fs.LocalFS(), first.job_dir)["renewed"]
        time.sleep(0.05)
        assert first.renew()
        assert lease.read(_fs.LocalFS(), first.job_dir)["renewed"] > before
    finally:
        first.release()
    assert lease.read(_fs.LocalFS(), first.job_dir)["state"] == "released"
    second = _lease(tmp_path, app="app-second")
    second.acquire("test")
    try:
        now = lease.read(_fs.LocalFS(), second.job_dir)
        assert now["epoch"] == 2 and now["appId"] == "app-second" and now["live"]
        # the first holder's file is gone; the first holder cannot renew any more
        assert os.listdir(lease.lease_dir(second.job_dir)) == ["epoch-000000002"]
        assert first.renew() is False
    finally:
        second.release()


def test_a_remote_holder_blocks_until_its_lease_expires(tmp_path):
    now = int(time.time() * 1000)
    _fake_holder(tmp_path, 3, renewed_ms=now - 1000, timeout_ms=3000)
    with pytest.raises(RecoveryConflictError, match="host elsewhere.example, pid 1, application "
                       "app-old.*expires in 2 s"):
        _lease(tmp_path).acquire("x")
    _fake_holder(tmp_path, 3, renewed_ms=now - 3001, timeout_ms=3000)
    assert lease.read(_fs.LocalFS(), os.path.join(str(tmp_path), "job"))["state"] == "expired"
    taker = _lease(tmp_path)
    taker.acquire("x")
    assert taker.epoch == 4
    taker.release()


def test_a_holder_whose_process_is_gone_from_this_host_is_dead_at_once(tmp_path):
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    now = int(time.time() * 1000)
    _fake_holder(tmp_path, 1, renewed_ms=now, host=socket.gethostname(), pid=p.pid,
                 timeout_ms=600_000)
    assert lease.read(_fs.LocalFS(), os.path.join(str(tmp_path), "job"))["state"] == "dead"
    taker = _lease(tmp_path)
    taker.acquire("x")
    taker.release()
    # a process that ended but is not reaped yet (a zombie keeps its /proc entry): dead too
    z = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.time() + 30
    while open(f"/proc/{z.pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.time() < deadline
        time.sleep(0.05)
    _fake_holder(tmp_path, 3, renewed_ms=now, host=socket.gethostname(), pid=z.pid,
                 timeout_ms=600_000)
    assert lease.read(_fs.LocalFS(), os.path.join(str(tmp_path), "job"))["state"] == "dead"
    z.wait()
    # a live process of this host with the recorded start time is live, whatever its age
    _fake_holder(tmp_path, 5, renewed_ms=now, host=socket.gethostname(), pid=os.getpid(),
                 timeout_ms=600_000)
    path = os.path.join(lease.lease_dir(os.path.join(str(tmp_path), "job")), "epoch-000000005")
    info = json.load(open(path))
    info["pidStart"] = lease._process_start(os.getpid())
    open(path, "w").write(json.dumps(info))
    assert lease.read(_fs.LocalFS(), os.path.join(str(tmp_path), "job"))["live"]


def test_racing_drivers_one_wins(tmp_path):
    now = int(time.time() * 1000)
    _fake_holder(tmp_path, 7, renewed_ms=now - 10_000, timeout_ms=1000)  # expired
    results: list = []
    leases = [_lease(tmp_path, app=f"app-{i}") for i in range(8)]
    barrier = threading.Barrier(len(leases))

    def go(one):
        barrier.wait()
        try:
            one.acquire("race")
            results.append(("won", one))
        except RecoveryConflictError:
            results.append(("lost", one))

    threads = [threading.Thread(target=go, args=(one,)) for one in leases]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [one for kind, one in results if kind == "won"]
    assert len(results) == 8 and len(winners) == 1
    assert winners[0].epoch == 8
    assert lease.read(_fs.LocalFS(), winners[0].job_dir)["appId"] == winners[0].app_id
    winners[0].release()


# -- real driver processes -----------------------------------------------------------------------


class Job(CrashJob):
    """tests/recovery_job.py's job (the crash tests' ``Job``: its A and B fingerprints) with a
    lease timeout of its own and its lease read."""

    def options(self, lease_timeout=None):
        return {"LEASE_TIMEOUT": lease_timeout}

    def holder(self):
        return lease.read(_fs.LocalFS(), os.path.join(self.dir, self.name))


def _kill(p):
    kill_group(p)


def test_second_driver_refused_while_the_first_runs_or_hangs_then_takes_over_expired_or_killed(
        tmp_path, reference):
    """One job's drivers in turn (issue 49: what two tests checked with 7 drivers, 5 of them
    JVMs, done with 5, 3 of them JVMs; a refused driver on a local directory fails before its
    JVM starts):

    - the first driver (r1) runs, B's partitions held by a gate: a second one (r2) fails with
      RecoveryConflictError naming it (pid, application), and the first goes on undisturbed;
    - the first hangs (SIGSTOP: alive, renewing nothing): a restart (r3) is still refused, within
      the lease timeout;
    - once the hung driver's lease has expired, and no later than a minute after that, a restart
      (r4) takes the job over and computes; it is SIGKILLed midway through B;
    - the hung driver wakes up: its lease is gone, it cancels its work and fails;
    - the killed driver's process is gone from this host, so the next run (r5) takes the job over
      at once (its lease was dead, not waited for) and finishes; fenced, whatever the woken
      driver wrote does not count and the killed one's commits do: r5 computes nothing of A and
      exactly B's partitions r4 had not committed."""
    job = Job(tmp_path, "handover")
    timeout = 20.0  # a second driver must get to its check within it on a loaded machine
    gate = str(tmp_path / "gate")  # B's partitions wait for it: work left to commit on waking
    first = job.start("r1", slow=1.5, gate=gate, lease_timeout=f"{timeout:g}s")
    fourth = None
    try:
        # A committed, B begun (its vertex recorded with A as its input: Job.fingerprints tells
        # them apart by that, read here, before a later run records B's vertex again with A
        # recovered) and held by the gate
        wait_until(lambda: os.path.isdir(job.dir) and job.fingerprints()[1], 120,
                   "the first driver began B", first, lambda: job.log("r1"))
        a, b = job.fingerprints()
        held = job.holder()
        assert held["live"] and held["pid"] == first.pid and held["epoch"] == 1, held
        # a second driver while the first runs: refused, naming the first
        second = job.start("r2", lease_timeout=f"{timeout:g}s")
        assert second.wait(120) != 0
        log = job.log("r2")
        assert "RecoveryConflictError" in log and "another driver holds job 'handover'" in log
        assert f"pid {first.pid}," in log and str(held["appId"]) in log
        assert "JOB DONE" not in log
        assert first.poll() is None  # the first run goes on undisturbed
        os.killpg(first.pid, signal.SIGSTOP)  # hung: alive, but renews nothing
        stopped = time.time()
        third = job.start("r3", lease_timeout=f"{timeout:g}s")
        assert third.wait(120) != 0
        assert "RecoveryConflictError" in job.log("r3")
        assert time.time() - stopped < timeout, "the check came too late to mean anything"
        # once the hung driver's lease has expired, a restart takes over (its own lease's timeout
        # is long: it must still be held, not expired, when the last run looks at it, however
        # long the woken driver takes to stop)
        wait_until(lambda: job.holder()["state"] == "expired", timeout + 30,
                   "the hung driver's lease expired")
        fourth = job.start("r4", slow=1.5, lease_timeout="300s")
        kill_when(fourth, lambda: len(job.finished(b)) >= 1)
        assert "taking over from" in job.log("r4") and "(its lease was expired)" in job.log("r4")
        # when the restart took the lease (its epoch's start), not when it was killed: its run
        # time is the machine's load, not a wait for the lease
        held = job.holder()
        assert held["epoch"] == 2 and held["state"] == "dead", held
        waited = held["started"] / 1000 - stopped
        done_b = job.finished(b)
        assert job.finished(a) == PARTS and done_b, job.log("r4")[-3000:]
        # the hung driver wakes up: its lease is gone, it cancels its work and fails
        open(gate, "w").close()
        os.killpg(first.pid, signal.SIGCONT)
        rc = first.wait(120)
        log = job.log("r1")
        assert rc != 0 and "JOB DONE" not in log, log[-3000:]
        assert "lease on job 'handover' was lost" in log
    finally:
        _kill(first)
        if fourth is not None:
            _kill(fourth)
    assert waited < timeout + 60
    # SIGKILLed on this host: its process is gone, so a restart takes the job over at once (its
    # lease would otherwise hold for 300 s)
    job.run("r5")
    assert "taking over from" in job.log("r5") and "(its lease was dead)" in job.log("r5")
    assert job.output() == reference
    assert job.holder()["epoch"] == 3 and job.holder()["state"] == "released"
    assert job.ran("A", "r5") == [] and job.ran("B", "r5") == sorted(PARTS - done_b)
