"""A batch job with keyed full-window operations, run as its own driver process by
tests/test_recovery_keyed.py (which kills it with SIGKILL and starts it again). Settings come
from the environment:

RECOVERY_DIR, JOB_ID   where and under which name recovery keeps the job's state
OUT                    the parquet directory the job writes
MARKS                  a directory where each user function leaves one file per key it handles:
                       <stage>-<partition>-<key>-<run>-<task attempt id>
RUN                    a name for this run, part of each marker's name
SLOW                   seconds each user function sleeps per key (to be killed midway)
VARIANT                "2" changes the keyed function's code (a changed program)
COALESCE               unset: adaptive execution on, partition coalescing off (4 partitions);
                       "<bytes>": coalescing on, with that advisory partition size
COMMIT_INPUT           "false": spark.fullwindow.recovery.commitShuffleInput=false

Stages: (K) keyed mapPartition over range(0, 4000) keyed by k = id % 13: per key count and sum;
(C) coGroup of K's result with a small table keyed by k (26 rows, 2 per key); the final write.

``operations`` (K and C) is also what the test runs in its own session, without recovery, for
the reference rows and which partition each key is in (no MARKS there: no markers).
"""
import os
import sys

if __name__ == "__main__":  # run as a driver (imported by the test: its own fullwindow)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import fullwindow  # noqa: E402
from fullwindow import EndOfStreamWindows  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402


def mark(stage, key):
    from pyspark import TaskContext

    if not os.environ.get("MARKS"):  # the test's own session
        return
    tc = TaskContext.get()
    name = f"{stage}-{tc.partitionId()}-{key}-{os.environ['RUN']}-{tc.taskAttemptId()}"
    open(os.path.join(os.environ["MARKS"], name), "w").close()


def fk(key, rows):
    import time

    n = t = 0
    for r in rows:
        n += 1
        t += r.v
    time.sleep(float(os.environ.get("SLOW", "0")))
    mark("K", key)
    yield (key, n, t)


def fk2(key, rows):  # the same result, other code
    import time

    vs = [r.v for r in rows]
    time.sleep(float(os.environ.get("SLOW", "0")))
    mark("K", key)
    yield (key, len(vs), sum(vs))


def fc(key, left, right):
    import time

    stats = [(r.n, r.total) for r in left]
    ws = sorted(r.w for r in right)
    time.sleep(float(os.environ.get("SLOW", "0")))
    mark("C", key)
    for n, t in stats:
        yield (key, n, t, sum(ws), len(ws))


def operations(spark, variant=None):
    """K and C as DataFrames (C over K)."""
    src = spark.range(0, 4000, numPartitions=4).select((F.col("id") % 13).alias("k"),
                                                       (F.col("id") * 2).alias("v"))
    k = src.keyBy("k").fullWindowPartition().mapPartition(
        fk2 if variant == "2" else fk, "k long, n long, total long")
    other = spark.range(0, 26, numPartitions=2).select((F.col("id") % 13).alias("k"),
                                                       F.col("id").alias("w"))
    c = (k.keyBy("k").coGroup(other.keyBy("k")).window(EndOfStreamWindows.get())
         .apply(fc, "k long, n long, total long, wsum long, wn long"))
    return k, c


def main():
    conf = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "4", "spark.sql.adaptive.enabled": "true"}
    coalesce = os.environ.get("COALESCE")
    if coalesce:
        conf.update({"spark.sql.adaptive.coalescePartitions.enabled": "true",
                     "spark.sql.adaptive.coalescePartitions.parallelismFirst": "false",
                     "spark.sql.adaptive.coalescePartitions.minPartitionSize": "1",
                     "spark.sql.adaptive.advisoryPartitionSizeInBytes": coalesce})
    else:
        conf["spark.sql.adaptive.coalescePartitions.enabled"] = "false"
    if os.environ.get("RECOVERY_DIR"):
        conf.update({"spark.fullwindow.recovery.enabled": "true",
                     "spark.fullwindow.recovery.dir": os.environ["RECOVERY_DIR"],
                     "spark.fullwindow.recovery.jobId": os.environ["JOB_ID"],
                     "spark.fullwindow.eventStore.flushInterval": "200ms"})
        if os.environ.get("COMMIT_INPUT"):
            conf["spark.fullwindow.recovery.commitShuffleInput"] = os.environ["COMMIT_INPUT"]
    spark = fullwindow.session(master="local[2]", conf=conf, app_name="recovery-keyed-job")
    spark.sparkContext.setLogLevel("ERROR")
    _, c = operations(spark, os.environ.get("VARIANT"))
    c.write.mode("overwrite").parquet(os.environ["OUT"])
    print("JOB DONE", flush=True)


if __name__ == "__main__":
    main()
