"""What whole-job recovery (``spark.fullwindow.recovery.scope=job``) costs a plain job, and what a
resume saves: issue 48, item 4.

The job has no full-window operation: Parquet ``facts`` (``rows`` records of ``id``, ``k``, ``v``
and a 32-character ``pad``, in ``partitions`` files) are joined with Parquet ``dims`` (``keys``
records, 2 files) on ``k`` by a shuffle join (broadcast off), grouped by ``id % groups``
(``groupBy().agg``: a count, a sum of ``v * w`` and the largest ``pad``) and written as Parquet.
Three shuffles: both join sides and the aggregation's. Like ``recovery.py`` it starts processes
of its own and kills them, so it runs on its own:

    .venv/bin/python -m benchmarks.jobscope                           # both parts, recorded
    .venv/bin/python -m benchmarks.jobscope --quick --no-record       # smoke test, ~2 minutes
    .venv/bin/python -m benchmarks.jobscope --parts overhead --overhead-rounds 3

Part **overhead** (one child process, one session, ``local[2]``): the job with recovery off and
with recovery on (``scope=job``, a fresh job id each run: every shuffle's map outputs kept under
the job's directory, a job event per finished map task), alternating which goes first, after a
warm-up pair. "On" includes starting the job's recovery (``fullwindow.recovery.start``) and
``fullwindow.recovery.flush`` (events durable). Bar: on / off ≤ 1.10 (issue 48). Beside it: the
bytes of the job directory's kept shuffle files against the bytes of Spark's own shuffle files the
run wrote (the new ``shuffle_*.data`` and ``.index`` files in the session's ``spark.local.dir``),
and how many of the kept bytes are hard links to Spark's files (no second copy on the disk).

Part **resume** (each run its own process, own JVM, recovery on): U, an uninterrupted run with a
fresh job id; R, a run with a fresh job id whose process group is SIGKILLed at about half of its time (both join sides'
map tasks and half of the join stage's have durable task-finished events), then started again with the same job
id and run to the end. Job time: from the session being ready to the output written, the start of
the job's recovery (reading what the killed run kept) included. Bar: resumed / uninterrupted ≤ 0.6
(issue 48). The resumed output must equal the uninterrupted one (row count and a checksum), or the
round is INVALID.

``--recovery-root hdfs`` or ``s3`` runs part **overhead** with the job's directory on a real
HDFS (tests/hdfs.MiniHDFS) or a real S3 API server (moto, tests/s3.MotoS3), each its own
process on 127.0.0.1, started for the run; the parts are recorded as ``overhead_hdfs`` and
``overhead_s3``. There each kept map output is uploaded to the store by a thread of its
executor after its map task ended: beside the ratio, the table gives how long the map tasks spent
keeping their outputs (the ``commitMs`` of their task-finished events) against their whole run
time, and how long the upload threads spent (``uploadMs``).

Results go to ``benchmarks/jobscope.json`` and to ``benchmarks/notes/jobscope.md`` (then
RESULTS.md is rendered again).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
import uuid
import warnings
from typing import Any

from benchmarks.common import (DEFAULT_OUT, HERE, ROOT, _cpu_busy, _machine, _proc_tree_cpu,
                               child_json_path, child_result, invocation, logger,
                               read_child_json, rotation, run_watched, session, utc_date)
from benchmarks.recovery import _fr, record_job_cpu, summarize_resume
from benchmarks.tables import _fmt_bytes, _stats

JSON_PATH = os.path.join(HERE, "jobscope.json")
NOTES_PATH = os.path.join(HERE, "notes", "jobscope.md")
BEGIN = "<!-- jobscope.py: begin (generated, do not edit) -->"
END = "<!-- jobscope.py: end -->"
OVERHEAD_BAR = 1.10
RESUME_BAR = 0.6
REMOTE_PARTS = ("overhead_hdfs", "overhead_s3")
PARTS = ("overhead", "resume", *REMOTE_PARTS)
DIM_FILES = 2
DEFAULTS = {"rows": 40_000_000, "partitions": 8, "keys": 200_000, "groups": 4_000_000,
            "resume_rounds": 3, "overhead_rounds": 3}
QUICK = {"rows": 200_000, "partitions": 4, "keys": 5_000, "groups": 50_000,
         "resume_rounds": 1, "overhead_rounds": 1}
CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": "3g",
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.adaptive.coalescePartitions.enabled": "false",
    "spark.sql.files.maxPartitionBytes": "1g",  # a task per input file
    "spark.sql.files.openCostInBytes": "1g",
}

_log = logger("jobscope")


def _input(args: argparse.Namespace) -> str:
    return os.path.join(os.path.abspath(args.out_dir), "data",
                        f"jobscope-r{args.rows}-p{args.partitions}-k{args.keys}")


def _session(args: argparse.Namespace, name: str, conf: dict[str, str] | None = None):
    return session(args.out_dir, f"jobscope {name}",
                   {**CONF, "spark.sql.shuffle.partitions": str(args.partitions), **(conf or {})})


def _recovery_conf(directory: str, job_id: str) -> dict[str, str]:
    return {"spark.fullwindow.recovery.enabled": "true",
            "spark.fullwindow.recovery.dir": directory,
            "spark.fullwindow.recovery.jobId": job_id,
            "spark.fullwindow.recovery.scope": "job"}


def _generate(args: argparse.Namespace) -> None:
    from pyspark.sql import functions as F
    path = _input(args)
    if os.path.exists(os.path.join(path, "dims", "_SUCCESS")):
        return
    spark = _session(args, "input")
    try:
        (spark.range(0, args.rows, 1, numPartitions=args.partitions)
         .select("id", F.pmod(F.xxhash64("id", F.lit(1)), F.lit(args.keys)).alias("k"),
                 F.pmod(F.xxhash64("id", F.lit(2)), F.lit(1000)).alias("v"),
                 F.substring(F.sha2(F.col("id").cast("string"), 256), 1, 32).alias("pad"))
         .write.mode("overwrite").parquet(os.path.join(path, "facts")))
        (spark.range(0, args.keys, 1, numPartitions=DIM_FILES)
         .select(F.col("id").alias("k"), (F.col("id") % 7 + 1).alias("w"))
         .write.mode("overwrite").parquet(os.path.join(path, "dims")))
    finally:
        spark.stop()


def _job(spark, args: argparse.Namespace, out: str) -> None:
    """The measured job: a shuffle join, an aggregation, a Parquet write."""
    from pyspark.sql import functions as F
    facts = spark.read.parquet(os.path.join(_input(args), "facts"))
    dims = spark.read.parquet(os.path.join(_input(args), "dims"))
    (facts.join(dims, "k")
     .groupBy((F.col("id") % args.groups).alias("g"))
     .agg(F.count(F.lit(1)).alias("n"), F.sum(F.col("v") * F.col("w")).alias("s"),
          F.max("pad").alias("pad"))
     .write.mode("overwrite").parquet(out))


def _checksum(spark, out: str) -> dict[str, Any]:
    from pyspark.sql import functions as F
    r = (spark.read.parquet(out)
         .agg(F.count(F.lit(1)).alias("rows"),
              F.sum(F.pmod(F.xxhash64("g", "n", "s", "pad"), F.lit(2**31 - 1))).alias("h"),
              F.sum("n").alias("n"))
         .collect()[0])
    return {"rows": int(r.rows), "hash": int(r.h or 0), "n": int(r.n or 0)}


def _map_tasks(args: argparse.Namespace) -> int:
    """The job's shuffle map tasks: a task per facts file, per dims file, and per join
    partition (the aggregation's map side)."""
    return args.partitions + DIM_FILES + args.partitions


def _half_way(args: argparse.Namespace) -> int:
    """The kill point, about half of the job's time: both join sides kept and half of the
    join stage's map tasks (the join, the partial aggregation and its shuffle write: the costliest
    stage)."""
    return args.partitions + DIM_FILES + math.ceil(args.partitions / 2)


def _shuffle_files(local_dir: str) -> dict[int, int]:
    """Spark's shuffle files under ``local_dir``: inode -> bytes."""
    out = {}
    for root, _dirs, files in os.walk(local_dir):
        for name in files:
            if name.startswith("shuffle_") and name.endswith((".data", ".index")):
                try:
                    st = os.stat(os.path.join(root, name))
                except FileNotFoundError:
                    continue
                out[st.st_ino] = st.st_size
    return out


def _kept(job_dir: str, spark_files: dict[int, int]) -> dict[str, Any]:
    """The job directory's kept shuffle files: count, bytes, and bytes that are hard links to
    one of ``spark_files`` (inode -> bytes); the event segments' bytes."""
    files = nbytes = linked = events = 0
    for root, _dirs, names in os.walk(job_dir):
        for name in names:
            st = os.stat(os.path.join(root, name))
            if os.path.relpath(root, job_dir).split(os.sep)[0] == "events":
                events += st.st_size
            elif name.startswith("map-") and name.endswith((".data", ".index")):
                files += 1
                nbytes += st.st_size
                if st.st_ino in spark_files:
                    linked += st.st_size
    return {"files": files, "bytes": nbytes, "linked_bytes": linked, "event_bytes": events}


def _kept_remote(finished: list[dict[str, Any]]) -> dict[str, Any]:
    """What ``_kept`` gives, from the task-finished events of a job directory on a remote store
    (copies: nothing there is a link to Spark's files); the events' own bytes are not known."""
    return {"files": 2 * len(finished),
            "bytes": sum(e.get("bytes", 0) + e.get("indexBytes", 0) for e in finished),
            "linked_bytes": 0, "event_bytes": 0}


def _store_conf(args: argparse.Namespace) -> dict[str, str]:
    """The session settings that reach the job directory's store (S3: moto's endpoint and keys,
    the S3A jars for executors; the driver gets the jars from the parent's environment)."""
    return json.loads(args.store_conf) if args.store_conf else {}


# ---- child processes ---------------------------------------------------------------------------

def _child_run(args: argparse.Namespace) -> int:
    """One run of the job in this process, recovery on, timed from the session being ready
    (recovery's start, which reads what an earlier run kept, included) to the output written."""
    res: dict[str, Any] = {}
    with child_result(args.child_json, res, _log) as child:
        import fullwindow.recovery
        spark = child["spark"] = _session(args, args.job_id)
        res["t_ready"] = time.time()
        jvm_pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
        cpu0, drv0 = _proc_tree_cpu(jvm_pid), time.process_time()
        for k, v in _recovery_conf(args.recovery_dir, args.job_id).items():
            spark.conf.set(k, v)
        fullwindow.recovery.start(spark)
        _job(spark, args, args.output)
        res["t_written"] = time.time()
        record_job_cpu(res, cpu0, _proc_tree_cpu(jvm_pid), time.process_time() - drv0)
        fullwindow.recovery.flush(spark)
        res["job_s"] = res["t_written"] - res["t_ready"]
        spark.conf.set("spark.fullwindow.recovery.enabled", "false")  # not a query of the job
        res["output"] = _checksum(spark, args.output)
        res["status"] = "completed"
        if args.machine:
            res["machine"] = _machine(spark)
    return 0


def _child_overhead(args: argparse.Namespace) -> int:
    """Recovery off vs on (scope=job), interleaved, in one session."""
    res: dict[str, Any] = {"runs": []}
    with child_result(args.child_json, res, _log) as child:
        import fullwindow.recovery
        base = os.path.join(os.path.abspath(args.out_dir), "jobscope", "overhead")
        shutil.rmtree(base, ignore_errors=True)
        local_dir = os.path.join(base, "spark-local")
        os.makedirs(local_dir)
        spark = child["spark"] = _session(args, "overhead", {"spark.local.dir": local_dir,
                                                             **_store_conf(args)})
        res["machine"] = _machine(spark)
        jvm = spark.sparkContext._jvm
        jvm_pid = int(jvm.java.lang.ProcessHandle.current().pid())
        rdir = args.recovery_dir or os.path.join(base, "state")
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
                jvm.System.gc()
                before = _shuffle_files(local_dir)
                cpu0, drv0 = _proc_tree_cpu(jvm_pid), time.process_time()
                start = time.perf_counter()
                if variant == "on":
                    for k, v in _recovery_conf(rdir, job_id).items():
                        spark.conf.set(k, v)
                    fullwindow.recovery.start(spark)
                _job(spark, args, out)
                written = time.perf_counter() - start
                if variant == "on":
                    fullwindow.recovery.flush(spark)
                elapsed = time.perf_counter() - start
                cpu1, drv = _proc_tree_cpu(jvm_pid), time.process_time() - drv0
                new = {i: b for i, b in _shuffle_files(local_dir).items() if i not in before}
                run = {"round": r, "warmup": warm, "variant": variant, "first": order[0],
                       "time_s": elapsed, "written_s": written, "background_busy": busy,
                       "driver_python_cpu_s": drv, "shuffle_files": len(new),
                       "shuffle_bytes": sum(new.values())}
                if cpu0 and cpu1:
                    run["jvm_process_cpu_s"] = cpu1[0] - cpu0[0]
                    run["python_workers_cpu_s"] = cpu1[1] - cpu0[1]
                if variant == "on":
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        evs = fullwindow.recovery.job_events(rdir, job_id, spark)
                    finished = [e for e in evs if e.get("type") == "taskFinished"]
                    run["kept"] = (_kept(os.path.join(rdir, job_id), new)
                                   if args.recovery_root == "local" else _kept_remote(finished))
                    run["events"] = len(evs)
                    run["map_tasks_kept"] = len(finished)
                    # what keeping the outputs cost the map tasks: their time in it, of their run
                    run["commit_s"] = sum(e.get("commitMs", 0) for e in finished) / 1000
                    # on another store, the executors' upload threads' time after the tasks
                    # ended (the tasks did not wait for it)
                    run["upload_s"] = sum(e.get("uploadMs", 0) for e in finished) / 1000
                    run["map_run_s"] = sum((e.get("metrics") or {}).get("executorRunTime", 0)
                                           for e in finished) / 1000
                    fullwindow.recovery.cleanup(spark)  # closes the job's store, deletes it
                    spark.conf.set("spark.fullwindow.recovery.enabled", "false")
                if r == total - 1 or r == 0:
                    run["output"] = _checksum(spark, out)
                res["runs"].append(run)
                line.append(f"{variant} {elapsed:.2f} s")
            _log(f"overhead {'warm-up' if warm else 'round'} "
                 f"{r + 1 - (0 if warm else args.warmup)}: {', '.join(x for x in line if x)}")
        res["loadavg_end"] = list(os.getloadavg())
        res["status"] = "completed"
    return 0


# ---- parent ------------------------------------------------------------------------------------

def _child_cmd(args: argparse.Namespace, mode: str, child_json: str, extra: list[str]) -> list[str]:
    return [sys.executable, "-m", "benchmarks.jobscope", "--child", mode, "--child-json",
            child_json, "--rows", str(args.rows), "--partitions", str(args.partitions),
            "--keys", str(args.keys), "--groups", str(args.groups), "--out-dir",
            args.out_dir, "--warmup", str(args.warmup), "--overhead-rounds",
            str(args.overhead_rounds), "--recovery-root", args.recovery_root, *extra]


def _shuffle_events(rdir: str, job_id: str) -> list[dict[str, Any]]:
    from fullwindow.recovery import job_events
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            evs = job_events(rdir, job_id)
        except Exception:  # noqa: BLE001 - not created yet
            return []
    shuffles = {e["fingerprint"] for e in evs
                if e.get("type") == "vertexInitialized" and e.get("operator") == "shuffle"}
    return [e for e in evs if e.get("fingerprint") in shuffles]


def _maps_finished(rdir: str, job_id: str) -> int:
    """Distinct shuffle map tasks with a durable task-finished event."""
    return len({(e["fingerprint"], e.get("partition")) for e in _shuffle_events(rdir, job_id)
                if e.get("type") == "taskFinished"})


def _finished_events(rdir: str, job_id: str) -> int:
    return sum(e.get("type") == "taskFinished" for e in _shuffle_events(rdir, job_id))


def _run_process(args: argparse.Namespace, label: str, job_id: str, rdir: str, output: str,
                 kill_at: int | None = None, machine: bool = False) -> dict[str, Any]:
    cj = child_json_path(args.out_dir, f"jobscope-{label}-")
    cmd = _child_cmd(args, "run", cj, ["--job-id", job_id, "--recovery-dir", rdir,
                                       "--output", output] + (["--machine"] if machine else []))

    def at_kill_point(_proc, elapsed):
        if kill_at is None:
            return None
        n = _maps_finished(rdir, job_id)
        return {"at_s": elapsed, "durable_finished_at_kill": n} if n >= kill_at else None

    returncode, elapsed, killed = run_watched(cmd, args.timeout, at_kill_point, 0.25)
    res = read_child_json(cj)
    res.update({"label": label, "job_id": job_id, "process_s": elapsed,
                "exit_code": returncode})
    if killed is not None:
        res["killed"] = killed
        res["status"] = "timed out" if killed.get("timeout") else "killed"
    elif "status" not in res:
        res["status"] = f"failed (exit {returncode}, no result)"
    return res


def _resume_part(args: argparse.Namespace) -> dict[str, Any]:
    base = os.path.join(os.path.abspath(args.out_dir), "jobscope", "resume")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    rdir = os.path.join(base, "state")
    maps = _map_tasks(args)
    kill_at = _half_way(args)
    rounds: list[dict[str, Any]] = []
    part: dict[str, Any] = {"kill_at_maps": kill_at, "map_tasks": maps, "rounds": rounds,
                            "bar": RESUME_BAR, "loadavg_start": list(os.getloadavg())}
    for r in range(args.resume_rounds):
        order = rotation(["U", "R"], r)
        rnd: dict[str, Any] = {"round": r, "order": list(order), "background_busy": _cpu_busy()}
        for v in order:
            job_id = f"{v}-{r}-{uuid.uuid4().hex[:6]}"
            out = os.path.join(base, f"out-{v}")
            if v == "U":
                rnd["U"] = u = _run_process(args, "U", job_id, rdir, out, machine=(r == 0))
                _log(f"round {r + 1}: U {u['status']}"
                     + (f", job {u['job_s']:.1f} s" if u.get("job_s") else ""))
            else:
                k = _run_process(args, "R-killed", job_id, rdir, out, kill_at=kill_at)
                before = _finished_events(rdir, job_id)
                s = _run_process(args, "R-resumed", job_id, rdir, out)
                # the map tasks the resumed run computed (each a new task-finished event); a
                # shuffle kept whole is read back and writes none
                s["maps_computed"] = _finished_events(rdir, job_id) - before
                rnd["R_killed"], rnd["R_resumed"] = k, s
                ki = k.get("killed", {})
                _log(f"round {r + 1}: R killed at {ki.get('at_s', float('nan')):.1f} s with "
                     f"{ki.get('durable_finished_at_kill')} of {maps} map tasks kept; resumed "
                     f"{s['status']}, {s['maps_computed']} map tasks computed again"
                     + (f", job {s['job_s']:.1f} s" if s.get("job_s") else ""))
            shutil.rmtree(os.path.join(rdir, job_id), ignore_errors=True)
        rounds.append(rnd)
    part["loadavg_end"] = list(os.getloadavg())
    return summarize_resume(part)


def summarize_overhead(res: dict[str, Any]) -> dict[str, Any]:
    """Ratios of the timed (not warm-up) pairs, and the kept bytes against Spark's shuffle
    bytes; INVALID when the outputs differ."""
    runs = [x for x in res.get("runs", []) if not x["warmup"]]
    off = [x for x in runs if x["variant"] == "off"]
    on = [x for x in runs if x["variant"] == "on"]
    if res.get("status") != "completed" or not off or not on:
        res["status"] = "FAIL"
        return res
    res["on_off_ratio"] = _stats([b["time_s"] / a["time_s"] for a, b in zip(off, on)])
    res["off_s"] = _stats([x["time_s"] for x in off])
    res["on_s"] = _stats([x["time_s"] for x in on])
    res["kept_bytes"] = statistics.median(x["kept"]["bytes"] for x in on)
    res["linked_bytes"] = statistics.median(x["kept"]["linked_bytes"] for x in on)
    res["event_bytes"] = statistics.median(x["kept"]["event_bytes"] for x in on)
    res["shuffle_bytes"] = statistics.median(x["shuffle_bytes"] for x in on)
    res["map_tasks_kept"] = statistics.median(x["map_tasks_kept"] for x in on)
    if all("commit_s" in x for x in on):
        res["commit_s"] = _stats([x["commit_s"] for x in on])
        res["commit_share"] = _stats([x["commit_s"] / x["map_run_s"] for x in on
                                      if x.get("map_run_s")])
    if any(x.get("upload_s") for x in on):
        res["upload_s"] = _stats([x.get("upload_s", 0.0) for x in on])
    outs = [x["output"] for x in res["runs"] if "output" in x]
    res["outputs_equal"] = bool(outs) and all(o == outs[0] for o in outs)
    res["status"] = ("INVALID" if not res["outputs_equal"] else
                     "PASS" if res["on_off_ratio"]["median"] <= OVERHEAD_BAR else "MISS")
    return res


def _overhead_part(args: argparse.Namespace, store: dict[str, Any] | None = None
                   ) -> dict[str, Any]:
    """The overhead child; ``store`` (a remote job directory, see ``_start_store``): its
    ``dir``, the child's extra settings ``conf`` and environment ``env``."""
    cj = child_json_path(args.out_dir, "jobscope-overhead-")
    extra = [] if store is None else ["--recovery-dir", store["dir"],
                                      "--store-conf", json.dumps(store["conf"])]
    proc = subprocess.run(_child_cmd(args, "overhead", cj, extra), cwd=ROOT,
                          start_new_session=True,
                          env={**os.environ, **(store or {}).get("env", {})})
    res = read_child_json(cj)
    res["exit_code"] = proc.returncode
    res.update(rows=args.rows, partitions=args.partitions, keys=args.keys, groups=args.groups,
               recovery_root=args.recovery_root)
    return summarize_overhead(res)


def _start_store(args: argparse.Namespace, stack: contextlib.ExitStack) -> dict[str, Any]:
    """A real HDFS or S3 API server for the job directory (--recovery-root hdfs|s3), stopped
    when ``stack`` closes."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    if args.recovery_root == "hdfs":
        from hdfs import MiniHDFS
        hdfs = MiniHDFS().start()
        stack.callback(hdfs.stop)
        _log(f"recovery directory on HDFS: {hdfs.uri}/fw-bench")
        return {"dir": f"{hdfs.uri}/fw-bench", "conf": {}, "env": {}}
    from s3 import MotoS3
    moto = MotoS3().start()
    stack.callback(moto.stop)
    bucket = moto.make_bucket("fw-bench")  # s3a://fw-bench
    _log(f"recovery directory on S3 (moto, {moto.endpoint}): {bucket}/jobs")
    return {"dir": f"{bucket}/jobs", "conf": moto.conf(), "env": moto.driver_env()}


WHERE = {"overhead": "the local disk", "overhead_hdfs": "HDFS (a NameNode and a DataNode "
         "in one process on 127.0.0.1, tests/hdfs.py)", "overhead_s3": "S3 (moto's server "
         "process on 127.0.0.1 through S3A, tests/s3.py)"}


def _sizes(r: dict[str, Any]) -> str:
    return (f"{r['rows']:,} facts rows of 4 columns in {r['partitions']} Parquet files joined "
            f"with {r['keys']:,} dims rows by a shuffle join, grouped into {r['groups']:,} "
            f"groups, written as Parquet; {r['partitions']} shuffle partitions")


def _markdown(record: dict[str, Any]) -> str:
    m = record.get("machine") or {}
    head = {**record, **(record.get('overhead') or record.get('resume') or {})}
    rs = record.get("resume")
    # the resume part's sizes where it was run at others than the header's
    rs_sizes = {k: rs[k] for k in ("rows", "partitions", "keys", "groups") if k in rs} if rs else {}
    rs_other = any(head.get(k) != v for k, v in rs_sizes.items())
    lines = [BEGIN,
             f"**Whole-job recovery** (`scope=job`; "
             f"{_sizes(head)}, "
             "`local[2]`, recovery "
             f"directory on the local disk unless said; {m.get('cores', '?')} cores, "
             f"{m.get('memory_gib', '?')} GiB RAM). "
             f"commit {m.get('commit', '?')}" + (" plus uncommitted changes"
                                                  if m.get("worktree_dirty") else "")
             + ". Produced by: " + "; ".join(
                 f"{n}: `{record[n].get('command', record['command'])}` on "
                 f"{record[n].get('date', record['date'])}"
                 for n in PARTS if n in record) + ".", "",
             "| bar | measured | rounds | status |", "|---|---|---|---|"]
    overheads = [(n, record[n]) for n in ("overhead", *REMOTE_PARTS) if n in record]
    for name, ov in overheads:
        where = "" if name == "overhead" else f", job directory on {name.split('_')[1].upper()}"
        bar = (f"recovery on / off ≤ {OVERHEAD_BAR:.2f}×" if name == "overhead" else
               f"(recovery on / off{where}: measured, no bar)")
        if "on_off_ratio" in ov:
            lines.append(f"| {bar} | {_fr(ov['on_off_ratio'], digits=3)} | {ov['on_s']['n']} | "
                         f"{ov['status'] if name == 'overhead' else '–'} |")
        else:
            lines.append(f"| {bar} | – | – | {ov.get('status')} |")
    if rs:
        lines.append(f"| resumed / uninterrupted job time ≤ {RESUME_BAR}×"
                     + (f" ({rs_sizes['rows']:,} rows)"
                        if rs_sizes.get("rows", head.get("rows")) != head.get("rows") else "")
                     + " | "
                     f"{_fr(rs.get('job_ratio'))} | {rs.get('valid_rounds')} of "
                     f"{len(rs['rounds'])} | {rs['status']} |")
        lines.append(f"| (job CPU time, not the bar) | {_fr(rs.get('cpu_ratio'))} | "
                     f"{rs.get('valid_rounds')} | – |")
    lines.append("")
    for name, ov in overheads:
        if "on_s" not in ov:
            continue
        shuffle = ov["shuffle_bytes"] or 1
        kept = (f"{_fmt_bytes(ov['kept_bytes'])} of kept map outputs for "
                f"{_fmt_bytes(ov['shuffle_bytes'])} of shuffle files Spark wrote "
                f"({ov['kept_bytes'] / shuffle:.2f}×), of which "
                f"{_fmt_bytes(ov['linked_bytes'])} are hard links to Spark's own files (no "
                f"second copy on the disk)" if name == "overhead" else
                f"{_fmt_bytes(ov['kept_bytes'])} of kept map outputs copied to the store for "
                f"{_fmt_bytes(ov['shuffle_bytes'])} of shuffle files Spark wrote")
        lines += [
            (f"Overhead, job directory on {WHERE[name]} ({_sizes(ov)})" if name != "overhead"
             else "Overhead")
            + f": recovery off {_fr(ov['off_s'], ' s')}, on {_fr(ov['on_s'], ' s')} "
            f"(one session, {ov.get('warmup', 1)} warm-up pair, then pairs alternating which goes "
            "first; per-pair ratios "
            + " ".join(f"{b['time_s'] / a['time_s']:.3f}" for a, b in zip(
                [x for x in ov["runs"] if not x["warmup"] and x["variant"] == "off"],
                [x for x in ov["runs"] if not x["warmup"] and x["variant"] == "on"]))
            + f"). The job directory per run (medians): {kept}; "
            f"{ov['map_tasks_kept']:.0f} map tasks kept"
            + (f"; events {_fmt_bytes(ov['event_bytes'])}" if ov.get("event_bytes") else "")
            + "."
            + (f" The map tasks spent {_fr(ov['commit_s'], ' s')} a run keeping their outputs "
               f"({_fr(ov['commit_share'], digits=3)} of their run time)."
               if ov.get("commit_s") else "")
            + (f" The executors' upload threads then spent {_fr(ov['upload_s'], ' s')} a run "
               "writing them to the store, after their tasks had ended."
               if ov.get("upload_s") else ""),
            ""]
    if rs:
        sized = f" ({_sizes({**head, **rs_sizes})})" if rs_other else ""
        lines += [f"Resume rounds{sized} (killed when {rs['kill_at_maps']} of the job's "
                  f"{rs['map_tasks']} shuffle map tasks were kept):", "",
                  "| round | order | U job / process s | R killed at s of its process (maps "
                  "kept) | resumed job s (maps computed) | job ratio | output |",
                  "|---|---|---|---|---|---|---|"]
        for x in rs["rounds"]:
            u, k, s = x.get("U", {}), x.get("R_killed", {}), x.get("R_resumed", {})
            ki = k.get("killed", {})
            lines.append(
                f"| {x['round'] + 1} | {', '.join(x['order'])} | {u.get('job_s', 0):.1f} / "
                f"{u.get('process_s', 0):.1f} | "
                f"{ki.get('at_s', 0):.1f} ({ki.get('durable_finished_at_kill', '?')}) | "
                f"{s.get('job_s', 0):.1f} ({s.get('maps_computed', '?')}) | "
                + (f"{x['job_ratio']:.2f}" if "job_ratio" in x
                   else "INVALID: " + "; ".join(x["problems"]))
                + f" | {(s.get('output') or {}).get('rows', 0):,} rows"
                + (" (= U)" if u.get("output") and u.get("output") == s.get("output")
                   else " (≠ U)") + " |")
        lines.append("")
    lines.append(END)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.jobscope",
                                description=__doc__.split("\n\n")[0])
    for name in ("rows", "partitions", "keys", "groups", "resume-rounds", "overhead-rounds"):
        p.add_argument(f"--{name}", type=int)
    p.add_argument("--warmup", type=int, default=1, help="overhead warm-up pairs (default 1)")
    p.add_argument("--parts", default="overhead,resume")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per process")
    p.add_argument("--quick", action="store_true", help="smoke test: tiny, one round each")
    p.add_argument("--out-dir", default=DEFAULT_OUT)
    p.add_argument("--no-record", action="store_true",
                   help="print only; do not write jobscope.json and notes/jobscope.md")
    p.add_argument("--recovery-root", choices=("local", "hdfs", "s3"), default="local",
                   help="where the job directory is (hdfs, s3: a real HDFS or S3 API server "
                        "started for the run, part overhead only; recorded as overhead_hdfs "
                        "or overhead_s3)")
    for hidden in ("child", "child-json", "job-id", "recovery-dir", "output", "store-conf"):
        p.add_argument(f"--{hidden}", help=argparse.SUPPRESS)
    p.add_argument("--machine", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--generate", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    for k, v in (QUICK if args.quick else DEFAULTS).items():
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
    os.makedirs(args.out_dir, exist_ok=True)
    subprocess.run([sys.executable, "-m", "benchmarks.jobscope", "--generate", "--rows",
                    str(args.rows), "--partitions", str(args.partitions), "--keys",
                    str(args.keys), "--out-dir", args.out_dir], cwd=ROOT, check=True)
    record: dict[str, Any] = {"command": invocation("benchmarks.jobscope", argv),
                              "date": utc_date(), "rows": args.rows,
                              "partitions": args.partitions, "keys": args.keys,
                              "groups": args.groups}
    parts = [x.strip() for x in args.parts.split(",") if x.strip()]
    if args.recovery_root != "local":
        if parts != ["overhead"]:
            p.error("--recovery-root hdfs|s3 runs part overhead only (--parts overhead)")
        name = f"overhead_{args.recovery_root}"
        with contextlib.ExitStack() as stack:
            record[name] = _overhead_part(args, _start_store(args, stack))
        record["machine"] = record[name].get("machine")
        parts = [name]
    if "overhead" in parts:
        record["overhead"] = _overhead_part(args)
        record["machine"] = record["overhead"].get("machine")
    if "resume" in parts:
        record["resume"] = _resume_part(args)
        first_u = next((x["U"] for x in record["resume"]["rounds"]
                        if x.get("U", {}).get("machine")), None)
        if first_u:
            record.setdefault("machine", first_u.pop("machine"))
    if not args.no_record and os.path.exists(JSON_PATH):  # a part not run now keeps its record
        with open(JSON_PATH) as f:
            old = json.load(f)
        sizes = ("rows", "partitions", "keys", "groups")
        for name in PARTS:
            # a part not run now is kept, with the sizes it was run with
            if name not in record and name in old:
                old[name] = {**{k: old[k] for k in sizes if k in old}, **old[name]}
                record[name] = {**old[name], "command": old[name].get("command", old["command"]),
                                "date": old[name].get("date", old["date"])}
                record.setdefault("machine", old.get("machine"))
    for name in parts:
        if name in record:
            record[name].update(command=record["command"], date=record["date"])
            for k in ("rows", "partitions", "keys", "groups"):
                record[name].setdefault(k, record[k])
    text = _markdown(record)
    print(text)
    if not args.no_record:
        from benchmarks.report import RESULTS_MD, record_standalone
        record_standalone(JSON_PATH, record, NOTES_PATH, BEGIN, END, text, RESULTS_MD)
        _log(f"recorded in {os.path.relpath(JSON_PATH, ROOT)} and "
             f"{os.path.relpath(NOTES_PATH, ROOT)}")
    bad = [record[n].get("status") for n in PARTS if n in record]
    return 1 if any(s in ("INVALID", "FAIL") for s in bad) else 0


if __name__ == "__main__":
    sys.exit(main())
