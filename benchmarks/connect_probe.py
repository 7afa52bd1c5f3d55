"""Where a Spark Connect run's time goes, against the same run on a classic session.

One process per session kind (a classic session and a local Connect session cannot share a
process). The process runs each variant ``--runs`` times on the same Parquet input and splits
every run by timestamps (all wall-clock, one machine):

- client: the Python call building the DataFrame (``fullWindowPartition().mapPartition(...)``),
  and every RPC the Connect client makes while building and running it (name, start, end);
- server: Spark's event log (``spark.eventLog.*``, read after the session stops): SQL execution
  start/end, job submission/completion, each task's launch/finish/executor run time;
- Python workers: the user function logs its process id, the process's start time, and when
  it was called and returned; a worker forked for this run has a start time inside the run.

    .venv/bin/python -m benchmarks.connect_probe --kind classic --rows 2000000 --runs 4
    .venv/bin/python -m benchmarks.connect_probe --kind connect --rows 2000000 --runs 4

``--cpu`` adds, per run, the CPU seconds of every thread group (client, JVM by thread name, each
Python worker) and the seconds they waited for a CPU, from /proc; ``--dump-conf`` writes the
session's settings; the user functions log their worker's set-up (environment, sys.path, flags,
GC, threads) once per worker process and per-batch (or per-100,000-row) timings.

Prints one table per run and a summary (medians of the warm runs, the first run left out);
``--json PATH`` writes the raw timestamps.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any

from benchmarks.connect import CONF, PARTITIONS, _free_port

_LOG_ENV = "FW_PROBE_WORKER_LOG"


def _process_start() -> float:
    """This process's start time (seconds since the epoch), from /proc."""
    with open("/proc/stat") as f:
        btime = next(int(line.split()[1]) for line in f if line.startswith("btime"))
    with open("/proc/self/stat") as f:
        ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    return btime + ticks / os.sysconf("SC_CLK_TCK")


_SETUP_LOGGED: set[int] = set()


def _worker_setup() -> dict[str, Any]:
    """What the worker process runs with (logged once per worker process): environment, path,
    interpreter flags, tracing/profiling hooks, GC state, threads, loaded modules."""
    import faulthandler
    import gc
    import threading

    return {"env": dict(os.environ), "sys_path": list(sys.path), "cwd": os.getcwd(),
            "flags": repr(sys.flags), "faulthandler": faulthandler.is_enabled(),
            "profile": repr(sys.getprofile()), "trace": repr(sys.gettrace()),
            "switchinterval": sys.getswitchinterval(), "gc_threshold": gc.get_threshold(),
            "gc_frozen": gc.get_freeze_count(), "gc_tracked": len(gc.get_objects()),
            "threads": [t.name for t in threading.enumerate()], "modules": len(sys.modules),
            "connect_modules": sorted(m for m in sys.modules if "connect" in m)[:50],
            "grpc_loaded": "grpc" in sys.modules, "cpu_affinity": sorted(os.sched_getaffinity(0)),
            "nice": os.nice(0)}


def _log_worker(t_enter: float, t_exit: float, rows: int, cpu: float | None = None,
                marks: list | None = None) -> None:
    path = os.environ.get(_LOG_ENV) or "/tmp/fw_probe_worker.log"
    rec = {"pid": os.getpid(), "proc_start": _process_start(), "enter": t_enter,
           "exit": t_exit, "rows": rows, "cpu": cpu, "marks": marks}
    if os.getpid() not in _SETUP_LOGGED:
        _SETUP_LOGGED.add(os.getpid())
        rec["setup"] = _worker_setup()
    with open(path, "a") as f:
        f.write(json.dumps(rec) + "\n")


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def _count_sum_partition(rows):
    t0 = time.time()
    c0 = _cpu()
    n = 0
    s = 0.0
    marks = []  # (rows so far, seconds since t0, process CPU since c0) every 100,000 rows
    for r in rows:
        n += 1
        s += r.x
        if n % 100_000 == 0:
            marks.append((n, round(time.time() - t0, 4), round(_cpu() - c0, 4)))
    _log_worker(t0, time.time(), n, _cpu() - c0, marks)
    yield (n, s)


def _pass_through(batches):
    t0 = time.time()
    c0 = _cpu()
    n = 0
    marks = []  # (rows in the batch, seconds waited for it) per batch received
    for b in batches:
        t = time.time()
        n += b.num_rows
        marks.append((b.num_rows, round(t - t0, 4)))
        yield b
    _log_worker(t0, time.time(), n, _cpu() - c0, marks[:3] + [len(marks)])


def _count_sum_arrow(batches):
    """mapInArrow with the same per-row Python work as ``_count_sum_partition``."""
    import pyarrow as pa

    t0 = time.time()
    n = 0
    s = 0.0
    for b in batches:
        for r in b.to_pylist():
            n += 1
            s += r["x"]
    _log_worker(t0, time.time(), n)
    yield pa.RecordBatch.from_pydict({"n": [n], "s": [s]})


VARIANTS = {
    "map_partition": lambda df: df.fullWindowPartition().mapPartition(
        _count_sum_partition, "n long, s double"),
    "map_in_arrow": lambda df: df.mapInArrow(_pass_through, "k long, v long, x double"),
    "map_in_arrow_rows": lambda df: df.mapInArrow(_count_sum_arrow, "n long, s double"),
}


_TICK = os.sysconf("SC_CLK_TCK")


def _stat_cpu(path: str) -> float:
    with open(path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def _runqueue_wait(path: str) -> float:
    """Seconds a thread (or, summed over its threads, a process) was runnable but waiting for a
    CPU: /proc/.../schedstat, second field."""
    try:
        with open(path.replace("/stat", "/schedstat")) as f:
            return int(f.read().split()[1]) / 1e9
    except OSError:
        return 0.0


def _children() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            out.setdefault(ppid, []).append(int(d))
    return out


def _thread_group(name: str) -> str:
    """JVM thread names without their numbers (Executor task launch worker for task 3 -> ...)."""
    import re

    return re.sub(r"[0-9]+", "N", name.strip())


def _cpu_snapshot() -> dict[str, float]:
    """CPU seconds so far of this process's threads and of every descendant process, grouped:
    'client:<thread>', 'jvm:<thread group>', 'proc:<comm> <pid>' (Python workers, daemon);
    and 'wait:<client|jvm|python workers>': seconds runnable but waiting for a CPU."""
    snap: dict[str, float] = {}
    kids = _children()
    todo = [(os.getpid(), "client")]
    while todo:
        pid, role = todo.pop()
        try:
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
            if role == "client" or comm == "java":
                tag = "client" if role == "client" else "jvm"
                for tid in os.listdir(f"/proc/{pid}/task"):
                    try:
                        with open(f"/proc/{pid}/task/{tid}/comm") as f:
                            name = _thread_group(f.read())
                        key = f"{tag}:{name}"
                        path = f"/proc/{pid}/task/{tid}/stat"
                        snap[key] = snap.get(key, 0.0) + _stat_cpu(path)
                        snap["wait:" + tag] = snap.get("wait:" + tag, 0.0) + _runqueue_wait(path)
                    except OSError:
                        pass
            else:
                snap[f"proc:{comm} {pid}"] = _stat_cpu(f"/proc/{pid}/stat")
                snap["wait:python workers"] = snap.get("wait:python workers", 0.0) + sum(
                    _runqueue_wait(f"/proc/{pid}/task/{t}/stat")
                    for t in os.listdir(f"/proc/{pid}/task"))
        except OSError:
            continue
        todo.extend((c, "child") for c in kids.get(pid, []))
    return snap


def _cpu_diff(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    d = {k: round(b[k] - a.get(k, 0.0), 2) for k in b}
    return dict(sorted(((k, v) for k, v in d.items() if v >= 0.02), key=lambda kv: -kv[1]))


class _RpcLog:
    """Wraps every method of the Connect client's gRPC stub, recording name, start and end
    (for a streaming answer, the end is when its last message was read)."""

    def __init__(self, client: Any):
        self.calls: list[dict[str, Any]] = []
        stub = client._stub
        for name in [n for n in dir(stub) if n[:1].isupper()]:
            setattr(stub, name, self._wrap(name, getattr(stub, name)))

    def _wrap(self, name: str, method: Any) -> Any:
        log = self.calls

        def call(*args: Any, **kwargs: Any) -> Any:
            rec = {"rpc": name, "start": time.time()}
            log.append(rec)
            out = method(*args, **kwargs)
            if hasattr(out, "__next__"):
                def stream():
                    try:
                        for m in out:
                            rec.setdefault("first", time.time())
                            yield m
                    finally:
                        rec["end"] = time.time()
                return stream()
            rec["end"] = time.time()
            return out
        return call


def _session(kind: str, event_dir: str):
    import fullwindow

    conf = {**CONF, "spark.eventLog.enabled": "true", "spark.eventLog.dir": "file://" + event_dir,
            "spark.eventLog.compress": "false"}
    if kind == "classic":
        return fullwindow.session(master="local[2]", conf=conf, app_name="probe-classic")
    from pyspark.sql.connect.client.core import DefaultChannelBuilder

    port = _free_port()
    DefaultChannelBuilder.default_port = staticmethod(lambda: port)  # type: ignore[method-assign]
    return fullwindow.session(remote="local[2]", app_name="probe-connect",
                              conf={**conf, "spark.connect.grpc.binding.port": str(port)})


def _events(event_dir: str) -> list[dict[str, Any]]:
    last = sorted(glob.glob(os.path.join(event_dir, "*")), key=os.path.getmtime)[-1]
    files = sorted(glob.glob(os.path.join(last, "events_*"))) if os.path.isdir(last) else [last]
    out = []
    for name in files:
        with open(name) as f:
            out.extend(json.loads(line) for line in f if line.strip())
    return out


def _split(run: dict[str, Any], events: list[dict[str, Any]], workers: list[dict[str, Any]],
           seen_pids: set[int]) -> dict[str, Any]:
    """The phases of one run (seconds), from its client, server and worker timestamps."""
    t0, t_built, t_end = run["start"], run["built"], run["end"]
    lo, hi = t_built * 1000, t_end * 1000
    sql = [e for e in events if e["Event"].endswith("SQLExecutionStart") and lo <= e["time"] <= hi]
    sql_end = [e for e in events if e["Event"].endswith("SQLExecutionEnd") and lo <= e["time"] <= hi]
    jobs = [e for e in events if e["Event"] == "SparkListenerJobStart"
            and lo <= e["Submission Time"] <= hi]
    job_ids = {j["Job ID"] for j in jobs}
    job_end = [e for e in events if e["Event"] == "SparkListenerJobEnd" and e["Job ID"] in job_ids]
    stage_ids = {s for j in jobs for s in j["Stage IDs"]}
    tasks = [e["Task Info"] | {"metrics": e.get("Task Metrics") or {}} for e in events
             if e["Event"] == "SparkListenerTaskEnd" and e["Stage ID"] in stage_ids]
    ws = [w for w in workers if t_built <= w["enter"] <= t_end]
    out: dict[str, Any] = {"build": t_built - t0, "total_action": t_end - t_built}
    rpcs = [c for c in run.get("rpcs", [])]
    out["rpcs_build"] = [c["rpc"] for c in rpcs if c["start"] < t_built]
    out["rpcs_action"] = [c["rpc"] for c in rpcs if c["start"] >= t_built]
    # the round trips the build waited for (ReleaseExecute runs in the background)
    out["rpc_build_wait"] = sum(c.get("end", c["start"]) - c["start"] for c in rpcs
                                if c["start"] < t_built and c["rpc"] != "ReleaseExecute")
    for c in rpcs:
        if c["rpc"] == "ExecutePlan" and "end" in c:
            out["execute_rpc"] = c["end"] - c["start"]
    if sql:
        s0 = min(e["time"] for e in sql) / 1000
        out["to_sql_start"] = s0 - t_built
    if jobs:
        j0 = min(j["Submission Time"] for j in jobs) / 1000
        out["sql_start_to_job"] = j0 - s0 if sql else None
        if tasks:
            l0 = min(t["Launch Time"] for t in tasks) / 1000
            out["job_to_first_task"] = l0 - j0
            out["task_span"] = max(t["Finish Time"] for t in tasks) / 1000 - l0
            out["task_times"] = sorted(round((t["Finish Time"] - t["Launch Time"]) / 1000, 3)
                                       for t in tasks)
            out["executor_run"] = sorted(round(t["metrics"].get("Executor Run Time", 0) / 1000, 3)
                                         for t in tasks)
            out["executor_deser"] = sorted(
                round(t["metrics"].get("Executor Deserialize Time", 0) / 1000, 3) for t in tasks)
            if ws:
                out["task_launch_to_func"] = sorted(round(w["enter"] - l0, 3) for w in ws)
                out["func_time"] = sorted(round(w["exit"] - w["enter"], 3) for w in ws)
                out["worker_forked_in_run"] = sum(1 for w in ws if w["proc_start"] >= t_built - 0.5)
                out["worker_pids_new"] = sum(1 for w in ws if w["pid"] not in seen_pids)
        if job_end:
            je = max(j["Completion Time"] for j in job_end) / 1000
            if tasks:
                out["last_task_to_job_end"] = je - max(t["Finish Time"] for t in tasks) / 1000
            if sql_end:
                se = max(e["time"] for e in sql_end) / 1000
                out["job_end_to_sql_end"] = se - je
                out["sql_end_to_client"] = t_end - se
    for w in ws:
        seen_pids.add(w["pid"])
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.connect_probe",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--kind", choices=("classic", "connect"), required=True)
    p.add_argument("--rows", type=int, default=2_000_000)
    p.add_argument("--runs", type=int, default=4)
    p.add_argument("--variants", default="map_partition,map_in_arrow")
    p.add_argument("--out-dir", default=os.path.join(os.path.dirname(__file__), "out"))
    p.add_argument("--conf", action="append", default=[], help="KEY=VALUE, server setting")
    p.add_argument("--json", help="write the raw record here")
    p.add_argument("--cpu", action="store_true",
                   help="CPU seconds per thread/process during each action, from /proc")
    p.add_argument("--dump-conf", help="write the server's Spark settings here (JSON)")
    args = p.parse_args(argv)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        x for x in [root, os.environ.get("PYTHONPATH", "")] if x)
    work = tempfile.mkdtemp(prefix="fw-probe-")
    event_dir = os.path.join(work, "events")
    os.makedirs(event_dir)
    worker_log = os.path.join(work, "workers.log")
    os.environ[_LOG_ENV] = worker_log
    for kv in args.conf:
        k, v = kv.split("=", 1)
        CONF[k] = v
    t = time.time()
    spark = _session(args.kind, event_dir)
    session_start = time.time() - t
    if args.kind == "classic":  # the input of benchmarks/connect.py's operations
        from benchmarks.cases.keyed import MANY_KEYS, _columns
        from benchmarks.data import parquet_input
        from benchmarks.registry import Scale

        parquet_input(spark, Scale(rows=args.rows, partitions=PARTITIONS, quick=False,
                                   out_dir=args.out_dir), f"keyed-k{MANY_KEYS}",
                      _columns(MANY_KEYS))
    data = os.path.join(os.path.abspath(args.out_dir), "data")
    found = sorted(glob.glob(data + f"/keyed-k*-r{args.rows}-p{PARTITIONS}-*"))
    if not found:
        raise SystemExit(f"no input for {args.rows} rows under {data}: run --kind classic "
                         "first (it writes it)")
    paths = {"keyed": found[0]}
    rpclog = _RpcLog(spark.client) if args.kind == "connect" else None
    if args.dump_conf:
        from pyspark import SparkContext

        sc = SparkContext._active_spark_context  # in this process for both kinds
        with open(args.dump_conf, "w") as f:
            json.dump({"spark_conf": dict(sc.getConf().getAll()),
                       "session_conf": dict(spark.conf.getAll)}, f, indent=1, sort_keys=True)
    runs = []
    for r in range(args.runs):
        for v in args.variants.split(","):
            mark = len(rpclog.calls) if rpclog else 0
            t0 = time.time()
            df = VARIANTS[v](spark.read.parquet(paths["keyed"]))
            t1 = time.time()
            c1 = _cpu_snapshot() if args.cpu else {}
            df.write.format("noop").mode("overwrite").save()
            t2 = time.time()
            cpu = _cpu_diff(c1, _cpu_snapshot()) if args.cpu else {}
            runs.append({"variant": v, "round": r, "start": t0, "built": t1, "end": t2,
                         "rpcs": rpclog.calls[mark:] if rpclog else [], "cpu": cpu})
    spark.stop()
    if args.kind == "connect":
        # the local server's SparkContext (the event log is written when it stops)
        from pyspark import SparkContext

        if SparkContext._active_spark_context is not None:
            SparkContext._active_spark_context.stop()
    time.sleep(1)
    events = _events(event_dir)
    workers = []
    if os.path.exists(worker_log):
        with open(worker_log) as f:
            workers = [json.loads(line) for line in f]
    seen: set[int] = set()
    record = {"kind": args.kind, "rows": args.rows, "session_start": session_start,
              "load": os.getloadavg(), "runs": []}
    for run in runs:
        split = _split(run, events, workers, seen)
        if run.get("cpu"):
            split["cpu"] = run["cpu"]
        ws = [w for w in workers if run["built"] <= w["enter"] <= run["end"]]
        if ws and ws[0].get("cpu") is not None:
            split["func_cpu"] = sorted(round(w["cpu"], 3) for w in ws)
            split["func_marks"] = [w["marks"] for w in ws][:1]
        record["runs"].append({"variant": run["variant"], "round": run["round"], **split})
        print(f"[{args.kind}] {run['variant']} round {run['round']}: "
              + json.dumps({k: (round(v, 3) if isinstance(v, float) else v)
                            for k, v in split.items()}), flush=True)
    for v in args.variants.split(","):
        warm = [x for x in record["runs"] if x["variant"] == v and x["round"] > 0]
        keys = [k for k in warm[0] if isinstance(warm[0][k], float)] if warm else []
        print(f"[{args.kind}] {v} medians of {len(warm)} warm runs: " + ", ".join(
            f"{k}={statistics.median(x[k] for x in warm):.3f}" for k in keys), flush=True)
    print(f"[{args.kind}] load {os.getloadavg()}", flush=True)
    setups = {w["pid"]: w["setup"] for w in workers if "setup" in w}
    if setups:
        record["worker_setup"] = setups
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"record": record, "raw_runs": runs}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
