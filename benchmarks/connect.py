"""Spark Connect benchmarks (DESIGN.md, "Bars for speed": any operation over Spark Connect).

1. The same fullwindow operation on a classic session and over Spark Connect, same data:
   non-keyed ``mapPartition`` and keyed ``mapPartition``; ratio = classic time / Connect time,
   bar >= 0.9 (the plan is the same; only the client path differs). A control pair runs
   Spark's own ``mapInArrow`` (a pass-through function) on both sessions: what Spark Connect
   itself costs a Python job, with no fullwindow in it (no bar).
2. Over Connect, fullwindow against every native form of the same shape that the line offers,
   all over Connect, as the classic harness measures them (benchmarks/natives.py): keyed
   ``mapPartition`` against the native row forms (``transformWithState`` with Rows, a Python
   UDTF over ``asTable().partitionBy``; bar >= 3) with ``groupBy().applyInPandas`` as a second
   column, and ``coGroup`` against ``cogroup().applyInArrow`` and ``cogroup().applyInPandas``
   (bar >= 1.3); the ratio that counts is against the fastest of them. The same functions and
   data as the classic ``keyed_map_partition`` and ``cogroup`` cases (benchmarks/cases/keyed.py).
   A native form that fails over Connect is named with its error; one whose first run took over
   3x the fastest native form's is named with that time and not timed again.

A classic session and a Connect session cannot share a process, so the runs happen in worker
processes the parent starts (``fullwindow.session(master=...)`` or
``fullwindow.session(remote="local[2]")``: a local Connect server in that process, its client
talking to it over gRPC); only one run is in flight at any moment.

- Connect vs classic (part 1): every round starts ONE FRESH PROCESS PER SIDE, one after the
  other (which side goes first alternates by round); each runs every variant once untimed
  (the process's first query: JIT, Python worker forking) and then once timed, and exits.
  No second session sits idle in another process while one is timed. (A classic and a Connect
  process living side by side for the whole run made the classic side 3-6x slower than alone:
  benchmarks/notes/connect.md.) Besides wall time, every run records the CPU seconds its
  process tree used (the session's process, its JVM, the Python workers; from /proc): on a
  machine shared with other work, wall time also measures the others, CPU time does not.
- fullwindow vs the native forms over Connect (part 2): one Connect process for the whole
  part; the order of ours and the native forms rotates from round to round.

Inputs are Parquet files written once by a classic process and read by all (``run(...,
inputs_in="connect")``, part 2 alone, as the smoke test runs it: by the Connect process, with
the classic session its local server runs in, and no classic process is started).

    .venv/bin/python -m benchmarks.connect                  # 9 rounds; part 2: 2 + 9
    .venv/bin/python -m benchmarks.connect --rows 500000 --rounds 5
    .venv/bin/python -m benchmarks.connect --parts 1        # Connect vs classic only
    .venv/bin/python -m benchmarks.connect --quick          # smoke test, records nothing
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any, Callable

from benchmarks.common import HERE, _proc_tree_cpu, invocation, logger, rotation, utc_date
from benchmarks.harness import DEFAULT_DROP_FACTOR, _too_slow
from benchmarks.report import RESULTS_MD
from benchmarks.tables import _fmt_ratio, _fmt_time, _markdown_table, _stats

_log = logger("connect bench")
JSON_PATH = os.path.join(HERE, "connect.json")
NOTES_PATH = os.path.join(HERE, "notes", "connect.md")
BEGIN = "<!-- connect.py: begin (generated, do not edit) -->"
END = "<!-- connect.py: end -->"
PARTITIONS = 4
CONF = {"spark.driver.memory": "3g", "spark.sql.shuffle.partitions": "4", "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.files.maxPartitionBytes": "1g", "spark.sql.files.openCostInBytes": "1g"}

# part 1: (name, left: (worker, variant), right: (worker, variant), bar, what); the two sides
# are different session kinds, run in fresh processes per round
PAIRS = [
    ("map_partition: Connect vs classic", ("classic", "map_partition"),
     ("connect", "map_partition"), 0.9,
     "fullWindowPartition().mapPartition(f): count rows and sum x per partition"),
    ("keyed_map_partition: Connect vs classic", ("classic", "keyed_map_partition"),
     ("connect", "keyed_map_partition"), 0.9,
     "keyBy('k').fullWindowPartition().mapPartition(count_sum), 10,000 keys"),
    ("control: Spark's mapInArrow, Connect vs classic", ("classic", "map_in_arrow"),
     ("connect", "map_in_arrow"), None,
     "spark.read.parquet(...).mapInArrow(pass-through): Spark Connect's own cost, no fullwindow"),
]


# part 2, over Connect: (name, ours: variant, natives: the shape in _natives, baseline: variant,
# baseline counted in the headline?, bar, what)
SHAPES = [
    ("keyed mapPartition (rows), over Connect", "keyed_map_partition", "keyed_rows",
     "apply_in_pandas", False, 3.0,
     "keyBy('k').fullWindowPartition().mapPartition(count_sum), 10,000 keys, against the native "
     "row forms; groupBy('k').applyInPandas(count_sum_pd) as the second column"),
    ("coGroup apply (rows), over Connect", "cogroup", "cogroup", "cogroup_pandas", True, 1.3,
     "as the classic cogroup case (right side half the rows, 10,000 keys), against "
     "cogroup().applyInArrow and cogroup().applyInPandas"),
]

# ---- the worker processes ----------------------------------------------------------------

def _count_sum_partition(rows):
    n = 0
    s = 0.0
    for r in rows:
        n += 1
        s += r.x
    yield (n, s)


def _pass_through(batches):
    yield from batches


def _reader(spark, paths: dict[str, str]) -> Callable[[str], Any]:
    """Reads one of the inputs by name ("keyed", "left", "right")."""
    return lambda name: spark.read.parquet(paths[name])


def _variants(spark, paths: dict[str, str]) -> dict[str, Any]:
    from benchmarks.cases.keyed import (_COGROUP_SCHEMA, _COUNT_SUM_SCHEMA, cogroup_count_sum,
                                        cogroup_count_sum_pd, count_sum, count_sum_pd)
    from benchmarks.data import run_noop
    from fullwindow import EndOfStreamWindows

    read = _reader(spark, paths)
    return {
        "map_partition": lambda: run_noop(read("keyed").fullWindowPartition().mapPartition(
            _count_sum_partition, "n long, s double")),
        "keyed_map_partition": lambda: run_noop(read("keyed").keyBy("k").fullWindowPartition()
                                                .mapPartition(count_sum, _COUNT_SUM_SCHEMA)),
        "map_in_arrow": lambda: run_noop(read("keyed").mapInArrow(_pass_through,
                                                                 "k long, v long, x double")),
        "apply_in_pandas": lambda: run_noop(read("keyed").groupBy("k").applyInPandas(
            count_sum_pd, _COUNT_SUM_SCHEMA)),
        "cogroup": lambda: run_noop(read("left").keyBy("k").coGroup(read("right").keyBy("k"))
                                    .window(EndOfStreamWindows.get())
                                    .apply(cogroup_count_sum, _COGROUP_SCHEMA)),
        "cogroup_pandas": lambda: run_noop(read("left").groupBy("k").cogroup(
            read("right").groupBy("k")).applyInPandas(cogroup_count_sum_pd, _COGROUP_SCHEMA)),
    }


def _natives(spark, paths: dict[str, str], shape: str) -> dict[str, Any]:
    """The native forms of ``shape`` this line offers (benchmarks/natives.py), by name, each
    run over the Connect session's DataFrames."""
    from benchmarks import natives

    read = _reader(spark, paths)
    if shape == "keyed_rows":
        return {f.name: (lambda f=f: f.run(read("keyed"))) for f in natives.keyed_row_natives()}
    return {f.name: (lambda f=f: f.run((read("left"), read("right"))))
            for f in natives.cogroup_natives()}


def _inputs(spark, rows: int, out_dir: str) -> dict[str, str]:
    """Writes the inputs once (classic worker) and returns their paths."""
    from benchmarks.cases.keyed import MANY_KEYS, _columns
    from benchmarks.data import parquet_input
    from benchmarks.registry import Scale

    scale = Scale(rows=rows, partitions=PARTITIONS, quick=False, out_dir=out_dir)
    half = Scale(rows=max(rows // 2, 1), partitions=PARTITIONS, quick=False, out_dir=out_dir,
                 seed=scale.seed + 100)
    paths = {}
    for name, sc, prefix in (("keyed", scale, f"keyed-k{MANY_KEYS}"),
                             ("left", scale, f"cogroup-left-k{MANY_KEYS}"),
                             ("right", half, f"cogroup-right-k{MANY_KEYS}")):
        parquet_input(spark, sc, prefix, _columns(MANY_KEYS))
        paths[name] = os.path.join(os.path.abspath(out_dir), "data",
                                   f"{prefix}-r{sc.rows}-p{sc.partitions}-s{sc.seed}")
    return paths


def _inputs_in_server_session(rows: int, out_dir: str) -> dict[str, str]:
    """In a Connect worker: writes the inputs as ``_inputs`` does, with the classic
    SparkSession that pyspark starts in this process for the local Connect server (its JVM is
    the server's), so that no classic process has to be started for them. pyspark's functions
    build Connect columns while SPARK_CONNECT_MODE_ENABLED is set (the remote session sets it),
    so it is unset while the classic session builds and writes them."""
    from pyspark.sql.session import SparkSession as ClassicSession

    classic = ClassicSession._instantiatedSession
    if classic is None:
        raise RuntimeError("no classic session in this process (not a local Connect server's)")
    mode = os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
    try:
        return _inputs(classic, rows, out_dir)
    finally:
        if mode is not None:
            os.environ["SPARK_CONNECT_MODE_ENABLED"] = mode


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tree_cpu() -> float:
    """CPU seconds (user + system) used so far by this process and all its descendants (the
    JVM, the Python daemon and workers, with the workers they have reaped), from /proc."""
    return sum(_proc_tree_cpu(os.getpid()) or (0.0, 0.0))


def _worker(kind: str) -> int:
    """Reads one JSON command per line on stdin, answers one JSON line on stdout."""
    import fullwindow

    # Python workers unpickle the benchmark functions by reference (benchmarks.cases.keyed)
    root = os.path.dirname(HERE)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in [root, os.environ.get("PYTHONPATH", "")] if p)
    # answers go to the parent through the original stdout; everything else that writes to
    # file descriptor 1 (this process, the JVM, Python workers) goes to stderr instead
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    if kind == "classic":
        spark = fullwindow.session(master="local[2]", conf=CONF, app_name="bench-classic")
    else:
        # pyspark's local Connect server listens on 15002 and its client dials 15002, so a second
        # local Connect session on the machine (a test run, another benchmark) makes this one fail
        # to bind. The server takes a free port here, and the client is pointed at it.
        from pyspark.sql.connect.client.core import DefaultChannelBuilder

        port = _free_port()
        DefaultChannelBuilder.default_port = staticmethod(lambda: port)  # type: ignore[method-assign]
        spark = fullwindow.session(remote="local[2]", app_name="bench-connect",
                                   conf={**CONF, "spark.connect.grpc.binding.port": str(port)})
    variants: dict[str, Any] = {}

    def answer(obj):
        out.write(json.dumps(obj) + "\n")
        out.flush()

    answer({"ready": True})
    try:
        for line in sys.stdin:
            cmd = json.loads(line)
            if cmd["op"] == "inputs":
                if kind == "classic":
                    paths = _inputs(spark, cmd["rows"], cmd["out_dir"])
                else:
                    paths = _inputs_in_server_session(cmd["rows"], cmd["out_dir"])
                answer({"paths": paths})
            elif cmd["op"] == "use":
                variants = _variants(spark, cmd["paths"])
                answer({"ok": True})
            elif cmd["op"] == "natives":
                forms = _natives(spark, cmd["paths"], cmd["shape"])
                variants.update(forms)
                answer({"variants": list(forms)})
            elif cmd["op"] == "run":
                c0 = _tree_cpu()
                t0 = time.perf_counter()
                try:
                    variants[cmd["variant"]]()
                except Exception as e:  # noqa: BLE001  (a native form this server refuses)
                    answer({"error": f"{type(e).__name__}: {str(e).strip().splitlines()[0]}"
                            if str(e).strip() else type(e).__name__})
                    continue
                t1 = time.perf_counter()
                answer({"seconds": t1 - t0, "cpu": _tree_cpu() - c0})
            elif cmd["op"] == "stop":
                break
    finally:
        spark.stop()
    return 0


class _Worker:
    def __init__(self, kind: str):
        self.kind = kind
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.connect", "--worker", kind],
            cwd=os.path.dirname(HERE), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            bufsize=1)
        self.ask(None)

    def ask(self, cmd: dict | None) -> dict:
        if cmd is not None:
            self.proc.stdin.write(json.dumps(cmd) + "\n")
            self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.kind} worker ended (exit {self.proc.wait()})")
        return json.loads(line)

    def stop(self) -> None:
        try:
            self.ask_nowait({"op": "stop"})
            self.proc.wait(120)
        except Exception:  # noqa: BLE001
            self.proc.kill()
            self.proc.wait(30)

    def ask_nowait(self, cmd: dict) -> None:
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()


# ---- the parent ----------------------------------------------------------------------------

def _load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _pair_result(name: str, what: str, left: str, right: str, t: dict[str, list[float]],
                 bar: float | None) -> dict[str, Any]:
    """One comparison: per-round ratios left / right, by wall time and by CPU."""
    ratio = _stats([a / b for a, b in zip(t["left"], t["right"])])
    cpu_ratio = _stats([a / b for a, b in zip(t["left_cpu"], t["right_cpu"]) if b > 0])
    return {"name": name, "what": what, "left": left, "right": right,
            "left_time": _stats(t["left"]), "right_time": _stats(t["right"]), "ratio": ratio,
            "left_cpu": _stats(t["left_cpu"]), "right_cpu": _stats(t["right_cpu"]),
            "cpu_ratio": cpu_ratio, "bar": bar,
            "verdict": ("control" if bar is None else
                        "PASS" if ratio["median"] >= bar else "MISS")}


def _run_part1(paths: dict[str, str], rounds: int, loads: list[float]) -> list[dict[str, Any]]:
    times = {p[0]: {"left": [], "right": [], "left_cpu": [], "right_cpu": []} for p in PAIRS}
    for r in range(rounds):
        loads.append(_load_average()[0])
        for kind in rotation(["classic", "connect"], r):
            w = _Worker(kind)
            try:
                w.ask({"op": "use", "paths": paths})
                for name, left, right, _, _ in PAIRS:
                    side, (_, variant) = ("left", left) if left[0] == kind else ("right", right)
                    w.ask({"op": "run", "variant": variant})  # the process's first: untimed
                    ans = w.ask({"op": "run", "variant": variant})
                    times[name][side].append(ans["seconds"])
                    times[name][side + "_cpu"].append(ans["cpu"])
            finally:
                w.stop()
        _log(f"part 1 round {r + 1}/{rounds} done, load {_load_average()}")
    return [_pair_result(name, what, f"{left[0]} {left[1]}", f"{right[0]} {right[1]}",
                         times[name], bar) for name, left, right, bar, what in PAIRS]


def _run_part2(paths: dict[str, str] | None, rounds: int, warmup: int, loads: list[float],
               rows: int = 0, out_dir: str = "") -> list[dict[str, Any]]:
    """Ours and every native form of each shape in one Connect process; the order of the forms
    rotates by round. After the first round, a native form (not the baseline) that took over
    the harness's factor (3) times the fastest native form is not run again; one that failed
    is dropped. ``paths`` None: that process writes the inputs first (``rows``, ``out_dir``),
    with its local server's classic session."""
    w = _Worker("connect")
    try:
        if paths is None:
            paths = w.ask({"op": "inputs", "rows": rows, "out_dir": out_dir})["paths"]
        w.ask({"op": "use", "paths": paths})
        shapes = []
        for name, ours, shape, baseline, baseline_counts, bar, what in SHAPES:
            forms = w.ask({"op": "natives", "paths": paths, "shape": shape})["variants"]
            shapes.append({"name": name, "ours": ours, "baseline": baseline,
                           "baseline_counts": baseline_counts, "bar": bar, "what": what,
                           "variants": [ours, baseline, *forms], "times": {}, "cpu": {},
                           "dropped": {}})
        for r in range(warmup + rounds):
            loads.append(_load_average()[0])
            for sh in shapes:
                live = [v for v in sh["variants"] if v not in sh["dropped"]]
                for variant in rotation(live, r):
                    ans = w.ask({"op": "run", "variant": variant})
                    if "error" in ans:
                        if variant in (sh["ours"], sh["baseline"]):
                            raise RuntimeError(f"{variant} failed over Connect: {ans['error']}")
                        sh["dropped"][variant] = f"fails over Connect ({ans['error']})"
                    elif r >= warmup:
                        sh["times"].setdefault(variant, []).append(ans["seconds"])
                        sh["cpu"].setdefault(variant, []).append(ans["cpu"])
                    if r == 0 and "error" not in ans:
                        sh.setdefault("first", {})[variant] = ans["seconds"]
                if r == 0 and rounds + warmup > 1:
                    _drop_slow(sh)
            _log(f"part 2 round {r + 1}/{warmup + rounds} done, load {_load_average()}")
    finally:
        w.stop()
    return [_shape_result(sh) for sh in shapes]


def _drop_slow(sh: dict[str, Any]) -> None:
    """The harness's rule (benchmarks/harness.py ``_too_slow``) on the forms' first runs."""
    first = sh.get("first", {})
    warm = {"native": [first[sh["baseline"]]]} if sh["baseline"] in first else {}
    warm.update({f"native:{v}": [t] for v, t in first.items()
                 if v not in (sh["ours"], sh["baseline"])})
    for key, seconds in _too_slow(warm, DEFAULT_DROP_FACTOR, sh["baseline_counts"]).items():
        variant = key.removeprefix("native:")
        sh["dropped"][variant] = f"not timed: its first run took {seconds:.1f} s"
        sh["times"].pop(variant, None)
        sh["cpu"].pop(variant, None)


def _shape_result(sh: dict[str, Any]) -> dict[str, Any]:
    """The comparison against the fastest native form (by median time) among those the shape's
    bar counts, and the baseline's ratio beside it."""
    natives = [v for v in sh["variants"] if v not in (sh["ours"], sh["baseline"])]
    counted = [v for v in natives if v in sh["times"] and v not in sh["dropped"]]
    if sh["baseline_counts"] or not counted:
        counted.append(sh["baseline"])
    fastest = min(counted, key=lambda v: _stats(sh["times"][v])["median"])

    def pair(v: str) -> dict[str, list[float]]:
        return {"left": sh["times"][v], "right": sh["times"][sh["ours"]],
                "left_cpu": sh["cpu"][v], "right_cpu": sh["cpu"][sh["ours"]]}

    out = _pair_result(sh["name"], sh["what"], f"connect {fastest}", f"connect {sh['ours']}",
                       pair(fastest), sh["bar"])
    out["baseline"] = {"name": sh["baseline"],
                       "ratio": _stats([a / b for a, b in zip(sh["times"][sh["baseline"]],
                                                              sh["times"][sh["ours"]])])}
    out["forms"] = {v: sh["dropped"].get(v) or f"{_stats(sh['times'][v])['median']:.2f} s"
                    for v in [sh["baseline"], *natives]}
    return out


def run(rows: int, rounds: int, warmup: int, out_dir: str, parts: tuple[int, ...] = (1, 2),
        inputs_in: str = "classic") -> dict[str, Any]:
    """``inputs_in="classic"``: a classic process writes the inputs first (what a run from the
    command line does); ``"connect"``, part 2 alone: its Connect process writes them, with the
    classic session its local server runs in, and no classic process is started (the smoke
    test's choice: one JVM start fewer; the inputs are the same files)."""
    if inputs_in not in ("classic", "connect"):
        raise ValueError(f"inputs_in must be 'classic' or 'connect', got {inputs_in!r}")
    if inputs_in == "connect" and tuple(parts) != (2,):
        raise ValueError("inputs_in='connect' runs part 2 alone (part 1 starts classic processes)")
    loads: list[float] = []
    paths = None
    if inputs_in == "classic":
        w = _Worker("classic")
        try:
            paths = w.ask({"op": "inputs", "rows": rows, "out_dir": out_dir})["paths"]
        finally:
            w.stop()
    results = []
    if 1 in parts:
        results += _run_part1(paths, rounds, loads)
    if 2 in parts:
        results += _run_part2(paths, rounds, warmup, loads, rows, out_dir)
    return {"rows": rows, "rounds": rounds, "warmup": warmup, "partitions": PARTITIONS,
            "parts": list(parts), "load_average_per_round": loads, "results": results}


def _keep_other_parts(record: dict[str, Any]) -> None:
    """A run of some parts keeps the stored results of the comparisons it did not run (each
    with the command, date and rounds of its own run); comparisons no longer defined are gone."""
    if not os.path.exists(JSON_PATH):
        return
    with open(JSON_PATH) as f:
        old = json.load(f)
    ran = {r["name"] for r in record["results"]}
    defined = [p[0] for p in PAIRS] + [s[0] for s in SHAPES]
    for r in old.get("results", []):
        if r["name"] in defined and r["name"] not in ran:
            for key in ("command", "date", "rows", "rounds", "warmup", "load_average_per_round"):
                r.setdefault(key, old[key])
            record["results"].append(r)
    record["results"].sort(key=lambda r: defined.index(r["name"]))


def _forms_cell(result: dict[str, Any]) -> str:
    if "forms" not in result:
        return "–"
    forms = "; ".join(f"{name}: {what}" for name, what in result["forms"].items())
    base = result["baseline"]
    return f"{forms}; ours vs {base['name']}: {_fmt_ratio(base['ratio'])}"


def _markdown(record: dict[str, Any]) -> str:
    header = ["comparison", "fastest native, or the other side (time)", "ours (time)",
              "ratio native/ours", "bar", "verdict", "CPU seconds native / ours (ratio)",
              "every native form over Connect (median), and the baseline's ratio"]
    rows = [[r["name"], f"{r['left']}: {_fmt_time(r['left_time'])}",
             f"{r['right']}: {_fmt_time(r['right_time'])}", _fmt_ratio(r["ratio"]),
             "–" if r["bar"] is None else f"≥ {r['bar']}×", r["verdict"],
             f"{r['left_cpu']['median']:.2f} / {r['right_cpu']['median']:.2f} s "
             f"({_fmt_ratio(r['cpu_ratio'])})" if r.get("cpu_ratio") else "–",
             _forms_cell(r)]
            for r in record["results"]]
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in record["results"]:
        key = (r.get("command", record["command"]), r.get("date", record["date"]))
        runs.setdefault(key, []).append(r)
    lines = []
    for (command, date), rs in runs.items():
        first = rs[0]
        loads = first.get("load_average_per_round", record["load_average_per_round"])
        lines.append(
            f"Command: `{command}` ({date}; {', '.join(r['name'] for r in rs)}): "
            f"{first.get('rows', record['rows']):,} rows, {record['partitions']} partitions, "
            f"{first.get('rounds', record['rounds'])} timed rounds, "
            f"{first.get('warmup', record['warmup'])} warm-up rounds over Connect; 1-minute load "
            f"average at the start of each round {min(loads):.1f}–{max(loads):.1f} (2 cores).")
    return "\n".join([
        BEGIN,
        *[line + "\n" for line in lines],
        "Connect vs classic: a fresh process per side per round, each variant once untimed "
        "first; over Connect: one process, every native form of the shape the line has, ratio "
        "to the fastest. Medians [min–max]; CPU = seconds used by the session's whole process "
        "tree during the run.",
        "",
        _markdown_table(header, rows),
        END,
    ])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.connect",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=2_000_000)
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--quick", action="store_true", help="tiny, 1 round, records nothing")
    p.add_argument("--parts", default="1,2",
                   help="1 = Connect vs classic, 2 = fullwindow vs native over Connect")
    p.add_argument("--out-dir", default=os.path.join(HERE, "out"))
    p.add_argument("--worker", choices=("classic", "connect"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return _worker(args.worker)
    if args.quick:
        args.rows, args.rounds, args.warmup = 20_000, 1, 0
    record = run(args.rows, args.rounds, args.warmup, args.out_dir,
                 tuple(int(x) for x in args.parts.split(",")))
    record["command"] = invocation("benchmarks.connect", argv)
    record["date"] = utc_date()
    for r in record["results"]:
        r.update(command=record["command"], date=record["date"], rows=record["rows"],
                 rounds=record["rounds"],
                 warmup=record["warmup"], load_average_per_round=record["load_average_per_round"])
    if not args.quick:
        _keep_other_parts(record)
    text = _markdown(record)
    print(text)
    if not args.quick:
        from benchmarks.report import record_standalone

        record_standalone(JSON_PATH, record, NOTES_PATH, BEGIN, END, text, RESULTS_MD)
    return 0 if all(r["verdict"] in ("PASS", "control") for r in record["results"]) else 1


if __name__ == "__main__":
    sys.exit(main())
