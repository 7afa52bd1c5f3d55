"""A real S3 endpoint for tests: moto's standalone S3 server (``moto_server``, from its own venv
in .tools/moto/) started as a separate process on 127.0.0.1 and a free port, and the Spark
settings with which Hadoop's S3A connector (``s3a://<bucket>/...``, the jars dev/s3/fetch brings
from Maven Central) talks to it."""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from hdfs import _free_port  # a free port on 127.0.0.1, as the test HDFS takes its own

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MOTO = os.path.join(ROOT, ".tools", "moto")

#: the credentials given to S3A (any would do: moto checks no signature), and the region it
#: signs for
ACCESS_KEY = SECRET_KEY = "testing"
REGION = "us-east-1"

# a request line of moto's (werkzeug's) access log: "PUT /bucket/key?uploads HTTP/1.1" 200 -
_REQUEST = re.compile(r'"([A-Z]+) (\S+) HTTP/[\d.]+" (\d{3})')
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # werkzeug colours the lines of failed requests


#: moto's server, answering one request at a time. S3 decides a conditional write
#: (``If-None-Match``, ``If-Match``) atomically; moto checks the condition and then writes, with
#: no lock between, so two requests at once could both pass. One at a time, it decides them as S3
#: does, and a race between writers is the writers' to settle, as it is against S3.
_SERIAL_MOTO = """
import sys, threading
import moto.server as server
lock = threading.Lock()
dispatch = server.DomainDispatcherApplication.__call__
def serial(self, environ, start_response):
    with lock:
        return list(dispatch(self, environ, start_response))
server.DomainDispatcherApplication.__call__ = serial
server.main(sys.argv[1:])
"""


#: the shared test session's S3A class path (tests/conftest.py sets it when it starts the JVM:
#: ``classpath``, the jars joined, or ``error``, why there are none)
SESSION: dict = {"classpath": None, "error": None}


class S3AUnsupported(RuntimeError):
    """The pyspark's Hadoop has no S3A on the AWS SDK v2 (before 3.4: Spark 3.5's 3.3.4)."""


def fetch(python: str | None = None) -> str:
    """dev/s3/fetch for the pyspark of ``python`` (default: this one): the folder of the S3A jars
    matching its Hadoop client (fetched once), with moto's venv beside it. Raises
    S3AUnsupported for a Hadoop before 3.4."""
    fetched = subprocess.run([os.path.join(ROOT, "dev", "s3", "fetch")], cwd=ROOT,
                             env={**os.environ, "PYTHON": python or sys.executable},
                             capture_output=True, text=True, timeout=900)
    if fetched.returncode == 2:
        raise S3AUnsupported(fetched.stderr.strip())
    if fetched.returncode != 0:
        raise RuntimeError(f"dev/s3/fetch failed:\n{fetched.stderr[-3000:]}")
    return fetched.stdout.strip().splitlines()[-1]


def hadoop_conf(endpoint: str) -> dict[str, str]:
    """The Hadoop settings (without ``spark.hadoop.``) with which S3A uses the S3 server at
    ``endpoint`` (``http://host:port``). Only the endpoint and the keys are strictly needed
    against moto on 127.0.0.1 (Hadoop 3.4.1, 3.4.2 and 3.5.0 alike); the others pin what S3A
    would otherwise work out from the environment. No checksum setting is needed: moto 5.2.5
    takes the SDK's requests (PutObject, multipart, CopyObject, DeleteObjects) as they come,
    also with fs.s3a.checksum.generation=true or fs.s3a.create.checksum.algorithm set."""
    return {
        # moto's address, its scheme included (plain HTTP)
        "fs.s3a.endpoint": endpoint,
        # the scheme when an endpoint has none (S3A's default is https)
        "fs.s3a.connection.ssl.enabled": "false",
        # bucket in the path (http://127.0.0.1:port/bucket/key); without it the SDK still does
        # so for an IP address (seen), but a host name endpoint would become bucket.host
        "fs.s3a.path.style.access": "true",
        # the region requests are signed for (moto takes any); without it S3A works one out
        # (the environment's AWS_REGION, ~/.aws/config, or its own fallback)
        "fs.s3a.endpoint.region": REGION,
        # only these credentials: the default chain would go on to the environment and the
        # EC2 instance metadata service (seconds of timeouts off EC2) if they were missing
        "fs.s3a.aws.credentials.provider":
            "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        "fs.s3a.access.key": ACCESS_KEY,
        "fs.s3a.secret.key": SECRET_KEY,
    }


def appended_class_path(jars: list[str]) -> dict[str, str]:
    """The environment that adds ``jars`` at the end of the class path of a JVM spark-submit
    starts (SPARK_DIST_CLASSPATH, after what this process's environment has there), not at its
    head as ``spark.driver.extraClassPath`` would: the JVM then still uses its line's class-data
    archive (dev/jvm-archive), which needs the class path to begin with the Spark jars."""
    given = os.environ.get("SPARK_DIST_CLASSPATH", "")
    return {"SPARK_DIST_CLASSPATH": os.pathsep.join(p for p in (given, *jars) if p)}


class MotoS3:
    """One moto S3 server process; ``endpoint`` is ``http://127.0.0.1:<port>`` once started.
    ``conf()`` is the Spark conf of a new driver using ``s3a://<bucket>/...`` against it (the
    S3A jars go on the driver's and executors' class path, which a JVM takes at its launch: a
    classic pyspark driver that is already running cannot use it). ``stop`` kills its process
    group. Also a context manager."""

    def __init__(self, python: str | None = None) -> None:
        #: the python whose pyspark the S3A jars must match (its Hadoop client version)
        self.python = python or sys.executable
        self.port = _free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.workdir = tempfile.mkdtemp(prefix="fw-s3-")
        self.log = os.path.join(self.workdir, "moto.log")
        self.proc: subprocess.Popen | None = None
        self.jar_dir: str | None = None
        self._mark = 0

    def __enter__(self) -> "MotoS3":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self, timeout: float = 60) -> "MotoS3":
        if self.jar_dir is None:
            self.jar_dir = fetch(self.python)
        server = os.path.join(MOTO, "bin", "python")
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(
                [server, "-c", _SERIAL_MOTO, "-H", "127.0.0.1", "-p", str(self.port)],
                cwd=self.workdir,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                # the access log (what requests() reads) line by line
                env={**os.environ, "PYTHONUNBUFFERED": "1"})
        deadline = time.time() + timeout
        try:
            while time.time() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"moto exited with {self.proc.returncode}:\n{self._tail()}")
                if self._answers():
                    self.reset_counters()
                    return self
                time.sleep(0.2)
            raise RuntimeError(f"moto did not answer within {timeout:.0f} s:\n{self._tail()}")
        except BaseException:
            self.stop()
            raise

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=2):
                return True
        except (OSError, urllib.error.URLError):
            return False

    def _tail(self) -> str:
        try:
            return open(self.log).read()[-3000:]
        except OSError:
            return ""

    def _request(self, method: str, path: str) -> int:
        req = urllib.request.Request(self.endpoint + path, method=method, data=b"")
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status

    def make_bucket(self, name: str) -> str:
        """Creates bucket ``name`` (a plain, unsigned PUT: moto checks no signature; S3's naming
        rules hold: 3 to 63 characters, lower case, digits, '-', '.'); returns ``s3a://<name>``."""
        self._request("PUT", f"/{name}")
        return f"s3a://{name}"

    def reset(self) -> None:
        """Drops every bucket and object (moto's own reset API)."""
        self._request("POST", "/moto-api/reset")

    def jars(self) -> list[str]:
        """The S3A jars (beside pyspark's own) a JVM needs for ``s3a://``."""
        if self.jar_dir is None:
            self.jar_dir = fetch(self.python)
        return sorted(os.path.join(self.jar_dir, n) for n in os.listdir(self.jar_dir)
                      if n.endswith(".jar"))

    def hadoop_conf(self) -> dict[str, str]:
        """The Hadoop settings of ``conf()`` without ``spark.hadoop.`` (e.g. to set on a
        ``hadoopConfiguration()``)."""
        return hadoop_conf(self.endpoint)

    def conf(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """The Spark conf of a new driver (and its executors) using ``s3a://`` against this
        server, plus ``extra``. The driver process also needs ``driver_env()``."""
        cp = os.pathsep.join(self.jars())
        conf = {f"spark.hadoop.{k}": v for k, v in self.hadoop_conf().items()}
        conf.update({"spark.executor.extraClassPath": cp})
        conf.update(extra or {})
        return conf

    def driver_env(self) -> dict[str, str]:
        """The environment that puts the S3A jars on a new driver's class path
        (``appended_class_path``)."""
        return appended_class_path(self.jars())

    # requests, from moto's access log

    def reset_counters(self) -> None:
        """``requests()`` counts from here on."""
        try:
            self._mark = os.path.getsize(self.log)
        except OSError:
            self._mark = 0

    def requests(self) -> list[tuple[str, str, int]]:
        """The requests moto answered since ``reset_counters()`` (or the start), in order:
        (method, path with query, status), e.g. ("PUT", "/b/k?uploads", 200). The moto API's
        own requests are left out."""
        with open(self.log, "rb") as f:
            f.seek(self._mark)
            text = _ANSI.sub("", f.read().decode("utf-8", "replace"))
        return [(m, p, int(s)) for m, p, s in _REQUEST.findall(text)
                if not p.startswith("/moto-api")]

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(30)
        shutil.rmtree(self.workdir, ignore_errors=True)
