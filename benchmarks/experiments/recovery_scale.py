"""Recovery at scale: what a resumed driver does per committed partition and per committed byte,
and how big the recovery directory is against Parquet.

    .venv/bin/python -m benchmarks.experiments.recovery_scale curve --partitions 100,1000,10000
    .venv/bin/python -m benchmarks.experiments.recovery_scale storage            # 500 partitions
    .venv/bin/python -m benchmarks.experiments.recovery_scale driver-io --gib 2 --cluster

``curve``: for each partition count ``n``, a job of ``n`` small partitions (``--rows-per`` rows of
(long, long, short string) each, from ``spark.range``) sorted by a non-keyed ``sortPartition`` and
written to the ``noop`` sink, run twice in fresh driver processes under one job id: the first run
commits every partition, the second (everything committed) is the resumed driver that is timed:
reading the events (``EventStore.read_all``), replaying them (``recovery_state``), defining the
operation (fingerprint, the check of the committed files, ``_intact_all``, and planning the
recovered scan) and running the action. Prints each per committed partition, the event store's
bytes per task-finished event, and the first run's time.

``storage``: the same rows as the issue's case (non-keyed ``sortPartition`` of (long, long, short
string) over 500 partitions) with recovery on, written as Parquet too: the recovery directory's
committed bytes against the Parquet files' bytes.

``driver-io``: commits about ``--gib`` GiB (rows of 30 random doubles: the codec cannot shrink
them), then resumes with everything committed and reads back one row per partition; the resumed
driver's bytes read (``rchar`` of /proc/<pid>/io of its JVM and its Python process: every read
system call, page cache hits included) from before the operation is defined to after the action.
``--cluster`` runs on a standalone cluster of two one-core workers (tests/cluster.py), where the
executors are other processes; with a local master the executors are the driver's JVM.
``--python DIR`` runs the children with another checkout's ``python`` directory (e.g. the main
branch's, for the before figure).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _rchar(pid: int | str) -> int:
    with open(f"/proc/{pid}/io") as f:
        for line in f:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    return 0


def _dir_bytes(path: str, suffix: str = "") -> tuple[int, int]:
    total = files = 0
    for d, _, names in os.walk(path):
        for n in names:
            if n.endswith(suffix) and not n.startswith("."):
                total += os.path.getsize(os.path.join(d, n))
                files += 1
    return total, files


def child(a: argparse.Namespace) -> None:
    import fullwindow
    import fullwindow.recovery as rec
    from fullwindow.recovery import eventstore

    t0 = time.perf_counter()
    timed: dict[str, float] = {}

    def wrap(owner, name, key):
        fn = getattr(owner, name)

        def wrapped(*args, **kw):
            s = time.perf_counter()
            try:
                return fn(*args, **kw)
            finally:
                timed[key] = timed.get(key, 0.0) + time.perf_counter() - s
        setattr(owner, name, wrapped)

    wrap(eventstore.EventStore, "read_all", "read events")
    wrap(rec, "recovery_state", "replay")
    wrap(rec, "_intact_all", "check files")
    conf = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
            "spark.driver.memory": "2g", "spark.sql.shuffle.partitions": "4",
            "spark.fullwindow.recovery.enabled": "true", "spark.fullwindow.recovery.dir": a.rdir,
            "spark.fullwindow.recovery.jobId": a.job_id}
    if a.codec:
        conf["spark.io.compression.codec"] = a.codec
    if a.master.startswith("spark://"):
        conf.update({"spark.executor.memory": "900m", "spark.executor.cores": "1"})
    spark = fullwindow.session(master=a.master, conf=conf)
    jvm_pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    ready = time.perf_counter()
    rec.start(spark)
    started = time.perf_counter()
    n = a.partitions
    if a.shape == "random":
        cols = ", ".join(f"rand({i}) as d{i}" for i in range(30))
        df = spark.range(0, a.rows, 1, n).selectExpr("id", *cols.split(", "))
        key = "d0"
    else:
        df = spark.range(0, a.rows, 1, n).selectExpr(
            "id as a", "(id * 7919) % 100003 as b", "concat('name-', cast(id % 997 as string)) as c")
        key = "b"
    io0 = (_rchar(jvm_pid), _rchar("self"))
    d0 = time.perf_counter()
    out = df.fullWindowPartition().sortPartition(key)
    d1 = time.perf_counter()
    if a.action == "parquet":
        out.write.mode("overwrite").parquet(a.output)
        df.fullWindowPartition().sortPartition(key)  # (same plan, nothing more to run)
    elif a.action == "head":
        out.limit(1).collect()
    else:
        out.write.format("noop").mode("overwrite").save()
    d2 = time.perf_counter()
    io1 = (_rchar(jvm_pid), _rchar("self"))
    rec.flush(spark)
    spent = dict(timed)  # what the run itself spent (the replay below is measured for memory)
    import tracemalloc

    tracemalloc.start()
    state = rec.recovery_state(rec.job_events(a.rdir, a.job_id))
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del state
    res = {"replayed_state_bytes": held, "session": ready - t0, "open": started - ready,
           "define": d1 - d0, "action": d2 - d1,
           "job": d2 - ready, **spent, "driver_jvm_read": io1[0] - io0[0],
           "driver_python_read": io1[1] - io0[1]}
    spark.stop()
    print("RESULT " + json.dumps(res), flush=True)


def _run_child(a: argparse.Namespace, rdir: str, job_id: str, partitions: int, rows: int,
               shape: str, action: str, master: str, output: str = "") -> dict:
    env = dict(os.environ)
    py = a.python or os.path.join(ROOT, "python")
    env["PYTHONPATH"] = os.pathsep.join([py, ROOT, env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "benchmarks.experiments.recovery_scale", "child", "--rdir", rdir,
           "--job-id", job_id, "--partitions", str(partitions), "--rows", str(rows),
           "--shape", shape, "--action", action, "--master", master, "--output", output,
           "--codec", a.codec or ""]
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    if p.returncode != 0 or not lines:
        raise SystemExit(f"child failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-5000:]}")
    return json.loads(lines[0][len("RESULT "):])


def _events_bytes(rdir: str, job_id: str) -> tuple[int, int]:
    sys.path.insert(0, os.path.join(ROOT, "python"))
    from fullwindow.recovery import job_events

    finished = sum(1 for e in job_events(rdir, job_id) if e.get("type") == "taskFinished")
    return _dir_bytes(os.path.join(rdir, job_id, "events"))[0], finished


def curve(a: argparse.Namespace) -> None:
    rows_out = []
    for n in [int(x) for x in a.partitions.split(",")]:
        base = tempfile.mkdtemp(prefix="fw-scale-", dir=a.tmp)
        try:
            rdir = os.path.join(base, "rec")
            first = _run_child(a, rdir, "scale", n, n * a.rows_per, "small", "noop", a.master)
            resumed = _run_child(a, rdir, "scale", n, n * a.rows_per, "small", "noop", a.master)
            ev_bytes, finished = _events_bytes(rdir, "scale")
            committed, files = _dir_bytes(os.path.join(rdir, "scale", "operators"), ".rows")
            per = {k: resumed.get(k, 0.0) / n * 1000 for k in
                   ("read events", "replay", "check files", "define", "action")}
            rows_out.append((n, first, resumed, per, ev_bytes, finished, committed, files))
            print(f"n={n}: first run job {first['job']:.2f}s; resumed job {resumed['job']:.2f}s "
                  f"(open {resumed['open']:.2f}s: read events {resumed.get('read events', 0):.2f}s, "
                  f"replay {resumed.get('replay', 0):.3f}s; define {resumed['define']:.2f}s: "
                  f"check files {resumed.get('check files', 0):.2f}s; action {resumed['action']:.2f}s)"
                  f"; per committed partition ms: " + ", ".join(f"{k} {v:.3f}" for k, v in per.items())
                  + f"; events {ev_bytes} B / {finished} task events = {ev_bytes / max(1, finished):.0f}"
                  f" B each; replayed state in Python {resumed['replayed_state_bytes'] / n:.0f} B a "
                  f"partition; committed {committed} B in {files} files", flush=True)
        finally:
            shutil.rmtree(base, ignore_errors=True)
    print(json.dumps([{"partitions": r[0], "first": r[1], "resumed": r[2], "per_partition_ms": r[3],
                       "event_bytes": r[4], "task_events": r[5], "committed_bytes": r[6]}
                      for r in rows_out]))


def storage(a: argparse.Namespace) -> None:
    base = tempfile.mkdtemp(prefix="fw-scale-", dir=a.tmp)
    try:
        rdir, out = os.path.join(base, "rec"), os.path.join(base, "out.parquet")
        r = _run_child(a, rdir, "storage", a.parts, a.rows, "small", "parquet", a.master, out)
        committed, files = _dir_bytes(os.path.join(rdir, "storage", "operators"), ".rows")
        parquet, pfiles = _dir_bytes(out, ".parquet")
        print(f"storage: {a.rows} rows in {a.parts} partitions, codec "
              f"{a.codec or 'default (lz4)'}: recovery dir {committed / 2**20:.1f} MiB in {files} "
              f"files, Parquet {parquet / 2**20:.1f} MiB in {pfiles} files: "
              f"{committed / parquet:.2f}x; job {r['job']:.1f}s", flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def driver_io(a: argparse.Namespace) -> None:
    base = tempfile.mkdtemp(prefix="fw-scale-", dir=a.tmp)
    cluster = None
    try:
        master = a.master
        if a.cluster:
            sys.path.insert(0, os.path.join(ROOT, "tests"))
            from cluster import StandaloneCluster

            cluster = StandaloneCluster(workers=2, cores=1, memory="1g")
            cluster.start()
            master = cluster.url
        rdir = os.path.join(base, "rec")
        rows = int(a.gib * 2**30 / 256)  # about 256 committed bytes a row
        first = _run_child(a, rdir, "io", a.parts, rows, "random", "noop", master)
        committed, files = _dir_bytes(os.path.join(rdir, "io", "operators"), ".rows")
        resumed = _run_child(a, rdir, "io", a.parts, rows, "random", "head", master)
        print(f"driver-io ({'standalone cluster' if a.cluster else master}): committed "
              f"{committed / 2**30:.2f} GiB in {files} files (first run {first['job']:.0f}s); "
              f"resumed driver read {resumed['driver_jvm_read'] / 2**20:.1f} MiB (JVM) + "
              f"{resumed['driver_python_read'] / 2**20:.1f} MiB (Python) from defining the "
              f"operation to the end of the action (define {resumed['define']:.2f}s, check files "
              f"{resumed.get('check files', 0):.2f}s, action {resumed['action']:.2f}s)", flush=True)
    finally:
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.experiments.recovery_scale")
    p.add_argument("what", choices=["curve", "storage", "driver-io", "child"])
    p.add_argument("--partitions", default="100,1000,10000")
    p.add_argument("--rows-per", type=int, default=20)
    p.add_argument("--parts", type=int, default=None)
    p.add_argument("--rows", type=int, default=None)
    p.add_argument("--gib", type=float, default=2.0)
    p.add_argument("--cluster", action="store_true")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--codec", default="")
    p.add_argument("--python", default="")
    p.add_argument("--tmp", default=None)
    # child
    p.add_argument("--rdir")
    p.add_argument("--job-id")
    p.add_argument("--shape", default="small")
    p.add_argument("--action", default="noop")
    p.add_argument("--output", default="")
    a = p.parse_args()
    if a.what == "child":
        a.partitions = int(a.partitions)
        child(a)
    elif a.what == "curve":
        curve(a)
    elif a.what == "storage":
        a.parts = a.parts or 500
        a.rows = a.rows or 2_000_000
        storage(a)
    else:
        a.parts = a.parts or 16
        driver_io(a)


if __name__ == "__main__":
    main()
