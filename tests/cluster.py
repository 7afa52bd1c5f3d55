"""A real Spark standalone cluster for tests: a master and workers started from the pyspark
install (bin/spark-class), all on 127.0.0.1, each a separate process that tests may kill."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_home() -> str:
    import pyspark

    return os.path.dirname(pyspark.__file__)


class StandaloneCluster:
    def __init__(self, workers: int = 1, cores: int = 1, memory: str = "1g"):
        self.workers_wanted, self.cores, self.memory = workers, cores, memory
        self.port, self.ui_port = free_port(), free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.master: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen] = []
        self.logdir = tempfile.mkdtemp(prefix="fw-cluster-")

    def _env(self) -> dict:
        env = dict(os.environ)
        env.update(SPARK_HOME=spark_home(), SPARK_LOCAL_IP="127.0.0.1", SPARK_MASTER_HOST="127.0.0.1",
                   PYSPARK_PYTHON=sys.executable, SPARK_NO_DAEMONIZE="1",
                   SPARK_WORKER_DIR=os.path.join(self.logdir, "work"))
        # the master, the workers and the executors they start: short-lived test JVMs; the
        # executors (which a worker starts with neither SPARK_SUBMIT_OPTS nor
        # SPARK_DAEMON_JAVA_OPTS) map the line's class-data archive through JDK_JAVA_OPTIONS, which
        # they inherit from their worker: 6.4 -> 3.9 CPU s an executor for a small job
        from helpers import fast_jvm, with_class_data_archive

        return with_class_data_archive(fast_jvm(env))

    def _start(self, name: str, *args: str) -> subprocess.Popen:
        log = open(os.path.join(self.logdir, f"{name}.log"), "w")
        cmd = [os.path.join(spark_home(), "bin", "spark-class"), *args]
        return subprocess.Popen(cmd, env=self._env(), stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)

    def state(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as r:
            return json.load(r)

    def alive_workers(self) -> int:
        try:
            return sum(1 for w in self.state().get("workers", []) if w.get("state") == "ALIVE")
        except (OSError, ValueError):  # not listening yet, or an empty or partial page (a
            # master still starting its web UI answered CI with an empty body)
            return 0

    def start(self, timeout: float = 90) -> "StandaloneCluster":
        try:
            self.master = self._start("master", "org.apache.spark.deploy.master.Master",
                                      "--host", "127.0.0.1", "--port", str(self.port),
                                      "--webui-port", str(self.ui_port))
            for i in range(self.workers_wanted):
                self.add_worker(i)
            deadline = time.time() + timeout
            while time.time() < deadline:
                if self.alive_workers() >= self.workers_wanted:
                    return self
                time.sleep(1)
        except BaseException:
            self.stop()
            raise
        self.stop()
        raise RuntimeError(f"standalone cluster did not come up; logs in {self.logdir}")

    def add_worker(self, i: int) -> subprocess.Popen:
        w = self._start(f"worker{i}", "org.apache.spark.deploy.worker.Worker",
                        "--host", "127.0.0.1", "--cores", str(self.cores), "--memory", self.memory,
                        "--webui-port", str(free_port()), self.url)
        self.workers.append(w)
        return w

    def executor_pids(self) -> list[int]:
        """PIDs of executor JVMs launched by this cluster's workers."""
        out = subprocess.run(["pgrep", "-f", "CoarseGrainedExecutorBackend"], capture_output=True,
                             text=True).stdout.split()
        mine = []
        for pid in out:
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    if self.logdir.encode() in f.read():
                        mine.append(int(pid))
            except OSError:
                pass
        return mine

    @staticmethod
    def executor_id(pid: int) -> str | None:
        """The executor id (``--executor-id``) of the executor JVM ``pid``, or None."""
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().decode(errors="replace").split("\0")
        except OSError:
            return None
        if "--executor-id" in args:
            i = args.index("--executor-id")
            if i + 1 < len(args):
                return args[i + 1]
        return None

    def stop(self) -> None:
        """Stops every process of the cluster: master, workers and the executors (with their
        Python workers) the workers launched, by process group, escalating to SIGKILL. Safe to
        call more than once and after any of the processes died or were killed."""
        import signal

        procs = [p for p in [*self.workers, self.master] if p is not None]
        for p in procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except (ProcessLookupError, PermissionError):
                    pass
        deadline = time.time() + 20
        for p in procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                pass
        for p in procs:
            # the group too: executors (and their Python workers) live in their worker's group
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        for pid in self.executor_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def __enter__(self) -> "StandaloneCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
