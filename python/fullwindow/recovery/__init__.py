"""Recovery of a batch job after the driver crashes (FLIP-383), for full-window operations.

Turned on with ``spark.fullwindow.recovery.enabled=true``, ``spark.fullwindow.recovery.dir`` and
``spark.fullwindow.recovery.jobId``. Each full-window operation (non-keyed, keyed, coGroup, and the
SQL hint forms, which a JVM rule wraps using the state this runtime hands to the JVM: call
``start`` before a job's first hinted query if no DataFrame operation came first) then commits
every partition of its output under ``<dir>/<jobId>/operators/<fingerprint>/``, and a
listener records job events (vertex initialized, task finished, vertex reset) in a durable event
store under ``<dir>/<jobId>/events/``. When the same program is started again with the same job id,
each operation's finished partitions are read back instead of recomputed, and an operation whose
partitions are all recovered is replaced by a read of its committed outputs, so nothing upstream of
it runs. Partly recovered operations reuse partitions only under the same partition layout (which
shuffle partitions each reads: adaptive execution may coalesce differently between runs).

An operation's fingerprint covers the files it reads (each file's path, size, modification time
and ETag, from the listing Spark made for the query) and the versions of the tables it reads
(recovery/InputFingerprint.scala in the JVM): an operation over an input that changed since an
earlier run reuses nothing, and neither does anything depending on it. A second, structural
fingerprint without the listings tells a changed input from a changed program; with
``spark.fullwindow.recovery.onInputChange=fail`` (default ``recompute``: a warning) an operation
over a changed input raises :class:`RecoveryInputChangedError`.

One driver runs a job id at a time: opening the job probes the directory (a write, sync and read
back: :class:`ConfigurationError` if it fails) and takes a lease on ``<dir>/<jobId>``
(recovery/lease.py; :class:`RecoveryConflictError` while another driver holds it). A run that
loses its lease or its directory cancels its Spark jobs and raises :class:`RecoveryStorageError`
or :class:`RecoveryConflictError`. :func:`status` and :func:`verify` (and ``python -m
fullwindow.recovery``) show what a job directory holds.

On a Spark Connect session the same runtime runs on the server: in the Python process of a
server started with ``python -m fullwindow.server`` (or this process, for
``fullwindow.session(remote="local[N]")``), which the server's plugin calls for each operation
(recovery/_connect_runtime.py); the client sends the function's code digest with each operation.
Each Connect session's job is its own, and another session of the server asking for a job id
that a live session runs gets :class:`RecoveryConflictError`.

```python
spark = fullwindow.session(conf={"spark.fullwindow.recovery.enabled": True,
                                 "spark.fullwindow.recovery.dir": "/data/fw-recovery",
                                 "spark.fullwindow.recovery.jobId": "nightly-2024-06-01"})
...                                 # the job; re-run it unchanged after a crash
fullwindow.recovery.cleanup(spark)  # once its results are safe: delete the job's directory
```
"""
from __future__ import annotations

from fullwindow.recovery.config import (DIR, ENABLED, FLUSH_INTERVAL, JOB_ID, LEASE_TIMEOUT,
                                        ON_INPUT_CHANGE, ON_UNCHECKED_WRITE, WRITE_BUFFER_SIZE,
                                        RecoverySettings, settings_from)
from fullwindow.recovery.errors import (RecoveryConflictError, RecoveryInputChangedError,
                                        RecoveryStorageError)
from fullwindow.recovery.eventstore import EventStore, EventStoreWarning
from fullwindow.recovery._jobdir import job_events, recovery_state
from fullwindow.recovery._jobs import cleanup, flush, start
from fullwindow.recovery._status import status, verify

__all__ = ["DIR", "ENABLED", "FLUSH_INTERVAL", "JOB_ID", "LEASE_TIMEOUT", "ON_INPUT_CHANGE",
           "ON_UNCHECKED_WRITE", "WRITE_BUFFER_SIZE", "EventStore", "EventStoreWarning",
           "RecoveryConflictError", "RecoveryInputChangedError", "RecoveryStorageError",
           "RecoverySettings", "cleanup", "flush", "job_events", "recovery_state",
           "settings_from", "start", "status", "verify"]
