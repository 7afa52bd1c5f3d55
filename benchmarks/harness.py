"""The benchmark harness: ``python -m benchmarks [--cases a,b] [--rounds N] [--rows N] [--quick]``.

The parent process runs each selected case in a child process of its own
(``python -m benchmarks --child CASE ...``): a fresh Spark JVM started with the case's settings.
The child builds the input once, runs warm-up rounds (not counted), then timed rounds in which
"ours" and "native" alternate which goes first, in the same session on the same data. It writes
its timings and the metrics of every run as JSON; the parent prints the table, and (unless
``--quick``) records the results in benchmarks/results.json and regenerates RESULTS.md.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import traceback
from typing import Any

from benchmarks.cases import all_cases
from benchmarks.common import (BASE_CONF, DEFAULT_OUT, HERE, ROOT, _machine, _proc_tree_cpu,
                               _wait_for_quiet, child_json_path, full_heap, invocation, logger,
                               read_child_json, rotation, session, utc_date)
from benchmarks.registry import Case
from benchmarks.report import RESULTS_MD, judge, rank_natives, update_results
from benchmarks.tables import (_HEADER, _fmt_bytes, _fmt_ms, _fmt_ratio, _fmt_time,  # noqa: F401
                               _markdown_table, _process_cpu_ratio, _row, _stats, _text_table)

RESULTS_JSON = os.path.join(HERE, "results.json")
DEFAULT_ROUNDS = 15
DEFAULT_WARMUP = 2
CHILD_TIMEOUT_S = 3600
DEFAULT_QUIET_WAIT_S = 15.0
DEFAULT_DROP_FACTOR = 3.0


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="fullwindow benchmarks: each case timed against native Spark in the same "
                    "session, interleaved; ratio = native time / ours time (> 1: ours faster).")
    p.add_argument("--cases", help="comma-separated case names (default: all); see --list")
    p.add_argument("--rounds", type=int, help=f"timed rounds per case (default {DEFAULT_ROUNDS}, "
                                              "1 with --quick)")
    p.add_argument("--warmup", type=int, help=f"warm-up rounds, not counted (default "
                                              f"{DEFAULT_WARMUP}, 0 with --quick)")
    p.add_argument("--rows", type=int, help="input rows for every selected case (default: the "
                                            "case's own size)")
    p.add_argument("--quick", action="store_true",
                   help="smoke test: tiny data, 1 round, no warm-up; results are not recorded "
                        "unless --results is given")
    p.add_argument("--results", help="RESULTS.md to update (default benchmarks/RESULTS.md; "
                                     "its results.json sits beside it)")
    p.add_argument("--out-dir", default=DEFAULT_OUT, help="where inputs and child outputs go")
    p.add_argument("--quiet-wait", type=float, default=None, metavar="SECONDS",
                   help="before each round, wait up to this long for other processes to leave "
                        f"the CPUs mostly idle (default {DEFAULT_QUIET_WAIT_S:g}, 0 with --quick)")
    p.add_argument("--list", action="store_true", help="list the cases and exit")
    p.add_argument("--spark", metavar="LINE",
                   help="run on that Spark line's venv (.venvs/spark-<line>, made by dev/venvs; "
                        "the default line is .venv); default: the running interpreter's pyspark")
    p.add_argument("--drop-slower-than", type=float, default=DEFAULT_DROP_FACTOR,
                   metavar="FACTOR",
                   help="after the warm-up rounds, stop timing a native form (other than the "
                        "case's baseline) whose warm-up took over FACTOR times the fastest native "
                        "form's: it cannot be the fastest; it is named in RESULTS.md with its "
                        f"warm-up time (default {DEFAULT_DROP_FACTOR:g}; 0 times every form)")
    p.add_argument("--render", action="store_true",
                   help="only regenerate RESULTS.md from results.json (e.g. after editing "
                        "benchmarks/notes/), running nothing")
    p.add_argument("--child", metavar="CASE", help=argparse.SUPPRESS)
    p.add_argument("--child-json", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.rounds is None:
        args.rounds = 1 if args.quick else DEFAULT_ROUNDS
    if args.warmup is None:
        args.warmup = 0 if args.quick else DEFAULT_WARMUP
    if args.quiet_wait is None:
        args.quiet_wait = 0.0 if args.quick else DEFAULT_QUIET_WAIT_S
    if args.rounds < 1 or args.warmup < 0:
        p.error("--rounds must be >= 1 and --warmup >= 0")
    if args.rows is not None and args.rows < 1:
        p.error("--rows must be >= 1")
    if args.drop_slower_than != 0 and args.drop_slower_than < 1:
        p.error("--drop-slower-than must be 0 (time every form) or >= 1")
    return args


_log = logger("bench")


# ----------------------------------------------------------------------------------------------
# the child: one case in one Spark session

def _run_child(args: argparse.Namespace) -> int:
    case = all_cases()[args.child]
    scale = case.scale(args.rows, args.quick, args.out_dir)
    result: dict[str, Any] = {"case": case.name, "rows": scale.rows,
                              "partitions": scale.partitions, "quick": args.quick,
                              "rounds": args.rounds, "warmup": args.warmup}
    spark = None
    try:
        spark = session(args.out_dir, f"benchmark {case.name}",
                        full_heap({**BASE_CONF, **case.spark_conf}), case.master, "WARN")
        result["spark_conf"] = {"master": case.master, **case.spark_conf}
        result["machine"] = _machine(spark)
        jrt = spark.sparkContext._jvm.java.lang.Runtime.getRuntime()
        result["jvm_max_heap_bytes"] = jrt.maxMemory()

        result["loadavg_start"] = list(os.getloadavg())
        t0 = time.perf_counter()
        data = case.setup(spark, scale)
        result["setup_s"] = time.perf_counter() - t0
        _log(f"{case.name}: input ready ({scale.rows:,} rows, {scale.partitions} partitions, "
             f"{result['setup_s']:.1f} s)")
        if case.record_floor is not None:
            result["record_floor_cpu_s"] = case.record_floor(data)
            _log(f"{case.name}: per-record Python floor {result['record_floor_cpu_s']:.2f} CPU s")

        sc = spark.sparkContext
        jvm = sc._jvm
        extra = list(case.natives()) if case.natives else []
        floors = {f"floor:{f.name}": f for f in case.floors}
        variants = {"ours": case.ours, "native": case.native,
                    **{f"native:{n.name}": n.run for n in extra},
                    **{v: f.run for v, f in floors.items()}}
        result["natives"] = {"native": {"name": case.native_name, "node": case.native_node},
                             **{f"native:{n.name}": {"name": n.name, "node": n.node}
                                for n in extra}}
        result["floors"] = {v: {"name": f.name, "node": f.node} for v, f in floors.items()}
        names = list(variants)
        times: dict[str, list[float]] = {v: [] for v in names}
        tags: dict[str, list[str]] = {v: [] for v in names}
        order_log = []
        background: list[float | None] = []
        try:
            jvm_pid = int(jvm.java.lang.ProcessHandle.current().pid())
        except Exception:  # noqa: BLE001
            jvm_pid = -1
        proc_cpu: dict[str, list[dict[str, float]]] = {v: [] for v in names}
        warm_times: dict[str, list[float]] = {v: [] for v in names}
        for r in range(args.warmup + args.rounds):
            warm = r < args.warmup
            order = rotation(names, r)
            order_log.append(list(order))
            line = []
            busy, waited = (_wait_for_quiet(args.quiet_wait) if args.quiet_wait > 0
                            else (None, 0.0))
            if not warm:
                background.append(busy)
            if busy is not None:
                line.append(f"background CPU {busy:.0%}" + (f" after {waited:.0f} s wait"
                                                             if waited >= 1 else ""))
            for variant in order:
                tag = f"{case.name}:{variant}:{'warmup' if warm else 'round'}{r}"
                jvm.System.gc()  # every run starts from a collected heap
                sc.setJobDescription(tag)
                cpu0 = _proc_tree_cpu(jvm_pid)
                start = time.perf_counter()
                variants[variant](data)
                elapsed = time.perf_counter() - start
                cpu1 = _proc_tree_cpu(jvm_pid)
                sc.setJobDescription(None)
                line.append(f"{variant} {elapsed:.2f} s")
                if warm:
                    warm_times[variant].append(elapsed)
                else:
                    times[variant].append(elapsed)
                    tags[variant].append(tag)
                    proc_cpu[variant].append(
                        {"jvm_process_cpu_ms": (cpu1[0] - cpu0[0]) * 1e3,
                         "python_cpu_ms": (cpu1[1] - cpu0[1]) * 1e3} if cpu0 and cpu1 else {})
            _log(f"{case.name}: {'warm-up' if warm else 'round'} {r + 1 - (0 if warm else args.warmup)}"
                 f": {', '.join(line)}")
            if r == args.warmup - 1 and args.drop_slower_than:
                for variant, seconds in _too_slow(warm_times, args.drop_slower_than,
                                                   case.baseline_in_headline).items():
                    names.remove(variant)
                    result.setdefault("dropped", {})[variant] = seconds
                    _log(f"{case.name}: {variant} no longer timed (warm-up {seconds:.1f} s)")
        result["loadavg_end"] = list(os.getloadavg())
        result["order"] = order_log
        result["background_busy"] = background
        result["times"] = times
        result["warmup_times"] = warm_times
        result["ratios"] = [n / o for o, n in zip(times["ours"], times["native"])]

        from benchmarks.metrics import RunMetrics
        rm = RunMetrics(spark)
        nodes = {t: case.ours_node for t in tags["ours"]}
        for v, info in {**result["natives"], **result["floors"]}.items():
            nodes.update({t: info["node"] for t in tags[v]})
        collected = rm.collect([t for v in names for t in tags[v]], nodes) if rm.available() else {}
        result["metrics"] = {v: [{**collected.get(t, {}), **cpu}
                                 for t, cpu in zip(tags[v], proc_cpu[v])] for v in tags}
        result["metrics_available"] = bool(collected)
    except Exception:  # noqa: BLE001  (reported to the parent, which marks the case FAIL)
        result["error"] = traceback.format_exc()
        _log(f"{case.name}: FAILED\n{result['error']}")
    finally:
        if spark is not None:
            spark.stop()
    with open(args.child_json, "w") as f:
        json.dump(result, f, indent=1)
    return 0


# ----------------------------------------------------------------------------------------------
# the parent: one child per case, then the table and RESULTS.md

def _too_slow(warm_times: dict[str, list[float]], factor: float,
              baseline_counts: bool) -> dict[str, float]:
    """The extra native forms (neither ``ours`` nor the baseline ``native``) whose last warm-up
    run took over ``factor`` times that of the fastest form the headline can be against (the
    baseline among them only when ``baseline_counts``)."""
    last = {v: ts[-1] for v, ts in warm_times.items() if ts and v.startswith("native")}
    rivals = [t for v, t in last.items() if v != "native" or baseline_counts]
    if not rivals:
        return {}
    fastest = min(rivals)
    return {v: t for v, t in last.items() if v.startswith("native:") and t > factor * fastest}


def _median_of(runs: list[dict[str, Any]], key: str) -> float | None:
    xs = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(xs) if xs else None


def _evaluate(case: Case, res: dict[str, Any]) -> dict[str, Any]:
    """Adds stats and a verdict to a child's result."""
    res.update({"name": case.name, "group": case.group, "description": case.description,
                "bar": case.bar, "bar_note": case.bar_note, "settings": dict(case.settings),
                "ours_node": case.ours_node, "native_node": case.native_node})
    if res.get("error"):
        res["status"] = "FAIL (error)"
        return res
    res["ours_stats"] = _stats(res["times"]["ours"])
    res["native_stats"] = _stats(res["times"]["native"])
    res["ratio_stats"] = _stats(res["ratios"])
    natives = res.get("natives") or {"native": {"name": case.native_name,
                                                "node": case.native_node}}
    res["natives"] = natives
    res["native_name"] = natives["native"]["name"]
    res["variant_stats"] = {v: _stats(res["times"][v]) for v in natives if res["times"].get(v)}
    floors = res.setdefault("floors", {})
    rank_natives(case, res)
    profile = {}
    for variant in ("ours", *natives, *floors):
        runs = res["metrics"].get(variant, [])
        profile[variant] = {key: _median_of(runs, key) for key in (
            "duration_ms", "sort_time_ms", "scan_time_ms", "spill_size_bytes",
            "peak_memory_bytes", "memory_bytes_spilled", "disk_bytes_spilled",
            "executor_run_time_ms", "executor_cpu_time_ms", "jvm_gc_time_ms",
            "jvm_process_cpu_ms", "python_cpu_ms")}
        profile[variant]["min_memory_bytes_spilled"] = (
            min(r.get("memory_bytes_spilled", 0) for r in runs) if runs else None)
    res["profile"] = profile
    cpu = [n.get("executor_cpu_time_ms") / o.get("executor_cpu_time_ms")
           for o, n in zip(res["metrics"].get("ours", []), res["metrics"].get("native", []))
           if o.get("executor_cpu_time_ms") and n.get("executor_cpu_time_ms")]
    res["cpu_ratios"] = cpu
    order = (res.get("order") or [])[res.get("warmup", 0):]
    by_first = {first: [x for x, o in zip(res["ratios"], order) if o[0] == first]
                for first in ("ours", "native")}
    res["ratio_by_first"] = {k: statistics.median(v) for k, v in by_first.items() if v}
    res["cpu_ratio_stats"] = _stats(cpu) if cpu else None
    problems = []
    if res.get("metrics_available"):
        for variant, node in (("ours", case.ours_node),
                              *((v, info["node"]) for v, info in {**natives, **floors}.items())):
            runs = res["metrics"].get(variant, [])
            if node and not all(r.get("node_ran") for r in runs):
                problems.append(f"{node} missing from the {variant} plan")
        if case.require_spill and not res["quick"]:
            for variant in ("ours", "native"):
                if not (profile[variant]["min_memory_bytes_spilled"] or 0) > 0:
                    problems.append(f"{variant} did not spill")
    elif case.require_spill and not res["quick"]:
        problems.append("spill could not be verified (no metrics)")
    res["problems"] = problems
    return judge(case, res)


def _run_case_in_child(case: Case, args: argparse.Namespace) -> dict[str, Any]:
    json_path = child_json_path(args.out_dir, f"{case.name}-")
    cmd = [sys.executable, "-m", "benchmarks", "--child", case.name, "--child-json", json_path,
           "--rounds", str(args.rounds), "--warmup", str(args.warmup),
           "--quiet-wait", str(args.quiet_wait),
           "--drop-slower-than", str(args.drop_slower_than),
           "--out-dir", args.out_dir]
    if args.rows is not None:
        cmd += ["--rows", str(args.rows)]
    if args.quick:
        cmd.append("--quick")
    _log(f"{case.name}: starting child JVM ({', '.join(f'{k}={v}' for k, v in case.spark_conf.items() if 'memory' in k) or 'default memory'})")
    started = time.perf_counter()
    try:
        returncode = subprocess.run(cmd, cwd=ROOT, timeout=CHILD_TIMEOUT_S).returncode
    except (subprocess.TimeoutExpired, OSError) as err:
        returncode = f"failed: {err!r}"
    res = read_child_json(json_path) or {"case": case.name, "quick": args.quick,
                                         "error": f"child wrote no result ({returncode})"}
    if returncode != 0 and not res.get("error"):
        res["error"] = f"child exited with {returncode}"
    res["wall_s"] = time.perf_counter() - started
    return _evaluate(case, res)


def _line_python(line: str) -> str:
    venv = ".venv" if line == "4.3" else os.path.join(".venvs", f"spark-{line}")
    return os.path.join(ROOT, venv, "bin", "python")


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    if args.spark and not args.child:
        import pyspark

        if not pyspark.__version__.startswith(args.spark + "."):
            python = _line_python(args.spark)
            if not os.path.isfile(python):
                print(f"--spark {args.spark}: no venv at {python}; run dev/venvs {args.spark}",
                      file=sys.stderr)
                return 2
            rest = sys.argv[1:] if argv is None else list(argv)
            os.execv(python, [python, "-m", "benchmarks", *rest])
    if args.child:
        return _run_child(args)
    cases = all_cases()
    if args.render:
        update_results(args.results or RESULTS_MD, [])
        return 0
    if args.list:
        for c in cases.values():
            print(f"{c.name:<16} [{c.group}] bar ≥ {c.bar}×  {c.description}")
        return 0
    names = [n.strip() for n in args.cases.split(",") if n.strip()] if args.cases else list(cases)
    unknown = [n for n in names if n not in cases]
    if unknown:
        print(f"unknown case(s): {', '.join(unknown)}; known: {', '.join(cases)}", file=sys.stderr)
        return 2
    command = invocation("benchmarks", argv)
    date = utc_date()
    results = []
    for name in names:
        res = _run_case_in_child(cases[name], args)
        res["command"] = command
        res["date"] = date
        results.append(res)
        _log(f"{name}: {res['status']}" + (
            f", ratio {_fmt_ratio(res['best_ratio_stats'])} to the fastest native "
            f"({res['fastest_native_name']})" if "best_ratio_stats" in res else ""))
    print()
    print(_text_table(_HEADER, [_row(r) for r in results]))
    print("ratio = native time / ours time, per round, against the fastest native form of the "
          "case's shape on this line (named); > 1 means fullwindow is faster")
    if not args.quick or args.results:
        md = args.results or RESULTS_MD
        update_results(md, results)
        _log(f"results written to {os.path.relpath(md, os.getcwd())}")
    failed = any(r["status"].startswith(("FAIL", "INVALID")) for r in results)
    return 1 if failed else 0
