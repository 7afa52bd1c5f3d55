"""The recovery configuration keys and their checks."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from fullwindow.errors import ConfigurationError

ENABLED = "spark.fullwindow.recovery.enabled"
DIR = "spark.fullwindow.recovery.dir"
JOB_ID = "spark.fullwindow.recovery.jobId"
WRITE_BUFFER_SIZE = "spark.fullwindow.eventStore.writeBufferSize"
FLUSH_INTERVAL = "spark.fullwindow.eventStore.flushInterval"
LEASE_TIMEOUT = "spark.fullwindow.recovery.leaseTimeout"
LEASE_WAIT = "spark.fullwindow.recovery.leaseWait"
ON_INPUT_CHANGE = "spark.fullwindow.recovery.onInputChange"
ON_UNCHECKED_WRITE = "spark.fullwindow.recovery.onUncheckedWrite"
#: set by recovery itself, not by users: the path of the driver's Python script, whose directory
#: the fingerprint of a shuffle over a Python UDF leaves out (the jar's
#: ``JobShuffles.DriverScript``): a script run from another directory on the resume (YARN's next
#: attempt in cluster mode, a scheduler's temporary copy) still finds its kept shuffles
DRIVER_SCRIPT = "spark.fullwindow.recovery.driverScript"

DEFAULT_WRITE_BUFFER_SIZE = "1m"
DEFAULT_FLUSH_INTERVAL = "1s"
DEFAULT_LEASE_TIMEOUT = "60s"
DEFAULT_LEASE_WAIT = "0s"
DEFAULT_ON_INPUT_CHANGE = "recompute"
ON_INPUT_CHANGE_MODES = ("recompute", "fail")
DEFAULT_ON_UNCHECKED_WRITE = "rerun"
ON_UNCHECKED_WRITE_MODES = ("rerun", "fail")


def driver_script() -> str:
    """This process's ``__main__`` script as its functions' code names it (``""``: none, as in
    a shell or a notebook)."""
    import sys

    path = getattr(sys.modules.get("__main__"), "__file__", None)
    return path if isinstance(path, str) else ""


@dataclass(frozen=True)
class RecoverySettings:
    directory: str
    job_id: str
    write_buffer_size: int
    flush_interval: float
    lease_timeout: float = 60.0
    lease_wait: float = 0.0
    # what a resumed run does with an operation whose file or table inputs changed since an
    # earlier run recorded them: "recompute" it (and what depends on it), or "fail"
    on_input_change: str = DEFAULT_ON_INPUT_CHANGE
    # what a resumed run does with a write an earlier run started into a sink that keeps no
    # record of its commits (JDBC, foreach): "rerun" it (at least once), or "fail"
    on_unchecked_write: str = DEFAULT_ON_UNCHECKED_WRITE

    @property
    def job_dir(self) -> str:
        from fullwindow.recovery._fs import join

        return join(self.directory, self.job_id)


def _enabled(raw: Any) -> bool:
    if raw is None:
        return False
    text = str(raw).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no", ""):
        return False
    raise ConfigurationError(f"{ENABLED} is '{raw}'; expected true or false.")


def settings_from(get: Callable[[str], Optional[str]], where: str) -> Optional[RecoverySettings]:
    """The recovery settings read through ``get`` (None when recovery is off), checked: recovery
    enabled without a directory or a job id is a ``ConfigurationError``, whose message
    starts with ``where`` (what was being done when the settings were read)."""
    from fullwindow.recovery.eventstore import _parse_duration, _parse_size

    if not _enabled(get(ENABLED)):
        return None
    directory = (get(DIR) or "").strip()
    job_id = (get(JOB_ID) or "").strip()
    missing = [k for k, v in ((DIR, directory), (JOB_ID, job_id)) if not v]
    if missing:
        raise ConfigurationError(
            f"{where}: {ENABLED} is true but {' and '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not set. Recovery needs a durable directory "
            f"({DIR}: a local path or a Hadoop file system URI such as hdfs://nn/fullwindow) and "
            f"a name for the job that stays the same across restarts ({JOB_ID}). Set both, or "
            f"set {ENABLED}=false.")
    check_job_id(job_id, where, JOB_ID)
    return RecoverySettings(
        directory=directory, job_id=job_id,
        write_buffer_size=_parse_size(get(WRITE_BUFFER_SIZE) or DEFAULT_WRITE_BUFFER_SIZE,
                                      WRITE_BUFFER_SIZE),
        flush_interval=_parse_duration(get(FLUSH_INTERVAL) or DEFAULT_FLUSH_INTERVAL,
                                       FLUSH_INTERVAL),
        lease_timeout=_lease_timeout(get(LEASE_TIMEOUT) or DEFAULT_LEASE_TIMEOUT),
        lease_wait=_lease_wait(get(LEASE_WAIT) or DEFAULT_LEASE_WAIT),
        on_input_change=on_input_change(get(ON_INPUT_CHANGE)),
        on_unchecked_write=on_unchecked_write(get(ON_UNCHECKED_WRITE)))


#: characters a job id cannot hold: path separators (Hadoop's and Windows'), and NUL
_NOT_IN_JOB_ID = ("/", "\\", "\x00")


def check_job_id(job_id: Any, where: str, name: str = "job_id") -> str:
    """``job_id`` if it names one directory under the recovery directory: a non-empty string
    without a path separator (``/`` or ``\\``) or NUL, not ``.`` or ``..`` and not only
    spaces. Anything else is a :class:`ConfigurationError` (a ``TypeError`` when it is not a
    string) whose message starts with ``where`` and names ``name``: a job id that is not one
    name would make the job's directory another directory, such as the recovery directory
    itself or its parent, which a cleanup would then delete."""
    if not isinstance(job_id, str):
        raise TypeError(f"{where}: {name} must be a string (the job's name, one directory "
                        f"name under the recovery directory); got {job_id!r}")
    bad = [c for c in _NOT_IN_JOB_ID if c in job_id]
    if not job_id.strip() or job_id in (".", "..") or bad:
        why = ("is empty" if not job_id.strip() else
               f"is {job_id!r}, which names the directory itself or its parent"
               if job_id in (".", "..") else
               f"is {job_id!r}, which holds {' and '.join(repr(c) for c in bad)}")
        raise ConfigurationError(
            f"{where}: {name} {why}; a job id names one directory under the recovery "
            f"directory ({DIR}), so it must be a non-empty name without '/' or '\\', other "
            "than '.' and '..' (such as nightly-2024-06-01).")
    return job_id


def check_directory(directory: Any, where: str, name: str = "directory") -> str:
    """``directory`` if it is a non-empty string (a local path or a Hadoop file system URI),
    else a :class:`ConfigurationError` (``TypeError`` for a non-string) naming ``name``."""
    if not isinstance(directory, str):
        raise TypeError(f"{where}: {name} must be a string (the recovery directory, a local "
                        f"path or a Hadoop file system URI); got {directory!r}")
    if not directory.strip() or "\x00" in directory:
        raise ConfigurationError(
            f"{where}: {name} is {directory!r}; expected the recovery directory ({DIR}): a "
            "local path or a Hadoop file system URI such as hdfs://nn/fullwindow.")
    return directory


def _mode(raw: Any, key: str, modes: "tuple[str, ...]", default: str, expected: str) -> str:
    """The mode setting ``key`` names (unset: ``default``), or a ConfigurationError saying
    ``expected``."""
    text = str(raw if raw is not None else "").strip().lower() or default
    if text not in modes:
        raise ConfigurationError(f"{key} is '{raw}'; expected {expected}.")
    return text


def on_input_change(raw: Any) -> str:
    """The mode ``spark.fullwindow.recovery.onInputChange`` names (unset: ``recompute``)."""
    return _mode(raw, ON_INPUT_CHANGE, ON_INPUT_CHANGE_MODES, DEFAULT_ON_INPUT_CHANGE,
                 "recompute (an operation whose file or table inputs changed since an earlier "
                 "run is computed again, with everything depending on it) or fail (such an "
                 "operation raises RecoveryInputChangedError)")


def on_unchecked_write(raw: Any) -> str:
    """The mode ``spark.fullwindow.recovery.onUncheckedWrite`` names (unset: ``rerun``)."""
    return _mode(raw, ON_UNCHECKED_WRITE, ON_UNCHECKED_WRITE_MODES, DEFAULT_ON_UNCHECKED_WRITE,
                 "rerun (a write an earlier run started into a sink that keeps no record of its "
                 "commits, such as JDBC, runs again on a resume: at least once) or fail (the "
                 "resumed run fails at such a write)")


def _lease_timeout(raw: Any) -> float:
    from fullwindow.recovery.eventstore import _parse_duration

    value = _parse_duration(raw, LEASE_TIMEOUT)
    if not value > 0:
        raise ConfigurationError(f"{LEASE_TIMEOUT} is '{raw}'; expected a positive duration "
                                 "such as 60s or 2min.")
    return value


def _lease_wait(raw: Any) -> float:
    from fullwindow.recovery.eventstore import _parse_duration

    value = _parse_duration(raw, LEASE_WAIT)
    if not value >= 0 or value == float("inf"):
        raise ConfigurationError(f"{LEASE_WAIT} is '{raw}'; expected a duration of 0 or more "
                                 "such as 0s, 90s or 5min (how long a run waits for another "
                                 "driver's live lease before it fails).")
    return value


def settings_of_session(spark: Any, where: str) -> Optional[RecoverySettings]:
    conf = spark.conf
    return settings_from(lambda k: conf.get(k, None), where)
