"""A plain batch job (no full-window operation) run as its own driver process by
tests/test_recovery_jobscope.py, which kills it with SIGKILL and starts it again, with
whole-job recovery (``spark.fullwindow.recovery.scope=job``). Settings come from the
environment:

RECOVERY_DIR, JOB_ID   where and under which name recovery keeps the job's state (unset: no
                       recovery, the reference run)
IN                     a directory with two Parquet inputs, ``facts`` (id, k, v) and ``dims``
                       (k, name), written by the test
OUT                    the Parquet directory the job writes
MARKS, RUN             a directory where the Python UDFs leave one file per task they run in,
                       ``<stage>-<partition>-<run>-<attempt>``, and this run's name
SLOW                   seconds the slow UDF sleeps once per task
AQE                    "false": spark.sql.adaptive.enabled=false
MODE                   "plain": the slow step over a hash shuffle join; "roundrobin": a
                       round-robin ``repartition(4)`` before the slow step (an indeterminate
                       shuffle: kept whole or computed whole); "nondeterministic": the slow UDF
                       marked non-deterministic (its shuffle too is kept whole or computed whole)

The job: facts pass a Python UDF (marker ``A``), are joined with dims (a shuffle join: both
sides hash-shuffled), pass a slow Python UDF (marker ``U``, in the map stage of the next
shuffle), are grouped by name (``groupBy().agg``) and written as Parquet.
"""
import os

import fullwindow  # noqa: F401  (the extension and the recovery runtime)
from pyspark.sql import functions as F


def mark(stage):
    import os

    from pyspark import TaskContext

    tc = TaskContext.get()
    name = os.path.join(os.environ["MARKS"],
                        f"{stage}-{tc.partitionId()}-{os.environ['RUN']}-{tc.taskAttemptId()}")
    if os.path.exists(name):
        return False
    open(name, "w").close()
    return True


def main():
    conf = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "4",
            "spark.sql.adaptive.enabled": os.environ.get("AQE", "true"),
            "spark.sql.adaptive.coalescePartitions.enabled": "false",
            "spark.sql.autoBroadcastJoinThreshold": "-1"}
    if os.environ.get("RECOVERY_DIR"):
        conf.update({"spark.fullwindow.recovery.enabled": "true",
                     "spark.fullwindow.recovery.dir": os.environ["RECOVERY_DIR"],
                     "spark.fullwindow.recovery.jobId": os.environ["JOB_ID"],
                     "spark.fullwindow.recovery.scope": "job",
                     "spark.fullwindow.eventStore.flushInterval": "200ms"})
    spark = fullwindow.session(master="local[2]", conf=conf, app_name="recovery-jobscope")
    spark.sparkContext.setLogLevel("ERROR")
    fullwindow.recovery.start(spark)

    @F.udf("long")
    def tag(v):
        mark("A")
        return v

    @F.udf("long")
    def slow(v):
        import os
        import time

        if mark("U"):
            time.sleep(float(os.environ.get("SLOW", "0")))
        return v * 3

    facts = spark.read.parquet(os.path.join(os.environ["IN"], "facts"))
    dims = spark.read.parquet(os.path.join(os.environ["IN"], "dims"))
    joined = facts.withColumn("v", tag("v")).join(dims, "k")
    if os.environ.get("MODE") == "roundrobin":
        joined = joined.repartition(4)
    elif os.environ.get("MODE") == "nondeterministic":
        slow = slow.asNondeterministic()
    out = (joined.withColumn("w", slow("v"))
           .groupBy("name").agg(F.sum("w").alias("total"), F.count("*").alias("n")))
    out.write.mode("overwrite").parquet(os.environ["OUT"])
    print("JOB DONE", flush=True)


if __name__ == "__main__":
    main()
