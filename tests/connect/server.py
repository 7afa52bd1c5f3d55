"""A real Spark Connect server process, started from the pyspark install with
``sbin/start-connect-server.sh`` (in the foreground; ``bin/spark-submit`` of the server class
where the install has no such script), on 127.0.0.1 and a free port."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Mapping

from cluster import free_port, spark_home  # tests/cluster.py


# what a local Connect session (the `spark` fixture's) leaves in this process's environment: a
# server or client started from here must not inherit them (the token turns TLS on)
_LOCAL_CONNECT_ENV = ("SPARK_CONNECT_AUTHENTICATE_TOKEN", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE",
                      "SPARK_CONNECT_MODE_ENABLED")


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _LOCAL_CONNECT_ENV}
    env.update(extra)
    return env


def fullwindow_server_args(extension: bool = True, jar: str | None = None) -> list[str]:
    """The three settings that put fullwindow on a Connect server (what the README says);
    ``extension=False`` leaves spark.sql.extensions out (jar and plugin only); ``jar``: another
    jar than the package's."""
    import fullwindow
    from fullwindow._backend import PLUGIN_CLASS, PLUGIN_CONF

    args = ["--jars", jar or fullwindow.jar_path(), "--conf", f"{PLUGIN_CONF}={PLUGIN_CLASS}"]
    if extension:
        args += ["--conf", f"spark.sql.extensions={fullwindow.EXTENSION_CLASS}"]
    return args


SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


def server_command() -> list[str]:
    """pyspark's sbin/start-connect-server.sh where the install has it (4.3); pyspark 4.0-4.2
    wheels ship no sbin script for it, so there spark-submit runs the server class, which is
    what the script does (in the foreground)."""
    script = os.path.join(spark_home(), "sbin", "start-connect-server.sh")
    if os.path.isfile(script):
        return [script]
    return [os.path.join(spark_home(), "bin", "spark-submit"), "--class", SERVER_CLASS,
            "--name", "Spark Connect server"]


class ConnectServer:
    """``with ConnectServer(fullwindow=True) as server: ... server.url``; the server process
    group is killed on exit, also after a failure. ``python``: the interpreter of the server's
    Python workers (by default this one); ``jar``: another fullwindow jar than the package's."""

    def __init__(self, fullwindow: bool = True, conf: Mapping[str, str] | None = None,
                 master: str = "local[2]", extension: bool = True, python: str | None = None,
                 jar: str | None = None, launcher: bool = False,
                 env: Mapping[str, str] | None = None, unset: tuple[str, ...] = ()):
        """``launcher``: fullwindow's own launcher (``python -m fullwindow.server``, which runs
        recovery's runtime beside the server) instead of Spark's script; ``env``: more
        environment for the server (and its Python workers); ``unset``: variables removed from
        it."""
        self.extension, self.python, self.jar = extension, python or sys.executable, jar
        self.launcher, self.env, self.unset = launcher, dict(env or {}), unset
        self.port = free_port()
        self.url = f"sc://127.0.0.1:{self.port}"
        self.fullwindow, self.conf, self.master = fullwindow, dict(conf or {}), master
        self.proc: subprocess.Popen | None = None
        self.logdir = tempfile.mkdtemp(prefix="fw-connect-")

    def log(self) -> str:
        out = []
        for name in sorted(os.listdir(self.logdir)):
            path = os.path.join(self.logdir, name)
            if os.path.isfile(path):
                with open(path, errors="replace") as f:
                    out.append(f"--- {name}\n{f.read()[-4000:]}")
        return "\n".join(out)

    def start(self, timeout: float = 180) -> "ConnectServer":
        conf = {"spark.connect.grpc.binding.address": "127.0.0.1",
                "spark.connect.grpc.binding.port": str(self.port),
                "spark.ui.enabled": "false", "spark.driver.memory": "1g",
                "spark.sql.shuffle.partitions": "4", "spark.pyspark.python": self.python}
        import fullwindow
        from fullwindow._compat import connect_server_conf

        conf.update(connect_server_conf(fullwindow.jar_path()))  # 3.5: the server artifact
        conf.update(self.conf)
        if self.launcher:  # it adds fullwindow's settings and the port itself
            conf.pop("spark.connect.grpc.binding.port")
            conf.pop("spark.pyspark.python")
            args = [self.python, "-m", "fullwindow.server", "--master", self.master,
                    "--port", str(self.port), "--host", "127.0.0.1"]
        else:
            args = server_command() + ["--master", self.master]
            if self.fullwindow:
                args += fullwindow_server_args(self.extension, self.jar)
        for k, v in conf.items():
            args += ["--conf", f"{k}={v}"]
        env = clean_env(SPARK_HOME=spark_home(), SPARK_NO_DAEMONIZE="1",
                        SPARK_CONNECT_MODE="0", SPARK_LOG_DIR=self.logdir, SPARK_PID_DIR=self.logdir,
                        SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=self.python, **self.env)
        for name in self.unset:
            env.pop(name, None)
        if self.python != sys.executable:  # nothing of this process's Python path either,
            from helpers import without_preload_daemon  # so pyspark's own daemon

            env.pop("PYTHONPATH", None)
            without_preload_daemon(env)
        log = open(os.path.join(self.logdir, "server.out"), "a")
        self.proc = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the Connect server exited ({self.proc.returncode}):\n"
                                   + self.log())
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"the Connect server did not listen within {timeout}s:\n" + self.log())

    def kill(self) -> None:
        """A crash: SIGKILL to the server's whole process group (its JVM and, for the
        launcher, its Python process), at once."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(30)
        self.proc = None

    def restart(self, timeout: float = 180) -> "ConnectServer":
        """The same server again (same settings, same port), as a supervisor would start it."""
        self.kill()
        return self.start(timeout)

    def stop(self) -> None:
        """SIGTERM to the server's process group; what is left after 30 s is killed."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        self.kill()

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.logdir, ignore_errors=True)

    def __enter__(self) -> "ConnectServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.cleanup()


def python_without_fullwindow(folder: str) -> str:
    """A Python environment with this one's pyspark, pyarrow and pandas but no fullwindow (what
    a Connect server's workers have when only the jar was added): a venv whose site-packages
    holds a symbolic link to each entry of this environment's site-packages except fullwindow's
    own (its package, its metadata, an editable install's finder and .pth). No second install.
    Returns its interpreter; checked to import the three and not fullwindow."""
    import sysconfig

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", folder], check=True,
                   capture_output=True, timeout=120)
    python = os.path.join(folder, "bin", "python")
    theirs = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True).stdout.strip()
    ours = sysconfig.get_paths()["purelib"]
    for name in os.listdir(ours):
        if "fullwindow" not in name.lower() and not os.path.exists(os.path.join(theirs, name)):
            os.symlink(os.path.join(ours, name), os.path.join(theirs, name))
    env = clean_env()
    env.pop("PYTHONPATH", None)
    ok = subprocess.run([python, "-c", "import pyspark, pyarrow, pandas"], env=env,
                        capture_output=True, text=True)
    if ok.returncode != 0:
        raise RuntimeError(f"{python} cannot import pyspark, pyarrow, pandas:\n{ok.stderr}")
    without = subprocess.run([python, "-c", "import fullwindow"], env=env, capture_output=True,
                             text=True)
    if without.returncode == 0 or "No module named 'fullwindow'" not in without.stderr:
        raise RuntimeError(f"{python} should not import fullwindow:\n{without.stderr}")
    return python
