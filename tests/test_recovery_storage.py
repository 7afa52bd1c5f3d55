"""Bad storage under the recovery directory, with real drivers: a read-only directory and a full
one fail at session start with a ConfigurationError (the write probe), a directory that fills up
while the job runs fails the job loudly, and a job directory deleted while the job runs stops the
run with RecoveryStorageError (nothing finishes silently without the guarantee). Read-only and
full file systems are real: a small tmpfs mounted in a mount namespace of the driver's own
(``unshare -m``; ``-r`` maps the user to root where the test does not run as root)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

from helpers import ROOT, RecoveryJob


def _unshare() -> list[str] | None:
    if shutil.which("unshare") is None:
        return None
    cmd = ["unshare", "-m", "--propagation", "private"] + ([] if os.geteuid() == 0 else ["-r"])
    probe = subprocess.run(cmd + ["sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt"],
                           capture_output=True)
    return cmd if probe.returncode == 0 else None


UNSHARE = _unshare()
needs_mounts = pytest.mark.skipif(UNSHARE is None, reason="cannot mount a tmpfs in a mount "
                                  "namespace here (unshare -m / user namespaces unavailable)")

SESSION = """
import os, sys, traceback
import fullwindow
def session(directory, job="job"):
    return fullwindow.session(master="local[2]", conf={
        "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2",
        "spark.fullwindow.recovery.enabled": "true", "spark.fullwindow.recovery.dir": directory,
        "spark.fullwindow.recovery.jobId": job})
def fill(path):  # writes until the file system is full, to the last block
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"x" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)
def report(err):
    text = " | ".join(str(err).splitlines())
    print(f"RAISED {type(err).__module__}.{type(err).__name__}: {text}", flush=True)
"""


def _run_mounted(mount: str, options: str, code: str, timeout: int = 300):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "python"), env.get("PYTHONPATH", "")])
    os.makedirs(mount, exist_ok=True)
    script = textwrap.dedent(SESSION) + textwrap.dedent(code)
    shell = f'mount -t tmpfs -o {options} tmpfs "{mount}" && exec "{sys.executable}" -c "$0"'
    return subprocess.run(UNSHARE + ["sh", "-c", shell, script], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def _raised(r) -> str:
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RAISED ")]
    assert lines, (r.stdout[-2000:], r.stderr[-3000:])
    return lines[0]


@needs_mounts
@pytest.mark.parametrize("kind,options,setup,why", [
    ("read-only", "ro,size=1m", "", "Read-only file system"),
    ("full", "size=1m", "os.makedirs(MOUNT + '/recovery'); fill(MOUNT + '/filler')",
     "No space left on device"),
])
def test_bad_directory_fails_at_session_start(tmp_path, kind, options, setup, why):
    mount = str(tmp_path / kind)
    r = _run_mounted(mount, options, f"""
MOUNT = {mount!r}
{setup}
try:
    session(MOUNT + "/recovery")
    print("STARTED")
except Exception as err:
    report(err)
""")
    line = _raised(r)
    assert line.startswith("RAISED fullwindow.errors.ConfigurationError: recovery.start: ")
    assert f"the recovery directory {mount}/recovery (spark.fullwindow.recovery.dir) cannot be " \
           "written: " in line and why in line
    assert "STARTED" not in r.stdout


@needs_mounts
def test_directory_filling_up_mid_run_fails_the_job(tmp_path):
    mount = str(tmp_path / "fills")
    r = _run_mounted(mount, "size=4m", f"""
spark = session({mount + "/recovery"!r})
fill({mount + "/filler"!r})  # another writer fills the disk after the start
df = spark.range(0, 200000, numPartitions=2).fullWindowPartition().sortPartition("id")
try:
    n = df.count()
    fullwindow.recovery.flush(spark)
    print("FINISHED", n)
except Exception as err:
    report(err)
""")
    assert "FINISHED" not in r.stdout, r.stdout[-2000:]
    line = _raised(r)
    assert "No space left on device" in line or "RecoveryStorageError" in line, line


class Job(RecoveryJob):
    script = os.path.join(ROOT, "tests", "recovery_job.py")

    def options(self, lease_timeout=None):
        return {"LEASE_TIMEOUT": lease_timeout}


def test_job_directory_deleted_mid_run_stops_the_run(tmp_path):
    job = Job(tmp_path, "vanish")
    p = job.start("r1", slow=3.0, lease_timeout="4s")
    try:
        deadline = time.time() + 180
        while not (os.path.isdir(job.dir) and
                   any(e["type"] == "taskFinished" for e in job.events())):
            assert p.poll() is None and time.time() < deadline
            time.sleep(0.2)
        # the directory goes at once: a plain rmtree races the driver, which keeps writing
        # events into it (rmtree then fails with "Directory not empty")
        gone = os.path.join(job.dir, job.name + ".deleted")
        os.rename(os.path.join(job.dir, job.name), gone)
        shutil.rmtree(gone, ignore_errors=True)  # it may still write into the renamed one
        rc = p.wait(180)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, 9)
            p.wait(30)
    log = open(job._log("r1")).read()
    assert rc != 0 and "JOB DONE" not in log, log[-3000:]
    assert "its lease file is gone (the job directory was deleted)" in log
    assert "RecoveryStorageError" in log or "cancelled" in log
    # a new run starts the job from scratch and is right
    job.run("r2")
    rows = job.output()
    assert len(rows) == 13 and sum(r[1] for r in rows) == 4000
