"""Where the recovery benchmark's job spends its time, stage by stage:
``.venv/bin/python -m benchmarks.experiments.recovery_stages [--rows N] [--partitions N] [--lose N]
[--off] [--tasks]``; the short shape of issue 12: ``--rows 3000000 --partitions 8 --tasks``.

Runs benchmarks/recovery.py's job (scan, hash repartition, ``mapPartition(score)``, Parquet
write) twice, each in a fresh driver process with the Spark UI on, under one recovery job id:
first uninterrupted (it commits every partition and the shuffle input), then after deleting the
committed outputs of the last ``--lose`` partitions (default half), which is what a crash half way
through the full-window stage leaves, minus the kill. For each run it prints when each stage was
submitted and finished (seconds after the session was ready) and its task run time, task CPU,
shuffle bytes and output, from Spark's REST API; with ``--tasks`` also every job (submitted,
completed) and every task (launch and end, run time, CPU, scheduler delay, deserialisation,
locality, executor thread slot, whether its partition was recovered), and the driver's time
before the first job and between the last task and the end. ``--off`` sets
``spark.fullwindow.recovery.commitShuffleInput=false`` (the resumed run then shuffles again).
``--cpu`` adds, per run, the CPU from session ready to written by JVM thread group (JIT compiler
threads, executor task threads, py4j's threads, which run the driver's planning), the Python
workers and the driver's Python, from /proc; the JVM's class-loading and compile counters
(``jcmd PerfCounter.print``); and the top of the stacks of busy unnamed JVM threads (jstack).
``--java-opts`` is the driver JVM's ``spark.driver.extraJavaOptions`` in both runs, e.g.
``-XX:ArchiveClassesAtExit=/tmp/a.jsa`` then ``-XX:SharedArchiveFile=/tmp/a.jsa`` (AppCDS).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import socket
import urllib.request

from benchmarks import recovery as R


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _child(args: argparse.Namespace) -> None:
    conf = {**R._recovery_conf(args.state, "stages"), "spark.ui.enabled": "true",
            "spark.ui.port": str(args.port)}
    if args.off:
        conf["spark.fullwindow.recovery.commitShuffleInput"] = "false"
    if args.java_opts:
        conf["spark.driver.extraJavaOptions"] = args.java_opts
    spark = R._session(args, conf, "stages")
    t_ready = time.time()
    jvm_pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    cpu0 = _cpu_snapshot() if args.cpu else {}
    perf0 = _perf(jvm_pid) if args.cpu else {}
    t0 = time.time()
    R._job(spark, args, os.path.join(args.state, "out"))
    t1 = time.time()
    if args.cpu:
        _print_cpu(cpu0, _cpu_snapshot(), t_ready - R.T_IMPORT)
        _print_perf(perf0, _perf(jvm_pid))
        _print_busy_threads(jvm_pid)
    app = spark.sparkContext.applicationId
    api = f"http://localhost:{args.port}/api/v1/applications/{app}"
    stages = sorted(json.load(urllib.request.urlopen(f"{api}/stages")),
                    key=lambda s: s["stageId"])

    def at(stamp: str | None) -> float:
        if not stamp:
            return float("nan")
        t = _dt.datetime.strptime(stamp.replace("GMT", ""), "%Y-%m-%dT%H:%M:%S.%f")
        return t.replace(tzinfo=_dt.timezone.utc).timestamp() - t0

    print(f"  job {t1 - t0:.1f} s (session ready -> written)")
    for s in stages:
        if not s["numCompleteTasks"]:
            continue
        print(f"  stage {s['stageId']}: +{at(s.get('submissionTime')):.2f} -> "
              f"+{at(s.get('completionTime')):.2f} s, {s['numCompleteTasks']} tasks, "
              f"run {s['executorRunTime'] / 1e3:.1f} s, CPU {s['executorCpuTime'] / 1e9:.1f} s, "
              f"shuffle write {s['shuffleWriteBytes'] >> 20} MiB, read "
              f"{s['shuffleReadBytes'] >> 20} MiB, output {s['outputBytes'] >> 20} MiB")
    if args.tasks:
        _tasks(api, stages, at, t1 - t0, {int(x) for x in args.recovered.split(",") if x})
    spark.stop()


def _cpu_snapshot() -> dict[str, float]:
    from benchmarks.connect_probe import _cpu_snapshot as snap
    return snap()


def _perf(pid: int) -> dict[str, int]:
    """The JVM's own counters (jcmd PerfCounter.print): class loading and JIT time."""
    out = subprocess.run(["jcmd", str(pid), "PerfCounter.print"], capture_output=True,
                         text=True).stdout
    got = {}
    for line in out.splitlines():
        k, _, v = line.partition("=")
        if v.strip().lstrip("-").isdigit():
            got[k.strip()] = int(v)
    return got


def _print_perf(a: dict[str, int], b: dict[str, int]) -> None:
    """Class loading and JIT compilation in the JVM from session ready to written."""
    hz = b.get("sun.os.hrt.frequency", 1) or 1
    def d(k: str) -> int:
        return b.get(k, 0) - a.get(k, 0)
    print(f"  JVM from session ready to written: classes loaded {d('java.cls.loadedClasses')} "
          f"(from the CDS archive {d('sun.cls.sharedLoadedClasses')}; before session ready "
          f"{a.get('java.cls.loadedClasses', 0)}, {a.get('sun.cls.sharedLoadedClasses', 0)} "
          f"shared); class loading {d('sun.cls.time') / hz:.2f} s (parse "
          f"{d('sun.cls.parseClassTime.self') / hz:.2f}, verify "
          f"{d('sun.cls.classVerifyTime.self') / hz:.2f}, link "
          f"{d('sun.cls.classLinkedTime.self') / hz:.2f}, init "
          f"{d('sun.cls.classInitTime.self') / hz:.2f}; app loader "
          f"{d('sun.cls.appClassLoadTime') / hz:.2f}); before session ready "
          f"{a.get('sun.cls.time', 0) / hz:.2f} s; JIT {d('sun.ci.totalTime') / hz:.2f} s "
          f"({d('sun.ci.totalCompiles')} compiles; before session ready "
          f"{a.get('sun.ci.totalTime', 0) / hz:.2f} s)")


def _print_busy_threads(pid: int) -> None:
    """The JVM's unnamed threads (Thread-N) that used >= 0.2 s of CPU so far, with the top of
    their stacks (jstack): what they are."""
    import re
    dump = subprocess.run(["jstack", str(pid)], capture_output=True, text=True).stdout
    for block in dump.split("\n\n"):
        m = re.match(r'"(Thread-[0-9]+)".*?cpu=([0-9.]+)ms', block)
        if m and float(m.group(2)) >= 200:
            frames = [x.strip() for x in block.splitlines()[2:9]]
            print(f"    {m.group(1)} cpu {float(m.group(2)) / 1e3:.2f} s: " + " | ".join(frames))


def _print_cpu(a: dict[str, float], b: dict[str, float], ready_s: float) -> None:
    """CPU seconds from session ready to written, by thread group (JVM threads by name without
    their numbers; Python workers summed), and the process's time to session ready."""
    from benchmarks.connect_probe import _cpu_diff
    d = _cpu_diff(a, b)
    workers = sum(v for k, v in d.items() if k.startswith("proc:"))
    jvm = sum(v for k, v in d.items() if k.startswith("jvm:"))
    print(f"  process start -> session ready {ready_s:.2f} s; CPU before session ready: JVM "
          f"{sum(v for k, v in a.items() if k.startswith('jvm:')):.2f} s")
    print(f"  job CPU: JVM {jvm:.2f} s, Python workers {workers:.2f} s, driver Python "
          f"{sum(v for k, v in d.items() if k.startswith('client:')):.2f} s; runnable but "
          f"waiting: " + ", ".join(f"{k[5:]} {v:.2f} s" for k, v in d.items()
                                    if k.startswith("wait:")))
    for k, v in d.items():
        if k.startswith("jvm:") and v >= 0.05:
            print(f"    {k[4:]}: {v:.2f} s")


def _tasks(api: str, stages: list, at, job_s: float, recovered: set[int]) -> None:
    jobs = sorted(json.load(urllib.request.urlopen(f"{api}/jobs")), key=lambda j: j["jobId"])
    for j in jobs:
        print(f"  job {j['jobId']}: +{at(j.get('submissionTime')):.2f} -> "
              f"+{at(j.get('completionTime')):.2f} s, stages {j['stageIds']}, "
              f"{j['numTasks']} tasks: {j.get('name', '')[:60]}")
    if jobs:
        print(f"  driver before the first job: {at(jobs[0].get('submissionTime')):.2f} s; "
              f"after the last job: {job_s - at(jobs[-1].get('completionTime')):.2f} s")
    for s in stages:
        if not s["numCompleteTasks"]:
            continue
        tasks = json.load(urllib.request.urlopen(
            f"{api}/stages/{s['stageId']}/{s['attemptId']}/taskList?length=1000"))
        tasks.sort(key=lambda t: (t["launchTime"], t["index"]))
        busy: dict[int, float] = {}
        print(f"  stage {s['stageId']} tasks (launch order):")
        for t in tasks:
            m = t.get("taskMetrics") or {}
            start = at(t["launchTime"])
            end = start + t["duration"] / 1e3
            # the slot that freed up last before this launch (a task's end is stamped a few
            # ms after the next task on its slot may already have been launched)
            free = [k for k, v in busy.items() if v <= start + 0.1]
            slot = max(free, key=lambda k: busy[k]) if free else len(busy)
            busy[slot] = end
            out = m.get("outputMetrics", {}).get("recordsWritten", 0)
            read = m.get("shuffleReadMetrics", {})
            mark = " (recovered)" if t["index"] in recovered and len(tasks) > 1 else ""
            print(f"    p{t['index']}{mark}: slot {slot} +{start:.2f} -> +{end:.2f} s "
                  f"({t['duration'] / 1e3:.2f} s; run {m.get('executorRunTime', 0) / 1e3:.2f}, "
                  f"CPU {m.get('executorCpuTime', 0) / 1e9:.2f}, deser "
                  f"{m.get('executorDeserializeTime', 0) / 1e3:.2f}, sched delay "
                  f"{t.get('schedulerDelay', 0) / 1e3:.2f}, GC {m.get('jvmGcTime', 0) / 1e3:.2f}, "
                  f"{t.get('taskLocality')}; shuffle read "
                  f"{read.get('remoteBytesRead', 0) + read.get('localBytesRead', 0) >> 20} MiB, "
                  f"written {out:,} rows)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.experiments.recovery_stages")
    p.add_argument("--rows", type=int, default=9_000_000)
    p.add_argument("--partitions", type=int, default=12)
    p.add_argument("--lose", type=int)
    p.add_argument("--off", action="store_true")
    p.add_argument("--tasks", action="store_true", help="jobs and tasks, not only stages")
    p.add_argument("--cpu", action="store_true",
                   help="CPU from session ready to written, by JVM thread group")
    p.add_argument("--java-opts", default="", help="spark.driver.extraJavaOptions of both runs")
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    p.add_argument("--recovered", default="", help=argparse.SUPPRESS)
    p.add_argument("--out-dir", default=R.DEFAULT_OUT)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--state", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        _child(args)
        return 0
    R._generate(args)
    state = tempfile.mkdtemp(prefix="recovery-stages-", dir=args.out_dir)
    lose = args.partitions // 2 if args.lose is None else args.lose
    cmd = [sys.executable, "-m", "benchmarks.experiments.recovery_stages", "--child",
           "--state", state, "--rows", str(args.rows), "--partitions", str(args.partitions),
           "--out-dir", args.out_dir, "--port", str(_free_port())] + (
               ["--off"] if args.off else []) + (["--tasks"] if args.tasks else []) + (
               ["--cpu"] if args.cpu else []) + (
               [f"--java-opts={args.java_opts}"] if args.java_opts else [])
    try:
        print("uninterrupted:")
        subprocess.run(cmd, cwd=R.ROOT, check=True, stderr=subprocess.DEVNULL)
        for i in range(args.partitions - lose, args.partitions):
            for f in glob.glob(os.path.join(state, "stages", "operators", "*",
                                            f"part-{i:05d}-*.rows")):
                os.remove(f)
        print(f"resumed, the committed outputs of {lose} partitions deleted:")
        kept = ",".join(str(i) for i in range(args.partitions - lose))
        subprocess.run(cmd + ["--recovered", kept], cwd=R.ROOT, check=True,
                       stderr=subprocess.DEVNULL)
    finally:
        shutil.rmtree(state, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
