"""Where the recovery benchmark's job spends its time, stage by stage:
``.venv/bin/python -m benchmarks.experiments.recovery_stages [--rows N] [--lose N] [--off]``.

Runs benchmarks/recovery.py's job (scan, hash repartition, ``mapPartition(score)``, Parquet
write) twice, each in a fresh driver process with the Spark UI on, under one recovery job id:
first uninterrupted (it commits every partition and the shuffle input), then after deleting the
committed outputs of the last ``--lose`` partitions (default half), which is what a crash half way
through the full-window stage leaves, minus the kill. For each run it prints when each stage was
submitted and finished (seconds after the session was ready) and its task run time, task CPU,
shuffle bytes and output, from Spark's REST API. ``--off`` sets
``spark.fullwindow.recovery.commitShuffleInput=false`` (the resumed run then shuffles again).
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
import urllib.request

from benchmarks import recovery as R

PORT = 4079


def _child(args: argparse.Namespace) -> None:
    conf = {**R._recovery_conf(args.state, "stages"), "spark.ui.enabled": "true",
            "spark.ui.port": str(PORT)}
    if args.off:
        conf["spark.fullwindow.recovery.commitShuffleInput"] = "false"
    spark = R._session(args, conf, "stages")
    t0 = time.time()
    R._job(spark, args, os.path.join(args.state, "out"))
    t1 = time.time()
    app = spark.sparkContext.applicationId
    url = f"http://localhost:{PORT}/api/v1/applications/{app}/stages"
    stages = sorted(json.load(urllib.request.urlopen(url)), key=lambda s: s["stageId"])

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
    spark.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.experiments.recovery_stages")
    p.add_argument("--rows", type=int, default=9_000_000)
    p.add_argument("--partitions", type=int, default=12)
    p.add_argument("--lose", type=int)
    p.add_argument("--off", action="store_true")
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
           "--out-dir", args.out_dir] + (["--off"] if args.off else [])
    try:
        print("uninterrupted:")
        subprocess.run(cmd, cwd=R.ROOT, check=True, stderr=subprocess.DEVNULL)
        for i in range(args.partitions - lose, args.partitions):
            for f in glob.glob(os.path.join(state, "stages", "operators", "*",
                                            f"part-{i:05d}-*.rows")):
                os.remove(f)
        print(f"resumed, the committed outputs of {lose} partitions deleted:")
        subprocess.run(cmd, cwd=R.ROOT, check=True, stderr=subprocess.DEVNULL)
    finally:
        shutil.rmtree(state, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
