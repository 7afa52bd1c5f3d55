"""One key holding half the rows, in 1 GiB: keyed mapPartition and mapPartitionInPandas against
groupBy().applyInPandas, and coGroup (rows, pandas and Arrow forms) against
cogroup().applyInArrow, with the same records on both sides.

DESIGN.md ("Bars for speed") asks that keyed ``mapPartition`` and ``mapPartitionInPandas``
complete when one key holds half the rows in a 1 GiB JVM (and under a 1 GiB Python worker
limit), where ``applyInPandas`` does not. That is an outcome, not a ratio, and
the harness (``python -m benchmarks``) aborts a case whose native variant fails, so this script
runs it on its own:

    .venv/bin/python -m benchmarks.heavy_key                 # every variant, both settings
    .venv/bin/python -m benchmarks.heavy_key --rows 2000000 --timeout 300 --no-record

Each variant runs once, in its own child process (its own Spark JVM, ``local[2]``,
``spark.driver.memory=1g``), on the same Parquet input: ``rows`` records, half of them under key
0 and the rest spread over 10,000 other keys. Both do the keyed cases' work per key (count the
rows, sum ``x``): fullwindow's ``mapPartition`` loops over the key's lazy Row iterator, its
``mapPartitionInPandas`` sums the key's stream of frames frame by frame, applyInPandas gets the
key's records as one pandas DataFrame. The parent polls /proc every 0.2 s for the resident
memory of the JVM and of the Python workers under it, and kills the child's process group when
it passes ``--timeout``. Two settings are run:

- ``driver 1 GiB``: only the JVM is bounded (the Python workers are separate processes, which
  ``spark.driver.memory`` does not cover);
- ``driver 1 GiB + Python 1 GiB``: also ``spark.executor.pyspark.memory=1g``, Spark's own
  bound on each Python worker (an address-space limit, RLIMIT_AS, set by the worker).

The coGroup variants have wide twins (``cogroup_wide``, ``cogroup_pandas_wide``,
``cogroup_arrow_wide``, ``native_cogroup_arrow_wide``): the same shape on records that also carry
a string payload ``p`` of ``--payload`` characters (640 by default), on ``--wide-rows`` records
(4,000,000 by default, so 2,000,000 a side under key 0: about 1.24 GiB a side as one Arrow
table, more than the 1 GiB Python limit), and per key and side the payload's length is summed
as well. The narrow records (k, v, x: 24 bytes) of the same key fit in 1 GiB even as two whole
tables, so only the wide twins show what a whole-group form cannot hold:

    .venv/bin/python -m benchmarks.heavy_key --timeout 300 \
        --settings 'driver 1 GiB + Python 1 GiB' \
        --variants cogroup_wide,cogroup_pandas_wide,cogroup_arrow_wide,native_cogroup_arrow_wide

Each run's outcome (completed / failed with its error / timed out), wall time, the heavy key's
count as the job returned it, spill and peak memory go to ``benchmarks/heavy_key.json`` and to
the marked section of ``benchmarks/notes/keyed.md`` (then RESULTS.md is rendered again). A run
replaces the recorded run of the same variant and setting; the others stay, each with the
command that made it.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from typing import Any

from benchmarks.common import (BASE_CONF, DEFAULT_OUT, HERE, ROOT, _machine, child_json_path,
                               child_result, invocation, logger, read_child_json, run_watched,
                               session, utc_date)
from benchmarks.data import ONE_PARTITION_PER_FILE
from benchmarks.tables import _fmt_bytes

JSON_PATH = os.path.join(HERE, "heavy_key.json")
NOTES_PATH = os.path.join(HERE, "notes", "keyed.md")
BEGIN = "<!-- heavy_key.py: begin (generated, do not edit) -->"
END = "<!-- heavy_key.py: end -->"
OTHER_KEYS = 10_000
PARTITIONS = 4
WIDE_ROWS = 4_000_000
PAYLOAD_CHARS = 640
SETTINGS = {
    "driver 1 GiB": {"spark.driver.memory": "1g"},
    "driver 1 GiB + Python 1 GiB": {"spark.driver.memory": "1g",
                                    "spark.executor.pyspark.memory": "1g"},
}
SCHEMA = "k long, n long, s double"
VARIANTS = {"ours": "fullwindow keyed mapPartition",
            "pandas": "fullwindow keyed mapPartitionInPandas",
            "native": "groupBy().applyInPandas",
            "cogroup": "fullwindow coGroup apply (rows)",
            "cogroup_pandas": "fullwindow coGroup applyInPandas",
            "cogroup_arrow": "fullwindow coGroup applyInArrow",
            "native_cogroup_arrow": "cogroup().applyInArrow",
            "cogroup_wide": "fullwindow coGroup apply (rows), wide records",
            "cogroup_pandas_wide": "fullwindow coGroup applyInPandas, wide records",
            "cogroup_arrow_wide": "fullwindow coGroup applyInArrow, wide records",
            "native_cogroup_arrow_wide": "cogroup().applyInArrow, wide records"}
WIDE_SUFFIX = "_wide"


def _is_wide(variant: str) -> bool:
    return variant.endswith(WIDE_SUFFIX)


def heavy_side_arrow_bytes(rows: int, payload: int) -> int:
    """The Arrow data of key 0's records on one side (``rows // 2`` of them): k, v and x, 8
    bytes each, and for a payload its characters (ASCII, one byte each) and a 4-byte offset
    (validity bitmaps, 1 bit a column, left out)."""
    return (rows // 2) * (24 + (payload + 4 if payload else 0))


_log = logger("heavy_key")


def _input_path(out_dir: str, rows: int, payload: int = 0) -> str:
    wide = f"-w{payload}" if payload else ""
    return os.path.join(os.path.abspath(out_dir), "data",
                        f"heavy-key-r{rows}-p{PARTITIONS}{wide}")


# ---- child: one variant in one Spark session ---------------------------------------------------

def _session(out_dir: str, conf: dict[str, str], name: str):
    return session(out_dir, f"heavy_key {name}", {**BASE_CONF, **ONE_PARTITION_PER_FILE, **conf})


def _generate(out_dir: str, rows: int, payload: int = 0) -> None:
    if os.path.exists(os.path.join(_input_path(out_dir, rows, payload), "_SUCCESS")):
        return
    spark = _session(out_dir, {"spark.driver.memory": "2g"}, "input")
    try:
        _write_input(spark, out_dir, rows, payload)
    finally:
        spark.stop()


def _write_input(spark, out_dir: str, rows: int, payload: int = 0) -> None:
    """The input of ``rows`` records (with a ``payload``-character string when given), written
    with ``spark`` unless it is there already."""
    from pyspark.sql import functions as F
    path = _input_path(out_dir, rows, payload)
    if os.path.exists(os.path.join(path, "_SUCCESS")):
        return
    seed = 42
    k = F.when(F.col("id") % 2 == 0, F.lit(0)).otherwise(
        F.pmod(F.xxhash64(F.col("id"), F.lit(seed)), F.lit(OTHER_KEYS)) + 1)
    columns = [k.cast("long").alias("k"), F.xxhash64(F.col("id"), F.lit(seed + 1)).alias("v"),
               (F.col("id") % 1000).cast("double").alias("x")]
    if payload:  # ASCII, different in every record: the id's SHA-256 in hex, repeated
        hexed = F.sha2(F.col("id").cast("string"), 256)
        columns.append(F.substring(F.repeat(hexed, -(-payload // 64)), 1, payload).alias("p"))
    (spark.range(0, rows, 1, numPartitions=PARTITIONS).select(*columns)
     .write.mode("overwrite").parquet(path))


def _extra_conf(items: list[str] | None) -> dict[str, str]:
    """``--conf KEY=VALUE`` options: settings added to every run of the invocation."""
    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"--conf takes KEY=VALUE, got {item!r}")
        out[key.strip()] = value
    return out


def _child(args: argparse.Namespace) -> int:
    conf = {**SETTINGS[args.setting], **_extra_conf(args.conf)}
    out: dict[str, Any] = {"variant": args.child, "setting": args.setting, "conf": conf}
    with child_result(args.child_json, out) as child:
        spark = child["spark"] = _session(args.out_dir, conf, f"{args.child}, {args.setting}")
        jvm = spark.sparkContext._jvm
        out["jvm_max_heap_bytes"] = jvm.java.lang.Runtime.getRuntime().maxMemory()
        out["machine"] = _machine(spark)
        from benchmarks.cases.keyed import count_sum, count_sum_frames, count_sum_pd
        from benchmarks.cases.keyed import (cogroup_count_sum, cogroup_count_sum_batches,
                                            cogroup_count_sum_frames)
        from benchmarks.cases.keyed import (cogroup_count_sum_batches_wide,
                                            cogroup_count_sum_frames_wide, cogroup_count_sum_wide)
        from benchmarks.natives import (COGROUP_SCHEMA, WIDE_COGROUP_SCHEMA, cogroup_tables,
                                        cogroup_tables_wide)
        from fullwindow import EndOfStreamWindows
        if args.generate_in_child:  # before anything is timed (the job below is)
            _write_input(spark, args.out_dir, args.rows, args.payload)
        path = _input_path(args.out_dir, args.rows, args.payload)
        df = spark.read.parquet(path)
        other = spark.read.parquet(path)  # coGroup: the same records on both sides
        window = df.keyBy("k").coGroup(other.keyBy("k")).window(EndOfStreamWindows.get())
        wide = _is_wide(args.child)
        co_schema = WIDE_COGROUP_SCHEMA if wide else COGROUP_SCHEMA
        # each variant (its wide twin alike, with the functions that also read the payload):
        # how its DataFrame is built, and the plan node doing the work
        forms = {
            "ours": (lambda: df.keyBy("k").fullWindowPartition().mapPartition(count_sum, SCHEMA),
                     "FullWindowKeyedMapPartition"),
            "pandas": (lambda: df.keyBy("k").fullWindowPartition().mapPartitionInPandas(
                count_sum_frames, SCHEMA), "FullWindowKeyedMapPartitionInPandas"),
            "native": (lambda: df.groupBy("k").applyInPandas(count_sum_pd, SCHEMA),
                       "FlatMapGroupsInPandas"),
            "cogroup": (lambda: window.apply(
                cogroup_count_sum_wide if wide else cogroup_count_sum, co_schema),
                "FullWindowCoGroup"),
            "cogroup_pandas": (lambda: window.applyInPandas(
                cogroup_count_sum_frames_wide if wide else cogroup_count_sum_frames, co_schema),
                "FullWindowCoGroup"),
            "cogroup_arrow": (lambda: window.applyInArrow(
                cogroup_count_sum_batches_wide if wide else cogroup_count_sum_batches, co_schema),
                "FullWindowCoGroup"),
            "native_cogroup_arrow": (lambda: df.groupBy("k").cogroup(other.groupBy("k"))
                                     .applyInArrow(cogroup_tables_wide if wide else cogroup_tables,
                                                   co_schema), "FlatMapCoGroupsInArrow"),
        }
        build, node = forms[args.child.removesuffix(WIDE_SUFFIX)]
        result = build()
        tag = f"heavy_key:{args.child}"
        spark.sparkContext.setJobDescription(tag)
        start = time.perf_counter()
        try:
            rows = result.collect()   # 10,001 rows: one per key
            out["status"] = "completed"
        except Exception as err:  # noqa: BLE001  (the outcome is what is recorded)
            out["status"] = "failed"
            text = str(err)
            out["error_class"] = type(err).__name__
            out["error"] = text[-4000:]
            rows = None
        out["wall_s"] = time.perf_counter() - start
        spark.sparkContext.setJobDescription(None)
        if rows is not None:
            def n(r):  # a coGroup row counts both sides' records
                return r.n if "n" in r.__fields__ else r.nl + r.nr
            by_key = {r.k: r for r in rows}
            out["output_rows"] = len(rows)
            out["heavy_key_n"] = n(by_key[0]) if 0 in by_key else None
            out["total_n"] = sum(n(r) for r in rows)
            if args.payload and 0 in by_key:  # the heavy key's payload as the functions read it
                out["heavy_key_payload_chars"] = by_key[0].bl + by_key[0].br
            # key 0 holds the even ids: on both sides for coGroup, once for the keyed variants
            heavy = (args.rows + 1) // 2 * (2 if "cogroup" in args.child else 1)
            checks = [("heavy key's n", out["heavy_key_n"], heavy)]
            if args.payload:
                checks.append(("heavy key's payload characters",
                               out.get("heavy_key_payload_chars"), heavy * args.payload))
            wrong = [f"{name} {got} (expected {want})" for name, got, want in checks
                     if got != want]
            if wrong:
                out["status"] = "wrong result: " + "; ".join(wrong)
        try:
            from benchmarks.metrics import RunMetrics
            rm = RunMetrics(spark)
            m = rm.collect([tag], {tag: node}, wait_seconds=20).get(tag, {})
            m.pop("plan_nodes", None)
            out["metrics"] = m
        except Exception:  # noqa: BLE001
            out["metrics"] = {}
    return 0


# ---- parent: run the children, watch their memory ---------------------------------------------

def _tree(root: int) -> dict[int, tuple[int, str, int]]:
    """pid -> (parent, command name, RSS bytes) for ``root`` and every process under it."""
    page = os.sysconf("SC_PAGE_SIZE")
    procs = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                stat = f.read()
            with open(f"/proc/{p}/statm") as f:
                rss = int(f.read().split()[1]) * page
        except (OSError, IndexError, ValueError):
            continue
        comm = stat[stat.find("(") + 1:stat.rfind(")")]
        procs[int(p)] = (int(stat[stat.rfind(")") + 2:].split()[1]), comm, rss)
    keep = {root}
    changed = True
    while changed:
        changed = False
        for pid, (ppid, _, _) in procs.items():
            if ppid in keep and pid not in keep:
                keep.add(pid)
                changed = True
    return {pid: procs[pid] for pid in keep if pid in procs}


def _run_variant(args: argparse.Namespace, variant: str, setting: str) -> dict[str, Any]:
    json_path = child_json_path(args.out_dir, f"heavy-{variant}-")
    rows, payload = _shape(args, variant)
    cmd = [sys.executable, "-m", "benchmarks.heavy_key", "--child", variant, "--setting", setting,
           "--child-json", json_path, "--rows", str(rows), "--payload", str(payload),
           "--out-dir", args.out_dir, *(f"--conf={c}" for c in args.conf or []),
           *(["--generate-in-child"] if args.generate_in_child else [])]
    _log(f"{variant}, {setting}: starting ({rows:,} rows"
         + (f" with a {payload}-character payload" if payload else "")
         + f", timeout {args.timeout:.0f} s)")
    peak = {"jvm": 0, "py": 0, "py_one": 0}

    def sample(proc, _elapsed):
        tree = _tree(proc.pid)
        py = [rss for pid, (ppid, comm, rss) in tree.items()
              if pid != proc.pid and comm.startswith("python")]
        peak["jvm"] = max(peak["jvm"], sum(rss for _, comm, rss in tree.values() if comm == "java"))
        peak["py"] = max(peak["py"], sum(py))
        peak["py_one"] = max(peak["py_one"], max(py, default=0))

    returncode, elapsed, killed = run_watched(cmd, args.timeout, sample)
    peak_jvm, peak_py, peak_py_one = peak["jvm"], peak["py"], peak["py_one"]
    res = read_child_json(json_path)
    res.update({"variant": variant, "setting": setting,
                "conf": {**SETTINGS[setting], **_extra_conf(args.conf)},
                "rows": rows, "payload_chars": payload,
                "heavy_side_arrow_bytes": heavy_side_arrow_bytes(rows, payload),
                "process_s": elapsed, "exit_code": returncode,
                "peak_jvm_rss_bytes": peak_jvm, "peak_python_rss_bytes": peak_py,
                "peak_python_worker_rss_bytes": peak_py_one})
    if killed:
        res["status"] = f"timed out after {args.timeout:.0f} s (killed)"
    elif "status" not in res:
        res["status"] = f"failed (child exited with {returncode}, no result)"
    _log(f"{variant}, {setting}: {res['status']}"
         + (f" in {res['wall_s']:.1f} s" if res.get("wall_s") else "")
         + f"; peak RSS JVM {_fmt_bytes(peak_jvm)}, Python workers {_fmt_bytes(peak_py)}")
    return res


def _error_summary(res: dict[str, Any]) -> str:
    err = res.get("error") or ""
    lines = [ln.strip() for ln in err.splitlines() if ln.strip()]
    keys = ("MemoryError", "OutOfMemory", "Java heap", "ArrowInvalid", "ArrowCapacity",
            "Killed", "exit code", "exited", "PythonException", "Exception:", "Error:")
    picked = [ln for ln in lines if any(k in ln for k in keys)]
    text = (picked or lines or [""])[0]
    text = re.sub(r"(\w{16})\w{24,}", "\\1…", text)  # a long value the message quotes
    return text.replace("|", "\\|")[:240]


def _shape(args: argparse.Namespace, variant: str) -> tuple[int, int]:
    """(records, payload characters) of a variant's input: the wide twins read the wide one."""
    return (args.wide_rows, args.payload) if _is_wide(variant) else (args.rows, 0)


def _input_text(rows: int, payload: int) -> str:
    if not payload:
        return (f"{rows:,} records (k, v, x: 24 bytes), key 0 holds {rows // 2:,} "
                f"({_fmt_bytes(heavy_side_arrow_bytes(rows, 0))} a side as Arrow data)")
    return (f"{rows:,} wide records (k, v, x and a {payload}-character string p), key 0 holds "
            f"{rows // 2:,}: {_fmt_bytes(heavy_side_arrow_bytes(rows, payload))} a side as one "
            "Arrow table")


def _table(runs: list[dict[str, Any]]) -> list[str]:
    header = ["setting", "variant", "outcome", "job wall time", "heavy key's n",
              "peak RSS JVM", "peak RSS Python workers (sum / largest)", "spilled (memory / disk)",
              "error"]
    rows = []
    for r in runs:
        m = r.get("metrics") or {}
        rows.append([
            r["setting"], VARIANTS.get(r["variant"], r["variant"]),
            r["status"], f"{r['wall_s']:.1f} s" if r.get("wall_s") else "–",
            f"{r['heavy_key_n']:,}" if r.get("heavy_key_n") is not None else "–",
            _fmt_bytes(r.get("peak_jvm_rss_bytes")),
            f"{_fmt_bytes(r.get('peak_python_rss_bytes'))} / "
            f"{_fmt_bytes(r.get('peak_python_worker_rss_bytes'))}",
            f"{_fmt_bytes(m.get('memory_bytes_spilled'))} / "
            f"{_fmt_bytes(m.get('disk_bytes_spilled'))}" if m else "?",
            _error_summary(r) if r["status"] != "completed" else ""])
    table = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return table + ["| " + " | ".join(row) + " |" for row in rows]


def _markdown(record: dict[str, Any]) -> str:
    """One table per command that made some of ``record``'s runs (oldest first)."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in record["runs"]:
        groups.setdefault((r["command"], r["date"]), []).append(r)
    parts = [BEGIN,
             "**One key holding half the rows, 1 GiB**: each run once, in its own JVM, "
             f"`local[2]`; the same records on both coGroup sides, in {PARTITIONS} Parquet files, "
             f"half of them under key 0 and the rest spread over {OTHER_KEYS:,} keys; per key "
             "count and sum of x, as in the keyed cases (wide records: also the summed length of "
             "p, per side). A run replaces the recorded one of its variant and setting.", ""]
    for (command, date), runs in groups.items():
        machine = next((r.get("machine") for r in runs if r.get("machine")), {}) or {}
        shapes = sorted({(r["rows"], r.get("payload_chars") or 0) for r in runs},
                        key=lambda t: t[1])
        parts += [f"`{command}` ({date}; " + "; ".join(_input_text(*t) for t in shapes)
                  + f"; timeout {runs[0]['timeout_s']:.0f} s; {machine.get('cores', '?')} cores, "
                  f"{machine.get('memory_gib', '?')} GiB RAM, commit {machine.get('commit', '?')})",
                  "", *_table(runs), ""]
    return "\n".join(parts + [END])


def _stamped(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The runs of a stored record, each carrying the command, date, timeout and input size it
    ran with (a record written before runs carried them has them once, for all)."""
    runs = []
    for r in record.get("runs", []):
        r = dict(r)
        for key in ("command", "date", "timeout_s", "rows"):
            r.setdefault(key, record.get(key))
        r.setdefault("payload_chars", 0)
        runs.append(r)
    return runs


def merged(previous: dict[str, Any] | None, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The stored record with ``runs`` in place of the earlier runs of the same variant and
    setting; the other earlier runs stay, in their order, before the new ones."""
    new = {(r["variant"], r["setting"]) for r in runs}
    kept = [r for r in _stamped(previous or {}) if (r["variant"], r["setting"]) not in new]
    return {"runs": kept + list(runs)}


def _record(runs: list[dict[str, Any]]) -> None:
    from benchmarks.report import RESULTS_MD, record_standalone

    try:
        with open(JSON_PATH) as f:
            previous = json.load(f)
    except (OSError, ValueError):
        previous = None
    record = merged(previous, runs)
    record_standalone(JSON_PATH, record, NOTES_PATH, BEGIN, END, _markdown(record), RESULTS_MD)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.heavy_key", description=__doc__.split(
        "\n\n")[0])
    p.add_argument("--rows", type=int, default=20_000_000, help="records of the narrow input")
    p.add_argument("--wide-rows", type=int, default=WIDE_ROWS,
                   help="records of the wide input (the *_wide variants)")
    p.add_argument("--payload", type=int, default=PAYLOAD_CHARS,
                   help="characters of the wide records' string payload")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per variant")
    p.add_argument("--settings", default=",".join(SETTINGS),
                   help=f"comma-separated, of: {', '.join(SETTINGS)}")
    p.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, of: "
                   f"{', '.join(VARIANTS)}")
    p.add_argument("--conf", action="append", metavar="KEY=VALUE",
                   help="a Spark setting added to every run (repeatable; kept in the record)")
    p.add_argument("--out-dir", default=DEFAULT_OUT)
    p.add_argument("--no-record", action="store_true",
                   help="print only; do not write heavy_key.json and notes/keyed.md")
    p.add_argument("--generate-in-child", action="store_true",
                   help="write an input in the first child that reads it (in that variant's "
                        "session, before its timed job), not in a process of its own: one JVM "
                        "start fewer, for a smoke test; that child's peak memory then includes "
                        "the writing")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--setting", help=argparse.SUPPRESS)
    p.add_argument("--child-json", help=argparse.SUPPRESS)
    p.add_argument("--generate", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return _child(args)
    if args.generate:
        _generate(args.out_dir, args.rows, args.payload)
        return 0
    settings = [s.strip() for s in args.settings.split(",") if s.strip()]
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    for setting in settings:
        if setting not in SETTINGS:
            p.error(f"unknown setting {setting!r}; known: {', '.join(SETTINGS)}")
    for variant in variants:
        if variant not in VARIANTS:
            p.error(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")
    if any(_is_wide(v) for v in variants) and args.payload < 1:
        p.error("--payload must be at least 1 character for the wide variants")
    os.makedirs(args.out_dir, exist_ok=True)
    command = invocation("benchmarks.heavy_key", argv)
    for rows, payload in sorted({_shape(args, v) for v in variants}):
        _log(f"input: {_input_text(rows, payload)}")
        if args.generate_in_child:
            continue
        subprocess.run([sys.executable, "-m", "benchmarks.heavy_key", "--generate", "--rows",
                        str(rows), "--payload", str(payload), "--out-dir", args.out_dir],
                       cwd=ROOT, check=True)
    date = utc_date()
    runs = [{**_run_variant(args, variant, setting), "command": command, "date": date,
             "timeout_s": args.timeout} for setting in settings for variant in variants]
    print(_markdown({"runs": runs}))
    if not args.no_record:
        _record(runs)
        _log(f"recorded in {os.path.relpath(JSON_PATH, ROOT)} and "
             f"{os.path.relpath(NOTES_PATH, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
