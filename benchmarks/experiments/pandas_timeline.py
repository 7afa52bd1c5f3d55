"""Where the wall time of one run of a keyed pandas case goes, both sides:
``.venv/bin/python -m benchmarks.experiments.pandas_timeline [--case NAME] [--rounds 5]``.

Runs the case's two variants (ours, native) alternately in one session, as the harness does,
each run with its own job description, then reads Spark's REST API and prints, per variant,
the median over rounds of:

- driver: from the call to the first job's submission (the Python API, py4j calls, analysis
  and planning), and from the last job's end to the call's return;
- jobs and stages per run;
- per stage: wall (submission to completion), and the sums over its tasks of duration,
  executor run time, executor CPU time, deserialization, scheduler delay, GC and shuffle
  fetch wait; and the last task's end to the stage's completion.

With ``--tasks`` every task of the last round is printed too (launch, end, run, CPU).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import statistics
import time
import urllib.request

import fullwindow
from benchmarks.harness import BASE_CONF, DEFAULT_OUT
from benchmarks.cases import all_cases


def _stamp(s: str | None) -> float:
    if not s:
        return float("nan")
    t = _dt.datetime.strptime(s.replace("GMT", ""), "%Y-%m-%dT%H:%M:%S.%f")
    return t.replace(tzinfo=_dt.timezone.utc).timestamp()


def _get(url: str):
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.load(r)


def _run_info(api: str, tag: str, t0: float, t1: float, tasks_out: bool) -> dict:
    jobs = sorted((j for j in _get(f"{api}/jobs") if j.get("description") == tag),
                  key=lambda j: j["jobId"])
    stage_ids = sorted({s for j in jobs for s in j["stageIds"]})
    info = {"wall": t1 - t0, "jobs": len(jobs)}
    if not jobs:
        return info
    info["to_first_job"] = _stamp(jobs[0]["submissionTime"]) - t0
    info["after_last_job"] = t1 - _stamp(jobs[-1]["completionTime"])
    stages = []
    for sid in stage_ids:
        for s in _get(f"{api}/stages/{sid}"):
            if s["status"] != "COMPLETE" or not s["numCompleteTasks"]:
                continue
            tasks = _get(f"{api}/stages/{sid}/{s['attemptId']}/taskList?length=1000")
            m = [t.get("taskMetrics") or {} for t in tasks]
            ends = [_stamp(t["launchTime"]) + t["duration"] / 1e3 for t in tasks]
            launches = [_stamp(t["launchTime"]) for t in tasks]
            st = {
                "stage": sid, "tasks": len(tasks),
                "submit": _stamp(s["submissionTime"]) - t0,
                "first_launch": min(launches) - t0,
                "wall": _stamp(s["completionTime"]) - _stamp(s["submissionTime"]),
                "duration": sum(t["duration"] for t in tasks) / 1e3,
                "run": sum(x.get("executorRunTime", 0) for x in m) / 1e3,
                "cpu": sum(x.get("executorCpuTime", 0) for x in m) / 1e9,
                "deser": sum(x.get("executorDeserializeTime", 0) for x in m) / 1e3,
                "sched": sum(t.get("schedulerDelay", 0) for t in tasks) / 1e3,
                "gc": sum(x.get("jvmGcTime", 0) for x in m) / 1e3,
                "fetch_wait": sum(x.get("shuffleReadMetrics", {}).get("fetchWaitTime", 0)
                                  for x in m) / 1e3,
                "tail": _stamp(s["completionTime"]) - max(ends),
                "max_task": max(t["duration"] for t in tasks) / 1e3,
            }
            if tasks_out:
                st["task_list"] = sorted(
                    (round(lt - t0, 3), round(e - t0, 3), t["index"],
                     x.get("executorRunTime", 0) / 1e3, x.get("executorCpuTime", 0) / 1e9,
                     x.get("shuffleReadMetrics", {}).get("recordsRead", 0))
                    for t, x, lt, e in zip(tasks, m, launches, ends))
            stages.append(st)
    info["stages"] = stages
    return info


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.experiments.pandas_timeline")
    p.add_argument("--case", default="keyed_map_partition_in_pandas_few_keys")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--tasks", action="store_true")
    p.add_argument("--conf", action="append", default=[], help="extra k=v Spark settings")
    p.add_argument("--out-dir", default=DEFAULT_OUT)
    args = p.parse_args(argv)
    case = all_cases()[args.case]
    scale = case.scale(None, False, args.out_dir)
    conf = {**BASE_CONF, "spark.local.dir": os.path.join(os.path.abspath(args.out_dir),
                                                         "spark-local"),
            **case.spark_conf, **dict(kv.split("=", 1) for kv in args.conf)}
    spark = fullwindow.session(master=case.master, conf=conf, app_name="pandas timeline")
    spark.sparkContext.setLogLevel("WARN")
    sc = spark.sparkContext
    api = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}"
    data = case.setup(spark, scale)
    variants = {"ours": case.ours, "native": case.native}
    runs: dict[str, list] = {"ours": [], "native": []}
    for r in range(args.warmup + args.rounds):
        for v in (("ours", "native") if r % 2 == 0 else ("native", "ours")):
            tag = f"{v}:{r}"
            sc._jvm.System.gc()
            sc.setJobDescription(tag)
            t0 = time.time()
            variants[v](data)
            t1 = time.time()
            sc.setJobDescription(None)
            if r >= args.warmup:
                runs[v].append((tag, t0, t1))
    time.sleep(2)
    for v, rs in runs.items():
        infos = [_run_info(api, tag, t0, t1, args.tasks and i == len(rs) - 1)
                 for i, (tag, t0, t1) in enumerate(rs)]
        med = lambda xs: statistics.median(xs)  # noqa: E731
        print(f"== {v}: wall {med([i['wall'] for i in infos]):.3f} s "
              f"[{min(i['wall'] for i in infos):.3f}-{max(i['wall'] for i in infos):.3f}], "
              f"jobs {[i['jobs'] for i in infos]}, call->first job "
              f"{med([i.get('to_first_job', 0) for i in infos]) * 1e3:.0f} ms, last job->return "
              f"{med([i.get('after_last_job', 0) for i in infos]) * 1e3:.0f} ms")
        nst = max(len(i.get("stages", [])) for i in infos)
        for k in range(nst):
            sts = [i["stages"][k] for i in infos if len(i.get("stages", [])) > k]
            keys = ["tasks", "submit", "first_launch", "wall", "duration", "run", "cpu", "deser",
                    "sched", "gc", "fetch_wait", "tail", "max_task"]
            print(f"   stage#{k}: " + ", ".join(
                f"{key} {med([s[key] for s in sts]):.3f}" for key in keys))
        if args.tasks:
            for s in infos[-1].get("stages", []):
                print(f"   last round, stage {s['stage']} tasks (launch, end, index, run, cpu, "
                      f"records read):")
                for t in s["task_list"]:
                    print(f"     {t}")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
