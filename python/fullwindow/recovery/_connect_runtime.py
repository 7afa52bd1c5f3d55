"""Recovery's runtime for a Spark Connect server's sessions, in the Python process beside the
server's JVM (``python -m fullwindow.server``, or the process of a ``remote="local[N]"``
session, which runs its server in its own JVM).

The server's relation plugin calls it through a py4j callback for each operation a client
wraps in a ``Commit`` relation (``_connect/recovery.py``), and for the client's recovery calls.
It runs the classic code (``recovery/__init__.py``: fingerprints, event store, lease, replay)
on a classic SparkSession object over the Connect session's own JVM session, so the session's
settings (``spark.fullwindow.recovery.*``) are the job's. Each job belongs to the Connect
session that opened it: another session of the server asking for the same job id is refused
(:class:`RecoveryConflictError`) while that one is alive. Errors go back as ``KIND\\0message``
(the JVM raises them as fullwindow's analysis errors, which the client turns into the same
Python exceptions a classic session raises).
"""
from __future__ import annotations

import json
import logging
import threading
from typing import Any, Dict, Optional

log = logging.getLogger("fullwindow.recovery")

_INTERFACE = "org.apache.spark.sql.fullwindow.connect.ConnectRecoveryRuntime"
_ACTION = "action:"  # fullwindow._connect.recovery.ACTION
_INSTALLER = "org.apache.spark.sql.fullwindow.connect.FullWindowConnectRecovery"


def _answer(err: BaseException) -> str:
    """``err`` as the JVM raises it: ``KIND\\0message``."""
    from fullwindow.errors import FullWindowError, kind_of

    if isinstance(err, FullWindowError):
        return f"{kind_of(type(err))}\0{err}"
    log.exception("fullwindow: recovery on the Spark Connect server failed")
    return f"RECOVERY_STORAGE\0fullwindow recovery failed on the Spark Connect server: " \
           f"{type(err).__name__}: {err}"


class ConnectRuntime:
    """The object the JVM calls (py4j callback, ``ConnectRecoveryRuntime``)."""

    def __init__(self, sc: Any) -> None:
        self.sc = sc
        self.sessions: Dict[str, Any] = {}
        #: the clients' foreach / foreachPartition begun and not done yet, by token
        self.actions: Dict[str, Any] = {}
        self.lock = threading.Lock()

    def _session(self, session_id: str, jsession: Any) -> Any:
        """A classic SparkSession over Connect session ``session_id``'s JVM session (kept per
        session; it leaves this process's active and default sessions as they are)."""
        from pyspark.sql import SparkSession

        with self.lock:
            spark = self.sessions.get(session_id)
            if spark is None:
                spark = self.sessions[session_id] = SparkSession(self.sc, jsparkSession=jsession)
            return spark

    def commit(self, session_id: str, user_id: str, jsession: Any, jdataset: Any,
               operation: str, code_hex: str, extra: str) -> Any:
        try:
            from pyspark.sql import DataFrame

            from fullwindow.recovery._jobs import _commit
            from fullwindow.recovery.config import settings_of_session

            spark = self._session(session_id, jsession)
            if operation.startswith(_ACTION):  # a client's foreach / foreachPartition
                return self._begin_action(spark, jdataset, operation[len(_ACTION):],
                                          code_hex, extra)
            settings = settings_of_session(spark, operation)
            if settings is None:
                return jdataset
            out = _commit(DataFrame(jdataset, spark), operation, settings,
                          code=bytes.fromhex(code_hex), extra_text=extra,
                          owner={"session": session_id, "user": user_id})
            return out._jdf
        except BaseException as err:  # noqa: BLE001 - nothing may cross py4j as an exception
            return _answer(err)

    def _begin_action(self, spark: Any, jdataset: Any, kind: str, code_hex: str,
                      extra: str) -> Any:
        """Numbers a client's ``kind`` of ``jdataset`` in the session's job, once per token
        (the server may analyze the relation that carries it more than once); the decision is
        asked for with ``actionState`` and the end told with ``actionDone``."""
        from fullwindow._jvm import facade
        from fullwindow._jvm_errors import raise_from_java

        args = json.loads(extra or "{}")
        token = str(args.get("token", ""))
        with self.lock:
            if token in self.actions:
                return jdataset
        try:
            pending = facade(spark).beginRecoveredAction(jdataset, kind,
                                                         str(args.get("target", "")), code_hex)
        except Exception as err:  # noqa: BLE001 - a refusal: said as fullwindow's error
            raise_from_java(err, kind)
            raise
        with self.lock:
            self.actions[token] = pending
        return jdataset

    def control(self, session_id: str, user_id: str, jsession: Any, action: str,
                argument: str) -> Optional[str]:
        try:
            spark = self._session(session_id, jsession)
            args = json.loads(argument or "{}")
            return json.dumps(self._control(spark, session_id, user_id, action, args))
        except BaseException as err:  # noqa: BLE001 - nothing may cross py4j as an exception
            return _answer(err)

    def _control(self, spark: Any, session_id: str, user_id: str, action: str,
                 args: Dict[str, Any]) -> Any:
        from fullwindow import recovery
        from fullwindow.errors import FullWindowValueError
        from fullwindow.recovery import _jobs
        from fullwindow.recovery.config import settings_of_session

        owner = {"session": session_id, "user": user_id}
        if action == "start":
            settings = settings_of_session(spark, "recovery.start")
            if settings is None:
                return {"started": False}
            _jobs._runtime.job(spark, settings, "recovery.start", owner)
            # the client's script path (fingerprints of shuffles over its Python UDFs leave out
            # its directory: config.DRIVER_SCRIPT)
            _jobs.tell_driver_script(spark, str(args.get("script") or ""))
            return {"started": True}
        if action == "flush":
            _jobs._runtime.drain(int(args.get("wait_ms", 5000)))
            for job in _jobs._runtime.owned_by(owner):
                job.check()
                job.store.flush()
            return {}
        if action == "close":  # the client program ends: its jobs end with it
            for job in _jobs._runtime.owned_by(owner):
                _jobs._runtime.close_job(job.job_dir)
            return {}
        if action == "cleanup":
            return {"deleted": _jobs._cleanup(spark, args.get("job_id"),
                                                 args.get("directory"), owner)}
        if action == "actionState":
            with self.lock:
                pending = self.actions.get(str(args.get("token")))
            return {"skipped": bool(pending is not None and pending.skipped())}
        if action == "actionDone":
            with self.lock:
                pending = self.actions.pop(str(args.get("token")), None)
            if pending is not None:
                pending.done()
            return {}
        if action in ("status", "verify"):
            return recovery.status(args["directory"], args["job_id"], spark,
                                   crc=action == "verify")
        raise FullWindowValueError(f"recovery: unknown call {action!r} (a newer client?)")

    class Java:
        implements = [_INTERFACE]


_installed: Dict[int, ConnectRuntime] = {}


def install(spark: Any) -> ConnectRuntime:
    """Makes this process the recovery runtime of the Spark Connect server in ``spark``'s JVM
    (once per JVM): starts py4j's callback server and registers the runtime with the plugin."""
    from pyspark.java_gateway import ensure_callback_server_started

    sc = spark.sparkContext
    gateway = sc._gateway
    known = _installed.get(id(gateway))
    if known is not None:
        return known
    ensure_callback_server_started(gateway)
    runtime = ConnectRuntime(sc)
    from fullwindow._jvm import java_class

    java_class(sc._jvm, _INSTALLER).install(runtime, sc._jsc.sc())
    _installed[id(gateway)] = runtime
    return runtime


def install_local() -> None:
    """A ``remote="local[N]"`` session runs its Connect server in this process's JVM, beside
    a classic session: this process is then the server's recovery runtime (installed once)."""
    try:
        from pyspark.sql.session import SparkSession as ClassicSession
    except ImportError:  # a thin client (pyspark-client): no server here
        return
    classic = getattr(ClassicSession, "_instantiatedSession", None)
    sc = getattr(classic, "_sc", None)
    if classic is None or sc is None or getattr(sc, "_jsc", None) is None:
        return
    install(classic)
