"""Visibility: ``fullwindow.recovery.status`` / ``verify`` and ``python -m fullwindow.recovery``
on the directory of a real job (tests/recovery_job.py run to completion by a driver process):
operations, partitions committed / total, bytes, the run that committed them, intact or damaged
(size by status, size and CRC32 by verify), the lease holder; cleanup refuses while a lease is
live."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

import fullwindow
from fullwindow.recovery import _fs, lease
from helpers import ROOT, RecoveryJob


class Job(RecoveryJob):
    script = os.path.join(ROOT, "tests", "recovery_job.py")


def _cli(*args):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "python"), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "fullwindow.recovery", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def done(tmp_path_factory):
    job = Job(tmp_path_factory.mktemp("status"), "nightly")
    job.run("r1")
    return job


def test_status_of_a_finished_job(done):
    st = fullwindow.recovery.status(done.dir, "nightly")
    assert st["exists"] and st["job"] == "nightly" and st["problems"] == []
    assert st["lease"]["state"] == "released" and not st["lease"]["live"]
    # A and B (mapPartition) and B's committed shuffle input
    kinds = sorted(op["operation"] for op in st["operations"])
    assert kinds == ["mapPartition", "mapPartition", "shuffle input"], kinds
    inputs = [op for op in st["operations"] if op["operation"] == "shuffle input"]
    assert inputs[0]["fingerprint"].endswith("/input0")
    for op in st["operations"]:
        assert op["partitions"] == 4 and op["committed"] == 4 and op["intact"]
        assert op["damaged"] == {} and op["bytes"] > 0
        [(run, k)] = op["runs"].items()
        assert k == 4 and run.endswith(f"pid {st['lease']['pid']}")
    import json

    json.dumps(st)  # plain data: dicts, lists, numbers and strings only


def test_damage_shows_in_status_and_verify_and_the_cli(done):
    # one committed file damaged (a flipped byte: same size) and one deleted; put back after
    st = fullwindow.recovery.status(done.dir, "nightly")
    a_op = next(op for op in st["operations"] if op["operation"] == "mapPartition")
    events = [e for e in done.events() if e["type"] == "taskFinished"
              and e["fingerprint"] == a_op["fingerprint"]]
    flipped = events[0]["path"]
    removed = events[1]["path"]
    keep = {p: open(p, "rb").read() for p in (flipped, removed)}
    try:
        data = bytearray(keep[flipped])
        data[len(data) // 2] ^= 0xFF
        open(flipped, "wb").write(bytes(data))
        os.remove(removed)
        st = fullwindow.recovery.status(done.dir, "nightly")
        op = next(o for o in st["operations"] if o["fingerprint"] == a_op["fingerprint"])
        assert not op["intact"] and list(op["damaged"]) == [events[1]["partition"]]
        assert op["damaged"][events[1]["partition"]].endswith(": missing")
        op = next(o for o in fullwindow.recovery.verify(done.dir, "nightly")["operations"]
                  if o["fingerprint"] == a_op["fingerprint"])
        assert sorted(op["damaged"]) == sorted([events[0]["partition"], events[1]["partition"]])
        assert "CRC32 differs" in op["damaged"][events[0]["partition"]]
        r = _cli("status", "--dir", done.dir, "--job-id", "nightly")
        assert r.returncode == 0, r.stderr
        assert "job nightly at" in r.stdout and "lease: released" in r.stdout
        assert "DAMAGED" in r.stdout and "4 / 4" in r.stdout and "missing" in r.stdout
        r = _cli("verify", "--dir", done.dir, "--job-id", "nightly")
        assert r.returncode == 1 and "CRC32 differs" in r.stdout
        r = _cli("status", "--dir", done.dir, "--job-id", "nightly", "--json")
        import json

        assert len(json.loads(r.stdout)["operations"]) == 3
    finally:
        for p, data in keep.items():
            open(p, "wb").write(data)
    r = _cli("verify", "--dir", done.dir, "--job-id", "nightly")
    assert r.returncode == 0 and "DAMAGED" not in r.stdout, r.stdout


def test_cleanup_refuses_while_the_lease_is_live(done, tmp_path):
    import shutil

    base = str(tmp_path)
    shutil.copytree(os.path.join(done.dir, "nightly"), os.path.join(base, "nightly"))
    holder = lease.Lease(_fs.LocalFS(), os.path.join(base, "nightly"), 30.0, "app-holding")
    holder.acquire("test")
    try:
        r = _cli("cleanup", "--dir", base, "--job-id", "nightly")
        assert r.returncode == 2 and "refused" in r.stderr and "app-holding" in r.stderr
        assert os.path.isdir(os.path.join(base, "nightly"))
        r = _cli("status", "--dir", base, "--job-id", "nightly")
        assert "lease: live (epoch 2): host" in r.stdout and f"pid {os.getpid()}" in r.stdout
    finally:
        holder.release()
    r = _cli("cleanup", "--dir", base, "--job-id", "nightly")
    assert r.returncode == 0 and r.stdout.startswith("deleted "), r.stderr
    assert not os.path.exists(os.path.join(base, "nightly"))
    r = _cli("status", "--dir", base, "--job-id", "nightly")
    assert "no such job directory" in r.stdout
