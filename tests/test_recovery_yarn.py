"""Jobs that heal themselves on a real YARN (tests/hdfs.py starts HDFS and YARN in one process):
tests/recovery_yarn_job.py is submitted with spark-submit --master yarn, its recovery directory
on HDFS, and its driver's Python process is found among the machine's processes and SIGKILLed
with two of four partitions committed.

- cluster mode, ``spark.yarn.maxAppAttempts=2``, a plain job (``mapInPandas`` and a per-key
  count: no full-window operation, so what is kept is the count's shuffle, map task by map task:
  whole-job recovery, the default scope): YARN starts the application's second attempt on its
  own; it takes the first attempt's lease (recorded as held on another host, so by the attempt
  rule, not because the killed process is gone from this one), reads the two kept map outputs
  back from HDFS and reruns only the two unfinished map tasks, writes the output of an
  uninterrupted run, and the application ends SUCCEEDED;
- client mode, the job's first step a full-window ``mapPartition``: a scheduler's retry, the same
  spark-submit command run again (a new application), resumes the same way, rerunning only the
  two partitions not committed.

The spark-submit flags are those of docs/recovery.md's "Running unattended"."""
from __future__ import annotations

import glob
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid

import pytest

from hdfs import MiniHDFS, rewrite
from helpers import FAST_JVM_OPTIONS, PACKAGE_PARENT, ROOT, poll_once, poll_pause

TESTS = os.path.join(ROOT, "tests")
SCRIPT = os.path.join(TESTS, "recovery_yarn_job.py")
ROWS, KEYS = 2000, 7


@pytest.fixture(scope="module")
def yarn():
    cluster = MiniHDFS(yarn=True).start()
    try:
        yield cluster
    finally:
        cluster.stop()


def expected() -> list[tuple]:
    return sorted((k, len(range(k, ROWS, KEYS)), sum(2 * i for i in range(k, ROWS, KEYS)))
                  for k in range(KEYS))


class YarnJob:
    """One job id, its output and markers (local: the one NodeManager runs on this machine), the
    HOLD file that keeps partitions 2 and 3 from finishing, and its spark-submit command."""

    def __init__(self, base, cluster: MiniHDFS, mode: str, plain: bool = False):
        import fullwindow

        self.cluster, self.mode = cluster, mode
        self.base = str(base)
        self.job_id = f"yarn-{mode}-{uuid.uuid4().hex[:8]}"
        self.dir = f"{cluster.uri}/fw-recovery"
        self.out = os.path.join(self.base, "out")
        self.marks = os.path.join(self.base, "marks")
        self.hold = os.path.join(self.base, "hold")
        os.makedirs(self.marks)
        open(self.hold, "w").close()
        self.runs = 0
        import pyspark

        self.spark_home = os.path.dirname(pyspark.__file__)
        python = sys.executable
        self.command = [
            os.path.join(self.spark_home, "bin", "spark-submit"),
            "--master", "yarn", "--deploy-mode", mode,
            "--jars", fullwindow.jar_path(),
            "--conf", "spark.sql.extensions=fullwindow.sql.FullWindowExtensions",
            "--conf", "spark.yarn.maxAppAttempts=2",
            "--conf", f"spark.yarn.appMasterEnv.PYSPARK_PYTHON={python}",
            "--conf", f"spark.executorEnv.PYSPARK_PYTHON={python}",
            # this checkout's package first (a line's venv runs its own wheel otherwise)
            # and tests/ (the test daemon: helpers.PRELOAD_DAEMON)
            "--conf", f"spark.yarn.appMasterEnv.PYTHONPATH={PACKAGE_PARENT}{os.pathsep}{TESTS}",
            "--conf", f"spark.executorEnv.PYTHONPATH={PACKAGE_PARENT}{os.pathsep}{TESTS}",
            # small containers: the driver (cluster mode) or the YARN AM (client mode), and one
            # executor with one core
            "--conf", "spark.driver.memory=512m", "--conf", "spark.yarn.am.memory=256m",
            "--conf", "spark.executor.memory=512m", "--conf", "spark.executor.instances=1",
            "--conf", "spark.executor.cores=1", "--conf", "spark.ui.enabled=false",
            # the containers' JVMs (the AM, a cluster-mode driver, the executor) as the tests'
            # other short-lived JVMs: C1 only and the serial collector (YARN starts them with
            # an environment of its own: JDK_JAVA_OPTIONS and SPARK_SUBMIT_OPTS do not reach them)
            "--conf", f"spark.yarn.am.extraJavaOptions={FAST_JVM_OPTIONS}",
            "--conf", f"spark.driver.extraJavaOptions={FAST_JVM_OPTIONS}",
            "--conf", f"spark.executor.extraJavaOptions={FAST_JVM_OPTIONS}",
            # Spark's jars are on this machine: nothing to upload for each application
            "--conf", f"spark.yarn.jars=local:{os.path.join(self.spark_home, 'jars')}/*",
            "--conf", "spark.yarn.report.interval=500ms",
            # the driver goes on (to its lease and the job's directory) while its executor starts
            "--conf", "spark.scheduler.minRegisteredResourcesRatio=0",
            SCRIPT, self.dir, self.job_id, "file://" + self.out, self.marks, self.hold,
            *(["plain"] if plain else [])]

    def env(self) -> dict:
        env = dict(os.environ)
        env.update(SPARK_HOME=self.spark_home, HADOOP_CONF_DIR=self.cluster.conf_dir,
                   PYSPARK_PYTHON=sys.executable,
                   PYTHONPATH=os.pathsep.join([PACKAGE_PARENT, env.get("PYTHONPATH", "")]))
        env.pop("PYSPARK_DRIVER_PYTHON", None)
        return env

    def submit(self) -> tuple[subprocess.Popen, str]:
        """Starts spark-submit (the same command every time); returns it and its log file."""
        self.runs += 1
        log = os.path.join(self.base, f"submit-{self.runs}.log")
        with open(log, "w") as f:
            p = subprocess.Popen(self.command, env=self.env(), stdout=f, stderr=subprocess.STDOUT,
                                 cwd=ROOT, start_new_session=True)
        return p, log

    def events(self) -> list[dict]:
        """The job's events on HDFS (read with the test's session); none before its directory."""
        import warnings

        from fullwindow.recovery import job_events

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                return job_events(self.dir, self.job_id)
            except Exception:  # noqa: BLE001 - the job directory is not there yet
                return []

    def committed(self) -> set[int]:
        """A's partitions (or, in a plain job, the count's shuffle map tasks) with a
        task-finished event on HDFS."""
        return {e["partition"] for e in self.events() if e["type"] == "taskFinished"}

    def driver_pids(self) -> list[int]:
        """The job's driver: the Python process running the job's script with its job id (the
        application master's JVM and spark-submit's also name them, but run Java or bash)."""
        pids = []
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    argv = f.read().decode("utf-8", "replace").split("\0")
            except OSError:
                continue
            if os.path.basename(argv[0]).startswith("python") and self.job_id in argv and \
                    any(a.endswith("recovery_yarn_job.py") for a in argv):
                pids.append(int(name))
        return pids

    def ran(self) -> dict[tuple[str, str], list[int]]:
        """A's partitions whose user function ran, by (application id, attempt) of the
        executor's container."""
        out: dict[tuple[str, str], list[int]] = {}
        for n in os.listdir(self.marks):
            _, part, app, attempt, _ = n.split("-")
            out.setdefault((app, attempt), []).append(int(part))
        return {k: sorted(v) for k, v in out.items()}

    def output(self) -> list[tuple]:
        from helpers import parquet_rows

        return parquet_rows(self.out)


def _wait(condition, timeout: float, what: str, p: subprocess.Popen, log: str):
    deadline = time.time() + timeout
    while time.time() < deadline:
        hit, spent = poll_once(condition)  # a read of the job's events on HDFS: tens of ms
        if hit:
            return
        if p.poll() is not None:
            pytest.fail(f"spark-submit ended ({p.returncode}) before {what}:\n{_tail(log)}")
        time.sleep(poll_pause(spent, 0.2))
    pytest.fail(f"not reached within {timeout:.0f} s: {what}\n{_tail(log)}")


def _tail(path: str, n: int = 4000) -> str:
    with open(path, errors="replace") as f:
        return f.read()[-n:]


def _app_id(log: str) -> str:
    m = re.search(r"Submitted application (application_\d+_\d+)", _tail(log, 10**7))
    assert m, _tail(log)
    return m.group(1)


def _kill_driver_midway(job: YarnJob, p: subprocess.Popen, log: str) -> int:
    """Waits for partitions 0 and 1 of A to be committed on HDFS (2 and 3 are held), then
    SIGKILLs the driver's process; returns its pid."""
    _wait(lambda: job.committed() >= {0, 1}, 300, "A's partitions 0 and 1 committed", p, log)
    pids = job.driver_pids()
    assert len(pids) == 1, pids
    os.kill(pids[0], signal.SIGKILL)
    deadline = time.time() + 30
    while pids[0] in job.driver_pids():
        assert time.time() < deadline, "the killed driver is still there"
        time.sleep(0.1)
    assert job.committed() == {0, 1}  # nothing else finished: 2 and 3 were held
    return pids[0]


def _container_log(cluster: MiniHDFS, container: str, name: str = "stderr") -> str:
    paths = glob.glob(os.path.join(cluster.workdir, "target", "**", container, name),
                      recursive=True)
    assert paths, f"no {name} of {container}"
    return open(paths[0], errors="replace").read()


def test_yarn_second_attempt_resumes_a_killed_cluster_mode_driver(yarn, tmp_path, spark):
    from fullwindow.recovery import _fs, lease

    job = YarnJob(tmp_path, yarn, "cluster", plain=True)
    p, log = job.submit()
    killed = _kill_driver_midway(job, p, log)
    # on a cluster of several machines the next attempt runs elsewhere; here it runs on this
    # host, where the killed driver's lease would be freed because its process is gone. Record
    # the holder as on another host, with a lease live for ten minutes (so that it does not
    # expire either before the next attempt looks): only the attempt rule can free it
    files = _fs.filesystem(job.dir, spark)
    job_dir = f"{job.dir}/{job.job_id}"
    held = lease.read(files, job_dir)
    assert (held["pid"], held["attemptId"], held["state"]) == (killed, "1", "dead")
    path = lease._epoch_path(lease.lease_dir(job_dir), held["epoch"])
    info = json.loads(files.read(path).decode("utf-8"))
    rewrite(files, path, json.dumps({**info, "host": "elsewhere.example",
                                     "timeoutMs": 600_000}).encode("utf-8"))
    assert lease.read(files, job_dir)["state"] == "live"
    os.remove(job.hold)  # from here on the job runs through
    rc = p.wait(timeout=400)
    text = _tail(log, 10**7)
    app = _app_id(log)
    assert rc == 0 and "final status: SUCCEEDED" in text, _tail(log)
    assert job.output() == expected()
    ran = job.ran()
    # the first attempt ran (at least) partitions 0 and 1; the second attempt, started by YARN
    # itself, ran only the two that had not been committed
    assert {0, 1} <= set(ran[(app, "1")]), ran
    assert ran[(app, "2")] == [2, 3], ran
    assert set(ran) <= {(app, "1"), (app, "2")}, ran
    # what was kept is the count's shuffle (the job has no full-window operation): the second
    # attempt read two of its map outputs back from HDFS and ran the other two
    events = job.events()
    assert {e["operator"] for e in events if e["type"] == "vertexInitialized"} == {"shuffle"}
    [slow] = {e["fingerprint"] for e in events if e["type"] == "vertexInitialized"}
    kept = [e for e in events if e["type"] == "taskFinished" and e["fingerprint"] == slow]
    assert sorted(e["partition"] for e in kept) == [0, 1, 2, 3]
    assert all(e["path"].startswith(yarn.uri) for e in kept), kept
    last = [e for e in events if e["type"] == "vertexInitialized"][-1]
    assert (last["recovered"], last["stable"]) == (2, True), last
    # the second attempt's driver took the lease over from the first attempt's, then released it
    holder = lease.read(files, job_dir)
    assert (holder["appId"], holder["attemptId"], holder["state"]) == (app, "2", "released")
    assert holder["pid"] != killed
    # the driver's output (Spark passes its stdout and stderr on to the container's stdout)
    am2 = _container_log(yarn, f"container_{app[len('application_'):]}_02_000001", "stdout")
    assert "JOB DONE" in am2
    assert re.search(rf"taking over from host elsewhere\.example, pid {killed}, application {app} "
                     r"attempt 1, .*\(its lease was earlier attempt\)", am2), am2[-3000:]


def test_yarn_client_mode_resumes_when_the_same_submit_runs_again(yarn, tmp_path, spark):
    from fullwindow.recovery import _fs, lease

    job = YarnJob(tmp_path, yarn, "client")
    p1, log1 = job.submit()
    killed = _kill_driver_midway(job, p1, log1)
    assert p1.wait(timeout=60) != 0  # spark-submit fails with its driver
    first = _app_id(log1)
    os.remove(job.hold)
    # the scheduler's retry: the same command, a new application
    p2, log2 = job.submit()
    rc = p2.wait(timeout=400)
    assert rc == 0 and "JOB DONE" in _tail(log2, 10**7), _tail(log2)
    second = _app_id(log2)
    assert second != first
    assert job.output() == expected()
    ran = job.ran()
    assert {0, 1} <= set(ran[(first, "1")]), ran
    assert ran[(second, "1")] == [2, 3], ran
    holder = lease.read(_fs.filesystem(job.dir, spark), f"{job.dir}/{job.job_id}")
    assert (holder["appId"], holder["state"]) == (second, "released")
    assert holder["pid"] != killed
    # a new application, not a later attempt: the first driver's lease was free because its
    # process had gone from this host (or, on a slow machine, it had expired by then)
    assert re.search(rf"taking over from host \S+, pid {killed}, application {first}, .*"
                     r"\(its lease was (dead|expired)\)", _tail(log2, 10**7)), _tail(log2)
