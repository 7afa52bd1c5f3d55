"""A server that lets no one in by default (issue 51): ``python -m fullwindow.server`` listens on
loopback unless ``--host`` says otherwise, refuses to listen beyond it without a token or an
explicit ``--insecure`` (which warns), prints the address it listens on; with a token (Spark
Connect's pre-shared token, here through the environment variable Spark reads) a client without
it, or with another, is refused, and a client with it runs fullwindow and recovery. Clients are
processes of their own (this process's local Connect session leaves a token of its own in the
environment)."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid

import pytest

from cluster import free_port
from server import ConnectServer, clean_env

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKEN_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
#: Spark Connect's pre-shared token: Spark 4.0 on
TOKENS = int(__import__("pyspark").__version__.split(".")[0]) >= 4


def _launcher(*args, env=None, timeout=60):
    e = clean_env(PYTHONPATH=os.path.join(ROOT, "python"), **(env or {}))
    return subprocess.run([sys.executable, "-m", "fullwindow.server", *args], cwd=ROOT, env=e,
                          capture_output=True, text=True, timeout=timeout)


def test_the_launcher_refuses_to_listen_beyond_loopback_without_a_token():
    """Refused before anything starts (argparse's usage error, exit 2), naming the ways out."""
    for host in ("0.0.0.0", "::"):
        r = _launcher("--host", host, "--port", str(free_port()))
        assert r.returncode == 2, (r.stdout, r.stderr)
        assert "usage:" in r.stderr and f"--host {host} listens where other hosts" in r.stderr
        for way in ("--token", TOKEN_ENV, "--insecure", "loopback"):
            assert way in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
    if not TOKENS:  # 3.5: no token to give
        r = _launcher("--token", "t", "--port", str(free_port()))
        assert r.returncode == 2 and "has no token authentication" in r.stderr, r.stderr
    for args, says in ((["--token", ""], "--token is empty"),
                       (["--port", "0"], "--port must be a TCP port"),
                       (["--port", "70000"], "--port must be a TCP port"),
                       (["--host", ""], "--host must be an address"),
                       (["--conf", "novalue"], "--conf takes KEY=VALUE"),
                       (["--conf", "=x"], "--conf takes KEY=VALUE"),
                       (["--port", "abc"], "--port: invalid int value")):
        r = _launcher(*args)
        assert r.returncode == 2 and says in r.stderr and "usage:" in r.stderr, (args, r.stderr)


def _non_loopback_address() -> str | None:
    """An address of this host that is not loopback (None if it has none)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))  # no packet is sent: only a route is chosen
            address = s.getsockname()[0]
    except OSError:
        return None
    return None if address.startswith("127.") else address


def _reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def _start(args, env=None, timeout=180):
    """The launcher as a process of its own; its first stdout line (the address) and stderr."""
    import tempfile

    e = clean_env(PYTHONPATH=os.path.join(ROOT, "python"), SPARK_LOCAL_IP="127.0.0.1",
                  **(env or {}))
    err = tempfile.TemporaryFile(mode="w+")
    p = subprocess.Popen([sys.executable, "-m", "fullwindow.server", "--master", "local[1]",
                          "--conf", "spark.ui.enabled=false", "--conf",
                          "spark.sql.shuffle.partitions=2", *args],
                         cwd=ROOT, env=e, stdout=subprocess.PIPE, stderr=err, text=True,
                         start_new_session=True)
    deadline = time.time() + timeout
    line = p.stdout.readline()
    if "Spark Connect server at" not in line:
        _stop(p)
        err.seek(0)
        pytest.fail(f"the launcher did not start ({p.returncode}): {line}\n{err.read()[-4000:]}")
    assert time.time() < deadline
    return p, line, err


def _stop(p):
    import signal

    if p.poll() is None:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(30)


def test_insecure_listens_everywhere_warns_and_prints_where():
    port = free_port()
    p, line, err = _start(["--host", "0.0.0.0", "--port", str(port), "--insecure"])
    try:
        assert line.startswith(f"fullwindow Spark Connect server at sc://0.0.0.0:{port} "
                               "(no authentication;"), line
        err.seek(0)
        text = err.read()
        assert "WARNING: listening on 0.0.0.0:" in text and "without authentication" in text
        assert "anyone who can reach this port runs code as" in text
        assert _reachable("127.0.0.1", port)
        other = _non_loopback_address()
        if other is not None:
            assert _reachable(other, port)
    finally:
        _stop(p)


CLIENT = """
import json, sys
import fullwindow
from fullwindow import recovery
url, d = sys.argv[1], sys.argv[2]
out = {}
try:
    spark = fullwindow.session(remote=url)
    df = spark.range(0, 40, 1, 4).selectExpr("id % 5 AS k", "id AS v")
    out["sorted"] = [r.v for r in df.fullWindowPartition().sortPartition("v").collect()][:3]
    if d != "-":  # recovery over Connect through the token
        for k, v in (("enabled", "true"), ("dir", d), ("jobId", "with-token")):
            spark.conf.set("spark.fullwindow.recovery." + k, v)
        op = df.keyBy("k").fullWindowPartition().reduce(lambda a, b: a if a.v >= b.v else b)
        out["reduced"] = sorted(tuple(r) for r in op.collect())
        recovery.flush(spark)
        st = recovery.status(d, "with-token", spark)
        out["committed"] = [(o["committed"], o["partitions"]) for o in st["operations"]
                            if o["operation"] != "shuffle input"]
        refused = []
        for bad in ("..", ".", "x/../.."):
            try:
                recovery.cleanup(spark, bad, d)
            except fullwindow.ConfigurationError as e:
                refused.append(str(e))
            try:  # the server's check, whatever the client let through
                from fullwindow._connect.recovery import control
                control(spark, "cleanup", job_id=bad, directory=d)
            except fullwindow.ConfigurationError as e:
                refused.append("server: " + str(e))
        out["refused"] = refused
        out["cleanup"] = recovery.cleanup(spark)
    spark.stop()
except Exception as e:
    out["error"] = type(e).__name__ + ": " + str(e)[:2000]
print("RESULT " + json.dumps(out))
"""


def _client(url: str, directory: str = "-") -> dict:
    env = clean_env(PYTHONPATH=os.path.join(ROOT, "python"))
    r = subprocess.run([sys.executable, "-c", CLIENT, url, directory], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    pytest.fail(f"the client printed no result ({r.returncode}):\n{r.stdout[-2000:]}\n"
                f"{r.stderr[-3000:]}")


@pytest.mark.skipif(not TOKENS, reason="Spark Connect's token is Spark 4.0's (3.5 has none)")
def test_a_token_server_lets_in_only_clients_with_the_token(tmp_path):
    """The launcher with no --host (loopback) and a token from the environment Spark reads:
    the printed address is loopback's; a client without the token or with another is refused;
    with it, fullwindow and recovery (status, cleanup refusing bad ids on client and server)
    work."""
    token = uuid.uuid4().hex
    with ConnectServer(launcher=True, env={TOKEN_ENV: token}, master="local[2]") as server:
        base = f"sc://localhost:{server.port}"
        none = _client(base)
        assert "error" in none and "No authentication token provided" in none["error"], none
        wrong = _client(f"{base}/;token={uuid.uuid4().hex}")
        assert "error" in wrong and "Invalid authentication token" in wrong["error"], wrong
        ok = _client(f"{base}/;token={token}", str(tmp_path))
        assert "error" not in ok, (ok, server.log())
    assert ok["sorted"] == [0, 1, 2]
    assert [tuple(r) for r in ok["reduced"]] == [(k, 35 + k) for k in range(5)]
    assert ok["committed"] and all(c == n for c, n in ok["committed"]), ok["committed"]
    assert len(ok["refused"]) == 6 and all("a job id names one directory" in m
                                           for m in ok["refused"]), ok["refused"]
    assert sum(m.startswith("server: ") for m in ok["refused"]) == 3
    assert ok["cleanup"] is True and not (tmp_path / "with-token").exists()
    assert sorted(os.listdir(tmp_path)) == []


def test_the_default_listens_on_loopback_only_and_says_so():
    port = free_port()
    p, line, _ = _start(["--port", str(port)])
    try:
        assert line.startswith(f"fullwindow Spark Connect server at sc://localhost:{port} "
                               "(this host only;"), line
        assert _reachable("127.0.0.1", port)
        other = _non_loopback_address()
        if other is not None:
            assert not _reachable(other, port), f"{other}:{port} reached"
    finally:
        _stop(p)
