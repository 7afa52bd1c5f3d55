"""A batch job over two Parquet directories, run as its own driver process by
tests/test_recovery_inputs.py (which kills it with SIGKILL, changes an input, and starts it
again). Settings come from the environment:

RECOVERY_DIR, JOB_ID   where and under which name recovery keeps the job's state
IN_X, IN_Y             the two inputs (one column ``id``): Parquet directories, or
                       ``delta:<path>`` (a Delta table) or ``iceberg:<table>`` (in the Iceberg
                       catalog ``ice``: tests/lakehouse/test_lake_crash.py)
FULLWINDOW_LAKE_JARS   with Delta or Iceberg inputs: the folder of their jars (tests/lakehouse/
LAKE_WAREHOUSE         lake.py), and the warehouse directory of the Iceberg catalog ``ice``
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


def read(spark, spec):
    """The input ``spec`` names (see the module's docstring)."""
    if spec.startswith("delta:"):
        return spark.read.format("delta").load(spec[len("delta:"):])
    if spec.startswith("iceberg:"):
        return spark.table(spec[len("iceberg:"):])
    return spark.read.parquet(spec)


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
    if os.environ.get("FULLWINDOW_LAKE_JARS"):
        import lake  # tests/lakehouse, on the path the suite gives its jobs

        spark = lake.session(os.environ["FULLWINDOW_LAKE_JARS"], os.environ["LAKE_WAREHOUSE"],
                             conf, app_name="recovery-inputs-job")
    else:
        spark = fullwindow.session(master="local[2]", conf=conf, app_name="recovery-inputs-job")
    spark.sparkContext.setLogLevel("ERROR")
    schema = "op string, id long, v long"
    b = read(spark, os.environ["IN_Y"]).repartition(4, "id") \
        .fullWindowPartition().mapPartition(fb, schema)
    a = read(spark, os.environ["IN_X"]).repartition(8, "id") \
        .fullWindowPartition().mapPartition(fa, schema)
    b.union(a).write.mode("overwrite").parquet(os.environ["OUT"])
    print("JOB DONE", flush=True)


if __name__ == "__main__":
    main()
