"""Recovery from a Spark Connect client: what the client sends, the server's runtime does.

A full-window operation's result is wrapped in a ``Commit`` relation that carries what only the
client has: the digest of the operation's Python function (its code and the modules it uses:
recovery/_digest.py) and the text of its other arguments. The server's relation plugin hands it
to the recovery runtime of the server's Python process (``python -m fullwindow.server``), which
runs the classic recovery code: the same fingerprints, event store, lease and replay. The wrap is
analyzed at once, so a conflict or a refusal is raised where the operation is defined, as on a
classic session. ``control`` calls that runtime for the session's job (start, flush, cleanup,
status).
"""
from __future__ import annotations

import atexit
import json
from typing import Any

from fullwindow._compat import connect_dataframe, dataframe_schema


def commit(out: Any, operation: str, code: bytes, extra: str) -> Any:
    """``out`` (a Connect DataFrame of full-window ``operation``) made recoverable by the
    server's recovery runtime."""
    from fullwindow._connect.plan import FullWindowPlan
    from fullwindow._jvm_errors import raise_from_java

    def fill(rel: Any, client: Any) -> None:
        rel.commit.operation = operation
        rel.commit.code_digest = code
        rel.commit.extra = extra

    _close_at_exit(out.sparkSession)
    install_actions()
    wrapped = connect_dataframe(FullWindowPlan(out._plan, fill), out.sparkSession)
    try:
        dataframe_schema(wrapped)  # analyzed now: the runtime decides and may refuse here
    except Exception as err:  # noqa: BLE001 - said as fullwindow's error, or re-raised
        raise_from_java(err, operation)
    return wrapped


#: the ``Commit`` operation of a ``foreach`` / ``foreachPartition`` (``action:<kind>``)
ACTION = "action:"


def action(df: Any, kind: str, func: Any, run: Any) -> Any:
    """``run()`` (``df.<kind>(func)`` as the Connect client runs it) as a write of the session's
    recovery job, decided by the server's runtime: ``df``'s plan goes to the server in a
    ``Commit`` relation (analyzed there once, under a token of this call), which numbers it with
    the job's writes (``RecoveredWrites.beginAction``); skipped when an earlier run committed it,
    refused under ``onUncheckedWrite=fail`` (raised here), else run and recorded as done."""
    import uuid

    from fullwindow._connect.plan import FullWindowPlan
    from fullwindow._jvm_errors import raise_from_java
    from fullwindow.recovery._digest import code_digest, target_of

    session = df.sparkSession
    from fullwindow.recovery.config import ENABLED, _enabled

    if not _enabled(session.conf.get(ENABLED, "false")):
        return run()
    token = uuid.uuid4().hex
    extra = json.dumps({"token": token, "target": target_of(func)})
    code = code_digest(func)

    def fill(rel: Any, client: Any) -> None:
        rel.commit.operation = ACTION + kind
        rel.commit.code_digest = code
        rel.commit.extra = extra

    _close_at_exit(session)
    try:
        dataframe_schema(connect_dataframe(FullWindowPlan(df._plan, fill), session))
    except Exception as err:  # noqa: BLE001 - said as fullwindow's error, or re-raised
        raise_from_java(err, kind)
    if control(session, "actionState", token=token).get("skipped"):
        return None
    out = run()
    control(session, "actionDone", token=token)
    return out


def install_actions() -> None:
    """The Connect client DataFrame's ``foreach`` / ``foreachPartition`` (4.x; 3.5's client
    has neither) as writes of the session's recovery job (:func:`action`). Installed when the
    client first calls the server's recovery runtime: its job starts then."""
    from fullwindow._compat import connect_dataframe_class
    from fullwindow.recovery._actions import record_actions

    cls = connect_dataframe_class()
    if cls is not None:
        record_actions(cls, action)


_CLOSING: "set[int]" = set()


def _close_at_exit(session: Any) -> None:
    """When this program ends, the server closes the session's recovery jobs (events flushed,
    leases released), so that its next run takes the job over at once; a program that dies
    without saying so leaves its job to the lease timeout."""
    if id(session) in _CLOSING:
        return
    _CLOSING.add(id(session))

    def close() -> None:
        try:
            if not getattr(session, "is_stopped", False):
                control(session, "close")
        except Exception:  # noqa: BLE001 - the server is gone: nothing left to close
            pass

    atexit.register(close)


def control(session: Any, action: str, **argument: Any) -> Any:
    """Calls the server's recovery runtime for ``session``'s job; its JSON answer, decoded."""
    from fullwindow._connect.artifact import prepare
    from fullwindow._connect.plan import FullWindowCallPlan
    from fullwindow._jvm_errors import raise_from_java

    prepare(session, False)  # the server's jar is this client's version
    install_actions()
    if action == "start":  # the job's shuffles over this program's UDFs: config.DRIVER_SCRIPT
        from fullwindow.recovery.config import driver_script

        argument = {"script": driver_script(), **argument}

    def fill(rel: Any) -> None:
        rel.recovery_control.action = action
        rel.recovery_control.argument = json.dumps(argument)

    try:
        row = connect_dataframe(FullWindowCallPlan(fill, f"FullWindowRecoveryControl {action}"),
                                session).collect()[0]
    except Exception as err:  # noqa: BLE001 - said as fullwindow's error, or re-raised
        raise_from_java(err, f"recovery.{action}")
        raise
    return json.loads(row[0]) if row[0] else None
