"""Recovery after a driver crash on a real Spark standalone cluster (a master and two one-core
workers started from the pyspark install on 127.0.0.1): the driver of tests/recovery_cluster_job.py
runs a non-keyed full-window mapPartition over more partitions than the executors have cores, with
recovery on. While the stage runs, the executor JVM running one of its tasks is killed with SIGKILL;
Spark runs that partition again elsewhere and the job goes on. After that partition's second attempt
and at least one other partition have been committed, but not all, the driver is killed (its whole
process group). The same program started again with the same job id on the same cluster finishes;
its output equals the expected result; the partitions committed before the driver died did not run
again; the partition lost with the executor was committed exactly once, by its successful
attempt."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import warnings
import zipfile
from collections import Counter

import pytest

from cluster import StandaloneCluster
from helpers import fast_jvm, kill_group, poll_once, poll_pause
from fullwindow.recovery import job_events, recovery_state

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JOB = os.path.join(ROOT, "tests", "recovery_cluster_job.py")
N, ROWS = 10, 500
PARTS = set(range(N))


def expected_rows() -> list[tuple]:
    """What the job must write, computed here: range(0, N * ROWS) split by Spark into N equal
    consecutive blocks; each row gets its block's count and sum and its position in the block."""
    out = []
    for p in range(N):
        ids = list(range(p * ROWS, (p + 1) * ROWS))
        out += [(i, p, len(ids), sum(ids), pos) for pos, i in enumerate(ids)]
    return sorted(out)


@pytest.fixture(scope="module")
def cluster():
    c = StandaloneCluster(workers=2, cores=1, memory="1g")
    try:
        c.start()
        yield c
    finally:
        c.stop()


class Driver:
    """The job's driver processes, all with the same job id, sharing dirs under ``base``."""

    def __init__(self, base, cluster: StandaloneCluster, job_id: str):
        self.base, self.cluster, self.job_id = str(base), cluster, job_id
        self.dir = os.path.join(self.base, "recovery")
        self.out = os.path.join(self.base, "out")
        self.marks = os.path.join(self.base, "marks")
        os.makedirs(self.marks, exist_ok=True)
        self.procs: list[subprocess.Popen] = []
        # one copy of the jar for every JVM of every run: executors fetch spark.jars from the
        # driver when they start, and one launched after a rebuild of the package's jar would
        # otherwise load classes that do not match the driver's
        from fullwindow._jvm import jar_path

        self.jar = os.path.join(self.base, "fullwindow.jar")
        for _ in range(10):  # not a half-written one
            shutil.copyfile(jar_path(), self.jar)
            try:
                with zipfile.ZipFile(self.jar) as z:
                    if z.testzip() is None:
                        break
            except zipfile.BadZipFile:
                pass
            time.sleep(2)
        else:
            pytest.fail(f"no intact copy of {jar_path()}")

    def log_path(self, run: str) -> str:
        return os.path.join(self.base, f"driver-{run}.log")

    def log(self, run: str) -> str:
        with open(self.log_path(run), errors="replace") as f:
            return f.read()

    def start(self, run: str, slow: float, parts: int = N, rows: int = ROWS,
              **extra: str) -> subprocess.Popen:
        """Starts the job's driver; ``extra``: more of the job's settings (its docstring)."""
        env = dict(os.environ)
        env.update(extra)
        env.update(MASTER=self.cluster.url, RECOVERY_DIR=self.dir, JOB_ID=self.job_id, OUT=self.out,
                   MARKS=self.marks, JAR=self.jar, RUN=run, SLOW=str(slow), PARTS=str(parts),
                   ROWS=str(rows),
                   PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python"),
                                               env.get("PYTHONPATH", "")]))
        log = open(self.log_path(run), "w")
        p = subprocess.Popen([sys.executable, JOB], env=fast_jvm(env), stdout=log, stderr=subprocess.STDOUT,
                             cwd=ROOT, start_new_session=True)
        self.procs.append(p)
        return p

    def kill(self, p: subprocess.Popen) -> None:
        """SIGKILLs the driver's process group and waits until its processes are gone."""
        kill_group(p)

    def kill_all(self) -> None:
        for p in self.procs:
            self.kill(p)

    def events(self) -> list[dict]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return job_events(self.dir, self.job_id)

    def finished(self) -> list[dict]:
        return [e for e in self.events() if e["type"] == "taskFinished"]

    def markers(self, kind: str, run: str) -> list[dict]:
        """Marker files of ``kind`` ("S" started, "E" ended) left during ``run``."""
        out = []
        for name in os.listdir(self.marks):
            k, part, r, attempt, tid, pid = name.split("-")
            if k == kind and r == run:
                mtime = os.stat(os.path.join(self.marks, name)).st_mtime
                out.append({"partition": int(part), "attempt": int(attempt), "tid": int(tid),
                            "pid": int(pid), "mtime": mtime})
        return out

    def ui(self, run: str) -> tuple[str, str] | None:
        for line in self.log(run).splitlines():
            if line.startswith("DRIVER UI "):
                _, _, url, app = line.split()
                return url, app
        return None

    def output(self) -> list[tuple]:
        import pyarrow.parquet as pq

        table = pq.read_table(self.out)
        return sorted(zip(*[table.column(c).to_pylist() for c in table.column_names]))


def wait_for(p: subprocess.Popen, what: str, condition, timeout: float, log: str):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value, spent = poll_once(condition)  # on HDFS (test_recovery_hdfs): tens of ms a read
        if value:
            return value
        if p.poll() is not None:
            pytest.fail(f"the driver ended (rc {p.returncode}) before {what}:\n{log_tail(log)}")
        time.sleep(poll_pause(spent, 0.1))
    pytest.fail(f"timed out waiting for {what}:\n{log_tail(log)}")


def log_tail(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()[-4000:]
    except OSError:
        return ""


class DriverView(threading.Thread):
    """Polls the driver's REST API (its executors and stages) in the background from the moment
    the driver prints its UI address, keeping the latest answers: the first answers of a driver's
    REST API are slow on a busy machine, and the test must not wait for them while the job runs."""

    def __init__(self, driver: "Driver", run: str):
        super().__init__(daemon=True)
        self.driver, self.run_name = driver, run
        self.executors: list[dict] = []
        self.stages: list[dict] = []
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            ui = self.driver.ui(self.run_name)
            if ui:
                url, app = ui
                try:
                    self.executors = get_json(f"{url}/api/v1/applications/{app}/allexecutors")
                    self.stages = get_json(f"{url}/api/v1/applications/{app}/stages")
                except (OSError, ValueError):
                    pass
            self.halt.wait(0.3)

    def removed(self, executor_id: str) -> dict | None:
        return next((e for e in self.executors if e["id"] == executor_id and not e["isActive"]),
                    None)

    def failed_tasks(self) -> int:
        return sum(s.get("numFailedTasks", 0) for s in self.stages)


def get_json(url: str):
    with urllib.request.urlopen(url, timeout=20) as r:
        return json.load(r)


def is_gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def test_executor_and_driver_killed_on_a_standalone_cluster(tmp_path, cluster):
    d = Driver(tmp_path, cluster, "cluster-job")
    t0 = time.time()
    view = None
    try:
        p1 = d.start("r1", slow=3.0)
        log1 = d.log_path("r1")
        view = DriverView(d, "r1")
        view.start()

        # (a) both executors busy with a task of the full-window stage: kill the JVM of one of
        # them while its task is in the user function (started, not ended)
        def running_on_two_executors():
            ended = {m["tid"] for m in d.markers("E", "r1")}
            running = [m for m in d.markers("S", "r1") if m["tid"] not in ended]
            if len({m["pid"] for m in running}) >= 2 and all(m["pid"] > 0 for m in running):
                return running
            return None

        running = wait_for(p1, "tasks run on two executors", running_on_two_executors, 180, log1)
        assert len(d.finished()) < N
        # the task that started last: the furthest from its end (each sleeps 3 s)
        victim = max(running, key=lambda m: m["mtime"])
        lost, pid = victim["partition"], victim["pid"]
        assert pid in cluster.executor_pids(), "the victim is not an executor of this cluster"
        lost_exec = StandaloneCluster.executor_id(pid)
        assert lost_exec is not None
        os.kill(pid, signal.SIGKILL)
        deadline = time.time() + 10
        while not is_gone(pid) and time.time() < deadline:
            time.sleep(0.1)
        assert is_gone(pid), f"executor JVM {pid} survived SIGKILL"

        # (b) once the driver has seen the executor go and its task fail (in its REST API), and
        # the lost partition has been committed by another attempt, and at least one other
        # partition too but not all: kill the driver
        def ready_to_kill_the_driver():
            done = {e["partition"] for e in d.finished()}
            return (view.removed(lost_exec) is not None and view.failed_tasks() >= 1
                    and lost in done and 2 <= len(done) < N)

        wait_for(p1, "the lost partition to be committed again", ready_to_kill_the_driver, 120,
                 log1)
        done_before = {e["partition"] for e in d.finished()}
        d.kill(p1)
        view.halt.set()
        events = d.finished()
        done = {e["partition"] for e in events}
        assert done >= done_before and lost in done
        assert 1 <= len(done) < N, f"the driver was killed with {sorted(done)} committed"

        # the killed executor: the driver saw it removed, and the task it ran failed
        assert view.removed(lost_exec).get("removeReason"), view.executors
        log = d.log("r1")
        assert f"Lost executor {lost_exec} " in log, log_tail(log1)
        assert f"Lost task {lost}.0 in stage" in log, log_tail(log1)
        assert "ExecutorLostFailure" in log, log_tail(log1)
        # the lost partition's commit came from a later attempt on another executor
        [lost_event] = [e for e in events if e["partition"] == lost]
        assert lost_event["attempt"] >= 1 and lost_event["executor"] != lost_exec, lost_event
        s1 = d.markers("S", "r1")
        assert {(m["attempt"], m["pid"]) for m in s1 if m["partition"] == lost} >= {(0, pid)}
        assert any(m["partition"] == lost and m["attempt"] >= 1 and m["pid"] != pid for m in s1)

        # (c) the same program again, same job id, same cluster: it finishes
        p2 = d.start("r2", slow=0.3)
        rc = p2.wait(timeout=180)
        assert rc == 0 and "JOB DONE" in d.log("r2"), log_tail(d.log_path("r2"))
    finally:
        d.kill_all()
        if view is not None:
            view.halt.set()

    # nothing lost or duplicated
    assert d.output() == expected_rows()
    # partitions committed before the driver died did not run again; all the others did, once
    s2 = d.markers("S", "r2")
    assert sorted(m["partition"] for m in s2) == sorted(PARTS - done)
    assert sorted(m["partition"] for m in d.markers("E", "r2")) == sorted(PARTS - done)
    # the resumed run read the committed partitions back
    all_events = d.events()
    inits = [e for e in all_events if e["type"] == "vertexInitialized"]
    assert len({e["fingerprint"] for e in inits}) == 1, inits
    assert [e["recovered"] for e in inits] == [0, len(done)], inits
    # one task-finished event per partition over both runs: only successful attempts count
    finished = [e for e in all_events if e["type"] == "taskFinished"]
    assert Counter(e["partition"] for e in finished) == Counter(PARTS), finished
    [vertex] = recovery_state(all_events).values()
    assert sorted(vertex.finished) == sorted(PARTS)
    assert sum(e["rows"] for e in finished) == N * ROWS
    elapsed = time.time() - t0
    print(f"recovery on a standalone cluster: lost executor {lost_exec} (partition {lost}), "
          f"{len(done)} of {N} partitions committed at the driver kill, {elapsed:.0f}s")


def test_whole_job_killed_midway_resumes_on_a_standalone_cluster(tmp_path, cluster):
    """Whole-job recovery (``scope=job``, tests/test_recovery_jobscope.py's plain job) on the
    two-worker standalone cluster: the map outputs are kept by the executors (their own JVMs),
    the driver is killed midway through the slow map stage, and the resumed run's executors
    read the join's shuffles back, run only the missing map tasks, and place each kept map
    output of the partly kept shuffle under their block resolver (no executor falls back to
    writing it again from its rows: its log would say so)."""
    import glob

    from test_recovery_jobscope import Job as WholeJob
    from test_recovery_jobscope import killed_midway_and_resumed

    job = WholeJob(tmp_path, "whole")
    job.more_env = {"MASTER": cluster.url}
    job.more_settings = {"spark.executor.cores": "1", "spark.executor.memory": "900m"}
    killed_midway_and_resumed(job)
    # the kept outputs were placed by the executors: a fallback would be in their logs
    logs = glob.glob(os.path.join(cluster.logdir, "work", "*", "*", "stderr"))
    assert logs
    for path in logs:
        with open(path, errors="replace") as f:
            assert "could not place the kept map output" not in f.read(), path
