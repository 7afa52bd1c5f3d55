"""Recovery's own exceptions (both are :class:`fullwindow.FullWindowError`)."""
from __future__ import annotations

from fullwindow.errors import FullWindowError


class RecoveryConflictError(FullWindowError):
    """Another driver holds the lease on the job's directory (``<dir>/<jobId>``): two runs of
    one job id would append events and commit files into the same place. The message names the
    holder (host, process id, application id, start time) and when its lease expires."""


class RecoveryStorageError(FullWindowError):
    """The recovery directory stopped working while the job ran (it vanished, filled up or
    became read-only): what the job commits from here on could not be recovered, so the run
    stops rather than go on without the guarantee."""
