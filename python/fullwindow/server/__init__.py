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

Clients connect with ``fullwindow.session(remote="sc://host:15002", conf={...})`` and turn
recovery on with the same three settings as on a classic session. The launcher runs until it is
stopped (SIGTERM or SIGINT: the service and the driver stop, recovery's leases are released);
when its JVM dies, it exits too. Run it with the interpreter the server's Python workers should
use (it sets ``spark.pyspark.python`` to its own).
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from typing import Any, List, Optional

DEFAULT_PORT = 15002


def _parse(argv: Optional[List[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m fullwindow.server",
        description="Start a Spark Connect server with fullwindow and recovery's runtime.")
    parser.add_argument("--master", default=None,
                        help="the Spark master (default: spark-submit's, else local[*])")
    parser.add_argument("--host", default=None,
                        help="the address to listen on (default: Spark's, every interface)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"the port to listen on (default {DEFAULT_PORT}); the server "
                             "fails to start rather than take another")
    parser.add_argument("--name", default="fullwindow Spark Connect server",
                        help="the application name")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting (repeatable), as spark-submit's --conf")
    args = parser.parse_args(argv)
    for item in args.conf:
        if "=" not in item:
            parser.error(f"--conf takes KEY=VALUE; got {item!r}")
    return args


def start_connect_service(spark: Any) -> None:
    """Starts the Spark Connect service in ``spark``'s JVM (``SparkConnectService.start``, what
    Spark's own server class and plugin call, on every line), after the recovery runtime is in
    place, so that no client arrives before it."""
    from fullwindow._jvm import java_class

    service = "org.apache.spark.sql.connect.service.SparkConnectService"
    java_class(spark.sparkContext._jvm, service).start(spark.sparkContext._jsc.sc())


def main(argv: Optional[List[str]] = None) -> int:
    args = _parse(argv)
    conf = dict(item.split("=", 1) for item in args.conf)
    conf["spark.connect.grpc.binding.port"] = str(args.port)
    # the port asked for, or no server: a client restarted with the same URL must find it
    conf.setdefault("spark.connect.grpc.port.maxRetries", "0")
    if args.host:
        conf["spark.connect.grpc.binding.address"] = args.host
    import fullwindow
    from fullwindow._compat import connect_server_conf

    from fullwindow._jvm_errors import PLUGIN_CLASS, PLUGIN_CONF

    plugins = [c for c in conf.get(PLUGIN_CONF, "").split(",") if c.strip()]
    conf[PLUGIN_CONF] = ",".join(plugins + ([] if PLUGIN_CLASS in plugins else [PLUGIN_CLASS]))
    conf = {**connect_server_conf(fullwindow.jar_path()), **conf}
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
    spark = builder.getOrCreate()
    from fullwindow.recovery._jobs import _runtime
    from fullwindow.recovery._connect_runtime import install

    install(spark)
    start_connect_service(spark)
    sc = spark.sparkContext
    where = f"sc://{args.host or 'localhost'}:{args.port}"
    print(f"fullwindow Spark Connect server at {where} (Spark {spark.version}, "
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
