"""What recovery costs each write of a job (``python -m benchmarks.write_cost``): the same small
appends timed with recovery off and on, interleaved in one session, on a local directory. With
recovery on, each write lists the target's ``_fullwindow/`` directory, writes three markers there
and two records in the job's directory (docs/recovery.md, "The job's writes"); the rest of the
write is unchanged. Prints the median time of a write each way and the difference, with the
spread over rounds; the block in notes/recovery.md says which command gave which figures."""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from typing import Sequence

from benchmarks.common import invocation, session


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.write_cost")
    parser.add_argument("--writes", type=int, default=20, help="appends per round and way")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rows", type=int, default=1000, help="rows per append")
    args = parser.parse_args(argv)
    base = tempfile.mkdtemp(prefix="fw-write-cost-")
    spark = session(base, "write-cost", {"spark.ui.enabled": "false",
                                         "spark.sql.shuffle.partitions": "2"})
    import fullwindow

    df = spark.range(0, args.rows, 1, 2).selectExpr("id % 10 AS k", "id AS v")
    per: dict[str, list[float]] = {"off": [], "on": []}
    try:
        for r in range(args.rounds + 1):  # round 0 warms up
            for way in (("off", "on") if r % 2 else ("on", "off")):
                if way == "on":
                    spark.conf.set("spark.fullwindow.recovery.enabled", "true")
                    spark.conf.set("spark.fullwindow.recovery.dir", os.path.join(base, "rec"))
                    spark.conf.set("spark.fullwindow.recovery.jobId", f"round-{r}")
                    fullwindow.recovery.start(spark)
                else:
                    spark.conf.set("spark.fullwindow.recovery.enabled", "false")
                out = os.path.join(base, f"out-{way}-{r}")
                t0 = time.perf_counter()
                for _ in range(args.writes):
                    df.write.mode("append").parquet(out)
                elapsed = (time.perf_counter() - t0) / args.writes
                if r:
                    per[way].append(elapsed)
                assert spark.read.parquet(out).count() == args.rows * args.writes
                if way == "on":
                    fullwindow.recovery.cleanup(spark)
    finally:
        spark.stop()
        shutil.rmtree(base, ignore_errors=True)
    off, on = statistics.median(per["off"]), statistics.median(per["on"])
    diffs = sorted(b - a for a, b in zip(per["off"], per["on"]))
    print(f"command: {invocation('benchmarks.write_cost', argv)}")
    print(f"a write of {args.rows} rows, median of {args.rounds} rounds x {args.writes} writes: "
          f"recovery off {off * 1000:.1f} ms, on {on * 1000:.1f} ms; per write "
          f"{(on - off) * 1000:+.1f} ms [{diffs[0] * 1000:+.1f} .. {diffs[-1] * 1000:+.1f}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
