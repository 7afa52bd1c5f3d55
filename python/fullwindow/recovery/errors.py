"""Recovery's own exceptions (all are :class:`fullwindow.FullWindowError`)."""
from __future__ import annotations

from fullwindow.errors import FullWindowError, register_kind


class RecoveryConflictError(FullWindowError):
    """Another driver holds the lease on the job's directory (``<dir>/<jobId>``): two runs of
    one job id would append events and commit files into the same place. The message names the
    holder (host, process id, application id, start time) and when its lease expires."""


class RecoveryStorageError(FullWindowError):
    """The recovery directory stopped working while the job ran (it vanished, filled up or
    became read-only): what the job commits from here on could not be recovered, so the run
    stops rather than go on without the guarantee."""


class RecoveryInputChangedError(FullWindowError):
    """A resumed run found that a full-window operation's file or table inputs changed since an
    earlier run of the job recorded them (files added, removed or rewritten; another table
    version), with ``spark.fullwindow.recovery.onInputChange=fail``: the partitions committed
    then were computed from the old input and must not be mixed with the new one. The message
    names the operation and each changed input (its root, and its files and bytes then and now),
    and the two ways out: run again with ``onInputChange=recompute``, or use a new job id."""


# a SQL hint operation over changed inputs fails in the JVM with this kind; a Spark Connect
# server's recovery runtime raises each of these through the JVM as its kind
register_kind("RECOVERY_INPUT_CHANGED", RecoveryInputChangedError)
register_kind("RECOVERY_CONFLICT", RecoveryConflictError)
register_kind("RECOVERY_STORAGE", RecoveryStorageError)
