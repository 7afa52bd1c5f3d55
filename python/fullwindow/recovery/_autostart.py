"""Recovery from the settings alone: ``import fullwindow`` is all a job's driver needs.

With the three recovery settings (``spark.fullwindow.recovery.enabled``, ``.dir``, ``.jobId``)
given to the builder, to ``spark-submit --conf`` or in ``spark-defaults.conf``, a session made
with ``SparkSession.builder...getOrCreate()`` after ``import fullwindow`` starts the job's
recovery runtime as it is made (and a session made before the import, at the import): the
job's lease is taken, what earlier runs kept is loaded, and every write and query of the job
is identified from its first action on. Without the runtime, the JVM refuses the job's writes,
SQL hint operations and kept shuffles (``RECOVERY_NOT_STARTED``) rather than run them
unrecorded.

``import fullwindow`` wraps ``getOrCreate`` and ``create`` of ``pyspark.sql.SparkSession.builder``,
once: on every line a Spark Connect session is made through it too (``builder.remote(...)``
hands over to the Connect client's builder). A Spark Connect session starts its job when its
builder was given the three settings (the server is not asked: that would connect at once, and
a server's settings are only its sessions' defaults); settings set on the session later need
``fullwindow.recovery.start(spark)``. Sessions fullwindow makes for itself are
not jobs (``suspended``): the recovery CLI's, a Connect server's own (its clients' sessions
are the jobs), and ``fullwindow.session``'s, which starts the runtime itself.
"""
from __future__ import annotations

import contextlib
import functools
import threading
from typing import Any, Iterator, Mapping, Optional

_local = threading.local()
_MARK = "_fullwindow_starts_recovery"


@contextlib.contextmanager
def suspended() -> Iterator[None]:
    """Within it, sessions made by a builder of this thread start no recovery runtime."""
    before = getattr(_local, "suspended", False)
    _local.suspended = True
    try:
        yield
    finally:
        _local.suspended = before


def start_if_on(spark: Any, where: str, options: Optional[Mapping[str, Any]] = None) -> None:
    """Starts the recovery runtime of ``spark``'s job when its settings switch recovery on
    (bad settings raise ``ConfigurationError``, a live lease ``RecoveryConflictError``). A
    classic session's settings are read from the session; a Spark Connect session's from
    ``options``, what its builder was given (asking the server would connect at once, and a
    server's settings are only its sessions' defaults): with all three there, the server's
    runtime starts the job."""
    from fullwindow._backend import is_connect
    from fullwindow.recovery._jobs import start_classic

    if not is_connect(spark):
        start_classic(spark, where)
        return
    from fullwindow.recovery.config import DIR, ENABLED, JOB_ID, _enabled

    given = {k: str(v).strip() for k, v in (options or {}).items()}
    if _enabled(given.get(ENABLED)) and given.get(DIR) and given.get(JOB_ID):
        from fullwindow._connect.recovery import control

        control(spark, "start")


def _wrap(builder_class: type, name: str) -> None:
    original = builder_class.__dict__.get(name)
    if original is None or getattr(original, _MARK, False):
        return

    @functools.wraps(original)
    def make(self: Any) -> Any:
        outer = not getattr(_local, "creating", False)  # the classic builder calls Connect's
        _local.creating = True
        try:
            spark = original(self)
        finally:
            if outer:
                _local.creating = False
        if outer and not getattr(_local, "suspended", False):
            start_if_on(spark, f"SparkSession.builder.{name}", getattr(self, "_options", None))
        return spark

    setattr(make, _MARK, True)
    setattr(builder_class, name, make)


def install() -> None:
    """Wraps the builders (once), and starts the runtime of a session made before the import."""
    from pyspark.sql import SparkSession

    for name in ("getOrCreate", "create"):  # create: a new Spark Connect session
        _wrap(SparkSession.Builder, name)
    try:
        active = SparkSession.getActiveSession()
    except Exception:  # noqa: BLE001 - no session can be asked for here: nothing to start
        active = None
    if active is not None:
        start_if_on(active, "import fullwindow")
