"""A nightly batch job with recovery on: killed midway, started again, it resumes.

The job totals each customer's spend per day (a keyed pandas step) and writes the result. With
``spark.fullwindow.recovery.enabled`` every full-window step commits each partition's output
under ``--dir``/``--job-id`` as it finishes. If the driver dies (killed, machine lost), run the
same command again: finished partitions are read back instead of recomputed, and the output is
the same as an uninterrupted run's. Delete the job's state once the output is safe:
``python -m fullwindow.recovery cleanup --dir DIR --job-id JOB``.

    .venv/bin/python examples/nightly_recovery.py --dir /tmp/fw-recovery --job-id nightly-2024-06-01 \\
        --out /tmp/nightly-out
"""
from __future__ import annotations

import argparse
import os
import time

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import fullwindow

DAILY = "customer long, day int, orders long, spend double"


def daily_totals(customer, frames):
    """One customer's orders, streamed as frames: spend per day."""
    parts = [pdf.groupby("day").agg(orders=("amount", "size"), spend=("amount", "sum"))
             for pdf in frames]
    # seconds each key takes on top of its work: the test sets it to kill the job midway
    time.sleep(float(os.environ.get("NIGHTLY_SLOW", "0")))
    total = pd.concat(parts).groupby(level=0).sum().reset_index()
    yield total.assign(customer=customer)[["customer", "day", "orders", "spend"]]


def orders(spark: SparkSession, rows: int) -> DataFrame:
    return spark.range(0, rows, 1, 4).select(
        (F.col("id") % 40).alias("customer"), (F.col("id") % 7).cast("int").alias("day"),
        ((F.col("id") * 37) % 1000 / 10).alias("amount"))


def job(spark: SparkSession, rows: int) -> DataFrame:
    return orders(spark, rows).keyBy("customer").fullWindowPartition().mapPartitionInPandas(
        daily_totals, DAILY)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dir", required=True, help="durable recovery directory")
    p.add_argument("--job-id", required=True, help="the same on every restart of this run")
    p.add_argument("--out", required=True, help="Parquet output directory")
    p.add_argument("--rows", type=int, default=20_000)
    args = p.parse_args(argv)
    spark = fullwindow.session(master="local[2]", conf={
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
        # the sample data is small: keep its four partitions (adaptive execution would merge
        # them into one), so that a run killed midway has some finished and some not
        "spark.sql.adaptive.coalescePartitions.enabled": "false",
        "spark.fullwindow.recovery.enabled": "true",
        "spark.fullwindow.recovery.dir": args.dir,
        "spark.fullwindow.recovery.jobId": args.job_id,
        "spark.fullwindow.eventStore.flushInterval": "200ms",
    })
    spark.sparkContext.setLogLevel("ERROR")
    job(spark, args.rows).write.mode("overwrite").parquet(args.out)
    print("JOB DONE", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
