"""A batch job submitted to YARN by tests/test_recovery_yarn.py (spark-submit --master yarn, in
cluster or client mode; the same command each time, as a cluster manager or a scheduler repeats
it). Arguments: RECOVERY_DIR JOB_ID OUT MARKS HOLD.

A: ``mapPartition`` over range(0, 2000) in 4 partitions (full-window, committed to RECOVERY_DIR);
then a per-key count and sum of A's output written to OUT as Parquet. Each run of A's user
function leaves a marker ``A-<partition>-<application id>-<attempt>-<task attempt>`` in MARKS
(the application and attempt of the executor's container); partitions 2 and 3 wait while the
file HOLD exists, so a test can kill the driver with partitions 0 and 1 committed and 2 and 3 not.

With a sixth argument ``plain``, A is a plain ``mapInPandas`` instead (no full-window operation
in the job): what is kept is then the per-key count's shuffle, map task by map task (whole-job
recovery, ``spark.fullwindow.recovery.scope=job``, the default); the same markers and hold.
"""
import os
import sys
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import fullwindow
from fullwindow.recovery.lease import attempt_from_env


def main():
    recovery_dir, job_id, out, marks, hold = sys.argv[1:6]
    plain = sys.argv[6:7] == ["plain"]
    conf = {"spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.fullwindow.recovery.enabled": "true",
            "spark.fullwindow.recovery.dir": recovery_dir,
            "spark.fullwindow.recovery.jobId": job_id,
            "spark.fullwindow.eventStore.flushInterval": "100ms"}
    # the master (yarn) and deploy mode come from spark-submit, which configure() keeps (as
    # session() does: tests/test_submit.py)
    spark = fullwindow.configure(SparkSession.builder.appName("recovery-yarn-job"),
                                 conf).getOrCreate()
    spark.sparkContext.setLogLevel("WARN")

    def held_then_marked():
        from pyspark import TaskContext

        tc = TaskContext.get()
        if tc.partitionId() >= 2:
            deadline = time.time() + 600
            while os.path.exists(hold) and time.time() < deadline:
                time.sleep(0.1)
        app, attempt = attempt_from_env()  # of the executor's container
        name = f"A-{tc.partitionId()}-{app}-{attempt}-{tc.taskAttemptId()}"
        open(os.path.join(marks, name), "w").close()

    def fa(rows):
        out = [(r.id % 7, r.id * 2) for r in rows]
        held_then_marked()
        return out

    def fa_plain(batches):
        import pandas as pd

        for b in batches:
            yield pd.DataFrame({"k": b["id"] % 7, "v": b["id"] * 2})
        held_then_marked()

    ids = spark.range(0, 2000, numPartitions=4)
    if plain:
        a = ids.mapInPandas(fa_plain, "k long, v long")
    else:
        a = ids.fullWindowPartition().mapPartition(fa, "k long, v long")
    a.groupBy("k").agg(F.count("*").alias("n"), F.sum("v").alias("total")) \
        .write.mode("overwrite").parquet(out)
    print("JOB DONE", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
