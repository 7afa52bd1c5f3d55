"""What a job's recovery directory holds, as plain data: :func:`status` (operations, committed
partitions, bytes, the runs that committed them, intact or damaged, the lease holder) and
:func:`verify` (every committed file's size and CRC32). ``python -m fullwindow.recovery`` prints
the same."""
from __future__ import annotations

import time
import warnings
from typing import Any, Dict, List, Optional

from fullwindow.recovery import _fs, lease
from fullwindow.recovery._jobdir import delete_job, events_dir, job_dir_of, recovery_state

_FILES = (("path", "bytes", "checksum"), ("indexPath", "indexBytes", "indexChecksum"))


def _run_of(segment: str) -> str:
    """A run's name from its segment's (``segment-<ms>-<pid>-<random>.log``): start time and
    driver pid."""
    name = segment.rsplit("/", 1)[-1][len("segment-"):].removesuffix(".log")
    try:
        ms, pid, _ = name.split("-", 2)
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(ms) / 1000))
        return f"{when} pid {pid}"
    except ValueError:
        return name


class _Sizes:
    """File sizes from one listing per directory (not a request per file: on an object store a
    status of 100,000 committed files would otherwise be 100,000 requests)."""

    def __init__(self, fs: Any) -> None:
        self.fs = fs
        self.listed: Dict[str, Dict[str, int]] = {}

    def size(self, path: str) -> Optional[int]:
        directory, _, name = path.rpartition("/")
        if directory not in self.listed:
            try:
                self.listed[directory] = dict(self.fs.list_sizes(directory))
            except Exception:  # noqa: BLE001 - an unlistable directory: ask per file
                return self.fs.size(path)
        return self.listed[directory].get(name)


def _check(fs: Any, e: Dict[str, Any], crc: bool, sizes: Optional[_Sizes] = None
           ) -> Optional[str]:
    """None when every file an event names is there with its recorded size (and CRC32 when
    ``crc``), else what is wrong."""
    for path_key, size_key, crc_key in _FILES:
        if path_key not in e:
            continue
        path = str(e[path_key])
        local = path[len("file:"):] if path.startswith("file:") else path
        size = (sizes or _Sizes(fs)).size(local)
        if size is None:
            return f"{path}: missing"
        if size != e.get(size_key):
            return f"{path}: {size} bytes, {e.get(size_key)} recorded"
        if crc and fs.crc32(local) != e.get(crc_key):
            return f"{path}: CRC32 differs from the recorded one"
    return None


def _fs_for(directory: str, spark: Any) -> Any:
    if _fs.is_local(directory):
        return _fs.LocalFS()
    return _fs.filesystem(directory, spark)


def status(directory: str, job_id: str, spark: Any = None, crc: bool = False) -> Dict[str, Any]:
    """The state of job ``job_id`` under recovery directory ``directory``, as plain data::

        {"job": "nightly", "directory": "/data/fw/nightly", "exists": True,
         "lease": {"host": ..., "pid": ..., "appId": ..., "state": "live", ...} or None,
         "operations": [{"fingerprint": "ab12...", "operation": "mapPartition",
                         "partitions": 8, "committed": 5, "bytes": 123456,
                         "runs": {"2026-11-23T01:02:03Z pid 4242": 5},
                         "intact": True, "damaged": {}}, ...],
         "writes": [{"number": 1, "fingerprint": "cd34...", "occurrence": 1, "sink": "files",
                     "target": "hdfs://nn/out/a", "mode": "Append", "state": "committed",
                     "skipped": 1}, ...],
         "problems": []}

    Committed shuffle inputs of an operation appear as operations too (``operation`` is
    ``shuffle input``, fingerprint ``<operation's>/input<k>``), and so do the shuffles of every
    query with ``spark.fullwindow.recovery.scope=job`` (``operation`` ``shuffle``, fingerprint
    ``shuffle:<fp>``, partitions its map tasks, with ``stable`` and the ``query`` that computed
    it). ``intact`` checks that each
    committed file is there with its recorded size; with ``crc=True`` (what :func:`verify` does)
    its CRC32 too. A Hadoop file system URI needs ``spark`` (or an active session).

    Examples:
        ```python
        st = fullwindow.recovery.status("/data/fw", "nightly")
        print(st["lease"]["state"], [(op["operation"], op["committed"]) for op in st["operations"]])
        ```

    With a Spark Connect session as ``spark``, the server reads the directory (with its own
    Hadoop settings and file systems) and answers the same data.

    A write is its ``fingerprint`` and ``occurrence`` (the job's 1st, 2nd, ... write of that
    fingerprint: what a resumed run matches it by); ``number`` is its place in the order the run
    that recorded it started its writes, and the list is sorted by it.
    """
    from fullwindow._backend import is_connect
    from fullwindow.recovery.eventstore import EventStore

    job_dir = job_dir_of(directory, job_id, "recovery.verify" if crc else "recovery.status")
    if spark is not None and is_connect(spark):
        from fullwindow._connect.recovery import control

        return dict(control(spark, "verify" if crc else "status", directory=directory,
                            job_id=job_id))
    fs = _fs_for(directory, spark)
    out: Dict[str, Any] = {"job": job_id, "directory": job_dir, "exists": fs.exists(job_dir),
                           "lease": lease.read(fs, job_dir) if fs.exists(job_dir) else None,
                           "operations": [], "writes": [], "problems": []}
    if not out["exists"]:
        return out
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        segments = EventStore.read_segments(events_dir(job_dir), fs)
    out["problems"] = [str(w.message) for w in caught]
    events: List[Dict[str, Any]] = []
    for seg, evs in segments:
        run = _run_of(seg)
        events.extend(dict(e, _run=run) for e in evs)
    sizes = _Sizes(fs)
    for fp, v in recovery_state(events).items():
        runs: Dict[str, int] = {}
        damaged: Dict[int, str] = {}
        total = 0
        for p, e in sorted(v.finished.items()):
            runs[e["_run"]] = runs.get(e["_run"], 0) + 1
            total += int(e.get("bytes") or 0) + int(e.get("indexBytes") or 0)
            problem = _check(fs, e, crc, sizes)
            if problem is not None:
                damaged[p] = problem
        entry = {
            "fingerprint": fp, "operation": v.operator, "partitions": v.num_partitions,
            "committed": len(v.finished), "bytes": total, "runs": runs,
            "intact": not damaged, "damaged": damaged}
        if v.operator == "shuffle":  # a job's shuffle (scope=job): its map tasks, its query
            entry.update(stable=v.stable, query=v.query)
        out["operations"].append(entry)
    out["writes"] = _writes(fs, job_dir, events)
    return out


def _write_records(names: List[str]) -> List["tuple[str, int, str, int, str]"]:
    """The job's write records among ``names`` (of ``<dir>/<jobId>/writes/``), as ``(name,
    number, fingerprint, occurrence, state)``: ``<n>.<fingerprint>.<occurrence>.<state>``, and
    the form job directories had before writes were identified by fingerprint and occurrence,
    ``<n>.<fingerprint>.<state>``, whose occurrences are fingerprint F's records in the order of
    their numbers (as ``RecoveredWrites.parseRecords`` reads them)."""
    def is_fp(t: str) -> bool:
        return len(t) == 24 and all(c in "0123456789abcdef" for c in t)

    out = []
    old = []
    for name in names:
        parts = name.split(".")
        if name.startswith(".") or parts[-1] not in ("started", "committed"):
            continue
        if len(parts) == 4 and parts[0].isdigit() and is_fp(parts[1]) and parts[2].isdigit():
            out.append((name, int(parts[0]), parts[1], int(parts[2]), parts[3]))
        elif len(parts) == 3 and parts[0].isdigit() and is_fp(parts[1]):
            old.append((name, int(parts[0]), parts[1], parts[2]))
    numbers: Dict[str, List[int]] = {}
    for _, n, fp, _ in old:
        numbers.setdefault(fp, [])
        if n not in numbers[fp]:
            numbers[fp].append(n)
    for name, n, fp, state in old:
        out.append((name, n, fp, sorted(numbers[fp]).index(n) + 1, state))
    return out


def _writes(fs: Any, job_dir: str, events: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The job's writes, from its records under ``writes/``: each write is its fingerprint and
    occurrence (its 1st, 2nd, ... write of that fingerprint), with the number it had in the start
    order of the run that recorded it, sink, target, mode, ``committed`` or ``started`` (an
    earlier run started it and never committed it), and how many runs skipped it
    (``writeSkipped`` events)."""
    import json

    directory = _fs.join(job_dir, "writes")
    try:
        names = [n for n, _ in fs.list_sizes(directory) if not n.startswith(".")]
    except Exception:  # noqa: BLE001 - no writes yet
        return []
    records = _write_records(names)
    # events of job directories written before writes had occurrences name their number only
    legacy: Dict[tuple, int] = {(n, fp): k for name, n, fp, k, _ in records
                                if name.count(".") == 2}
    skipped: Dict[tuple, int] = {}
    for e in events:
        if e.get("type") == "writeSkipped":
            fp = e.get("writeFingerprint")
            k = e.get("occurrence", legacy.get((e.get("number"), fp)))
            skipped[(fp, k)] = skipped.get((fp, k), 0) + 1
    found: Dict[tuple, Dict[str, Any]] = {}
    # committed records last: what the entry says (number, sink, target, mode) is theirs
    for name, number, fingerprint, occurrence, state in sorted(
            records, key=lambda r: (r[4] == "committed", r[1])):
        key = (fingerprint, occurrence)
        entry = found.setdefault(key, {"number": number, "fingerprint": fingerprint,
                                       "occurrence": occurrence, "state": "started"})
        if state == "committed" or "sink" not in entry:
            try:
                record = json.loads(fs.read(_fs.join(directory, name)))
                entry.update({k: record.get(k) for k in ("sink", "target", "mode")})
                entry["number"] = number
            except (OSError, ValueError):
                pass
        if state == "committed":
            entry["state"] = "committed"
    for key, entry in found.items():
        entry["skipped"] = skipped.get(key, 0)
    return sorted(found.values(), key=lambda e: (e["number"], e["fingerprint"], e["occurrence"]))


def verify(directory: str, job_id: str, spark: Any = None) -> Dict[str, Any]:
    """:func:`status` with every committed file's size and CRC32 checked."""
    return status(directory, job_id, spark, crc=True)


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def render(st: Dict[str, Any]) -> str:
    """The text ``python -m fullwindow.recovery status`` prints."""
    lines = [f"job {st['job']} at {st['directory']}"]
    if not st["exists"]:
        return lines[0] + ": no such job directory"
    h = st["lease"]
    if h is None:
        lines.append("lease: none")
    else:
        left = max(0, (h["expires"] - time.time() * 1000) / 1000)
        lines.append(f"lease: {h['state']} (epoch {h['epoch']}): host {h['host']}, pid "
                     f"{h['pid']}, application {h['appId']}" +
                     (f", expires in {left:.0f} s" if h["live"] else ""))
    lines.append(f"{'operation':<16} {'fingerprint':<34} {'committed':>10} {'bytes':>10}  "
                 "state   runs")
    for op in st["operations"]:
        n = op["partitions"]
        runs = ", ".join(f"{r}: {k}" for r, k in op["runs"].items()) or "-"
        lines.append(f"{str(op['operation'])[:16]:<16} {op['fingerprint']:<34} "
                     f"{op['committed']:>4} / {n if n is not None else '?':<3} "
                     f"{_human(op['bytes']):>10}  {'intact ' if op['intact'] else 'DAMAGED'} "
                     f"{runs}")
        if op["operation"] == "shuffle":
            lines.append(f"    map tasks of query {op.get('query') or '?'}"
                         + ("" if op.get("stable", True) else " (indeterminate: kept whole)"))
        for p, why in sorted(op["damaged"].items()):
            lines.append(f"    partition {p}: {why}")
    if st.get("writes"):
        lines.append(f"{'write':<6} {'fingerprint':<24} {'#':>3} {'sink':<10} {'state':<10} "
                     f"{'skipped':>7}  target (mode)")
        for w in st["writes"]:
            lines.append(f"{w['number']:<6} {w['fingerprint']:<24} {w.get('occurrence', 1):>3} "
                         f"{str(w.get('sink'))[:10]:<10} {w['state']:<10} "
                         f"{w['skipped']:>7}  {w.get('target')} ({w.get('mode')})")
    for p in st["problems"]:
        lines.append(f"event store: {p}")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    import argparse
    import json
    import sys

    parser = argparse.ArgumentParser(
        prog="python -m fullwindow.recovery",
        description="Show, check or delete a fullwindow job's recovery directory.")
    parser.add_argument("command", choices=["status", "verify", "cleanup"])
    parser.add_argument("--dir", required=True, help="the recovery directory "
                        "(spark.fullwindow.recovery.dir)")
    parser.add_argument("--job-id", required=True, help="the job id "
                        "(spark.fullwindow.recovery.jobId)")
    parser.add_argument("--json", action="store_true", help="print plain data as JSON")
    args = parser.parse_args(argv)
    from fullwindow.errors import ConfigurationError
    from fullwindow.recovery.config import check_directory, check_job_id

    try:  # a usage error (exit 2), before anything is read or deleted
        check_directory(args.dir, "--dir")
        check_job_id(args.job_id, "--job-id")
    except ConfigurationError as err:
        parser.error(str(err))
    spark = None
    if not _fs.is_local(args.dir):
        from pyspark.sql import SparkSession

        from fullwindow.recovery._autostart import suspended

        with suspended():  # the CLI's own session is no job's (whatever spark-defaults.conf says)
            spark = SparkSession.builder.master("local[1]").appName("fullwindow-recovery") \
                .config("spark.ui.enabled", "false").getOrCreate()
    job_dir = _fs.join(args.dir, args.job_id)
    if args.command == "cleanup":
        from fullwindow.recovery.errors import RecoveryConflictError

        try:
            existed = delete_job(_fs_for(args.dir, spark), job_dir, "cleanup")
        except (RecoveryConflictError, ConfigurationError) as err:
            print(f"refused: {err}", file=sys.stderr)
            return 2
        print(f"deleted {job_dir} (the recovery directory of job {args.job_id!r}: its events, "
              "lease and committed outputs)" if existed else f"nothing to delete at {job_dir}")
        return 0
    st = (verify if args.command == "verify" else status)(args.dir, args.job_id, spark)
    print(json.dumps(st, indent=2, sort_keys=True) if args.json else render(st))
    if args.command == "verify" and not all(op["intact"] for op in st["operations"]):
        return 1
    return 0 if st["exists"] or args.command == "status" else 1


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
