"""One driver per job id: the lease on ``<dir>/<jobId>``.

Layout: ``<dir>/<jobId>/lease/epoch-<n>``, one small JSON file per holder in turn (host, pid,
the process's start time, application id and attempt id, start time, timeout). The lease is the
file with the highest epoch. It is live while ``renewed + timeout`` lies ahead, unless its holder
ran on this host and that process is gone (a pid that no longer exists, or exists with another
start time): then it is dead at once.

Attempts: a cluster manager that restarts a failed driver as the next attempt of the same
application (YARN's ``spark.yarn.maxAppAttempts``) has stopped the earlier attempt first, so a
live lease whose holder has the same application id and a lower attempt id is taken over at once,
wherever that holder ran. Any other live holder is a conflict, unless the run may wait
(``spark.fullwindow.recovery.leaseWait``): then it looks again every half second or so until the
lease is released, expires or its holder is gone, and fails only once the wait is over.

Taking the lease is creating epoch ``n + 1`` with create-if-absent, after checking that epoch
``n`` is free (none, released, expired or its process dead): of two drivers racing for it one
creates the file and the other finds it there. Create-if-absent is a hard link of a synced
temporary file on a local directory, Hadoop's ``create(path, overwrite=false)`` on a file system
with a name node (HDFS), and a conditional create on an object store (S3A:
``If-None-Match: *``); see recovery/_fs.py ``storage``.

Renewal, every ``timeout / 4`` (2 s at most), first checks that the holder's epoch is still the
highest: a holder that finds a higher one (it was stopped longer than its timeout, and another
driver took over) has lost the lease, and its job stops committing and recording events. Where
the file system can set a file's modification time (``mode="mtime"``: local, HDFS) renewing
sets it, and that time is when the lease was last renewed; on an object store, which cannot
(``mode="etag"``), the file holds its renewal time, and renewing overwrites it only while its
ETag is the one this holder wrote (``If-Match``), so no renewal can be lost or reordered.
Releasing marks it renewed at 0 (expired) the same way.

Fencing: a holder knows its lease good until ``timeout`` after its last renewal began, less a
fifth for clocks and delays (:meth:`Lease.state`); past that it writes no job events until a
renewal succeeds (a driver stopped past its timeout, or cut off from the store, holds them back
and drops them once it finds the lease lost). What it wrote after another driver took over does
not count anyway: each run's events start with what it read of earlier runs' (eventstore.py).

What it assumes: the hosts' clocks agree to well under the timeout (renewal times are compared
with the reader's clock), and the file system lists consistently (local, HDFS and S3 do). A
``file:`` URI goes through Hadoop's local file system, whose create-if-absent is a check followed
by a create: give a local directory as a plain path.
"""
from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from fullwindow.recovery import _fs
from fullwindow.recovery.errors import RecoveryConflictError

log = logging.getLogger("fullwindow.recovery")

PREFIX = "epoch-"


def lease_dir(job_dir: str) -> str:
    return _fs.join(job_dir, "lease")


def _process_start(pid: int) -> Optional[str]:
    """The start time of process ``pid`` in clock ticks since boot (Linux); None if it does not
    exist or has ended (a zombie), "" if it cannot be told."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
    except FileNotFoundError:
        return None
    except OSError:
        return ""
    fields = stat.rsplit(")", 1)[-1].split()
    if fields[0] in ("Z", "X"):  # ended, not reaped yet (a zombie keeps its /proc entry)
        return None
    return fields[19]


def _gone(pid: int, recorded_start: Any) -> bool:
    """Whether process ``pid`` of this host, started at ``recorded_start``, has ended (the pid
    is free, or taken by a process started at another time)."""
    start = _process_start(pid)
    return start is None or (start != "" and recorded_start not in (None, start))


def _epochs(fs: Any, directory: str) -> List[int]:
    out = []
    for name in fs.listdir(directory):
        if name.startswith(PREFIX) and name[len(PREFIX):].isdigit():
            out.append(int(name[len(PREFIX):]))
    return sorted(out)


def _epoch_path(directory: str, n: int) -> str:
    return _fs.join(directory, f"{PREFIX}{n:09d}")


def read(fs: Any, job_dir: str, now_ms: Optional[int] = None) -> Optional[Dict[str, Any]]:
    """The current lease of a job as plain data (None when no run ever held one): ``epoch``,
    the holder's ``host``, ``pid``, ``appId``, ``attemptId`` (None outside YARN cluster mode),
    ``started`` (ms since the epoch), ``timeoutMs``, ``renewed`` (ms, 0 once released),
    ``expires`` (ms), ``state`` (``live``, ``expired``, ``released`` or ``dead``: its process is
    gone from this host) and ``live``."""
    directory = lease_dir(job_dir)
    epochs = _epochs(fs, directory)
    if not epochs:
        return None
    n = epochs[-1]
    path = _epoch_path(directory, n)
    now = int(time.time() * 1000) if now_ms is None else now_ms
    info: Dict[str, Any] = {}
    for attempt in range(3):
        renewed = fs.mtime_ms(path)
        try:
            body = json.loads(fs.read(path).decode("utf-8"))
            if not isinstance(body, dict):
                raise ValueError
            info = body
            break
        except Exception:  # noqa: BLE001 - being written (Hadoop create) or damaged, or, on an
            # object store, overwritten by a renewal while read (S3A then fails the read: the
            # object's ETag changed): read again
            if renewed is None or attempt == 2:
                break
            time.sleep(0.05 * (attempt + 1))
    if renewed is None:  # deleted since the listing (a cleanup)
        return None
    if isinstance(info.get("renewed"), int):  # renewed by overwriting (an object store)
        renewed = info["renewed"]
    timeout = int(info.get("timeoutMs") or 60_000)
    out = {"epoch": n, "host": info.get("host"), "pid": info.get("pid"),
           "appId": info.get("appId"), "attemptId": info.get("attemptId"),
           "started": info.get("started"), "timeoutMs": timeout,
           "renewed": renewed, "expires": renewed + timeout}
    if renewed == 0:
        state = "released"
    elif now >= renewed + timeout:
        state = "expired"
    elif info.get("host") == socket.gethostname() and isinstance(info.get("pid"), int) and \
            _gone(info["pid"], info.get("pidStart")):
        state = "dead"
    else:
        state = "live"
    out["state"] = state
    out["live"] = state == "live"
    return out


def attempt_of(spark: Any) -> Optional[str]:
    """The application attempt id of a classic session's driver (YARN cluster mode: ``"1"``,
    ``"2"``...); None where the cluster manager has no attempts (local, standalone, client
    mode)."""
    try:
        attempt = spark.sparkContext._jsc.sc().applicationAttemptId()
        return str(attempt.get()) if attempt.isDefined() else None
    except Exception:  # noqa: BLE001 - no JVM context (nothing to compare attempts with)
        return None


def attempt_from_env() -> Tuple[Optional[str], Optional[str]]:
    """The application id and attempt id of this process when YARN runs it in a container
    (``CONTAINER_ID``: ``container_[e<epoch>_]<clusterTimestamp>_<app>_<attempt>_<n>``), for
    checks made before the JVM starts; ``(None, None)`` elsewhere."""
    parts = os.environ.get("CONTAINER_ID", "").split("_")
    if len(parts) >= 5 and parts[0] == "container" and parts[1].startswith("e"):
        parts = parts[:1] + parts[2:]
    if len(parts) != 5 or parts[0] != "container" or not all(p.isdigit() for p in parts[1:]):
        return None, None
    return f"application_{parts[1]}_{parts[2]}", str(int(parts[3]))


def earlier_attempt(holder: Dict[str, Any], app_id: Optional[str],
                    attempt_id: Optional[str]) -> bool:
    """Whether ``holder`` is an earlier attempt of application ``app_id``, one that its cluster
    manager stopped before starting attempt ``attempt_id``."""
    theirs = holder.get("attemptId")
    return bool(app_id) and holder.get("appId") == app_id and \
        str(theirs or "").isdigit() and str(attempt_id or "").isdigit() and \
        int(str(theirs)) < int(str(attempt_id))


def describe(holder: Dict[str, Any]) -> str:
    started = holder.get("started")
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(started / 1000)) + " UTC" \
        if isinstance(started, int) else "an unknown time"
    left = max(0.0, (holder["expires"] - time.time() * 1000) / 1000)
    state = holder.get("state")
    attempt = f" attempt {holder['attemptId']}" if holder.get("attemptId") else ""
    return (f"host {holder.get('host') or '?'}, pid {holder.get('pid') or '?'}, application "
            f"{holder.get('appId') or '?'}{attempt}, started {when}; " +
            (f"its lease expires in {left:.0f} s unless renewed" if state == "live"
             else f"its lease is {state} now"))


def check_free(settings: Any, where: str) -> None:
    """Raises :class:`RecoveryConflictError` when a live lease holds the job of ``settings``
    (a local recovery directory only: a Hadoop URI needs the JVM, where :class:`Lease` checks),
    after waiting up to ``settings.lease_wait`` for it to end. Lets a second driver fail before
    it starts a JVM; the lease itself is taken later. An earlier attempt of this YARN
    application does not count (the lease is taken over from it)."""
    if not _fs.is_local(settings.directory):
        return
    app_id, attempt_id = attempt_from_env()
    wait = float(getattr(settings, "lease_wait", 0.0) or 0.0)
    deadline = time.monotonic() + wait
    while True:
        current = read(_fs.LocalFS(), settings.job_dir)
        if current is None or not current["live"] or \
                earlier_attempt(current, app_id, attempt_id):
            return
        left = deadline - time.monotonic()
        if left <= 0:
            raise _conflict(where, settings.job_dir, current, wait)
        time.sleep(min(left, POLL))


#: how often a run that may wait (``leaseWait``) looks at a live lease again, in seconds
POLL = 0.5


def _conflict(where: str, job_dir: str, current: Dict[str, Any],
              waited: float = 0.0) -> RecoveryConflictError:
    from fullwindow.recovery.config import LEASE_WAIT

    waiting = (f" This run waited {waited:g} s ({LEASE_WAIT}) for it to end."
               if waited > 0 else "")
    return RecoveryConflictError(
        f"{where}: another driver holds job {os.path.basename(job_dir)!r} "
        f"(lease {lease_dir(job_dir)}): {describe(current)}.{waiting} Two runs of one job id "
        "would write into the same recovery directory; wait for that run to end, or stop it, "
        f"or give this run another spark.fullwindow.recovery.jobId (or let it wait longer for "
        f"a live lease: {LEASE_WAIT}).")


class Lease:
    """This driver's lease on one job directory; :meth:`acquire` takes it or raises
    :class:`RecoveryConflictError`, a daemon thread renews it until :meth:`release`. When a
    renewal finds the lease lost it calls ``on_lost(why, taken_over)`` (``taken_over``: another
    driver holds it; else the lease file is gone with the job directory). ``attempt_id``: this
    driver's application attempt (an earlier attempt's live lease is taken at once); ``wait``:
    seconds :meth:`acquire` waits for any other live lease before it raises."""

    def __init__(self, fs: Any, job_dir: str, timeout: float, app_id: str,
                 on_lost: Optional[Callable[[str, bool], None]] = None,
                 attempt_id: Optional[str] = None, wait: float = 0.0, mode: str = "mtime"):
        self.fs = fs
        self.job_dir = job_dir
        self.directory = lease_dir(job_dir)
        self.timeout_ms = max(1, int(timeout * 1000))
        self.app_id = app_id
        self.attempt_id = attempt_id
        self.wait = max(0.0, float(wait))
        self.on_lost = on_lost
        #: why this driver took the lease over from a holder ("expired", "released", "dead",
        #: "earlier attempt"), None when there was none
        self.took_over: Optional[str] = None
        self.epoch: Optional[int] = None
        self.lost: Optional[str] = None
        #: ``mtime``: renewed by setting the file's modification time; ``etag``: by overwriting
        #: its content while its ETag is unchanged (a store without setTimes)
        self.mode = mode
        self._me: Dict[str, Any] = {}
        self._etag: Optional[str] = None
        self._good_until = 0.0  # time.monotonic() up to which the lease is surely this run's
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    @property
    def path(self) -> str:
        assert self.epoch is not None
        return _epoch_path(self.directory, self.epoch)

    def acquire(self, where: str) -> None:
        self.fs.makedirs(self.directory)
        deadline = time.monotonic() + self.wait
        while True:
            epochs = _epochs(self.fs, self.directory)
            current = read(self.fs, self.job_dir) if epochs else None
            if current is not None and current["live"] and \
                    earlier_attempt(current, self.app_id, self.attempt_id):
                current["state"] = "earlier attempt"  # stopped by its cluster manager
            elif current is not None and current["live"]:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise _conflict(where, self.job_dir, current, self.wait)
                time.sleep(min(left, POLL))
                continue
            n = (epochs[-1] if epochs else 0) + 1
            began = time.monotonic()
            now = int(time.time() * 1000)
            me = {"host": socket.gethostname(), "pid": os.getpid(),
                  "pidStart": _process_start(os.getpid()), "appId": self.app_id,
                  "attemptId": self.attempt_id, "started": now, "timeoutMs": self.timeout_ms,
                  "nonce": os.urandom(8).hex()}
            if self.mode == "etag":
                me["renewed"] = now
            mine = _epoch_path(self.directory, n)
            try:
                created = self.fs.create_with(mine, self._encode(me))
            except Exception:  # noqa: BLE001 - OSError locally, Py4JJavaError through Hadoop
                # the create did not complete: if another driver took the job over meanwhile
                # (this one stalled past the lease timeout while creating: HDFS then recovers
                # the half-made file), say so; a store failure is re-raised as it is
                later = _epochs(self.fs, self.directory)
                if later and later[-1] > n:
                    raise RecoveryConflictError(
                        f"{where}: the lease on job {os.path.basename(self.job_dir)!r} was lost "
                        f"while this driver was taking it (lease {lease_dir(self.job_dir)}): "
                        "it stalled longer than the lease timeout and another driver took the "
                        "job over.") from None
                raise
            if created:
                if _epochs(self.fs, self.directory)[-1] == n:
                    self._me = me
                    if self.mode == "etag":
                        self._etag = self.fs.etag(mine)
                    self._good_until = began + self._margin()
                    break
                # a listing older than a later holder's (which deleted epoch n before we made
                # it): ours is not the lease; drop it and look again
                self.fs.delete(mine)
            # another driver took epoch n first: look again (it is live now, or died again)
        self.epoch = n
        if current is not None:
            self.took_over = current["state"]
            log.warning("fullwindow: job %s: taking over from %s (its lease was %s)",
                        self.job_dir, describe(current), current["state"])
        for old in epochs:  # earlier holders' files: nobody reads them any more
            try:
                self.fs.delete(_epoch_path(self.directory, old))
            except Exception:  # noqa: BLE001 - best effort
                pass
        self._thread = threading.Thread(target=self._renew_loop, name="fullwindow-lease",
                                        daemon=True)
        self._thread.start()

    @staticmethod
    def _encode(info: Dict[str, Any]) -> bytes:
        return json.dumps(info, sort_keys=True).encode("utf-8")

    def _margin(self) -> float:
        """How long after a renewal began the lease is surely still this run's, in seconds:
        the timeout less a fifth (clocks, delays)."""
        return self.timeout_ms / 1000 * 0.8

    def state(self) -> str:
        """``ok`` while the lease is surely this run's (renewed less than 4/5 of its timeout
        ago), ``lost`` once another driver holds it, else ``wait`` (being renewed)."""
        if self.lost is not None:
            return "lost"
        return "ok" if time.monotonic() < self._good_until else "wait"

    def _touch(self, renewed_ms: int) -> bool:
        """Marks the lease renewed at ``renewed_ms`` (0: released); False if it is not ours any
        more."""
        if self.mode != "etag":
            return bool(self.fs.touch(self.path, renewed_ms))
        if self._etag is None:
            return False
        info = dict(self._me, renewed=renewed_ms)
        etag = self.fs.overwrite_if_match(self.path, self._encode(info), self._etag)
        if etag is None:
            return False
        self._etag = etag
        return True

    def renew(self) -> bool:
        """Renews the lease now; False (and :attr:`lost` set) once another driver holds it."""
        if self.lost is not None:
            return False
        began = time.monotonic()
        try:
            epochs = _epochs(self.fs, self.directory)
            renewed = bool(epochs) and epochs[-1] == self.epoch and \
                self._touch(int(time.time() * 1000))
        except Exception as err:  # noqa: BLE001 - storage trouble: reported by the job's probe
            log.warning("fullwindow: renewing the lease of %s failed: %s", self.job_dir, err)
            return True
        if renewed:
            self._good_until = began + self._margin()
        else:
            holder = read(self.fs, self.job_dir) if epochs else None
            self.lost = (f"the lease on job {os.path.basename(self.job_dir)!r} was lost: "
                         + (f"another driver took it over ({describe(holder)})" if holder
                            else "its lease file is gone (the job directory was deleted)"))
            log.error("fullwindow: %s; this run stops committing", self.lost)
            if self.on_lost is not None:
                self.on_lost(self.lost, holder is not None)
            return False
        return True

    def _renew_loop(self) -> None:
        interval = max(0.05, min(2.0, self.timeout_ms / 4000))
        while not self._stop.wait(interval if self.state() == "ok" else min(interval, 0.25)):
            if not self.renew():
                return

    def release(self) -> None:
        """Ends the lease (a later run takes the job at once)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(5)
        if self.epoch is not None and self.lost is None:
            try:
                epochs = _epochs(self.fs, self.directory)
                if epochs and epochs[-1] == self.epoch:
                    self._touch(0)
            except Exception:  # noqa: BLE001 - the directory may be gone (cleanup)
                pass
        self.epoch = None
