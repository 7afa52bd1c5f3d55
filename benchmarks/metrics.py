"""Reading what each timed run did from Spark's monitoring REST API (the UI port of the driver).

Every timed run carries a unique job description (its tag). After the runs, the SQL executions
and stages with that tag give: the plan nodes that ran (so a benchmark proves the sort was
executed), the node metrics (sort time, spill size, peak memory, scan time), and the task
metrics of its stages (memory / disk bytes spilled, executor run time, JVM GC time).
"""
from __future__ import annotations

import json
import re
import time
import urllib.request
from typing import Any

_SIZE_UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50}
_TIME_UNITS = {"ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}


def parse_metric(value: str) -> float | None:
    """The total of a SQL metric as the UI formats it: '12.0 MiB (...)' -> bytes,
    '470 ms' / '6.7 s' -> milliseconds, '4,000,000' -> a count."""
    text = value.strip()
    if text.startswith("total"):
        lines = text.splitlines()
        text = lines[1] if len(lines) > 1 else ""
    text = text.split("(")[0].strip()
    m = re.fullmatch(r"([\d.,]+)\s*([A-Za-z]*)", text)
    if not m:
        return None
    number = float(m.group(1).replace(",", ""))
    unit = m.group(2)
    if not unit:
        return number
    if unit in _SIZE_UNITS:
        return number * _SIZE_UNITS[unit]
    if unit in _TIME_UNITS:
        return number * _TIME_UNITS[unit]
    return None


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=120) as resp:  # a loaded 2-core machine stalls the UI
        return json.load(resp)


class RunMetrics:
    """Collects the metrics of tagged runs from one SparkContext's REST API."""

    def __init__(self, spark):
        sc = spark.sparkContext
        self.base = (f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}"
                     if sc.uiWebUrl else None)

    def available(self) -> bool:
        return self.base is not None

    def collect(self, tags: list[str], nodes: dict[str, str | None],
                wait_seconds: float = 60.0) -> dict[str, dict[str, Any]]:
        """Metrics of each tagged run. ``nodes`` maps a tag to the plan node whose metrics are
        read (e.g. 'Sort'; 'A|B': whichever of the two ran). Waits until the listener has
        recorded every run as completed."""
        if not self.base:
            return {}
        deadline = time.monotonic() + wait_seconds
        while True:
            sql = _get(f"{self.base}/sql?details=true&planDescription=false&offset=0&length=100000")
            stages = _get(f"{self.base}/stages?details=false")
            by_tag = {e.get("description"): e for e in sql}
            done = all(t in by_tag and by_tag[t].get("status") == "COMPLETED" for t in tags)
            stage_done = all(s.get("status") not in ("ACTIVE", "PENDING") for s in stages
                             if s.get("description") in tags)
            if (done and stage_done) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        out: dict[str, dict[str, Any]] = {}
        for tag in tags:
            execution = by_tag.get(tag)
            info: dict[str, Any] = {"found": execution is not None}
            if execution is not None:
                info["status"] = execution.get("status")
                info["duration_ms"] = execution.get("duration")
                names = [n.get("nodeName", "") for n in execution.get("nodes", [])]
                info["plan_nodes"] = names
                want = nodes.get(tag)
                wanted = want.split("|") if want else []  # "A|B": either node (per line)
                info["node_ran"] = any(w in names for w in wanted) if want else None
                for node in execution.get("nodes", []):
                    name = node.get("nodeName", "")
                    metrics = {m["name"]: m["value"] for m in node.get("metrics", [])}
                    if name in wanted:
                        for key, metric in (("sort_time_ms", "sort time"),
                                            ("spill_size_bytes", "spill size"),
                                            ("peak_memory_bytes", "peak memory")):
                            if metric in metrics:
                                info[key] = parse_metric(metrics[metric])
                    elif name.startswith("Scan") and "scan time" in metrics:
                        info["scan_time_ms"] = (info.get("scan_time_ms") or 0) + (
                            parse_metric(metrics["scan time"]) or 0)
            tagged = [s for s in stages if s.get("description") == tag]
            info["stages"] = len(tagged)
            for key, field in (("memory_bytes_spilled", "memoryBytesSpilled"),
                               ("disk_bytes_spilled", "diskBytesSpilled"),
                               ("executor_run_time_ms", "executorRunTime"),
                               ("jvm_gc_time_ms", "jvmGcTime")):
                info[key] = sum(int(s.get(field) or 0) for s in tagged)
            # task threads' CPU time: less sensitive than wall time to other load on the machine
            info["executor_cpu_time_ms"] = sum(int(s.get("executorCpuTime") or 0)
                                               for s in tagged) / 1e6
            out[tag] = info
        return out
