"""A real HDFS, and a real YARN beside it, for tests: Hadoop's own single-process test cluster
(a NameNode and a DataNode; with ``yarn=True`` also a ResourceManager, a NodeManager and a
JobHistory server: ``MiniHadoopClusterManager``) started as a separate process on 127.0.0.1 and
free ports, with pyspark's Hadoop client jars and the jars dev/hdfs/fetch brings from Maven
Central."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

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


#: the YARN NodeManager's memory for containers, and the smallest container: room for a Spark
#: application master (cluster mode: the driver) and one executor of 512m each (plus Spark's
#: 384m overhead), and for the next attempt's while YARN cleans up the last one
NODE_MEMORY_MB = 4096
MIN_CONTAINER_MB = 128

#: the written configuration names a Hadoop test class as the rack resolver; a client (Spark)
#: does not have it and needs no rack resolution
_TEST_ONLY = {"net.topology.node.switch.mapping.impl"}


class MiniHDFS:
    """One HDFS process (and YARN in it with ``yarn=True``); ``uri`` is
    ``hdfs://127.0.0.1:<port>``, ``conf_dir`` a Hadoop configuration directory for clients
    (``HADOOP_CONF_DIR`` of spark-submit --master yarn) once started. ``stop`` kills its process
    group and YARN's containers (each a session of its own, working in a directory under the
    cluster's) and removes its storage, also when it failed to start."""

    def __init__(self, yarn: bool = False) -> None:
        self.yarn = yarn
        self.port = _free_port()
        self.rm_port = _free_port() if yarn else None
        self.uri = f"hdfs://127.0.0.1:{self.port}"
        self.workdir = tempfile.mkdtemp(prefix="fw-yarn-" if yarn else "fw-hdfs-")
        self.conf_file = os.path.join(self.workdir, "cluster.xml")
        self.conf_dir = os.path.join(self.workdir, "conf")
        self.log = os.path.join(self.workdir, "hdfs.log")
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 180) -> "MiniHDFS":
        # the client compiler only and the serial collector: a test cluster's JVM spends most
        # of its CPU starting up, little serving a test's few requests (issue 49)
        cmd = ["java", "-Xmx768m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", _jars(),
               # the cluster binds 127.0.0.1 only, and names its DataNode by that address
               "-Djava.net.preferIPv4Stack=true",
               "org.apache.hadoop.mapreduce.MiniHadoopClusterManager", "-format",
               "-nnport", str(self.port), "-writeConfig", self.conf_file,
               "-D", "dfs.datanode.address=127.0.0.1:0",
               "-D", "dfs.datanode.http.address=127.0.0.1:0",
               "-D", "dfs.datanode.ipc.address=127.0.0.1:0",
               "-D", "dfs.namenode.http-address=127.0.0.1:0",
               "-D", "dfs.replication=1"]
        if not self.yarn:
            cmd.insert(cmd.index("-format"), "-nomr")
        else:
            cmd += ["-rmport", str(self.rm_port), "-jhsport", str(_free_port())]
            for key, value in {
                # the default capacity scheduler has no queues in the test cluster
                "yarn.resourcemanager.scheduler.class": "org.apache.hadoop.yarn.server."
                "resourcemanager.scheduler.fifo.FifoScheduler",
                "yarn.nodemanager.resource.memory-mb": NODE_MEMORY_MB,
                "yarn.scheduler.minimum-allocation-mb": MIN_CONTAINER_MB,
                "yarn.scheduler.maximum-allocation-mb": NODE_MEMORY_MB,
                "yarn.nodemanager.resource.cpu-vcores": 4,
                # a JVM's virtual memory is far above its heap; and the driver's Python
                # process shares the application master's container
                "yarn.nodemanager.vmem-check-enabled": "false",
                "yarn.nodemanager.pmem-check-enabled": "false",
                # a nearly full disk would mark the only NodeManager unhealthy
                "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-"
                "percentage": "99.9",
                # the ResourceManager's other ports, and the NodeManager's, on 127.0.0.1
                "yarn.resourcemanager.hostname": "127.0.0.1",
                "yarn.resourcemanager.scheduler.address": f"127.0.0.1:{_free_port()}",
                "yarn.resourcemanager.resource-tracker.address": f"127.0.0.1:{_free_port()}",
                "yarn.resourcemanager.admin.address": f"127.0.0.1:{_free_port()}",
                "yarn.resourcemanager.webapp.address": f"127.0.0.1:{_free_port()}",
                "yarn.nodemanager.address": "127.0.0.1:0",
                "yarn.nodemanager.localizer.address": "127.0.0.1:0",
                "yarn.nodemanager.webapp.address": "127.0.0.1:0",
                # a failed attempt's containers are cleaned up at once
                "yarn.nodemanager.sleep-delay-before-sigkill.ms": 250,
                # an application master that has not registered within this time fails its
                # attempt: on a loaded 2-core machine a cluster-mode driver's AM took over 60 s
                # to register (issue 49's CI-like run), so its attempt 1 expired and the test
                # killed attempt 2's driver, with no third attempt left; a killed AM's container
                # exit is reported at once, so nothing here waits on this expiry
                "yarn.am.liveness-monitor.expiry-interval-ms": 600_000,
            }.items():
                cmd += ["-D", f"{key}={value}"]
        with open(self.log, "w") as log:
            # its data goes to ./target/test/data under the working directory
            self.proc = subprocess.Popen(cmd, cwd=self.workdir, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.time() + timeout
        try:
            while time.time() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"HDFS exited with {self.proc.returncode}:\n{self._tail()}")
                # the configuration file is written once the NameNode and DataNode (and YARN)
                # are up
                if os.path.exists(self.conf_file) and self._listening() and \
                        (not self.yarn or self._write_client_conf()):
                    return self
                time.sleep(0.5)
            raise RuntimeError(f"HDFS did not start within {timeout:.0f} s:\n{self._tail()}")
        except BaseException:
            self.stop()
            raise

    def _write_client_conf(self) -> bool:
        """``conf_dir``: the cluster's written configuration, without test-only classes, as
        core-site.xml, hdfs-site.xml and yarn-site.xml (what spark-submit reads); False while
        the cluster is still writing it."""
        try:
            tree = ET.parse(self.conf_file)
        except ET.ParseError:  # still being written
            return False
        root = tree.getroot()
        for prop in list(root):
            if prop.findtext("name") in _TEST_ONLY:
                root.remove(prop)
        os.makedirs(self.conf_dir, exist_ok=True)
        for name in ("core-site.xml", "hdfs-site.xml", "yarn-site.xml"):
            tree.write(os.path.join(self.conf_dir, name), encoding="utf-8", xml_declaration=True)
        return True

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

    def container_pids(self) -> list[int]:
        """The processes YARN started for containers (application masters, executors and their
        Python processes): those working in a directory under the cluster's."""
        out = []
        for name in os.listdir("/proc"):
            if not name.isdigit() or (self.proc is not None and int(name) == self.proc.pid):
                continue
            try:
                cwd = os.readlink(f"/proc/{name}/cwd")
            except OSError:
                continue
            if cwd.startswith(self.workdir + os.sep):
                out.append(int(name))
        return out

    def stop(self) -> None:
        for pid in self.container_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
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
