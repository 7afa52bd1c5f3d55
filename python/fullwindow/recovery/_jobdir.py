"""A job's recovery directory: where its events and operators live, its events replayed into
each operator's state, and its deletion. Shared by the recovery runtime (fullwindow.recovery)
and its status tool (fullwindow.recovery._status)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from fullwindow.recovery import _fs, lease
from fullwindow.recovery.errors import RecoveryConflictError
from fullwindow.recovery.eventstore import EventStore


def events_dir(job_dir: str) -> str:
    return _fs.join(job_dir, "events")


def operators_dir(job_dir: str) -> str:
    return _fs.join(job_dir, "operators")


def job_dir_of(directory: Any, job_id: Any, where: str) -> str:
    """``<directory>/<job_id>``, both checked (``config.check_job_id``: one directory name)."""
    from fullwindow.recovery.config import check_directory, check_job_id

    return _fs.join(check_directory(directory, where), check_job_id(job_id, where))


def job_events(directory: str, job_id: str, spark: Any = None) -> List[Dict[str, Any]]:
    """Every intact job event recorded for ``job_id`` under ``directory``, oldest first."""
    job_dir = job_dir_of(directory, job_id, "recovery.job_events")
    return EventStore.read_all(events_dir(job_dir), _fs.filesystem(directory, spark))


class _Vertex:
    __slots__ = ("num_partitions", "layout", "reads", "finished", "operator", "stable", "query")

    def __init__(self) -> None:
        self.num_partitions: Optional[int] = None
        self.layout: Optional[str] = None
        self.reads: List[str] = []  # what each shuffle read of its stage reads (layout text)
        self.finished: Dict[int, Dict[str, Any]] = {}
        self.operator: Optional[str] = None
        #: a job's shuffle (whole-job recovery): whether its map side is determinate, and the
        #: query that last computed it
        self.stable: bool = True
        self.query: Optional[str] = None


def recovery_state(events: List[Dict[str, Any]]) -> Dict[str, _Vertex]:
    """Replays job events: per operator fingerprint, its partition count and layout (which
    shuffle partitions each partition reads) and the last task-finished event of each partition
    not reset since. A run that laid the operator out differently (another partition count, or
    adaptive execution coalescing its input otherwise) voids the partitions finished before it;
    a finished event of another layout than the operator's last one is not used."""
    vertices: Dict[str, _Vertex] = {}
    for e in events:
        fp = e.get("fingerprint")
        kind = e.get("type")
        if not isinstance(fp, str) or kind == "vertexInputs":
            continue
        v = vertices.setdefault(fp, _Vertex())
        if kind == "vertexInitialized":
            n = e.get("numPartitions")
            layout = e.get("layout")
            if (v.num_partitions is not None and n != v.num_partitions) or \
                    (v.layout is not None and layout != v.layout):
                v.finished.clear()
            v.num_partitions = n
            v.layout = layout
            reads = e.get("reads")
            v.reads = [str(r) for r in reads] if isinstance(reads, list) else []
            v.operator = e.get("operator")
            v.stable = e.get("stable") is not False
            if e.get("query") is not None:
                v.query = str(e.get("query"))
        elif kind == "taskFinished":
            p = e.get("partition")
            if isinstance(p, int) and (v.num_partitions is None or 0 <= p < v.num_partitions) \
                    and (v.layout is None or e.get("layout") == v.layout):
                v.finished[p] = e
        elif kind == "vertexReset":
            parts = e.get("partitions")
            if parts is None:
                v.finished.clear()
            else:
                for p in parts:
                    v.finished.pop(p, None)
    return vertices


def input_records(events: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The ``vertexInputs`` events, oldest first, that are well formed: what each run recorded
    about an operation's file and table inputs when it was defined (its fingerprint, its
    structural fingerprint, which leaves the input listings out, and per input root the digest
    of its listing, and its files and bytes). On a resume, an operation whose structure was
    recorded with another fingerprint and other input digests has changed inputs."""
    out: List[Dict[str, Any]] = []
    for e in events:
        if e.get("type") != "vertexInputs":
            continue
        fp, sfp, inputs = e.get("fingerprint"), e.get("structure"), e.get("inputs")
        if not (isinstance(fp, str) and isinstance(sfp, str) and isinstance(inputs, dict)):
            continue
        files = e.get("files") if isinstance(e.get("files"), dict) else {}
        out.append({"fingerprint": fp, "structure": sfp, "operator": e.get("operator"),
                    "inputs": {str(k): str(v) for k, v in inputs.items()},
                    "files": files})
    return out


#: what a job's directory holds: its event store, its lease, full-window operations' committed
#: outputs, the job's kept shuffles (scope=job: recovery/JobShuffles.scala), write records
JOB_ENTRIES = ("events", "lease", "operators", "shuffles", "writes")
#: the probe file a run writes and deletes when it opens the job (recovery/_jobs.py ``probe``)
PROBE_PREFIX = ".probe-"


def not_a_job(fs: Any, job_dir: str) -> Optional[str]:
    """None when ``job_dir`` holds a recovery job's layout, else why not. A job's directory
    holds a lease (``lease/epoch-<n>``) or an event store (``events/segment-...``), and nothing
    but what recovery writes there (``events``, ``lease``, ``operators``, ``shuffles``,
    ``writes``, a probe file): anything else is not recovery's to delete."""
    from fullwindow.recovery.eventstore import SEGMENT_PREFIX

    if isinstance(fs, _fs.LocalFS):
        import os

        if os.path.islink(job_dir):
            return "it is a symbolic link, not a job's directory"
    if not fs.is_dir(job_dir):
        return "it is a file, not a job's directory"
    entries = fs.listdir(job_dir)
    other = [n for n in entries if n not in JOB_ENTRIES and not n.startswith(PROBE_PREFIX)]
    if other:
        shown = ", ".join(repr(n) for n in other[:5]) + (", ..." if len(other) > 5 else "")
        return (f"it holds {shown}, which recovery never writes in a job's directory (a job's "
                f"directory holds only {', '.join(JOB_ENTRIES)})")
    leases = lease._epochs(fs, lease.lease_dir(job_dir)) if "lease" in entries else []
    segments = fs.listdir(events_dir(job_dir)) if "events" in entries else []
    if not leases and not any(n.startswith(SEGMENT_PREFIX) for n in segments):
        return ("it holds neither a job's lease (lease/epoch-<n>) nor its events "
                "(events/segment-...)" + ("" if entries else ": it is empty"))
    return None


def delete_job(fs: Any, job_dir: str, where: str) -> bool:
    """Deletes a job's directory, only if it holds a recovery job's layout (:func:`not_a_job`;
    else :class:`ConfigurationError`, deleting nothing) and no driver holds its lease
    (:class:`RecoveryConflictError`); returns whether there was one."""
    if not fs.exists(job_dir):
        return False
    problem = not_a_job(fs, job_dir)
    if problem is not None:
        from fullwindow.errors import ConfigurationError

        raise ConfigurationError(
            f"{where}: {job_dir} is not a recovery job's directory: {problem}. Nothing was "
            "deleted. Check the directory and the job id (the job's "
            "spark.fullwindow.recovery.dir and spark.fullwindow.recovery.jobId).")
    holder = lease.read(fs, job_dir)
    if holder is not None and holder["live"]:
        raise RecoveryConflictError(
            f"{where}: job {job_dir} is running: {lease.describe(holder)}. Its directory is "
            "deleted once no driver holds it.")
    fs.delete(job_dir)
    return True
