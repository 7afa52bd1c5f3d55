"""A Spark Connect server with fullwindow and recovery's runtime: ``python -m fullwindow.server``.

Spark's own ``start-connect-server.sh`` with fullwindow's jar and settings runs every fullwindow
operation for its clients, but not recovery: recovery's runtime (the job-event listener's
consumer, the event store, the lease, the replay of earlier runs) is Python, and runs in the
driver's Python process, which such a server does not have. This launcher is that process: it
starts a classic driver (this Python process and its JVM) with fullwindow, makes itself the
recovery runtime of the server's sessions (a py4j callback the relation plugin calls), then
starts the Spark Connect service in the same JVM::

    python -m fullwindow.server --master local[4] --port 15002 \\
        --conf spark.fullwindow.recovery.dir=s3a://bucket/fw-recovery

It listens on loopback (``localhost``) unless ``--host`` says otherwise. A Spark Connect server
runs whatever Python its clients send, as the server's user, so a server other hosts can reach
must authenticate them: with Spark Connect's pre-shared token (Spark 4.0 on: ``--token``, or,
better, kept out of the process list, the environment variable
``SPARK_CONNECT_AUTHENTICATE_TOKEN`` or ``--conf spark.connect.authenticate.token=...``), which
every client then sends (``sc://host:15002/;token=...``); a server that listens beyond loopback
without one starts only with an explicit ``--insecure``, and warns. Spark's client sends a
token only over TLS, except to ``localhost``, and the Connect server speaks no TLS itself: clients
on other hosts reach a token server through a TLS-terminating proxy in front of it (see
docs/connect.md).

Clients connect with ``fullwindow.session(remote="sc://localhost:15002/;token=...", conf={...})``
and turn recovery on with the same three settings as on a classic session. The launcher runs
until it is stopped (SIGTERM or SIGINT: the service and the driver stop, recovery's leases are
released); when its JVM dies, it exits too. Run it with the interpreter the server's Python
workers should use (it sets ``spark.pyspark.python`` to its own).
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from typing import Any, List, Optional

DEFAULT_PORT = 15002
DEFAULT_HOST = "localhost"
TOKEN_CONF = "spark.connect.authenticate.token"
TOKEN_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"


def _parse(argv: Optional[List[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m fullwindow.server",
        description="Start a Spark Connect server with fullwindow and recovery's runtime. It "
                    "listens on loopback unless --host says otherwise; listening where other "
                    "hosts can reach it needs a token (--token, or the environment variable "
                    f"{TOKEN_ENV}) or --insecure.")
    parser.add_argument("--master", default=None,
                        help="the Spark master (default: spark-submit's, else local[*])")
    parser.add_argument("--host", default=DEFAULT_HOST,
                        help=f"the address to listen on (default {DEFAULT_HOST}: this host "
                             "only); 0.0.0.0 listens on every interface")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"the port to listen on (default {DEFAULT_PORT}); the server "
                             "fails to start rather than take another")
    parser.add_argument("--token", default=None,
                        help="the pre-shared token every client must send "
                             "(sc://host:port/;token=...; Spark 4.0 and later). Prefer the "
                             f"environment variable {TOKEN_ENV}, which the process list does "
                             "not show")
    parser.add_argument("--insecure", action="store_true",
                        help="listen beyond loopback without authentication: anyone who can "
                             "reach the port runs code as this user (for a network of your own "
                             "only, or behind a proxy that authenticates)")
    parser.add_argument("--name", default="fullwindow Spark Connect server",
                        help="the application name")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting (repeatable), as spark-submit's --conf")
    args = parser.parse_args(argv)
    for item in args.conf:
        if "=" not in item or not item.split("=", 1)[0].strip():
            parser.error(f"--conf takes KEY=VALUE; got {item!r}")
    if not 0 < args.port < 65536:
        parser.error(f"--port must be a TCP port, 1 to 65535; got {args.port}")
    if not args.host.strip():
        parser.error("--host must be an address or a host name (0.0.0.0 for every interface); "
                     "got an empty one")
    conf = dict(item.split("=", 1) for item in args.conf)
    if args.token is not None and not args.token.strip():
        parser.error("--token is empty; give the token clients must send, or leave --token "
                     "out")
    args.auth = args.token or conf.get(TOKEN_CONF) or os.environ.get(TOKEN_ENV) or None
    if args.auth is not None and not _has_token_auth():
        parser.error(f"this Spark ({_spark_version()}) has no token authentication for Spark "
                     "Connect (Spark 4.0 and later have it): leave the token out, and listen "
                     "on loopback behind a proxy that authenticates, or use --insecure on a "
                     "network of your own")
    if args.auth is None and not is_loopback(args.host) and not args.insecure:
        parser.error(
            f"--host {args.host} listens where other hosts can reach the server, and a Spark "
            "Connect server runs any Python its clients send, as this user: give a token every "
            f"client must send (--token, or the environment variable {TOKEN_ENV}; clients "
            "connect with sc://host:port/;token=...)" +
            ("" if _has_token_auth() else " (not on this Spark: 4.0 and later have it)") +
            ", listen on loopback (leave --host out) behind a proxy that authenticates, or, on "
            "a network of your own, say --insecure")
    return args


def _spark_version() -> str:
    import pyspark

    return f"Spark {pyspark.__version__}"


def _has_token_auth() -> bool:
    """Spark Connect's pre-shared token (``spark.connect.authenticate.token``): Spark 4.0 on."""
    import pyspark

    return int(pyspark.__version__.split(".")[0]) >= 4


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or a name) is this host only: every address it resolves to
    is a loopback one. ``0.0.0.0``, ``::`` and names of this host's other interfaces are not."""
    import ipaddress
    import socket

    name = host.strip().strip("[]")
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        pass
    try:
        found = {str(info[4][0]) for info in socket.getaddrinfo(name, None)}
    except OSError:
        return False
    try:
        return bool(found) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback
                                   for a in found)
    except ValueError:
        return False


def address(host: str, port: int) -> str:
    """The ``sc://`` address of a server listening on ``host`` and ``port``."""
    name = host.strip()
    if ":" in name and not name.startswith("["):
        name = f"[{name}]"
    return f"sc://{name}:{port}"


def start_connect_service(spark: Any) -> None:
    """Starts the Spark Connect service in ``spark``'s JVM (``SparkConnectService.start``, what
    Spark's own server class and plugin call, on every line), after the recovery runtime is in
    place, so that no client arrives before it."""
    from fullwindow._jvm import java_class

    service = "org.apache.spark.sql.connect.service.SparkConnectService"
    java_class(spark.sparkContext._jvm, service).start(spark.sparkContext._jsc.sc())


def _user() -> str:
    import getpass

    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name: say so plainly
        return "this server's user"


def main(argv: Optional[List[str]] = None) -> int:
    args = _parse(argv)
    conf = dict(item.split("=", 1) for item in args.conf)
    conf["spark.connect.grpc.binding.port"] = str(args.port)
    # the port asked for, or no server: a client restarted with the same URL must find it
    conf.setdefault("spark.connect.grpc.port.maxRetries", "0")
    conf["spark.connect.grpc.binding.address"] = args.host.strip().strip("[]")
    if args.auth is not None and TOKEN_CONF not in conf:
        # Spark reads the setting, else the environment: the JVM started from here inherits
        # this process's (the token stays out of Spark's settings, which clients can read)
        os.environ[TOKEN_ENV] = args.auth
    elif not is_loopback(args.host):  # --insecure
        print(f"fullwindow: WARNING: listening on {args.host}:{args.port} without "
              "authentication (--insecure): anyone who can reach this port runs code as "
              f"{_user()} on this host. Give a token ({TOKEN_ENV} or --token) unless this "
              "network is your own or a proxy in front of the server authenticates.",
              file=sys.stderr, flush=True)
    import fullwindow
    from fullwindow._compat import connect_server_conf

    from fullwindow._jvm_errors import PLUGIN_CLASS, PLUGIN_CONF

    plugins = [c for c in conf.get(PLUGIN_CONF, "").split(",") if c.strip()]
    conf[PLUGIN_CONF] = ",".join(plugins + ([] if PLUGIN_CLASS in plugins else [PLUGIN_CLASS]))
    from fullwindow._session import LIST_KEYS, _merge_csv

    for key, value in connect_server_conf(fullwindow.jar_path()).items():
        conf[key] = _merge_csv(conf.get(key), value) if key in LIST_KEYS else conf.get(key, value)
    # the workers' interpreter: Spark Connect's planner takes it from PYSPARK_PYTHON in the
    # server's environment, not from spark.pyspark.python, and without it they run whatever
    # `python3` is first on PATH (which need not have pyspark, pyarrow or fullwindow)
    workers = conf.get("spark.pyspark.python") or sys.executable
    os.environ["PYSPARK_PYTHON"] = workers
    conf["spark.pyspark.python"] = workers
    from pyspark.sql import SparkSession

    # the server's own session opens no recovery job (fullwindow.session would, with recovery
    # settings in --conf): jobs belong to the clients' sessions
    builder = SparkSession.builder.appName(args.name)
    if args.master:
        builder = builder.master(args.master)
    elif "spark.master" not in conf and not os.environ.get("PYSPARK_SUBMIT_ARGS"):
        builder = builder.master("local[*]")
    # recovery settings here are defaults for the clients' sessions, whose jobs they are: not
    # checked as a job of the server's own (a server-wide jobId would be one job for all)
    recovery = {k: v for k, v in conf.items() if k.startswith("spark.fullwindow.recovery.")}
    builder = fullwindow.configure(builder, {k: v for k, v in conf.items() if k not in recovery})
    for k, v in recovery.items():
        builder = builder.config(k, v)
    from fullwindow.recovery._autostart import suspended

    with suspended():
        spark = builder.getOrCreate()
    from fullwindow.recovery._jobs import _runtime
    from fullwindow.recovery._connect_runtime import install

    install(spark)
    start_connect_service(spark)
    sc = spark.sparkContext
    where = address(args.host, args.port)
    auth = ("clients send its token: /;token=..." if args.auth is not None else
            "no authentication" if not is_loopback(args.host) else "this host only")
    print(f"fullwindow Spark Connect server at {where} ({auth}; Spark {spark.version}, "
          f"fullwindow {fullwindow.__version__}, application {sc.applicationId})", flush=True)

    done = threading.Event()

    def stop(signum: int, frame: object) -> None:
        done.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    proc = getattr(sc._gateway, "proc", None)
    while not done.wait(1.0):
        if proc is not None and proc.poll() is not None:
            # the JVM is gone: nothing may keep renewing recovery's leases for it
            print("fullwindow: the server's JVM exited", file=sys.stderr, flush=True)
            os._exit(1)
    try:
        _runtime.shutdown()  # events flushed, leases released
    finally:
        spark.stop()
    return 0
