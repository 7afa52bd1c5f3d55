"""Recovery after a driver crash: a resumed run against an uninterrupted one, and what recovery
costs when nothing crashes.

DESIGN.md ("Bars for speed") asks, for a job whose driver is killed at about half way, that the
resumed run take at most 0.6× the time of an uninterrupted run, and that the event store cost at
most 3%. A kill needs processes of their own, so like ``heavy_key.py`` this runs on its own:

    .venv/bin/python -m benchmarks.recovery                      # both parts, recorded
    .venv/bin/python -m benchmarks.recovery --parts resume --resume-rounds 3 --no-record
    .venv/bin/python -m benchmarks.recovery --quick --no-record  # smoke test, tiny, ~1 minute
    .venv/bin/python -m benchmarks.recovery --preset short --parts resume   # issue 12, item 6
    .venv/bin/python -m benchmarks.recovery --preset short --recovery-root hdfs

``--preset short`` is the short job of issue 12 (3 M rows in 8 partitions, about 25 s of process
time on a quiet machine, killed when 4 of 8 are committed; bar 0.65×), recorded as
``resume_short``; ``--preset long`` the 9 M-row job (``resume_long``, bar 0.6×).
``--recovery-root hdfs`` starts a real HDFS (tests/hdfs.MiniHDFS: its own process on a free port,
stopped afterwards, also on failure), puts the recovery directory there and records the parts as
``<label>_hdfs`` and ``overhead_hdfs``, beside the local-directory ones.

The job (the same in every run): ``rows`` records in ``partitions`` Parquet files are read and
hash-repartitioned by ``k`` into ``partitions`` partitions (the upstream stage: scan and shuffle
write), then ``fullWindowPartition().mapPartition(score)`` runs a loop of integer arithmetic per
row (``WORK`` rounds of a 64-bit LCG; about 10 µs of Python per row) and yields one output row
per input row, and the result is written as Parquet. Every partition costs about the same.

Part 1, **resume** (each run in its own process, own JVM, ``local[2]``, recovery on):

- U: an uninterrupted run with a fresh job id.
- R: a run with a fresh job id whose process group (Python driver, JVM, Python workers) gets
  SIGKILL as soon as half of the partitions are committed (an output file under
  ``<dir>/<jobId>/operators/<fingerprint>/`` and a task-finished event in the event store, which
  is what a restart reuses; the parent polls both every 0.1 s); then the same program is started
  again with the same job id and runs to the end. The resumed run is what is timed.

Rounds alternate U, R / R, U. Times: **job time** from the session being ready (the JVM is up)
to the output being written, measured in the child; and **process time**, from starting the
process to its exit (JVM start and shutdown included). The bar is judged on job time; the
process-time ratio is reported next to it, and so is the ratio of the job's CPU time (driver JVM
and the Python workers under it, from /proc, plus the driver Python process), which other load
on a shared machine disturbs less than wall time. After each completed run the child reads its output
back (untimed) and records its row count and a checksum; the resumed output must equal the
uninterrupted output, or the round is INVALID.

Part 2, **overhead** (one child process, one session, like the harness): the same job with
recovery off and recovery on (a fresh job id per run), alternating which goes first, after a
warm-up pair. The "on" time includes ``fullwindow.recovery.flush`` (events durable). Recovery on
is the event store *and* the durable commit of every partition's output; the event store's own
work is measured in the driver by wrapping, from this script, the store's ``append``, the
segment writes and syncs, and the listener drain (wall and thread CPU time, records, bytes).

Results go to ``benchmarks/recovery.json`` and to the marked section of
``benchmarks/notes/recovery.md`` (then RESULTS.md is rendered again).
"""
from __future__ import annotations

import argparse
import glob
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
import uuid
import warnings
from typing import Any

from benchmarks.data import ONE_PARTITION_PER_FILE
from benchmarks.common import (DEFAULT_OUT, HERE, ROOT, _cpu_busy, _machine, _proc_tree_cpu,
                               child_json_path, child_result, invocation, logger,
                               read_child_json, rotation, run_watched, session,
                               utc_date)
from benchmarks.tables import _fmt_bytes, _stats

T_IMPORT = time.time()  # close to this process's start (the child's own reference point)

JSON_PATH = os.path.join(HERE, "recovery.json")
NOTES_PATH = os.path.join(HERE, "notes", "recovery.md")
BEGIN = "<!-- recovery.py: begin (generated, do not edit) -->"
END = "<!-- recovery.py: end -->"
RESUME_BAR = 0.6
OVERHEAD_BAR = 0.03
WORK = 32
KEYS = 100_000
MASK = (1 << 64) - 1
SCHEMA = "id long, k long, score double"
DEFAULTS = {"rows": 3_000_000, "partitions": 12, "resume_rounds": 5, "overhead_rounds": 7}
QUICK = {"rows": 40_000, "partitions": 4, "resume_rounds": 1, "overhead_rounds": 1}
# named job shapes of the resume part (``--preset``): each is recorded under its own label, with
# the bar of issue 12 for that shape
PRESETS = {
    # "a ~25 s job (8 partitions, killed when half are committed)": issue 12, item 6
    "short": {"label": "resume_short", "rows": 3_000_000, "partitions": 8, "bar": 0.65},
    "long": {"label": "resume_long", "rows": 9_000_000, "partitions": 12, "bar": RESUME_BAR},
}
CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": "2g",
    "spark.sql.adaptive.coalescePartitions.enabled": "false",
    **ONE_PARTITION_PER_FILE,
}


_FS: Any = None  # the parent's view of a recovery directory on HDFS (--recovery-root hdfs)


def _is_local(path: str) -> bool:
    return "://" not in path


def _fs_of(path: str) -> Any:
    from fullwindow.recovery import _fs
    return _fs.LocalFS() if _is_local(path) else _FS


_log = logger("recovery")


def score(rows):
    """The full-window function: per row, WORK rounds of a 64-bit LCG seeded by ``v``."""
    for r in rows:
        h = r.v & MASK
        acc = 0
        for _ in range(WORK):
            h = (h * 6364136223846793005 + 1442695040888963407) & MASK
            acc += h >> 40
        yield (r.id, r.k, acc / WORK)


def _input_path(out_dir: str, rows: int, partitions: int) -> str:
    return os.path.join(os.path.abspath(out_dir), "data", f"recovery-r{rows}-p{partitions}")


# ---- child processes ---------------------------------------------------------------------------

def _session(args: argparse.Namespace, conf: dict[str, str], name: str):
    jvm = ({"spark.driver.extraJavaOptions": args.java_opts}
           if getattr(args, "java_opts", None) else {})
    return session(args.out_dir, f"recovery {name}",
                   {**CONF, "spark.sql.shuffle.partitions": str(args.partitions), **jvm, **conf})


def _generate(args: argparse.Namespace) -> None:
    from pyspark.sql import functions as F
    path = _input_path(args.out_dir, args.rows, args.partitions)
    if os.path.exists(os.path.join(path, "_SUCCESS")):
        return
    spark = _session(args, {}, "input")
    try:
        (spark.range(0, args.rows, 1, numPartitions=args.partitions)
         .select("id", F.pmod(F.xxhash64("id", F.lit(1)), F.lit(KEYS)).alias("k"),
                 F.xxhash64("id", F.lit(2)).alias("v"))
         .write.mode("overwrite").parquet(path))
    finally:
        spark.stop()


def _job(spark, args: argparse.Namespace, out: str) -> None:
    """The benchmarked job: scan + shuffle (upstream), full-window mapPartition, Parquet write."""
    df = spark.read.parquet(_input_path(args.out_dir, args.rows, args.partitions))
    (df.repartition(args.partitions, "k").fullWindowPartition().mapPartition(score, SCHEMA)
     .write.mode("overwrite").parquet(out))


def _checksum(spark, out: str) -> dict[str, Any]:
    from pyspark.sql import functions as F
    r = (spark.read.parquet(out)
         .agg(F.count(F.lit(1)).alias("n"),
              F.sum(F.pmod(F.xxhash64("id", "k", "score"), F.lit(2**31 - 1))).alias("h"),
              F.sum("id").alias("ids"))
         .collect()[0])
    return {"rows": int(r.n), "hash": int(r.h or 0), "id_sum": int(r.ids or 0)}


def _recovery_conf(directory: str, job_id: str) -> dict[str, str]:
    return {"spark.fullwindow.recovery.enabled": "true",
            "spark.fullwindow.recovery.dir": directory,
            "spark.fullwindow.recovery.jobId": job_id}


def record_job_cpu(res: dict[str, Any], cpu0: Any, cpu1: Any, driver_s: float) -> None:
    """Puts a child run's job CPU into ``res``: the driver JVM and the Python workers under it
    (``_proc_tree_cpu`` before and after: (JVM, workers) seconds, or None where /proc has none)
    and this driver Python process (``driver_s``), summed (``job_cpu_s``) and split."""
    if cpu0 and cpu1:
        res["job_cpu_s"] = (cpu1[0] - cpu0[0]) + (cpu1[1] - cpu0[1]) + driver_s
        res["job_cpu_split_s"] = {"jvm": cpu1[0] - cpu0[0],
                                  "python_workers": cpu1[1] - cpu0[1],
                                  "driver_python": driver_s}


def _child_run(args: argparse.Namespace) -> int:
    """One run of the job in this process (recovery on), timed from session-ready to written."""
    res: dict[str, Any] = {"t_import": T_IMPORT}
    with child_result(args.child_json, res) as child:
        spark = child["spark"] = _session(args, _recovery_conf(args.recovery_dir, args.job_id),
                                          args.job_id)
        res["t_ready"] = time.time()
        import fullwindow.recovery
        jvm_pid = res["jvm_pid"] = int(
            spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
        cpu0, drv0 = _proc_tree_cpu(jvm_pid), time.process_time()
        _job(spark, args, args.output)
        res["t_written"] = time.time()
        record_job_cpu(res, cpu0, _proc_tree_cpu(jvm_pid), time.process_time() - drv0)
        fullwindow.recovery.flush(spark)
        res["t_flushed"] = time.time()
        res["job_s"] = res["t_written"] - res["t_ready"]
        res["output"] = _checksum(spark, args.output)
        res["status"] = "completed"
        if args.machine:
            res["machine"] = _machine(spark)
    return 0


class _Probe:
    """Wall and thread-CPU time, calls and bytes of one wrapped function (all threads)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls = 0
        self.wall = 0.0
        self.cpu = 0.0
        self.bytes = 0

    def wrap(self, fn, size=None):
        probe = self

        def wrapped(*a, **kw):
            w0, c0 = time.perf_counter(), time.thread_time()
            try:
                return fn(*a, **kw)
            finally:
                w, c = time.perf_counter() - w0, time.thread_time() - c0
                with probe.lock:
                    probe.calls += 1
                    probe.wall += w
                    probe.cpu += c
                    if size is not None:
                        probe.bytes += size(*a, **kw)
        return wrapped

    def take(self) -> dict[str, float]:
        with self.lock:
            out = {"calls": self.calls, "wall_s": self.wall, "cpu_s": self.cpu,
                   "bytes": self.bytes}
            self.calls, self.wall, self.cpu, self.bytes = 0, 0.0, 0.0, 0
        return out


def _instrument() -> dict[str, _Probe]:
    """Wraps, from outside the product code, the driver-side work of the event pipeline and of
    setting up recovery for an operation."""
    import fullwindow.recovery._jobs as rec
    from fullwindow.recovery import _fs, eventstore
    probes = {k: _Probe() for k in ("append", "segment_write", "segment_sync", "drain",
                                    "commit_operation", "read_events")}
    es = eventstore.EventStore
    es.append = probes["append"].wrap(es.append)
    for stream in (_fs.LocalStream, _fs.HadoopStream):  # a local directory, or HDFS
        stream.write = probes["segment_write"].wrap(stream.write,
                                                    size=lambda self, data: len(data))
        stream.sync = probes["segment_sync"].wrap(stream.sync)
    rec._Runtime.drain = probes["drain"].wrap(rec._Runtime.drain)
    es.read_all = staticmethod(probes["read_events"].wrap(es.read_all))
    # DataFrame methods call fullwindow.recovery._jobs.commit_operation through the module attribute
    rec.commit_operation = probes["commit_operation"].wrap(rec.commit_operation)
    return probes


def _listing(fs: Any, job_dir: str) -> dict[str, list[str]]:
    """The job directory's committed partition files, their Hadoop ``.crc`` side files, the
    committed shuffle input's files and the event segments (paths), on any file system."""
    from fullwindow.recovery import _fs
    out: dict[str, list[str]] = {"files": [], "crcs": [], "inputs": [], "events": []}
    ops = _fs.join(job_dir, "operators")
    for op in (fs.listdir(ops) if fs.exists(ops) else []):
        for name in fs.listdir(_fs.join(ops, op)):
            path = _fs.join(ops, op, name)
            if name.startswith("part-") and name.endswith(".rows"):
                out["files"].append(path)
            elif name.startswith(".part-") and name.endswith(".rows.crc"):
                out["crcs"].append(path)
            elif name.startswith("input"):
                out["inputs"] += [_fs.join(path, m) for m in fs.listdir(path)
                                  if m.startswith("map-")]
    events = _fs.join(job_dir, "events")
    out["events"] = [_fs.join(events, n) for n in (fs.listdir(events) if fs.exists(events)
                                                   else []) if n.startswith("segment-")]
    return out


def _committed(fs: Any, job_dir: str) -> dict[str, Any]:
    got = _listing(fs, job_dir)

    def size(paths: list[str]) -> int:
        return sum(fs.size(x) or 0 for x in paths)
    return {"files": len(got["files"]), "bytes": size(got["files"]),
            "input_files": len(got["inputs"]), "input_bytes": size(got["inputs"]),
            "crc_files_bytes": size(got["crcs"]), "event_segments": len(got["events"]),
            "event_bytes": size(got["events"])}


def _child_overhead(args: argparse.Namespace) -> int:
    """Recovery off vs on, interleaved, in one session."""
    res: dict[str, Any] = {"runs": []}
    with child_result(args.child_json, res, _log) as child:
        probes = _instrument()
        import fullwindow.recovery
        spark = child["spark"] = _session(args, {}, "overhead")
        res["machine"] = _machine(spark)
        sc = spark.sparkContext
        jvm = sc._jvm
        jvm_pid = int(jvm.java.lang.ProcessHandle.current().pid())
        base = os.path.join(os.path.abspath(args.out_dir), "recovery", "overhead")
        shutil.rmtree(base, ignore_errors=True)
        os.makedirs(base)
        rdir = (os.path.join(base, "state") if not args.recovery_base
                else f"{args.recovery_base}/overhead-state")
        from fullwindow.recovery import _fs
        store_fs = _fs.filesystem(rdir, spark)
        res["loadavg_start"] = list(os.getloadavg())
        total = args.warmup + args.overhead_rounds
        for r in range(total):
            warm = r < args.warmup
            order = rotation(["off", "on"], r)
            busy = _cpu_busy()
            line = [f"background CPU {busy:.0%}" if busy is not None else ""]
            for variant in order:
                job_id = f"ovh-{r}-{uuid.uuid4().hex[:6]}"
                out = os.path.join(base, f"out-{variant}")
                if variant == "on":
                    for k, v in _recovery_conf(rdir, job_id).items():
                        spark.conf.set(k, v)
                else:
                    spark.conf.set("spark.fullwindow.recovery.enabled", "false")
                jvm.System.gc()
                for p in probes.values():
                    p.take()
                cpu0 = _proc_tree_cpu(jvm_pid)
                drv0 = time.process_time()
                start = time.perf_counter()
                _job(spark, args, out)
                written = time.perf_counter() - start
                if variant == "on":
                    fullwindow.recovery.flush(spark)
                elapsed = time.perf_counter() - start
                drv = time.process_time() - drv0
                cpu1 = _proc_tree_cpu(jvm_pid)
                run = {"round": r, "warmup": warm, "variant": variant, "first": order[0],
                       "time_s": elapsed, "written_s": written, "background_busy": busy,
                       "driver_python_cpu_s": drv,
                       "probes": {k: p.take() for k, p in probes.items()}}
                if cpu0 and cpu1:
                    run["jvm_process_cpu_s"] = cpu1[0] - cpu0[0]
                    run["python_workers_cpu_s"] = cpu1[1] - cpu0[1]
                if variant == "on":
                    job_dir = _fs.join(rdir, job_id)
                    run["committed"] = _committed(store_fs, job_dir)
                    evs = fullwindow.recovery.job_events(rdir, job_id)
                    run["events"] = len(evs)
                    run["task_finished_events"] = sum(e.get("type") == "taskFinished"
                                                      for e in evs)
                    fullwindow.recovery.cleanup(spark)  # closes the job's store, deletes it
                if r == total - 1 or r == 0:
                    run["output"] = _checksum(spark, out)
                res["runs"].append(run)
                line.append(f"{variant} {elapsed:.2f} s")
            _log(f"overhead {'warm-up' if warm else 'round'} "
                 f"{r + 1 - (0 if warm else args.warmup)}: {', '.join(x for x in line if x)}")
        spark.conf.set("spark.fullwindow.recovery.enabled", "false")
        res["loadavg_end"] = list(os.getloadavg())
        res["status"] = "completed"
    return 0


# ---- parent ------------------------------------------------------------------------------------

def _child_cmd(args: argparse.Namespace, mode: str, child_json: str, extra: list[str]) -> list[str]:
    return [sys.executable, "-m", "benchmarks.recovery", "--child", mode, "--child-json",
            child_json, "--rows", str(args.rows), "--partitions", str(args.partitions),
            "--out-dir", args.out_dir, *extra,
            *(["--recovery-base", args.recovery_base] if args.recovery_base else []),
            *([f"--java-opts={args.java_opts}"] if args.java_opts else [])]


# the driver JVM's class-data sharing (--cds): its log lines off, so that nothing is printed
CDS_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def _class_data_archive(args: argparse.Namespace, rdir: str, base: str) -> str:
    """--cds: a dynamic AppCDS archive of the driver JVM's classes (JDK 13+), made by one
    untimed, uninterrupted run of the job that writes it at exit; every timed run (U and R alike)
    then maps it. Made afresh each time, so it always matches the jars and JVM in use."""
    path = os.path.join(os.path.abspath(args.out_dir), "cds", "recovery-driver.jsa")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.exists(path):
        os.remove(path)
    plain = args.java_opts
    args.java_opts = f"-XX:ArchiveClassesAtExit={path} {CDS_QUIET} {plain}".strip()
    try:
        res = _run_process(args, "cds-dump", f"cds-{uuid.uuid4().hex[:6]}", rdir,
                           os.path.join(base, "out-cds"))
    finally:
        args.java_opts = plain
    # the JVM writes the archive as it exits, after the driver's Python process has ended
    deadline = time.time() + 300
    while res.get("jvm_pid") and os.path.exists(f"/proc/{res['jvm_pid']}") \
            and time.time() < deadline:
        time.sleep(0.2)
    if res.get("status") != "completed" or not os.path.exists(path):
        raise RuntimeError(f"--cds: the run that writes the archive failed: {res.get('status')}")
    _log(f"class-data archive {path}: {os.path.getsize(path) >> 20} MiB")
    return f"-XX:SharedArchiveFile={path} {CDS_QUIET} {plain}".strip()


def _committed_files(job_dir: str) -> int:
    if _is_local(job_dir):
        return len(glob.glob(os.path.join(job_dir, "operators", "*", "part-*.rows")))
    return len(_listing(_FS, job_dir)["files"])


def _events(directory: str, job_id: str) -> list[dict[str, Any]]:
    from fullwindow.recovery import EventStore, _fs, events_dir
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return EventStore.read_all(events_dir(_fs.join(directory, job_id)), _fs_of(directory))


def _is_input(e: dict[str, Any]) -> bool:
    """An event of a committed shuffle input (vertex ``<fingerprint>/input<i>``), not of the
    full-window operator itself."""
    return "/input" in str(e.get("fingerprint", ""))


def _durable_finished(rdir: str, job_id: str) -> int:
    """The operator's partitions with a task-finished event in the job's event store (written
    and synced)."""
    return len({e.get("partition") for e in _events(rdir, job_id)
                if e.get("type") == "taskFinished" and not _is_input(e)})


def _run_process(args: argparse.Namespace, label: str, job_id: str, rdir: str, output: str,
                 kill_at: int | None = None, machine: bool = False) -> dict[str, Any]:
    """Starts one driver process for the job; with ``kill_at``, SIGKILLs its process group as
    soon as that many partitions are committed: an output file and a durable task-finished
    event each (what a restart can reuse)."""
    cj = child_json_path(args.out_dir, f"recovery-{label}-")
    cmd = _child_cmd(args, "run", cj, ["--job-id", job_id, "--recovery-dir", rdir,
                                       "--output", output] + (["--machine"] if machine else []))
    job_dir = f"{rdir}/{job_id}"

    def at_kill_point(_proc, elapsed):
        if kill_at is None or _committed_files(job_dir) < kill_at:
            return None
        n = _durable_finished(rdir, job_id)
        return ({"at_s": elapsed, "durable_finished_at_kill": n,
                 "committed_files_at_kill": _committed_files(job_dir)} if n >= kill_at else None)

    t0 = time.time()
    returncode, elapsed, killed = run_watched(cmd, args.timeout, at_kill_point, 0.1)
    if killed is not None and not killed.get("timeout"):
        time.sleep(0.5)  # let the OS reap the JVM and the Python workers
        killed["committed_files_after_kill"] = _committed_files(job_dir)
    res = read_child_json(cj)
    res.update({"label": label, "job_id": job_id, "process_s": elapsed,
                "exit_code": returncode, "t_start": t0})
    if "t_ready" in res:
        res["startup_s"] = res["t_ready"] - t0
    if killed is not None:
        res["killed"] = killed
        res["status"] = "timed out" if killed.get("timeout") else "killed"
    elif "status" not in res:
        res["status"] = f"failed (exit {returncode}, no result)"
    return res


def _vertex_events(events: list[dict[str, Any]], inputs: bool = False) -> list[dict[str, Any]]:
    """The operator's vertex-initialized events (``inputs``: its shuffle input's instead)."""
    return [e for e in events if e.get("type") == "vertexInitialized" and _is_input(e) == inputs]


def _resume_part(args: argparse.Namespace) -> dict[str, Any]:
    base = os.path.join(os.path.abspath(args.out_dir), "recovery", "resume")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    kill_at = math.ceil(args.partitions / 2)
    rounds = []
    part: dict[str, Any] = {"kill_at_committed": kill_at, "loadavg_start": list(os.getloadavg()),
                            "rounds": rounds, "bar": args.bar}
    if args.cds:
        rdir = (os.path.join(base, "state") if not args.recovery_base
                else f"{args.recovery_base}/resume-state")
        args.java_opts = _class_data_archive(args, rdir, base)
    if args.java_opts:
        part["driver_java_options"] = args.java_opts
    for r in range(args.resume_rounds):
        order = rotation(["U", "R"], r)
        busy = _cpu_busy()
        rnd: dict[str, Any] = {"round": r, "order": list(order), "background_busy": busy,
                               "loadavg": list(os.getloadavg())}
        for v in order:
            rdir = (os.path.join(base, "state") if not args.recovery_base
                    else f"{args.recovery_base}/resume-state")
            job_id = f"{v}-{r}-{uuid.uuid4().hex[:6]}"
            out = os.path.join(base, f"out-{v}")
            if v == "U":
                u = _run_process(args, "U", job_id, rdir, out, machine=(r == 0))
                rnd["U"] = u
                _log(f"round {r + 1}: U {u['status']}"
                     + (f", job {u['job_s']:.1f} s, process {u['process_s']:.1f} s"
                        if u.get("job_s") else ""))
            else:
                k = _run_process(args, "R-killed", job_id, rdir, out, kill_at=kill_at)
                evs = _events(rdir, job_id)
                vert = _vertex_events(evs)
                k["durable_task_finished"] = len({e["partition"] for e in evs
                                                  if e.get("type") == "taskFinished"
                                                  and not _is_input(e)})
                k["input_maps_committed"] = len({e["partition"] for e in evs
                                                 if e.get("type") == "taskFinished"
                                                 and _is_input(e)})
                k["num_partitions"] = vert[0]["numPartitions"] if vert else None
                s = _run_process(args, "R-resumed", job_id, rdir, out)
                evs = _events(rdir, job_id)
                vert = _vertex_events(evs)
                s["recovered_partitions"] = vert[-1].get("recovered") if len(vert) >= 2 else None
                s["vertex_events"] = len(vert)
                # a run that shuffles (and commits) its input again initializes its input vertex
                # again; one that reads the committed input back does not
                s["input_read_back"] = len(_vertex_events(evs, inputs=True)) == 1
                rnd["R_killed"], rnd["R_resumed"] = k, s
                ki = k.get("killed", {})
                _log(f"round {r + 1}: R killed at {ki.get('at_s', float('nan')):.1f} s with "
                     f"{ki.get('durable_finished_at_kill')} partitions committed (events) and "
                     f"{ki.get('committed_files_at_kill')} output files; resumed "
                     f"{s['status']}, {s.get('recovered_partitions')} partitions recovered, "
                     f"input read back: {s.get('input_read_back')}"
                     + (f", job {s['job_s']:.1f} s, process {s['process_s']:.1f} s"
                        if s.get("job_s") else ""))
            _fs_of(rdir).delete(f"{rdir}/{job_id}")
        rounds.append(rnd)
    part["loadavg_end"] = list(os.getloadavg())
    return summarize_resume(part)


def summarize_resume(part: dict[str, Any]) -> dict[str, Any]:
    """Checks each round (both runs completed, the first R run was killed, the resumed output
    equals the uninterrupted one: same row count and checksum) and computes the ratios."""
    rounds = part["rounds"]
    for rnd in rounds:
        u, s = rnd.get("U", {}), rnd.get("R_resumed", {})
        problems = []
        if u.get("status") != "completed" or s.get("status") != "completed":
            problems.append("a run did not complete")
        elif not u.get("output") or u.get("output") != s.get("output"):
            problems.append(f"outputs differ: {u.get('output')} vs {s.get('output')}")
        if rnd.get("R_killed", {}).get("status") != "killed":
            problems.append("the first R run was not killed at the kill point")
        rnd["problems"] = problems
        if not problems:
            rnd["job_ratio"] = s["job_s"] / u["job_s"]
            rnd["process_ratio"] = s["process_s"] / u["process_s"]
            if s.get("job_cpu_s") and u.get("job_cpu_s"):
                rnd["cpu_ratio"] = s["job_cpu_s"] / u["job_cpu_s"]
    ok = [x for x in rounds if not x["problems"]]
    part["valid_rounds"] = len(ok)
    if ok:
        part["job_ratio"] = _stats([x["job_ratio"] for x in ok])
        part["process_ratio"] = _stats([x["process_ratio"] for x in ok])
        part["U_job_s"] = _stats([x["U"]["job_s"] for x in ok])
        part["R_job_s"] = _stats([x["R_resumed"]["job_s"] for x in ok])
        part["U_process_s"] = _stats([x["U"]["process_s"] for x in ok])
        part["R_process_s"] = _stats([x["R_resumed"]["process_s"] for x in ok])
        part["killed_at_s"] = _stats([x["R_killed"]["killed"]["at_s"] for x in ok])
        cpu = [x["cpu_ratio"] for x in ok if "cpu_ratio" in x]
        if cpu:
            part["cpu_ratio"] = _stats(cpu)
    part["status"] = ("INVALID" if len(ok) < len(rounds) or not ok else
                      "PASS" if part["job_ratio"]["median"] <= part.get("bar", RESUME_BAR)
                      else "MISS")
    return part


def _overhead_part(args: argparse.Namespace) -> dict[str, Any]:
    cj = child_json_path(args.out_dir, "recovery-overhead-")
    cmd = _child_cmd(args, "overhead", cj, ["--overhead-rounds", str(args.overhead_rounds),
                                            "--warmup", str(args.warmup)])
    proc = subprocess.run(cmd, cwd=ROOT, start_new_session=True)
    res = read_child_json(cj)
    res["exit_code"] = proc.returncode
    runs = [x for x in res.get("runs", []) if not x["warmup"]]
    if res.get("status") != "completed" or not runs:
        res["status"] = "FAIL"
        return res
    off = [x for x in runs if x["variant"] == "off"]
    on = [x for x in runs if x["variant"] == "on"]
    ratios = [b["time_s"] / a["time_s"] for a, b in zip(off, on)]  # on / off, per round
    res["on_off_ratio"] = _stats(ratios)
    res["off_s"] = _stats([x["time_s"] for x in off])
    res["on_s"] = _stats([x["time_s"] for x in on])
    res["ratio_of_medians"] = res["on_s"]["median"] / res["off_s"]["median"]

    def med(xs):
        xs = [x for x in xs if x is not None]
        return statistics.median(xs) if xs else None

    ev = {}
    for k in ("append", "segment_write", "segment_sync", "drain", "commit_operation",
              "read_events"):
        ev[k] = {m: med([x["probes"][k][m] for x in on]) for m in ("calls", "wall_s", "cpu_s",
                                                                  "bytes")}
    ev["drain_off"] = {m: med([x["probes"]["drain"][m] for x in off])
                       for m in ("calls", "wall_s", "cpu_s")}
    # the event store's own driver work in a run (CPU): appends, segment writes and syncs,
    # draining the listener's queue through py4j, and reading the job's events when the operation
    # is defined (wall time, counted whole)
    per_run = []
    for x in on:
        p = x["probes"]
        per_run.append(p["append"]["cpu_s"] + p["segment_write"]["cpu_s"]
                       + p["segment_sync"]["cpu_s"] + p["drain"]["cpu_s"]
                       + p["read_events"]["wall_s"])
    res["event_store_cpu_s"] = _stats(per_run)
    per_run_wall = [x["probes"]["segment_sync"]["wall_s"] + x["probes"]["segment_write"]["wall_s"]
                    for x in on]
    res["event_store_io_wall_s"] = _stats(per_run_wall)
    res["event_store_share"] = res["event_store_cpu_s"]["median"] / res["on_s"]["median"]
    res["probes_median"] = ev
    res["committed_median"] = {k: med([x["committed"][k] for x in on])
                               for k in on[0]["committed"]}
    res["events_median"] = med([x["events"] for x in on])
    for k in ("jvm_process_cpu_s", "python_workers_cpu_s", "driver_python_cpu_s"):
        res[f"{k}_median"] = {"off": med([x.get(k) for x in off]), "on": med([x.get(k) for x in on])}
    outs = [x["output"] for x in res["runs"] if "output" in x]
    res["outputs_equal"] = all(o == outs[0] for o in outs)
    res["status"] = ("INVALID" if not res["outputs_equal"] else
                     "PASS" if res["event_store_share"] <= OVERHEAD_BAR else "MISS")
    res["total_status"] = "within 3%" if res["on_off_ratio"]["median"] <= 1 + OVERHEAD_BAR \
        else "above 3%"
    return res


def _fr(s: dict[str, float] | None, unit: str = "×", digits: int = 2) -> str:
    if not s:
        return "–"
    return (f"{s['median']:.{digits}f}{unit} [{s['min']:.{digits}f}–{s['max']:.{digits}f}]")


def _part_names(record: dict[str, Any]) -> list[str]:
    """The recorded parts in display order: resume (the default size), other resume sizes
    (``--label``), overhead."""
    names = [k for k, v in record.items() if isinstance(v, dict) and k.startswith("resume")
             and "rounds" in v]
    return sorted(names, key=lambda k: (k != "resume", k)) + sorted(
        k for k, v in record.items() if k.startswith("overhead") and isinstance(v, dict))


def _size(part: dict[str, Any], record: dict[str, Any]) -> str:
    rows = part.get("rows", record.get("rows"))
    parts = part.get("partitions", record.get("partitions"))
    return f"{rows:,} rows, {parts} partitions"


def _cpu_line(ov: dict[str, Any]) -> str:
    runs = [x for x in ov.get("runs", []) if not x.get("warmup") and "jvm_process_cpu_s" in x]
    tot = {v: [x["jvm_process_cpu_s"] + x["python_workers_cpu_s"] + x["driver_python_cpu_s"]
               for x in runs if x["variant"] == v] for v in ("off", "on")}
    if not tot["off"] or not tot["on"]:
        return "not recorded"
    off, on = statistics.median(tot["off"]), statistics.median(tot["on"])
    pairs = list(zip([x for x in runs if x["variant"] == "off"],
                     [x for x in runs if x["variant"] == "on"]))
    jvm = statistics.median([b["jvm_process_cpu_s"] - a["jvm_process_cpu_s"] for a, b in pairs])
    return (f"off {off:.2f} s, on {on:.2f} s ({on / off - 1:+.1%}); the driver JVM's CPU, on "
            f"minus off in the same round, median {jvm:+.2f} s")


def _markdown(record: dict[str, Any]) -> str:
    lines = [BEGIN]
    m = record.get("machine") or {}
    lines.append(
        f"**Recovery** (`rows` records in `partitions` Parquet files, hash-repartitioned by `k` "
        f"into `partitions` partitions, then `fullWindowPartition().mapPartition(score)` "
        f"({record.get('work', WORK)} LCG rounds per row in Python, one output row per input "
        f"row) and a Parquet write; `local[2]`, recovery directory on the local disk (parts "
        f"named `*_hdfs`: on HDFS, a NameNode and a DataNode in one process of their own on "
        f"127.0.0.1, tests/hdfs.py); "
        f"{m.get('cores', '?')} cores, {m.get('memory_gib', '?')} GiB RAM). Produced by:")
    lines.append("")
    names = _part_names(record)
    for name in names:
        part = record[name]
        pm = part.get("machine") or m
        la = part.get("loadavg") or record.get("loadavg", {})
        lines.append(
            f"- {name} ({_size(part, record)}): `{part.get('command', record.get('command'))}` "
            f"on {part.get('date', record.get('date'))}, commit {pm.get('commit', '?')}"
            + (" plus uncommitted changes" if pm.get("worktree_dirty") else "")
            + "; load average (1, 5, 15 min) at start "
            f"{', '.join(f'{x:.2f}' for x in la.get('start', []))}, at end "
            f"{', '.join(f'{x:.2f}' for x in la.get('end', []))}")
    lines += ["", "| bar | part | measured | rounds | status |", "|---|---|---|---|---|"]
    for name in names:
        res = record[name]
        if name.startswith("overhead"):
            ov = res
            if "event_store_share" not in ov:
                lines.append(f"| event store ≤ {OVERHEAD_BAR:.0%} | {name} | – | – | "
                             f"{ov.get('status')} |")
                continue
            lines += [
                f"| event store ≤ {OVERHEAD_BAR:.0%}: its driver work / job time | {name} | "
                f"{ov['event_store_share']:.2%} (CPU {_fr(ov['event_store_cpu_s'], ' s', 3)}) | "
                f"{ov['on_s']['n']} | {ov['status']} |",
                f"| (recovery on / off: event store + durable commit; not the bar) | {name} | "
                f"{_fr(ov['on_off_ratio'], digits=3)} (ratio of medians "
                f"{ov['ratio_of_medians']:.3f}×) | {ov['on_s']['n']} | {ov['total_status']} |",
            ]
            continue
        lines += [
            f"| resumed job time ≤ {res.get('bar', RESUME_BAR)}× uninterrupted | {name} "
            f"({_size(res, record)}) | "
            f"{_fr(res.get('job_ratio'))} | {res.get('valid_rounds')} of {len(res['rounds'])} | "
            f"{res['status']} |",
            f"| (process time, JVM start included; not the bar) | {name} | "
            f"{_fr(res.get('process_ratio'))} | {res.get('valid_rounds')} | – |",
            f"| (job CPU time: JVM + Python workers + driver; not the bar) | {name} | "
            f"{_fr(res.get('cpu_ratio'))} | {res.get('valid_rounds')} | – |",
        ]
    lines.append("")
    for name in names:
        if name.startswith("overhead"):
            continue
        res = record[name]
        nparts = res.get("partitions", record.get("partitions"))
        jopts = res.get("driver_java_options")
        lines += [f"Resume rounds, {name} ({_size(res, record)}; job time: session ready → "
                  "output written; process time: process start → exit; job CPU split JVM / "
                  "Python workers where recorded"
                  + (f"; every run's driver JVM (U and R alike) with `{jopts}`" if jopts else "")
                  + "):", "",
                  "| round | order | U job / process (job CPU) | killed at (process time) | "
                  "committed at kill: durable events / files | recovered (+ input: its committed "
                  "shuffle input read back) | resumed job / process "
                  "(job CPU) | ratio job / process / CPU | output (rows, checksum) | background "
                  "CPU |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for x in res["rounds"]:
            u, k, s = x.get("U", {}), x.get("R_killed", {}), x.get("R_resumed", {})
            ki = k.get("killed", {})
            outp = s.get("output") or {}
            bg = x.get("background_busy")

            def cpu(run):
                sp = run.get("job_cpu_split_s")
                return (f"{run.get('job_cpu_s', 0):.0f} s" + (
                    f": {sp['jvm']:.0f} / {sp['python_workers']:.0f}" if sp else ""))
            lines.append(
                f"| {x['round'] + 1} | {', '.join(x['order'])} | "
                f"{u.get('job_s', 0):.1f} / {u.get('process_s', 0):.1f} s ({cpu(u)}) | "
                f"{ki.get('at_s', 0):.1f} s | {ki.get('durable_finished_at_kill', '?')} / "
                f"{ki.get('committed_files_at_kill', '?')} of "
                f"{k.get('num_partitions') or nparts} | "
                f"{s.get('recovered_partitions', '?')}"
                f"{' + input' if s.get('input_read_back') else ''} | "
                f"{s.get('job_s', 0):.1f} / {s.get('process_s', 0):.1f} s ({cpu(s)}) | "
                + (f"{x['job_ratio']:.2f} / {x['process_ratio']:.2f} / "
                   f"{x.get('cpu_ratio', float('nan')):.2f}" if "job_ratio" in x
                   else "INVALID: " + "; ".join(x["problems"]))
                + f" | {outp.get('rows', 0):,}, {outp.get('hash', '?')}"
                + (" (= U)" if u.get("output") == s.get("output") else " (≠ U)")
                + (f" | {bg:.0%} |" if bg is not None else " | ? |"))
        lines.append("")
    for name in names:
        ov = record[name]
        if not name.startswith("overhead") or "on_s" not in ov:
            continue
        p = ov["probes_median"]
        c = ov["committed_median"]
        cpu = {k: ov[f"{k}_median"] for k in ("jvm_process_cpu_s", "python_workers_cpu_s",
                                                "driver_python_cpu_s")}

        def fc(d):
            return "–" if d is None else f"{d:.2f} s"
        lines += [
            f"Overhead rounds, {name} (one session; recovery off vs on with a fresh job id per run, "
            f"{ov.get('warmup', 1)} warm-up pair then {ov['on_s']['n']} timed pairs, alternating "
            "which goes first; \"on\" includes `recovery.flush`):", "",
            "| variant | time median [min–max] | JVM process CPU | Python workers CPU | driver "
            "Python CPU |", "|---|---|---|---|---|",
            f"| recovery off | {_fr(ov['off_s'], ' s')} | {fc(cpu['jvm_process_cpu_s']['off'])} "
            f"| {fc(cpu['python_workers_cpu_s']['off'])} | "
            f"{fc(cpu['driver_python_cpu_s']['off'])} |",
            f"| recovery on | {_fr(ov['on_s'], ' s')} | {fc(cpu['jvm_process_cpu_s']['on'])} | "
            f"{fc(cpu['python_workers_cpu_s']['on'])} | {fc(cpu['driver_python_cpu_s']['on'])} |",
            "",
            "Job CPU (driver JVM + Python workers + driver Python, summed per run), median: "
            + _cpu_line(ov) + ".",
            "",
            "Per-round on/off ratios (run order): "
            + " ".join(f"{b['time_s'] / a['time_s']:.3f}" for a, b in zip(
                [x for x in ov["runs"] if not x["warmup"] and x["variant"] == "off"],
                [x for x in ov["runs"] if not x["warmup"] and x["variant"] == "on"])) + ".",
            "",
            "What recovery on wrote per run (medians): "
            f"{c['files']:.0f} committed partition files, {_fmt_bytes(c['bytes'])} "
            f"(+ {_fmt_bytes(c['crc_files_bytes'])} of Hadoop `.crc` side files); "
            + (f"committed shuffle input {c['input_files']:.0f} files (data and index of each "
               f"map output, {'copies of' if name.endswith('_hdfs') else 'hard links to'} Spark's "
               f"shuffle files), {_fmt_bytes(c['input_bytes'])}; "
               if "input_files" in c else "") +
            f"{ov['events_median']:.0f} job events in {c['event_segments']:.0f} segment, "
            f"{_fmt_bytes(c['event_bytes'])}.",
            "",
            "Event store work in the driver per run (medians; measured by wrapping the store's "
            "functions from the benchmark): "
            f"`append` {p['append']['calls']:.0f} calls, {p['append']['cpu_s'] * 1e3:.2f} ms "
            f"CPU; segment writes {p['segment_write']['calls']:.0f}, "
            f"{_fmt_bytes(p['segment_write']['bytes'])}, {p['segment_write']['wall_s'] * 1e3:.2f} "
            f"ms; fsyncs {p['segment_sync']['calls']:.0f}, {p['segment_sync']['wall_s'] * 1e3:.1f} "
            f"ms wall, {p['segment_sync']['cpu_s'] * 1e3:.2f} ms CPU; listener drains "
            f"{p['drain']['calls']:.0f} calls, {p['drain']['cpu_s'] * 1e3:.1f} ms CPU, "
            f"{p['drain']['wall_s'] * 1e3:.0f} ms wall (recovery off, after the first on run: "
            f"{ov['probes_median']['drain_off']['calls']:.0f} calls, "
            f"{ov['probes_median']['drain_off']['cpu_s'] * 1e3:.1f} ms CPU); reading the job's "
            f"events at definition {p['read_events']['wall_s'] * 1e3:.1f} ms; "
            f"`commit_operation` (fingerprint, verify, plan) {p['commit_operation']['wall_s']:.3f} s "
            "wall.",
            "",
        ]
    lines.append(END)
    return "\n".join(lines)


def _record(record: dict[str, Any]) -> None:
    from benchmarks.report import RESULTS_MD, record_standalone

    record_standalone(JSON_PATH, record, NOTES_PATH, BEGIN, END, _markdown(record), RESULTS_MD)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.recovery",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int)
    p.add_argument("--partitions", type=int)
    p.add_argument("--resume-rounds", type=int)
    p.add_argument("--overhead-rounds", type=int)
    p.add_argument("--warmup", type=int, default=1, help="overhead warm-up pairs (default 1)")
    p.add_argument("--parts", default="resume,overhead")
    p.add_argument("--label",
                   help="name the resume part is recorded under (default resume; e.g. "
                        "resume_long for another job size; parts of other names are kept)")
    p.add_argument("--preset", choices=sorted(PRESETS),
                   help="a named job shape of the resume part, recorded under its own label: "
                        + "; ".join(f"{k}: {v['rows']:,} rows, {v['partitions']} partitions, "
                                    f"label {v['label']}, bar {v['bar']}x"
                                    for k, v in PRESETS.items())
                        + " (--rows/--partitions/--label override it)")
    p.add_argument("--recovery-root", choices=("local", "hdfs"), default="local",
                   help="where the recovery directory is: the local disk (default) or a real "
                        "HDFS started for the run (tests/hdfs.MiniHDFS, a free port, stopped "
                        "afterwards); parts are recorded under <label>_hdfs and overhead_hdfs")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per process")
    p.add_argument("--java-opts", default="",
                   help="spark.driver.extraJavaOptions of every run (U and R alike)")
    p.add_argument("--cds", action="store_true",
                   help="resume part: the driver JVM maps a class-data archive (AppCDS) made by "
                        "one untimed run first; every timed run alike")
    p.add_argument("--quick", action="store_true", help="smoke test: tiny, one round each")
    p.add_argument("--out-dir", default=DEFAULT_OUT)
    p.add_argument("--no-record", action="store_true",
                   help="print only; do not write recovery.json and notes/recovery.md")
    p.add_argument("--json", help="also write the record to this file")
    p.add_argument("--render", action="store_true",
                   help="only rewrite notes/recovery.md (and RESULTS.md) from recovery.json")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--child-json", help=argparse.SUPPRESS)
    p.add_argument("--job-id", help=argparse.SUPPRESS)
    p.add_argument("--recovery-dir", help=argparse.SUPPRESS)
    p.add_argument("--recovery-base", help=argparse.SUPPRESS)
    p.add_argument("--output", help=argparse.SUPPRESS)
    p.add_argument("--machine", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--generate", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.bar = RESUME_BAR
    shape = PRESETS.get(args.preset or "", {})
    for k, v in shape.items():
        if getattr(args, k, None) is None or k == "bar":
            setattr(args, k, v)
    if args.label is None:
        args.label = "resume"
    preset = QUICK if args.quick else DEFAULTS
    for k, v in preset.items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    if args.quick:
        args.warmup = 0
    if args.child == "run":
        return _child_run(args)
    if args.child == "overhead":
        return _child_overhead(args)
    if args.generate:
        _generate(args)
        return 0
    if args.render:
        with open(JSON_PATH) as f:
            _record(json.load(f))
        return 0
    os.makedirs(args.out_dir, exist_ok=True)
    parts = [x.strip() for x in args.parts.split(",") if x.strip()]
    command = invocation("benchmarks.recovery", argv)
    _log(f"input: {args.rows:,} rows, {args.partitions} partitions")
    subprocess.run([sys.executable, "-m", "benchmarks.recovery", "--generate", "--rows",
                    str(args.rows), "--partitions", str(args.partitions), "--out-dir",
                    args.out_dir], cwd=ROOT, check=True)
    record: dict[str, Any] = {
        "command": command, "rows": args.rows, "partitions": args.partitions, "work": WORK,
        "quick": args.quick,
        "date": utc_date(),
        "loadavg": {"start": list(os.getloadavg())}}
    def stamp(part: dict[str, Any], load0: list[float]) -> None:
        part.update({"command": command, "date": record["date"], "rows": args.rows,
                     "partitions": args.partitions, "work": WORK,
                     "loadavg": {"start": load0, "end": list(os.getloadavg())}})

    if not args.label.startswith("resume"):
        p.error("--label must start with 'resume'")
    hdfs = None
    overhead_name = "overhead"
    if args.recovery_root == "hdfs":
        args.label += "_hdfs"
        overhead_name = "overhead_hdfs"
        hdfs, spark = _start_hdfs(args)
    try:
        _run_parts(args, parts, record, stamp, overhead_name)
    finally:
        if hdfs is not None:
            spark.stop()
            hdfs.stop()
    return _finish(args, record)


def _start_hdfs(args: argparse.Namespace) -> tuple[Any, Any]:
    """A real HDFS (tests/hdfs.py: its own process on a free port) for the recovery directory,
    and a small Spark session in this process to look into it (the kill point)."""
    global _FS
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from hdfs import MiniHDFS
    from pyspark.sql import SparkSession

    from fullwindow.recovery import _fs
    hdfs = MiniHDFS().start()
    try:
        spark = (SparkSession.builder.master("local[1]").appName("recovery benchmark: HDFS view")
                 .config("spark.ui.enabled", "false").config("spark.driver.memory", "512m")
                 .getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        args.recovery_base = f"{hdfs.uri}/fw-bench"
        _FS = _fs.filesystem(args.recovery_base, spark)
        _log(f"recovery directory on HDFS: {args.recovery_base}")
        return hdfs, spark
    except BaseException:
        hdfs.stop()
        raise


def _run_parts(args: argparse.Namespace, parts: list[str], record: dict[str, Any], stamp: Any,
               overhead_name: str) -> None:
    root = {"recovery_root": args.recovery_root}
    if "resume" in parts:
        load0 = list(os.getloadavg())
        record[args.label] = {**_resume_part(args), **root}
        stamp(record[args.label], load0)
        first_u = next((x["U"] for x in record[args.label]["rounds"] if x.get("U", {}).get(
            "machine")), None)
        if first_u:
            record["machine"] = record[args.label]["machine"] = first_u.pop("machine")
    if "overhead" in parts:
        load0 = list(os.getloadavg())
        record[overhead_name] = {**_overhead_part(args), **root}
        stamp(record[overhead_name], load0)
        if "machine" in record[overhead_name]:
            record.setdefault("machine", record[overhead_name]["machine"])


def _finish(args: argparse.Namespace, record: dict[str, Any]) -> int:
    record["loadavg"]["end"] = list(os.getloadavg())
    # a part not run now keeps its last recorded result (same job size only), like results.json
    if not args.no_record and os.path.exists(JSON_PATH):
        try:
            with open(JSON_PATH) as f:
                old = json.load(f)
        except (OSError, ValueError):
            old = {}
        for name in _part_names(old):
            if name not in record:
                kept = old[name]
                for k in ("rows", "partitions", "work", "command", "date", "loadavg"):
                    kept.setdefault(k, old.get(k))  # records from before parts carried these
                record[name] = kept
                record.setdefault("machine", old.get("machine"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(record, f, indent=1, sort_keys=True)
    if not args.no_record:
        with open(JSON_PATH, "w") as f:
            json.dump(record, f, indent=1, sort_keys=True)
            f.write("\n")
    print(_markdown(record))
    if not args.no_record:
        _record(record)
        _log(f"recorded in {os.path.relpath(JSON_PATH, ROOT)} and "
             f"{os.path.relpath(NOTES_PATH, ROOT)}")
    bad = [record[n].get("status") for n in _part_names(record)]
    return 1 if any(s in ("INVALID", "FAIL") for s in bad) else 0


if __name__ == "__main__":
    sys.exit(main())
