"""RESULTS.md: regenerated whole from results.json (the latest result of every case).

A run of some cases replaces only those cases' entries in results.json; every other case keeps
its last result, with the command and date that produced it. RESULTS.md is then written again
from all entries, one section per case group. Hand-written notes for a group live in
``benchmarks/notes/<group>.md`` and are copied into that group's section.
"""
from __future__ import annotations

import json
import os
from typing import Any

from benchmarks.cases import all_cases
from benchmarks.registry import Case, Check
from benchmarks.tables import _HEADER, _fmt_bytes, _fmt_ms, _markdown_table, _row, _stats

HERE = os.path.dirname(os.path.abspath(__file__))

NOTES_DIR = os.path.join(HERE, "notes")
LINES_DIR = os.path.join(HERE, "lines")
RESULTS_MD = os.path.join(HERE, "RESULTS.md")


def _load(path: str) -> dict[str, Any]:
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    return {"cases": {}}


def _fastest(res: dict[str, Any], variants: list[str]) -> str:
    """Of ``variants`` (timed), the one of the lowest median time."""
    return min(variants, key=lambda v: res["variant_stats"][v]["median"])


def _ratios_to(res: dict[str, Any], variant: str) -> list[float]:
    """Per round, ``variant``'s time / ours (> 1: ours is faster)."""
    return [n / o for o, n in zip(res["times"]["ours"], res["times"][variant])]


def _timed_named(res: dict[str, Any], names: tuple[str, ...]) -> list[str]:
    """The timed native forms whose names are among ``names``."""
    return [v for v, info in (res.get("natives") or {}).items()
            if info["name"] in names and res["times"].get(v)]


def rank_natives(case: Case, res: dict[str, Any]) -> None:
    """Picks the native form the headline ratio is against: the fastest timed one among those
    the case's bar names (the baseline ``native`` only when ``case.baseline_in_headline``)."""
    natives = res["natives"]
    timed = [v for v in natives if res["times"].get(v)]
    named = [v for v in timed if v != "native" or case.baseline_in_headline]
    res["bar_applies"] = bool(named) or case.baseline_stands_in
    contenders = named or ["native"]
    fastest = _fastest(res, contenders)
    res["fastest_native"] = fastest
    res["fastest_native_name"] = natives[fastest]["name"]
    res["best_ratios"] = _ratios_to(res, fastest)
    res["best_ratio_stats"] = _stats(res["best_ratios"])
    res.pop("bar_native_name", None)
    res.pop("bar_ratio_stats", None)
    if case.bar_natives:
        against = _fastest(res, _timed_named(res, case.bar_natives) or ["native"])
        if against != fastest:
            res["bar_native_name"] = natives[against]["name"]
            res["bar_ratio_stats"] = _stats(_ratios_to(res, against))
    res.pop("floor_stats", None)
    if res.get("floors"):
        res["floor_stats"] = _floor_stats(res)


def _floor_stats(res: dict[str, Any]) -> dict[str, Any]:
    """Per floor timed: its time, and ours and the fastest native form as multiples of it, per
    round (1.00×: at the floor; results from before floors were timed have none)."""
    out = {}
    times = res["times"]
    for v, info in (res.get("floors") or {}).items():
        floor = times.get(v)
        if not floor:
            continue
        out[v] = {"name": info["name"], "time": _stats(floor),
                  "ours": _stats([o / f for o, f in zip(times["ours"], floor)]),
                  "native": _stats([n / f for n, f in zip(times[res["fastest_native"]], floor)])}
    return out


def judge(case: Case, res: dict[str, Any]) -> dict[str, Any]:
    """The verdict: INVALID when the run itself is in doubt (a plan node missing, no spill);
    NO BAR when the line has none of the native forms the bar names (the ratio shown is then
    against the baseline); else PASS when the
    headline ratio's median reaches the case's bar (the ratio to the fastest of
    ``case.bar_natives`` instead, when the case names them) and every one of ``case.checks``
    holds; MISS when one of them does not; NOT JUDGED when the run did not measure a check."""
    res["checks"] = [_check(c, res) for c in case.checks]
    if res.get("problems"):
        res["status"] = "INVALID (" + "; ".join(res["problems"]) + ")"
    elif not res.get("bar_applies", True):
        res["status"] = "NO BAR"
    else:
        judged = res.get("bar_ratio_stats") or res["best_ratio_stats"]
        held = [judged["median"] >= case.bar] + [c["ok"] for c in res["checks"]]
        if False in held:
            res["status"] = "MISS"
        elif None in held:
            res["status"] = "NOT JUDGED"  # a check the run did not measure (its cell says which)
        else:
            res["status"] = "PASS"
    return res


def _check(check: Check, res: dict[str, Any]) -> dict[str, Any]:
    """One further condition of the bar (``Check``) on a result: its value (None when the run
    did not measure it: a form or floor not timed, a result from before the check) and whether
    it holds."""
    value = None
    if check.kind == "ratio":
        named = _timed_named(res, check.against)
        if named:
            value = _stats(_ratios_to(res, _fastest(res, named)))["median"]
    elif check.kind == "floor":
        value = next((f["ours"]["median"] for f in (res.get("floor_stats") or {}).values()
                      if f["name"] == check.against[0]), None)
    elif check.kind == "record floor":
        python = [r.get("python_cpu_ms") for r in (res.get("metrics") or {}).get("ours", [])]
        python = [x for x in python if x is not None]
        floor = res.get("record_floor_cpu_s")
        if python and floor:
            value = _stats(python)["median"] / 1000 / floor
    else:
        raise ValueError(f"unknown check kind {check.kind!r}")
    ok = None if value is None else (value >= check.limit if check.kind == "ratio"
                                     else value <= check.limit)
    return {"label": check.label(), "brief": check.brief(), "value": value, "ok": ok}


def _rejudge(store: dict[str, Any]) -> None:
    """Ranks and judges every stored result again by its case's current definition (which
    forms the bar names, the bar), so a change there shows without re-running; the timings,
    settings and descriptions stay those of the run."""
    cases = all_cases()
    for name, res in store["cases"].items():
        case = cases.get(name)
        if case is None or res.get("error") or not res.get("times"):
            continue
        # results from before several native forms were timed have only ``native``
        res.setdefault("natives", {"native": {"name": res.get("native_name") or "native",
                                              "node": res.get("native_node")}})
        res.setdefault("variant_stats", {v: _stats(res["times"][v]) for v in res["natives"]
                                         if res["times"].get(v)})
        rank_natives(case, res)
        res["bar"], res["bar_note"] = case.bar, case.bar_note
        judge(case, res)


def _slim(res: dict[str, Any]) -> dict[str, Any]:
    """What results.json keeps of a case result: no plan node lists per run."""
    out = dict(res)
    if "metrics" in out:
        out["metrics"] = {v: [{k: x for k, x in run.items() if k != "plan_nodes"} for run in runs]
                          for v, runs in out["metrics"].items()}
    return out


def record_standalone(json_path: str, record: dict[str, Any], notes_path: str, begin: str,
                      end: str, block: str, md_path: str) -> None:
    """For a benchmark run on its own (heavy_key.py, recovery.py): writes its raw ``record``,
    puts the generated ``block`` (which starts with ``begin`` and ends with ``end``) into its
    notes file in place of the previous one (appended the first time), and re-renders
    RESULTS.md, which copies the notes."""
    with open(json_path, "w") as f:
        json.dump(record, f, indent=1, sort_keys=True)
        f.write("\n")
    text = open(notes_path).read() if os.path.exists(notes_path) else ""
    if begin in text and end in text:
        text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
    else:
        text = text.rstrip() + ("\n\n" if text.strip() else "") + block + "\n"
    with open(notes_path, "w") as f:
        f.write(text)
    update_results(md_path, [])


def update_results(md_path: str, results: list[dict[str, Any]]) -> None:
    out_dir = os.path.dirname(os.path.abspath(md_path))
    os.makedirs(out_dir, exist_ok=True)  # a new --results place, e.g. benchmarks/lines/spark-3.5
    json_path = os.path.join(out_dir, "results.json")
    store = _load(json_path)
    _rejudge(store)
    for res in results:
        store["cases"][res["name"]] = _slim(res)
    with open(json_path, "w") as f:
        json.dump(store, f, indent=1, sort_keys=True)
        f.write("\n")
    with open(md_path, "w") as f:
        f.write(render(store, lines=os.path.abspath(md_path) == RESULTS_MD))


def _ordered(store: dict[str, Any]) -> list[dict[str, Any]]:
    registered = list(all_cases())
    rank = {name: i for i, name in enumerate(registered)}
    return sorted(store["cases"].values(), key=lambda r: (rank.get(r["name"], len(rank)),
                                                          r["name"]))


def _machine_line(m: dict[str, Any] | None) -> str:
    if not m:
        return "machine unknown"
    return (f"{m.get('cores')} cores, {m.get('memory_gib')} GiB RAM, {m.get('cpu') or 'cpu ?'}; "
            f"{m.get('os')}; Spark {m.get('spark')}, Java {m.get('java')}, "
            f"Python {m.get('python')}; fullwindow {m.get('fullwindow')} at commit "
            f"{m.get('commit') or '?'}"
            + (" plus uncommitted changes in the work tree" if m.get("worktree_dirty") else "")
            + f", jar sha256 {m.get('jar_sha256', '?')}")


def _dropped(res: dict[str, Any]) -> str:
    """The native forms timed in the warm-up only (too slow to be the fastest), with their
    warm-up times."""
    dropped = res.get("dropped") or {}
    if not dropped:
        return ""
    return ("; timed in the warm-up only, too slow to be the fastest: " + ", ".join(
        f"{res['natives'][v]['name']} {t:.1f} s" for v, t in dropped.items()))


def _profile_rows(res: dict[str, Any]) -> list[list[str]]:
    rows = []
    if "profile" not in res:
        return rows
    natives = res.get("natives") or {"native": {"name": res.get("native_name") or "native",
                                                "node": res.get("native_node")}}
    floors = res.get("floors") or {}
    for variant in ("ours", *natives, *floors):
        p = res["profile"].get(variant)
        stats = ((res.get("variant_stats") or {}).get(variant) or res.get(f"{variant}_stats")
                 or (res.get("floor_stats") or {}).get(variant, {}).get("time"))
        if p is None or stats is None:
            continue
        if variant == "ours":
            label = f"ours ({res.get('ours_node') or '?'})"
        else:
            info = natives.get(variant) or floors[variant]
            node = info.get("node") or ("" if variant in floors else "?")
            label = (("floor: " if variant in floors else "") + info["name"]
                     + (f" ({node})" if node else ""))
        rows.append([res["name"], label, f"{stats['median']:.2f} s",
                     f"{stats['q1']:.2f}–{stats['q3']:.2f} s",
                     _fmt_ms(p.get("duration_ms")), _fmt_ms(p.get("executor_run_time_ms")),
                     _fmt_ms(p.get("executor_cpu_time_ms")),
                     _fmt_ms(p.get("jvm_process_cpu_ms")), _fmt_ms(p.get("python_cpu_ms")),
                     _fmt_ms(p.get("scan_time_ms")), _fmt_ms(p.get("sort_time_ms")),
                     _fmt_ms(p.get("jvm_gc_time_ms")), _fmt_bytes(p.get("peak_memory_bytes")),
                     _fmt_bytes(p.get("memory_bytes_spilled")),
                     _fmt_bytes(p.get("disk_bytes_spilled"))])
    return rows


_PROFILE_HEADER = ["case", "variant (node)", "wall", "wall IQR", "SQL execution",
                   "task run time", "task CPU time", "JVM process CPU", "Python workers CPU",
                   "scan time", "sort time", "JVM GC",
                   "peak memory", "spilled (memory)", "spilled (disk)"]


def _lines_table() -> list[str]:
    """Each other line's latest result of every case (``benchmarks/lines/spark-<line>/
    results.json``, judged again by the cases' current definitions), one table."""
    rows = []
    for line in sorted(os.listdir(LINES_DIR) if os.path.isdir(LINES_DIR) else []):
        path = os.path.join(LINES_DIR, line, "results.json")
        if not os.path.exists(path):
            continue
        store = _load(path)
        _rejudge(store)
        for r in _ordered(store):
            m = r.get("machine") or {}
            row = _row(r)
            rows.append([m.get("spark") or line, *row[:4], row[6], row[7], row[8],
                         f"{r.get('warmup', '?')} + {r.get('rounds', '?')}",
                         f"{r.get('date', '?')}, commit {m.get('commit') or '?'}"])
    if not rows:
        return []
    header = ["Spark", "case", "rows", "ratio to the fastest native median [min–max] (IQR)",
              "fastest native", "ratio to the baseline native (name) median", "bar", "result",
              "warm-up + timed rounds", "run"]
    return ["**Every line's latest figures** (generated from `benchmarks/lines/spark-<line>/"
            "results.json`; each line's full tables, commands and profiles are in its "
            "`RESULTS.md` there)", "", _markdown_table(header, rows), ""]


def render(store: dict[str, Any], lines: bool = False) -> str:
    """RESULTS.md from ``store``; with ``lines``, the lines section also gets the table of
    every other line's figures."""
    results = _ordered(store)
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        groups.setdefault(r.get("group", "other"), []).append(r)
    out = [
        "# Benchmark results",
        "",
        "Written by the benchmark harness (`benchmarks/`, see its README.md) from "
        "`benchmarks/results.json`; do not edit by hand (a group's notes come from "
        "`benchmarks/notes/<group>.md`). Every figure is a ratio against native Spark measured "
        "in the same run: same Spark session, same materialized input, same partition count; "
        "after warm-up rounds, each round runs every variant (ours and every native form of "
        "the case's shape that the running Spark line has), each going first in turn. "
        "**ratio = native time / fullwindow time** per round (> 1 means fullwindow is faster), "
        "against the fastest native form (named in the row) among those the case's bar names "
        "(the keyed Arrow cases: the Arrow forms; the keyed row cases: the row-at-a-time "
        "forms); the ratio to the case's baseline native form (`applyInPandas` for keyed and "
        "coGroup cases) stays as a column. A native form whose warm-up run took over 3x the "
        "fastest one's is timed in the warm-up only and named under Rounds. The table gives the "
        "median over rounds and [min–max]. A case PASSes when the median ratio to the fastest "
        "native form reaches the bar (DESIGN.md, \"Bars for speed\"), except where DESIGN's "
        "row names one form of several: the keyed `mapPartitionInPandas` cases are judged "
        "against the iterator `applyInPandas` (4.1+; else `applyInPandas`), and the result "
        "column then gives that ratio and form; NO BAR: the line has "
        "none of the native forms the bar names (3.5 has no Arrow form for the keyed Arrow "
        "cases), the ratio shown is against the baseline. Where DESIGN holds ours to more than "
        "that ratio (the ratio to another native form, ours against a floor, ours' Python CPU "
        "against the per-record Python floor of `benchmarks/record_floor.py` measured on the "
        "case's input), the bar column lists each further condition and the result column its "
        "value (✓ held, ✗ not): a case PASSes only when all hold, and is NOT JUDGED when its run "
        "did not measure one. **Floors** (timed in the same rounds, "
        "never ranked or judged): the same input and sink without the work measured (a sort "
        "case: the scan to the sink, no sort; a keyed or coGroup case: the exchange by key, "
        "without and with the sort, no Python; a partition case: the scan to the sink); the "
        "floors column gives each floor's median time and ours and the fastest native form as "
        "per-round multiples of it (time / floor time: 1.00× is at the floor).",
        "",
        "## Summary",
        "",
        _markdown_table(["group"] + _HEADER, [[r.get("group", "?")] + _row(r) for r in results]),
        "",
    ]
    # notes/<name>.md without a case group: sections written by standalone scripts (e.g.
    # benchmarks/recovery.py), rendered after the groups
    standalone = sorted(n[:-3] for n in (os.listdir(NOTES_DIR) if os.path.isdir(NOTES_DIR) else [])
                        if n.endswith(".md") and n[:-3] not in groups)
    if standalone:
        out += ["Measured by standalone scripts, not in this table: "
                + ", ".join(f"[{n}](#{n})" for n in standalone) + " (sections below).", ""]
    for group, rs in groups.items():
        out += [f"## {group}", "", _markdown_table(_HEADER, [_row(r) for r in rs]), ""]
        runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for r in rs:
            runs.setdefault((r.get("command", "?"), r.get("date", "?")), []).append(r)
        out += ["**Produced by**", ""]
        for (command, date), rr in runs.items():
            machine = next((x.get("machine") for x in rr if x.get("machine")), None)
            loads = [f"{x['name']} {x['loadavg_start'][0]:.1f}→{x['loadavg_end'][0]:.1f}"
                     for x in rr if x.get("loadavg_start") and x.get("loadavg_end")]
            out.append(f"- `{command}` on {date} ({', '.join(x['name'] for x in rr)}); "
                       f"{_machine_line(machine)}"
                       + (f"; 1-minute load average at start→end of each case: "
                          f"{', '.join(loads)}" if loads else ""))
        out += ["", "**Settings**", ""]
        for r in rs:
            conf = ", ".join(f"`{k}={v}`" for k, v in (r.get("spark_conf") or {}).items())
            extra = "; ".join(f"{k}: {v}" for k, v in (r.get("settings") or {}).items())
            heap = r.get("jvm_max_heap_bytes")
            out.append(
                f"- `{r['name']}`: {r.get('description', '')}. {r.get('rows', 0):,} rows in "
                f"{r.get('partitions', '?')} partitions; {r.get('warmup', '?')} warm-up + "
                f"{r.get('rounds', '?')} timed rounds" + (" (quick mode)" if r.get("quick") else "")
                + f"; {conf}" + (f"; JVM max heap {_fmt_bytes(heap)}" if heap else "")
                + (f"; {extra}" if extra else "") + ".")
        out += ["", "**Profile** (median per run, from the Spark UI REST API: the SQL "
                "execution's node metrics and the task metrics of its stages; times summed over "
                "tasks except wall and SQL execution. JVM process CPU and Python workers CPU are "
                "read from /proc around each run: the whole driver JVM, and every process under "
                "it (pyspark daemon and workers), whose CPU the task metrics do not count)", ""]
        prof = [row for r in rs for row in _profile_rows(r)]
        out += [_markdown_table(_PROFILE_HEADER, prof) if prof else "(no profile)", ""]
        out += ["**Rounds** (per-round ratios in run order; median ratio by which variant went "
                "first; other processes' CPU use measured just before each round)", ""]
        for r in rs:
            if "ratios" not in r:
                continue
            by_first = r.get("ratio_by_first") or {}
            busy = [b for b in r.get("background_busy") or [] if b is not None]
            out.append(
                f"- `{r['name']}`: " + " ".join(f"{x:.2f}" for x in r.get("best_ratios")
                                                or r["ratios"])
                + "; ours first " + (f"{by_first['ours']:.2f}×" if "ours" in by_first else "–")
                + ", native first " + (f"{by_first['native']:.2f}×" if "native" in by_first
                                       else "–")
                + (f"; background CPU before rounds median {sorted(busy)[len(busy) // 2]:.0%}, "
                   f"max {max(busy):.0%}" if busy else "")
                + _dropped(r))
        out.append("")
        for r in rs:
            if r.get("status", "").startswith(("FAIL", "INVALID")):
                out += [f"`{r['name']}` {r['status']}:", "", "```",
                        (r.get("error") or "; ".join(r.get("problems", [])))[-3000:], "```", ""]
        notes = os.path.join(NOTES_DIR, f"{group}.md")
        if os.path.exists(notes):
            with open(notes) as f:
                out += ["**Notes**", "", f.read().strip(), ""]
    for name in standalone:
        with open(os.path.join(NOTES_DIR, f"{name}.md")) as f:
            out += [f"## {name}", "", f.read().strip(), ""]
        if name == "lines" and lines:
            out += _lines_table()
    return "\n".join(out).rstrip() + "\n"
