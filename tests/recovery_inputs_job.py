"""A batch job over two Parquet directories, run as its own driver process by
tests/test_recovery_inputs.py (which kills it with SIGKILL, changes an input, and starts it
again). Settings come from the environment:

RECOVERY_DIR, JOB_ID   where and under which name recovery keeps the job's state
IN_X, IN_Y             the two input directories (Parquet, one column ``id``)
OUT                    the Parquet directory the job writes
MARKS                  a directory where each user function leaves one file per partition run
RUN                    a name for this run, part of each marker's name
SLOW                   seconds each partition of A sleeps, and partition 3 of B twenty times as
                       long (so that a kill finds both operations partly done)
ON_INPUT_CHANGE        spark.fullwindow.recovery.onInputChange (unset: the default)

Operations: B = mapPartition over Y after repartition(4, "id"), A = mapPartition over X after
repartition(8, "id"); the output is B's rows then A's (one stage: B's 4 partitions first), each
row (operation, id, value).
"""
import os

# The fullwindow package comes from the environment (the tests put the one they import first on
# PYTHONPATH): a line's venv runs its installed wheel, not this checkout's python/.
import fullwindow


def mark(stage):
    from pyspark import TaskContext

    tc = TaskContext.get()
    name = f"{stage}-{tc.partitionId()}-{os.environ['RUN']}-{tc.taskAttemptId()}"
    open(os.path.join(os.environ["MARKS"], name), "w").close()


def fa(rows):
    import time

    out = [("a", r.id, r.id * 3 % 7) for r in rows]
    time.sleep(float(os.environ.get("SLOW", "0")))
    mark("A")
    return out


def fb(rows):
    import time

    from pyspark import TaskContext

    out = [("b", r.id, r.id % 5) for r in rows]
    if TaskContext.get().partitionId() == 3:
        time.sleep(20 * float(os.environ.get("SLOW", "0")))
    mark("B")
    return out


def main():
    conf = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "4", "spark.sql.adaptive.enabled": "true",
            "spark.sql.adaptive.coalescePartitions.enabled": "false",
            "spark.fullwindow.recovery.enabled": "true",
            "spark.fullwindow.recovery.dir": os.environ["RECOVERY_DIR"],
            "spark.fullwindow.recovery.jobId": os.environ["JOB_ID"],
            "spark.fullwindow.eventStore.flushInterval": "100ms"}
    if os.environ.get("ON_INPUT_CHANGE"):
        conf["spark.fullwindow.recovery.onInputChange"] = os.environ["ON_INPUT_CHANGE"]
    spark = fullwindow.session(master="local[2]", conf=conf, app_name="recovery-inputs-job")
    spark.sparkContext.setLogLevel("ERROR")
    schema = "op string, id long, v long"
    b = spark.read.parquet(os.environ["IN_Y"]).repartition(4, "id") \
        .fullWindowPartition().mapPartition(fb, schema)
    a = spark.read.parquet(os.environ["IN_X"]).repartition(8, "id") \
        .fullWindowPartition().mapPartition(fa, schema)
    b.union(a).write.mode("overwrite").parquet(os.environ["OUT"])
    print("JOB DONE", flush=True)


if __name__ == "__main__":
    main()
