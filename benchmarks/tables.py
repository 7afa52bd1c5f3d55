"""The benchmark tables' statistics and formatting, shared by the harness, its report and the
other benchmark scripts (a module of its own, so none of them imports another for them)."""
from __future__ import annotations

import statistics
from typing import Any


def _stats(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    if len(xs) >= 2:
        q1, _, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    else:
        q1 = q3 = xs[0]
    return {"median": statistics.median(xs), "min": xs[0], "max": xs[-1], "q1": q1, "q3": q3,
            "n": len(xs)}


def _fmt_time(s: dict[str, float]) -> str:
    return f"{s['median']:.2f} s [{s['min']:.2f}–{s['max']:.2f}]"


def _fmt_ratio(s: dict[str, float]) -> str:
    return f"{s['median']:.2f}× [{s['min']:.2f}–{s['max']:.2f}]"


def _fmt_bytes(n: float | None) -> str:
    if n is None:
        return "?"
    if n == 0:
        return "0"
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.0f} {unit}" if n / size >= 100 else f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def _fmt_ms(n: float | None) -> str:
    return "?" if n is None else f"{n / 1000:.2f} s"



_HEADER = ["case", "rows", "ratio to the fastest native median [min–max] (IQR)",
           "fastest native", "ours median [min–max]", "fastest native median [min–max]",
           "ratio to the baseline native (name) median", "bar", "result",
           "spilled/run ours / fastest native", "task-CPU ratio median",
           "JVM+Python CPU ratio median",
           "floors median: ours ÷ floor, fastest native ÷ floor (1.00× = at the floor)"]


def _process_cpu_ratio(res: dict[str, Any], native: str = "native") -> float | None:
    """Median over rounds of native / ours CPU time of the driver JVM plus its Python workers
    (from /proc; unlike task CPU time it counts the Python side of Python operations)."""
    def total(run):
        j, p = run.get("jvm_process_cpu_ms"), run.get("python_cpu_ms")
        return None if j is None or p is None else j + p
    metrics = res.get("metrics") or {}
    ratios = [total(n) / total(o) for o, n in zip(metrics.get("ours", []), metrics.get(native, []))
              if total(o) and total(n)]
    return statistics.median(ratios) if ratios else None


def _row(res: dict[str, Any]) -> list[str]:
    """A case's row: the headline ratio is against the fastest native form measured (results
    from before several native forms were measured have only ``native``, which is then it)."""
    checks = res.get("checks") or []
    bar = (f"≥ {res['bar']:.2f}×" + "".join(f"; {c['label']}" for c in checks)
           + (f", {res['bar_note']}" if res.get("bar_note") else ""))
    status = res["status"]
    if res.get("bar_ratio_stats") and status in ("PASS", "MISS"):
        # judged against the form DESIGN's row names, not the headline's fastest form
        status += f" ({_fmt_ratio(res['bar_ratio_stats'])} to {res['bar_native_name']})"
    if checks and not res.get("error"):
        status += " (" + "; ".join(
            f"{c.get('brief') or c['label']} " + ("not measured" if c["value"] is None
                                                 else f"{c['value']:.2f}×")
            + ("" if c["ok"] is None else " ✓" if c["ok"] else " ✗") for c in checks) + ")"
    if res.get("error"):
        return [res["name"], f"{res.get('rows', 0):,}", "–", "–", "–", "–", "–", bar,
                res["status"], "–", "–", "–", "–"]
    prof = res["profile"]
    fastest = res.get("fastest_native", "native")
    baseline = res.get("native_name") or "native"

    def spill(v):
        x = prof.get(v, {}).get("spill_size_bytes")
        return _fmt_bytes(x if x is not None else prof.get(v, {}).get("memory_bytes_spilled"))
    rs = res.get("best_ratio_stats") or res["ratio_stats"]
    fast_stats = (res.get("variant_stats") or {}).get(fastest) or res["native_stats"]
    cpu = res.get("cpu_ratio_stats")
    return [res["name"], f"{res['rows']:,}",
            f"{_fmt_ratio(rs)} ({rs['q1']:.2f}–{rs['q3']:.2f})",
            res.get("fastest_native_name") or baseline,
            _fmt_time(res["ours_stats"]), _fmt_time(fast_stats),
            f"{res['ratio_stats']['median']:.2f}× ({baseline})", bar, status,
            f"{spill('ours')} / {spill(fastest)}", f"{cpu['median']:.2f}×" if cpu else "?",
            f"{pcpu:.2f}×" if (pcpu := _process_cpu_ratio(res, fastest)) else "?",
            _floors_cell(res)]


def _floors_cell(res: dict[str, Any]) -> str:
    """Each floor's median time, and ours and the fastest native form as multiples of it."""
    return "; ".join(f"{f['name']} {f['time']['median']:.2f} s: ours {f['ours']['median']:.2f}×, "
                     f"native {f['native']['median']:.2f}×"
                     for f in (res.get("floor_stats") or {}).values()) or "–"


def _markdown_table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def _text_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(x) for x in col) for col in zip(header, *rows)]
    fmt = "  ".join("{:<%d}" % w for w in widths)
    lines = [fmt.format(*header), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*r) for r in rows]
    return "\n".join(lines)
