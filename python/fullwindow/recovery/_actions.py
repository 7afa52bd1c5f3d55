"""``foreach`` and ``foreachPartition`` of a recovered job, as writes of the job.

They are RDD actions that write out by the user's own code, not writes Spark plans, so the JVM's
write rule never sees them. With recovery on, the classic DataFrame's (and the RDD a DataFrame's
``rdd`` gives) ask the JVM's write records first (``RecoveredWrites.beginAction``): each is
fingerprinted (the action, the DataFrame's stable plan and the digest of the function's code) and
identified, as the job's other writes are, by that fingerprint and its occurrence among the
job's writes of that fingerprint (not by the order they start in), as an unchecked write, since
the function keeps no record of what it did. A resumed run skips one an earlier run recorded as committed (nothing computed),
and runs again (at least once) one an earlier run only started, or refuses it under
``spark.fullwindow.recovery.onUncheckedWrite=fail`` (``RECOVERY_UNCHECKED_WRITE``).

Over Spark Connect (4.x) the client's ``foreach`` is a ``select`` of a UDF, and
``foreachPartition`` a ``mapInArrow``, collected: the server would see a query like any other.
So the client's are wrapped too (``fullwindow._connect.recovery.install_actions``): the
DataFrame's plan goes to the server's recovery runtime first, which identifies and decides the
action the same way.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

_SOURCE = "_fullwindow_dataframe"  # on an RDD a DataFrame's ``rdd`` gave: that DataFrame


def run_action(df: Any, kind: str, func: Any, action: Callable[[], Any]) -> Any:
    """Runs ``action`` (``kind`` of ``df`` calling ``func``) as a write of ``df``'s session's
    recovery job: skipped when an earlier run committed it, else run and recorded."""
    from fullwindow.recovery.config import settings_of_session

    spark = df.sparkSession
    if settings_of_session(spark, kind) is None:
        return action()
    from fullwindow._jvm import facade
    from fullwindow._jvm_errors import raise_from_java
    from fullwindow.recovery._digest import code_digest, target_of

    try:
        pending = facade(df).beginRecoveredAction(df._jdf, kind, target_of(func),
                                                  code_digest(func).hex())
    except Exception as err:  # noqa: BLE001 - said as fullwindow's error, or re-raised
        raise_from_java(err, kind)
        raise
    if pending.skipped():
        return None
    out = action()
    pending.done()
    return out


def record_actions(cls: type, run: Callable[[Any, str, Any, Callable[[], Any]], Any]) -> None:
    """Wraps ``cls``'s ``foreach`` / ``foreachPartition`` (once) so that each call goes through
    ``run(self, kind, func, call)``, ``call()`` being the original call; the classic RDD's and
    the Connect client DataFrame's (``fullwindow._connect.recovery``) share it."""
    for kind in ("foreach", "foreachPartition"):
        original = cls.__dict__.get(kind)
        if original is not None and not getattr(original, "_fullwindow_recorded", False):
            setattr(cls, kind, _recorded(kind, original, run))


def _recorded(kind: str, original: Callable[..., Any],
              run: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def wrapper(self: Any, f: Any) -> Any:
        return run(self, kind, f, lambda: original(self, f))
    wrapper._fullwindow_recorded = True  # type: ignore[attr-defined]
    return wrapper


def _run_of_rdd(rdd: Any, kind: str, func: Any, call: Callable[[], Any]) -> Any:
    """An RDD's action: a write of the job when the RDD is a DataFrame's ``rdd``."""
    df = rdd.__dict__.get(_SOURCE)
    return call() if df is None else run_action(df, kind, func, call)


def install() -> None:
    """Makes the classic DataFrame's ``rdd`` remember its DataFrame, and that RDD's ``foreach``
    / ``foreachPartition`` (which the DataFrame's own call) run as recorded writes (once)."""
    from fullwindow._compat import classic_rdd_types

    types = classic_rdd_types()
    if not types:
        return
    df_cls, rdd_cls = types
    record_actions(rdd_cls, _run_of_rdd)
    plain = df_cls.__dict__.get("rdd")
    if plain is None or getattr(plain, "_fullwindow_recorded", False):
        return

    def rdd(self: Any) -> Any:
        out = plain.__get__(self, type(self))  # a cached_property (4.x) or a property (3.5)
        out.__dict__[_SOURCE] = self
        return out

    setattr(df_cls, "rdd", _Marked(rdd, doc=getattr(plain, "__doc__", None)))


class _Marked(property):
    """The ``rdd`` property, marked as fullwindow's (installed once)."""
    _fullwindow_recorded = True
