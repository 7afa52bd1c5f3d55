"""A real HDFS for tests: Hadoop's own single-process test cluster (a NameNode and a DataNode,
``MiniHadoopClusterManager``) started as a separate process on 127.0.0.1 and a free port, with
pyspark's Hadoop client jars and the jars dev/hdfs/fetch brings from Maven Central."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _jars() -> str:
    """The class path: the test cluster's jars (fetched once) and pyspark's own jars."""
    import pyspark

    fetched = subprocess.run([os.path.join(ROOT, "dev", "hdfs", "fetch")], cwd=ROOT,
                             env={**os.environ, "PYTHON": sys.executable},
                             capture_output=True, text=True, timeout=900)
    if fetched.returncode != 0:
        raise RuntimeError(f"dev/hdfs/fetch failed:\n{fetched.stderr[-3000:]}")
    tools = fetched.stdout.strip().splitlines()[-1]
    spark_jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    return os.pathsep.join([os.path.join(tools, "*"), os.path.join(spark_jars, "*")])


class MiniHDFS:
    """One HDFS process; ``uri`` is ``hdfs://127.0.0.1:<port>``. ``stop`` kills its process
    group and removes its storage, also when it failed to start."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.uri = f"hdfs://127.0.0.1:{self.port}"
        self.workdir = tempfile.mkdtemp(prefix="fw-hdfs-")
        self.conf_file = os.path.join(self.workdir, "cluster.xml")
        self.log = os.path.join(self.workdir, "hdfs.log")
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 180) -> "MiniHDFS":
        cmd = ["java", "-Xmx768m", "-cp", _jars(),
               # the cluster binds 127.0.0.1 only, and names its DataNode by that address
               "-Djava.net.preferIPv4Stack=true",
               "org.apache.hadoop.mapreduce.MiniHadoopClusterManager", "-nomr", "-format",
               "-nnport", str(self.port), "-writeConfig", self.conf_file,
               "-D", "dfs.datanode.address=127.0.0.1:0",
               "-D", "dfs.datanode.http.address=127.0.0.1:0",
               "-D", "dfs.datanode.ipc.address=127.0.0.1:0",
               "-D", "dfs.namenode.http-address=127.0.0.1:0",
               "-D", "dfs.replication=1"]
        with open(self.log, "w") as log:
            # its data goes to ./target/test/data under the working directory
            self.proc = subprocess.Popen(cmd, cwd=self.workdir, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.time() + timeout
        try:
            while time.time() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"HDFS exited with {self.proc.returncode}:\n{self._tail()}")
                # the configuration file is written once the NameNode and DataNode are up
                if os.path.exists(self.conf_file) and self._listening():
                    return self
                time.sleep(0.5)
            raise RuntimeError(f"HDFS did not start within {timeout:.0f} s:\n{self._tail()}")
        except BaseException:
            self.stop()
            raise

    def _listening(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        except OSError:
            return False

    def _tail(self) -> str:
        try:
            return open(self.log).read()[-3000:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(30)
        shutil.rmtree(self.workdir, ignore_errors=True)



def rewrite(fs, path: str, data: bytes) -> None:
    """Replaces ``path`` with ``data`` through the recovery code's own Hadoop file system
    (``fullwindow.recovery._fs.HadoopFS``): HDFS files are not rewritten in place."""
    fs.delete(path)
    out = fs.create(path)
    try:
        out.write(data)
    finally:
        out.close()
