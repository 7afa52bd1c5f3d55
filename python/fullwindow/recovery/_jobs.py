"""Recovery's runtime in a driver: the jobs this process has open (:class:`_Job`: the lease, the
replayed events, the event store), the thread that drains the JVM listener's events into their
stores (:class:`_Runtime`), and the decisions of each full-window operation (its fingerprints,
which of its partitions and committed shuffle inputs an earlier run left to reuse, the commit or
recovered scan that wraps it). ``fullwindow.recovery`` is its face: the public names (``start``,
``flush``, ``cleanup``, ``status``, ``verify``) are there."""

from __future__ import annotations

import atexit
import hashlib
import itertools
import json
import logging
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from pyspark.sql import DataFrame

from fullwindow.errors import FullWindowError
from fullwindow.recovery import _fs
from fullwindow.recovery.config import (DIR, DRIVER_SCRIPT, ENABLED, JOB_ID, RecoverySettings,
                                        driver_script, settings_of_session)
from fullwindow.recovery.errors import (RecoveryConflictError, RecoveryInputChangedError,
                                        RecoveryStorageError)
from fullwindow.recovery.eventstore import RUN_STARTED, EventStore
from fullwindow.recovery._jobdir import (_Vertex, delete_job, events_dir, input_records,
                                         operators_dir, recovery_state)
from fullwindow.recovery.lease import Lease, attempt_of

log = logging.getLogger("fullwindow.recovery")


def tell_driver_script(spark: Any, path: str) -> None:
    """Gives the session the driver's script path (config.DRIVER_SCRIPT), when there is one."""
    if path and spark.conf.get(DRIVER_SCRIPT, None) != path:
        spark.conf.set(DRIVER_SCRIPT, path)


def _new_text_version(jvm: Any) -> int:
    """The plan-text version a new job's fingerprints are made of: the jar's
    (``FullWindowPython.TextVersion``: 2 keeps which columns each operator refers to, 1 did not).
    A job keeps its first run's version, recorded in each run's ``runStarted`` event."""
    return int(jvm.textVersion())


class _Job:
    """One job's recovery state in this process: its lease, its replayed events and its open
    event store. Opening it probes the directory (a clear error now rather than a run that
    cannot be recovered later) and takes the job's lease (one driver per job id)."""

    def __init__(self, spark: Any, settings: RecoverySettings, where: str,
                 owner: Optional[Dict[str, str]] = None):
        self.settings = settings
        self.job_dir = settings.job_dir
        self.spark = spark
        #: on a Spark Connect server, the session running the job ({"session", "user"})
        self.owner = owner
        #: per operation fingerprint, what this run decided about its committed partitions
        #: (a Connect server plans an operation again for every request that contains it)
        self.decided: Dict[str, Any] = {}
        self.touched = time.time()  # the owner's last call (a Connect session's)
        self.failed: Optional[FullWindowError] = None
        self.fs = _fs.filesystem(settings.directory, spark)
        self.storage = check_storage(self.fs, settings, where)
        probe(self.fs, settings, where)
        self.lease = Lease(self.fs, self.job_dir, settings.lease_timeout,
                           str(spark.sparkContext.applicationId), on_lost=self._lease_lost,
                           attempt_id=attempt_of(spark), wait=settings.lease_wait,
                           mode=self.storage["lease"])
        self.lease.acquire(where)
        try:
            self.fs.makedirs(operators_dir(self.job_dir))
            read: Dict[str, int] = {}
            events: List[Dict[str, Any]] = []
            runs: List[Dict[str, Any]] = []
            for _, evs in EventStore.read_segments(events_dir(self.job_dir), self.fs,
                                                   sizes=read, runs=runs):
                events.extend(evs)
            self.state = recovery_state(events)
            # the plan-text version of the job's fingerprints: the jar's current one for a new
            # job, else its first run's (1 when that run recorded none: written before version 2)
            from fullwindow._jvm import facade

            jvm = facade(spark)
            self.text_version = (int(runs[0].get("textVersion", 1)) if runs
                                 else 1 if events else _new_text_version(jvm))
            jvm.textVersion(self.job_dir, self.text_version)
            self.input_records = input_records(events)
            # the run's first event fences off whatever earlier drivers write from now on
            self.store = EventStore(
                events_dir(self.job_dir), settings.write_buffer_size, settings.flush_interval,
                self.fs, on_error=self._store_failed,
                objects=self.storage["events"] == "objects",
                first=dict({"type": RUN_STARTED, "epoch": self.lease.epoch, "read": read,
                            "appId": str(spark.sparkContext.applicationId),
                            "textVersion": self.text_version},
                           **({"connectSession": owner["session"], "user": owner["user"]}
                              if owner else {})),
                gate=self.lease.state)
        except BaseException:
            self.lease.release()
            raise

    def _lease_lost(self, why: str, taken_over: bool) -> None:
        gone = not taken_over
        self.fail((RecoveryStorageError if gone else RecoveryConflictError)(
            f"recovery of job {self.settings.job_id!r}: {why}. This run cannot be recovered "
            "from here on, so its Spark jobs were cancelled" +
            ("; check that nothing deletes the recovery directory while a job runs."
             if gone else ".")))

    def _store_failed(self, err: BaseException) -> None:
        self.fail(RecoveryStorageError(
            f"recovery of job {self.settings.job_id!r}: writing its job events under "
            f"{events_dir(self.job_dir)} failed ({err}); the directory is full, read-only or "
            "gone. This run cannot be recovered from here on, so its Spark jobs were "
            "cancelled."))

    def fail(self, error: FullWindowError) -> None:
        """Marks the job failed: no more events recorded, its running Spark jobs cancelled,
        and the next full-window operation (or :func:`flush`) raises ``error``."""
        if self.failed is not None:
            return
        self.failed = error
        log.error("fullwindow: %s", error)
        try:
            from fullwindow._jvm import facade

            fw = facade(self.spark)
            if self.owner:  # a Connect server: only this session's Spark jobs
                fw.failRecoveryJob(self.spark._jsparkSession, self.job_dir, str(error),
                                   self.owner["session"])
            else:
                fw.failRecoveryJob(self.spark._jsparkSession, self.job_dir, str(error))
        except Exception:  # noqa: BLE001 - the JVM is gone
            pass

    def check(self) -> None:
        if self.failed is not None:
            raise self.failed


#: what each capability recovery needs is for, and how a user gets it (ConfigurationError)
_NEEDS = {
    "events": "durable event writes (appending to a file and syncing it with hsync, or, on a "
              "store without append, creating each flush as an object of its own with a "
              "conditional create)",
    "create": "an atomic create-if-absent (a conditional create, such as S3's If-None-Match, "
              "or an exclusive create decided by a name node, as HDFS's)",
    "lease": "a renewable lease (setting a file's modification time with setTimes, or "
             "overwriting it only while its ETag is unchanged, such as S3's If-Match)",
}


def _unwritable(err: BaseException, settings: RecoverySettings, where: str) -> FullWindowError:
    """The ConfigurationError of a recovery directory that cannot be created or written."""
    from fullwindow.errors import ConfigurationError

    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return ConfigurationError(
        f"{where}: the recovery directory {settings.directory} ({DIR}) cannot be written: "
        f"{text}. Recovery needs a writable directory with free space, on storage that "
        "outlives the driver.")


def check_storage(fs: Any, settings: RecoverySettings, where: str) -> Dict[str, str]:
    """What the recovery directory's file system gives recovery (``_fs.storage``: decided from
    what the file system reports and does); a :class:`ConfigurationError` naming what is
    missing and how to get it when it cannot give all of it: never a weaker guarantee."""
    from fullwindow.errors import ConfigurationError

    try:
        fs.makedirs(settings.job_dir)
        storage = fs.storage(settings.job_dir)
    except Exception as err:  # noqa: BLE001 - OSError locally, Py4JJavaError through Hadoop
        raise _unwritable(err, settings, where) from None
    missing = [k for k in ("events", "create", "lease") if storage.get(k, "none") == "none"]
    if not missing:
        return storage
    scheme = storage.get("scheme", "")
    hint = ""
    if scheme in ("s3a", "s3"):
        version = storage.get("hadoop", "?")
        hint = (f" This driver's S3A connector (Hadoop {version}) "
                + ("has conditional writes turned off: set "
                   "spark.hadoop.fs.s3a.create.conditional.enabled=true"
                   if _version(version) >= (3, 4, 2) else
                   "has no conditional writes (If-None-Match, If-Match: HADOOP-19256, in "
                   "Hadoop 3.4.2 and 3.5.0): run on a Spark line whose Hadoop has them (Spark "
                   "4.1 ships 3.4.2; 4.2 and 4.3 ship 3.5.0) with hadoop-aws of that version "
                   "and fs.s3a.create.conditional.enabled=true (its default)")
                + "; or put the recovery directory on HDFS or a shared POSIX file system.")
    raise ConfigurationError(
        f"{where}: the recovery directory {settings.directory} ({DIR}) is on a file system "
        f"that cannot give what recovery needs ({storage.get('filesystem', '?')}): it has no "
        + "; no ".join(_NEEDS[k] for k in missing) + ". Recovery refuses it rather than give a "
        "weaker guarantee." + hint)


def _version(text: str) -> "tuple[int, ...]":
    """``"3.4.2"`` as ``(3, 4, 2)`` (what is not a number counts as 0)."""
    return tuple(int(p) if p.isdigit() else 0 for p in text.split("-")[0].split("."))


def probe(fs: Any, settings: RecoverySettings, where: str) -> None:
    """Writes (create-if-absent), reads back and deletes a small file under the job's
    directory: a directory that cannot be created, is read-only or full is a
    :class:`ConfigurationError` now, not a failure halfway through the job."""
    import os

    from fullwindow.errors import ConfigurationError

    data = os.urandom(64 * 1024)
    path = _fs.join(settings.job_dir, f".probe-{os.getpid()}-{data[:4].hex()}")
    try:
        fs.makedirs(settings.job_dir)
        if not fs.create_with(path, data):
            raise OSError(f"{path} exists already")
        ok = fs.read(path) == data
    except Exception as err:  # noqa: BLE001 - OSError locally, Py4JJavaError through Hadoop
        raise _unwritable(err, settings, where) from None
    finally:
        try:
            fs.delete(path)
        except Exception:  # noqa: BLE001
            pass
    if not ok:
        raise ConfigurationError(
            f"{where}: the recovery directory {settings.directory} ({DIR}) did not return "
            "what was written to it.")


class _Runtime:
    """Per process: the open jobs, and a thread draining the JVM listener's events into them."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.jobs: Dict[str, _Job] = {}
        self.owner: Dict[str, _Job] = {}  # fingerprint -> job
        self.spark: Any = None
        self.thread: Optional[threading.Thread] = None
        self.stop = threading.Event()
        self.poll = 0.2  # the wait before trying the JVM again after a failed call
        self._fw: Optional[Tuple[Any, Any]] = None

    def job(self, spark: Any, settings: RecoverySettings, where: str,
            owner: Optional[Dict[str, str]] = None) -> _Job:
        """The open job of ``settings`` (opened now if it is not). ``owner``: on a Spark
        Connect server, the session asking (``{"session", "user"}``); a job another session
        of the server runs is a conflict while that session is alive (open, and running a
        Spark job or calling within the lease timeout), else this session takes it over."""
        with self.lock:
            job = self.jobs.get(settings.job_dir)
            fw = self._facade(spark)
            if job is not None and owner is not None and job.owner != owner:
                if _session_alive(fw, job):
                    raise RecoveryConflictError(
                        f"{where}: recovery job {settings.job_id!r} ({settings.job_dir}) is run "
                        f"by Spark Connect session {job.owner['session'] if job.owner else '?'} "
                        f"(user {job.owner['user'] if job.owner else '?'}) of this server, "
                        f"which is still running it; two runs of one job id would commit "
                        "into the same place. Wait for it to finish (or stop that session), "
                        "or use another job id.")
                log.warning("fullwindow: recovery job %r: Spark Connect session %s takes it "
                            "over from session %s (closed or idle)", settings.job_id,
                            owner["session"], job.owner and job.owner["session"])
                self.close_job(settings.job_dir)
                job = None
            if job is not None:
                job.check()
                job.spark = spark
            else:
                job = _Job(spark, settings, where, owner)
                self.jobs[settings.job_dir] = job
                _share_with_jvm(spark, fw, job)
            job.touched = time.time()
            if owner is None:  # a Spark Connect client sends its own (_connect_runtime)
                tell_driver_script(spark, driver_script())
            fw.registerRecoveryListener(spark._jsparkSession)
            self.spark = spark
            if self.thread is None or not self.thread.is_alive() or self.stop.is_set():
                # a new event per thread: a stopping thread may still be finishing its wait
                self.stop = threading.Event()
                self.thread = threading.Thread(target=self._loop, args=(self.stop,),
                                               name="fullwindow-recovery", daemon=True)
                self.thread.start()
            return job

    def owned_by(self, owner: Optional[Dict[str, str]]) -> List[_Job]:
        """The open jobs of Connect session ``owner`` (every open job: ``None``)."""
        with self.lock:
            return [j for j in self.jobs.values() if owner is None or j.owner == owner]

    def _facade(self, spark: Any) -> Any:
        """The JVM facade of ``spark``, checked once per session (the drain loop and the
        Connect sessions' check call it every second or two)."""
        known = self._fw
        if known is not None and known[0] is spark:
            return known[1]
        from fullwindow._jvm import facade

        fw = facade(spark)
        self._fw = (spark, fw)
        return fw

    def _loop(self, stop: threading.Event) -> None:
        """A long poll: blocks in the JVM until an event is queued (at most a second), then
        drains under the lock. The JVM keeps the events queued while this thread waits, so
        close_job and shutdown, which drain under the same lock, never miss one."""
        checked = time.monotonic()
        while not stop.is_set():
            spark = self.spark
            try:
                queued = spark is not None and self._facade(spark).awaitRecoveryEvents(1000)
            except Exception:  # noqa: BLE001 - the JVM is gone (session stopped, exiting)
                queued = False
                stop.wait(self.poll)
            if queued and not stop.is_set():
                self.drain(0)
            if time.monotonic() - checked > 2:
                checked = time.monotonic()
                self._close_closed_sessions()

    def _close_closed_sessions(self) -> None:
        """Closes the jobs of Connect sessions their clients released (or the server
        expired): their events flushed, their leases released at once."""
        with self.lock:
            owned = [j for j in self.jobs.values() if j.owner]
            if not owned or self.spark is None:
                return
            try:
                fw = self._facade(self.spark)
                closed = [j for j in owned
                          if j.owner and fw.connectSessionClosed(j.owner["session"])]
            except Exception:  # noqa: BLE001 - the JVM is gone, or an older jar
                return
            for job in closed:
                log.info("fullwindow: recovery job %r closed with its Spark Connect session %s",
                         job.settings.job_id, job.owner and job.owner["session"])
                self.close_job(job.job_dir)

    def drain(self, wait_ms: int) -> None:
        with self.lock:
            spark = self.spark
            if spark is None:
                return
            try:
                raw = self._facade(spark).drainRecoveryEvents(spark._jsparkSession, wait_ms)
            except Exception:  # noqa: BLE001 - the JVM is gone (session stopped, exiting)
                return
            for text in raw.split("\n") if raw else ():
                try:
                    event = json.loads(text)
                except ValueError:
                    log.warning("fullwindow: dropping an unreadable job event: %r", text)
                    continue
                # every event names its job; the fingerprint is the fallback of older events
                job = self.jobs.get(event.get("job")) or self.owner.get(event.get("fingerprint"))
                if job is not None and job.failed is None:
                    job.store.append(event)

    def close_job(self, job_dir: str) -> None:
        with self.lock:
            self.drain(0)  # this job's events still in the JVM's queue
            job = self.jobs.pop(job_dir, None)
            if self.spark is not None:
                try:
                    self._facade(self.spark).closeRecoveryJob(job_dir)
                except Exception:  # noqa: BLE001 - the JVM is gone
                    pass
            if job is not None:
                self.owner = {k: v for k, v in self.owner.items() if v is not job}
                job.store.close()
                job.lease.release()
            if not self.jobs:
                self.stop.set()  # no open job: stop polling the JVM

    def shutdown(self) -> None:
        self.drain(2000)
        self.stop.set()
        with self.lock:
            for job in list(self.jobs.values()):
                job.store.close()
                job.lease.release()


def _session_alive(fw: Any, job: _Job) -> bool:
    """Whether the Connect session that runs ``job`` still does: not closed, and running a
    Spark job or having called within the job's lease timeout."""
    if not job.owner:
        return True
    session = job.owner["session"]
    try:
        if fw.connectSessionClosed(session):
            return False
        if fw.connectSessionRunning(session):
            return True
    except Exception:  # noqa: BLE001 - an older jar: the idle rule alone
        pass
    return time.time() - job.touched < job.settings.lease_timeout


def _share_with_jvm(spark: Any, fw: Any, job: _Job) -> None:
    """Puts the job's recorded state into the JVM, where operations defined without a Python
    call site (the SQL hint forms) look it up; their events come back through the same queue."""
    fw.openRecoveryJob(job.job_dir)
    for fp, v in job.state.items():
        rows = []
        for p, e in sorted(v.finished.items()):
            try:
                rows.append(f"{int(p)}\t{int(e['bytes'])}\t{int(e['checksum'])}\t"
                            f"{_one_line(str(e['path']))}")
            except (KeyError, TypeError, ValueError):
                continue
        n = v.num_partitions if isinstance(v.num_partitions, int) else -1
        fw.recoveryVertex(job.job_dir, fp, n, v.layout or "", "\n".join(rows))
        if v.operator == "shuffle" and fp.startswith("shuffle:"):
            _share_shuffle(fw, job, fp, v)
    # what earlier runs recorded about each operation's inputs, where a changed input is found
    # (for DataFrame and SQL hint operations alike: recovery/InputFingerprint.scala)
    lines = []
    for i, r in enumerate(job.input_records):
        for root, digest in sorted(r["inputs"].items()):
            counts = r["files"].get(root)
            n, size = counts if isinstance(counts, list) and len(counts) == 2 else (-1, -1)
            try:
                lines.append("\t".join([str(i), r["structure"], r["fingerprint"],
                                        _one_line(root), digest, str(int(n)), str(int(size))]))
            except (TypeError, ValueError):
                continue
    if lines:
        fw.recordedInputs(job.job_dir, "\n".join(lines))


def _share_shuffle(fw: Any, job: _Job, vertex: str, v: _Vertex) -> None:
    """Puts what earlier runs kept of one of the job's shuffles (whole-job recovery,
    ``spark.fullwindow.recovery.scope=job``) into the JVM, where the query planner decides to
    read it back, reuse its kept map outputs or compute it (recovery/JobShuffles.scala)."""
    rows = []
    for m, e in sorted(v.finished.items()):
        try:
            # the CRC32s each kept file's event records (-1: none recorded, its size alone is
            # checked)
            crcs = [str(int(e.get(k, -1))) for k in ("checksum", "indexChecksum")]
            rows.append("\t".join([str(int(m)), _one_line(str(e.get("generation", ""))),
                                   str(int(e["bytes"])), str(int(e["indexBytes"])), *crcs,
                                   _one_line(str(e["path"])), _one_line(str(e["indexPath"]))]))
        except (KeyError, TypeError, ValueError):
            continue
    n = v.num_partitions if isinstance(v.num_partitions, int) else -1
    fw.recoveryShuffle(job.job_dir, vertex, n, v.layout or "", bool(v.stable), "\n".join(rows))


_runtime = _Runtime()
atexit.register(_runtime.shutdown)


def start(spark: Any) -> bool:
    """Starts recovery for the job configured in ``spark``'s session now, if recovery is on
    (returns whether it is). A session made after ``import fullwindow`` (by
    ``fullwindow.session`` or any ``SparkSession.builder``) has started it already, as have
    full-window DataFrame operations; call this after switching recovery on in a running
    session (``spark.conf.set``), or the job's first write, SQL hint operation or kept query
    fails with ``RECOVERY_NOT_STARTED``."""
    from fullwindow._backend import is_connect

    if is_connect(spark):
        from fullwindow._connect.recovery import control

        return bool(control(spark, "start")["started"])
    return start_classic(spark, "recovery.start")


def start_classic(spark: Any, where: str) -> bool:
    """:func:`start` for a classic session, ``where`` naming the caller in errors."""
    settings = settings_of_session(spark, where)
    if settings is None:
        return False
    _runtime.job(spark, settings, where)
    return True


def _func_digest(func: Any) -> bytes:
    if func is None:
        return b""
    from fullwindow.recovery._digest import code_digest

    return code_digest(func)


def fingerprint(out: DataFrame, operation: str, func: Any = None, extra: Any = None) -> str:
    """The stable fingerprint of a full-window operation: its result's plan (the operation and
    everything upstream, committed upstream operations by their own fingerprints, and the
    listings of the files and the versions of the tables it reads) and the code of the Python
    function it calls (recovery/_digest.py)."""
    return _fingerprints(out, operation, func, extra)[0]


def _fingerprints(out: DataFrame, operation: str, func: Any = None, extra: Any = None, *,
                  code: Optional[bytes] = None, extra_text: Optional[str] = None,
                  job_dir: str = "") -> "tuple[str, str, List[str]]":
    """The operation's fingerprint, its structural fingerprint (the same without the input
    listings: it stays the same when only the inputs changed) and its inputs, one line each
    (``root TAB digest TAB files TAB bytes``), upstream operations' included. ``code`` and
    ``extra_text``: the function's digest and ``repr(extra)`` made elsewhere (a Spark Connect
    client's), in place of ``func`` and ``extra``. ``job_dir``: the job's directory, whose
    plan-text version the plan's text is made with (the current one without)."""
    from fullwindow._jvm import facade

    full, structure, inputs = (str(t) for t in
                               facade(out).planFingerprints(out._jdf, job_dir))
    if code is None:
        code = _func_digest(func)
    if extra_text is None:
        extra_text = repr(extra)

    def digest(text: str) -> str:
        h = hashlib.sha256()
        h.update(operation.encode())
        h.update(b"\0")
        h.update(text.encode())
        h.update(b"\0")
        h.update(code)
        h.update(extra_text.encode())
        return h.hexdigest()[:24]

    return digest(full), digest(structure), inputs.split("\n") if inputs else []


def commit_operation(out: DataFrame, operation: str, func: Any = None,
                     extra: Any = None) -> DataFrame:
    """``out``, the result of full-window ``operation``, made recoverable when recovery is on
    (unchanged otherwise): committed per partition, or partly or wholly read back from an
    earlier run of the same job. On a Spark Connect session the server's recovery runtime does
    it (a server started with ``python -m fullwindow.server``), given the function's digest."""
    from fullwindow._backend import conf_get, is_connect

    spark = out.sparkSession
    raw = conf_get(spark, ENABLED, None)
    if raw is None or str(raw).strip().lower() in ("", "false"):
        return out
    if is_connect(out):
        from fullwindow._connect.recovery import commit

        return commit(out, operation, _func_digest(func), repr(extra))
    settings = settings_of_session(spark, operation)
    if settings is None:
        return out
    return _commit(out, operation, settings, code=_func_digest(func), extra_text=repr(extra))


def _commit(out: DataFrame, operation: str, settings: RecoverySettings, *, code: bytes,
            extra_text: str, owner: Optional[Dict[str, str]] = None) -> DataFrame:
    """:func:`commit_operation` once recovery is known to be on: in a classic driver, or in
    the recovery runtime of a Spark Connect server for session ``owner``."""
    from fullwindow._jvm import facade

    spark = out.sparkSession
    fw = facade(out)
    job = _runtime.job(spark, settings, operation, owner)
    fp, structure, inputs_now = _fingerprints(out, operation, code=code, extra_text=extra_text,
                                              job_dir=job.job_dir)
    with _runtime.lock:
        _runtime.owner[fp] = job
    decided = job.decided.get(fp)
    if decided is None:
        decided = job.decided[fp] = _decide(fw, spark, job, operation, fp, structure,
                                            inputs_now, settings)
    verified, n, inputs, input_files = decided
    op_dir = _fs.join(operators_dir(job.job_dir), fp)
    if n is not None and n >= 0 and len(verified) == n and all(p in verified for p in range(n)):
        jpaths = _string_array(fw, [str(verified[p]["path"]) for p in range(n)])
        total = sum(int(verified[p]["bytes"]) for p in range(n))
        return DataFrame(fw.recoveredScan(out._jdf, fp, operation, jpaths, total), spark)
    vertex = job.state.get(fp)
    parts = sorted(verified)
    jparts = fw.ints(",".join(str(int(p)) for p in parts))
    jpaths = _string_array(fw, [str(verified[p]["path"]) for p in parts])
    layout = (vertex.layout if vertex is not None else None) or ""
    return DataFrame(fw.commit(out._jdf, fp, operation, op_dir, -1 if n is None else n, layout,
                               jparts, jpaths, _string_array(fw, inputs),
                               _string_array(fw, input_files)), spark)


def _decide(fw: Any, spark: Any, job: _Job, operation: str, fp: str, structure: str,
            inputs_now: List[str], settings: RecoverySettings) -> "tuple[Any, ...]":
    """What this run reuses of operation ``fp``, decided once per run: its inputs compared with
    what earlier runs recorded, its committed partitions verified (the damaged ones reset),
    its committed shuffle inputs. ``(verified partitions, partition count, inputs, files)``."""
    fail = settings.on_input_change == "fail"
    changed = str(fw.operationInputs(job.job_dir, operation, fp, structure,
                                     "\n".join(_one_line(x) for x in inputs_now), fail))
    if changed:
        error, warning = changed.split("\0")
        if fail:
            raise RecoveryInputChangedError(error)
        log.warning("%s", warning)
    job.fs.makedirs(_fs.join(operators_dir(job.job_dir), fp))
    vertex = job.state.get(fp)
    verified: Dict[int, Dict[str, Any]] = {}
    damaged: List[int] = []
    if vertex is not None:
        finished = sorted(vertex.finished.items())
        intact = _intact_all(fw, spark, [(e.get("path"), e.get("bytes"), e.get("checksum"))
                                         for _, e in finished])
        for (p, e), ok in zip(finished, intact):
            (verified.__setitem__(p, e) if ok else damaged.append(p))
    if damaged and vertex is not None:
        log.warning("fullwindow: %s %s: the committed outputs of partitions %s are missing or "
                    "damaged; they run again", operation, fp, damaged)
        for p in damaged:
            vertex.finished.pop(p, None)
        job.store.append({"type": "vertexReset", "fingerprint": fp, "operator": operation,
                          "partitions": damaged, "reason": "committed output missing or damaged"})
    n = vertex.num_partitions if vertex is not None else None
    if n is not None and n >= 0 and len(verified) == n and all(p in verified for p in range(n)):
        return verified, n, [], []  # read back whole: nothing upstream runs
    inputs, input_files = _committed_inputs(fw, spark, job, fp, operation, vertex)
    return verified, n, inputs, input_files


def _intact_all(fw: Any, spark: Any, files: List["tuple[Any, Any, Any]"]) -> List[bool]:
    """For each ``(path, size, crc)``, whether the committed file is there with the size and
    CRC32 its event recorded; a malformed event's file is not. One call into the JVM, which
    reads the files on the driver several at a time."""
    lines: List[str] = []
    where: List[int] = []
    for i, (path, size, crc) in enumerate(files):
        try:
            if path is None:
                raise TypeError(path)
            lines.append(f"{int(size)}\t{int(crc)}\t{_one_line(str(path))}")
            where.append(i)
        except (TypeError, ValueError):
            continue
    out = [False] * len(files)
    if lines:
        for i, ok in zip(where, fw.verifyCommittedAll(spark._jsparkSession, "\n".join(lines))):
            out[i] = bool(ok)
    return out


def _one_line(text: str) -> str:
    """``text`` for a line of the newline-separated lists the JVM facade takes (``lines``)."""
    if "\n" in text:
        raise ValueError(f"fullwindow recovery: a path with a line break: {text!r}")
    return text


def _string_array(fw: Any, items: List[str]) -> Any:
    """``items`` as a Java ``String[]``, made in one call (py4j sets array elements one call
    each)."""
    return fw.lines("\n".join(_one_line(x) for x in items))


def _committed_inputs(fw: Any, spark: Any, job: _Job, fp: str, operation: str,
                      vertex: Optional[_Vertex]) -> "tuple[List[str], List[str]]":
    """The shuffle inputs of operation ``fp``'s stage that earlier runs committed in full (every
    map output there, size and CRC32 checked on the driver), as the JVM's ``commit`` takes them:
    one line per input and one per map output file. An input is vertex ``<fp>/input<i>``; its
    layout names the shuffle partition count and codec, its partitions are the map outputs."""
    inputs: List[str] = []
    files: List[str] = []
    reads = vertex.reads if vertex is not None else []
    for k in itertools.count():
        v = job.state.get(f"{fp}/input{k}")
        if v is None:
            break
        m = v.num_partitions
        layout = v.layout or ""
        if m is None or m < 1 or len(v.finished) != m or not layout.startswith("n="):
            continue
        n_text, _, codec = layout.partition(";")

        maps = sorted(v.finished.items())
        intact = _intact_all(fw, spark, [f for _, e in maps for f in (
            (e.get("path"), e.get("bytes"), e.get("checksum")),
            (e.get("indexPath"), e.get("indexBytes"), e.get("indexChecksum")))])
        damaged = [p for i, (p, _) in enumerate(maps)
                   if not (intact[2 * i] and intact[2 * i + 1])]
        if damaged:
            log.warning("fullwindow: %s %s: committed shuffle input %d is missing or damaged "
                        "(map outputs %s); it is computed again", operation, fp, k, damaged)
            continue
        read = reads[k] if k < len(reads) else ""
        inputs.append("\t".join([str(k), n_text[2:], str(m), codec, read]))
        files.extend("\t".join([str(k), str(p), str(e["path"]), str(e["indexPath"])])
                     for p, e in sorted(v.finished.items()))
    return inputs, files


def flush(spark: Any = None, wait_ms: int = 5000) -> None:
    """Makes every job event of this process durable now: waits for the listener to deliver
    pending events, then flushes the event stores (on a Spark Connect session: the server's,
    of the session's jobs)."""
    from fullwindow._backend import is_connect

    if spark is not None and is_connect(spark):
        from fullwindow._connect.recovery import control

        control(spark, "flush", wait_ms=wait_ms)
        return
    _runtime.drain(wait_ms)
    with _runtime.lock:
        jobs = list(_runtime.jobs.values())
    for job in jobs:
        job.check()
        job.store.flush()


def cleanup(spark: Any, job_id: Optional[str] = None, directory: Optional[str] = None) -> bool:
    """Deletes a finished job's recovery directory (``<dir>/<jobId>``: its events and committed
    outputs), by default the job configured in ``spark``'s session. Call it once the job's
    results are safely written; a later run with the same job id starts from scratch. Returns
    whether there was anything to delete."""
    from fullwindow._backend import is_connect
    from fullwindow.recovery.config import check_directory, check_job_id

    # checked here too, before a Connect client sends them (the server checks them again)
    if job_id is not None:
        check_job_id(job_id, "recovery.cleanup")
    if directory is not None:
        check_directory(directory, "recovery.cleanup")
    if is_connect(spark):  # the server deletes it, unless another session runs the job
        from fullwindow._connect.recovery import control

        return bool(control(spark, "cleanup", job_id=job_id, directory=directory)["deleted"])
    return _cleanup(spark, job_id, directory)


def _cleanup(spark: Any, job_id: Optional[str], directory: Optional[str],
             owner: Optional[Dict[str, str]] = None) -> bool:
    """:func:`cleanup` in a driver (a classic one, or a Connect server's for session
    ``owner``, which may not delete a job another live session of the server runs)."""
    conf = spark.conf
    # an argument given is the one used (an empty one is refused, never replaced by the
    # session's): only an argument not given falls back to the session's setting
    from fullwindow.errors import ConfigurationError
    from fullwindow.recovery.config import check_directory, check_job_id

    if (directory is None and not (conf.get(DIR, None) or "").strip()) or \
            (job_id is None and not (conf.get(JOB_ID, None) or "").strip()):
        raise ConfigurationError(
            f"recovery.cleanup: give job_id and directory, or set {DIR} and {JOB_ID}.")
    directory = check_directory(
        directory if directory is not None else conf.get(DIR, None).strip(), "recovery.cleanup")
    job_id = check_job_id(job_id if job_id is not None else conf.get(JOB_ID, None).strip(),
                          "recovery.cleanup", "job_id" if job_id is not None else JOB_ID)
    job_dir = _fs.join(directory, job_id)
    _runtime.drain(2000)
    with _runtime.lock:
        job = _runtime.jobs.get(job_dir)
        if job is not None and owner is not None and job.owner != owner:
            from fullwindow._jvm import facade

            if _session_alive(facade(spark), job):
                raise RecoveryConflictError(
                    f"recovery.cleanup: job {job_id!r} is run by Spark Connect session "
                    f"{job.owner['session'] if job.owner else '?'} of this server; it is not "
                    "deleted while that session runs it.")
        _runtime.close_job(job_dir)  # this process's own lease on it ends here
    fs = _fs.filesystem(directory, spark)
    return delete_job(fs, job_dir, "recovery.cleanup")
