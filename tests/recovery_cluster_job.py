"""A batch job run as its own driver process against a Spark standalone cluster by
tests/test_recovery_cluster.py, which kills one of its executors and then the driver itself, and
starts it again. Settings come from the environment:

MASTER                 the cluster's master URL
RECOVERY_DIR, JOB_ID   where and under which name recovery keeps the job's state (recovery is off
                       without them)
OUT                    the parquet directory the job writes
MARKS                  a directory where each run of the user function leaves marker files
RUN                    a name for this run, part of each marker's name
SLOW                   seconds the user function sleeps in each partition (time to kill things)
PARTS, ROWS            the number of partitions, and of rows in each
JAR                    (optional) the fullwindow jar to use instead of the package's: the test
                       passes a copy taken when it starts, so that every JVM of every run loads the
                       same classes even if the package's jar is rebuilt meanwhile

The job: range(0, PARTS * ROWS) in PARTS partitions, then one non-keyed full-window mapPartition
that gives every row its partition's row count, sum and the row's position in the partition, then a
parquet write (all in one stage). The user function runs on the executors, which do not inherit
this process's environment: MARKS, RUN and SLOW reach it through spark.executorEnv.*, so that they
are not part of the pickled function (the operation's recovery fingerprint stays the same across
runs).

Markers, one file each (empty): ``S-<partition>-<run>-<attempt>-<taskAttemptId>-<executor JVM pid>``
when the function starts on a partition, ``E-<same>`` when it has produced the partition's rows.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import fullwindow  # noqa: E402


def executor_jvm_pid() -> int:
    """The pid of the executor JVM this Python worker belongs to (its nearest ancestor that is a
    CoarseGrainedExecutorBackend), or -1."""
    pid = os.getpid()
    for _ in range(6):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"CoarseGrainedExecutorBackend" in f.read():
                    return pid
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return -1
        if pid <= 1:
            return -1
    return -1


def enrich(rows):
    import os
    import time

    from pyspark import TaskContext

    tc = TaskContext.get()
    tag = (f"{tc.partitionId()}-{os.environ['RUN']}-{tc.attemptNumber()}-{tc.taskAttemptId()}-"
           f"{executor_jvm_pid()}")
    marks = os.environ["MARKS"]
    open(os.path.join(marks, "S-" + tag), "w").close()
    ids = [r.id for r in rows]
    n, total = len(ids), sum(ids)
    part = ids[0] // int(os.environ["ROWS"]) if ids else -1
    out = [(i, part, n, total, pos) for pos, i in enumerate(ids)]
    time.sleep(float(os.environ.get("SLOW", "0")))
    open(os.path.join(marks, "E-" + tag), "w").close()
    return out


def main():
    parts, rows = int(os.environ["PARTS"]), int(os.environ["ROWS"])
    conf = {"spark.ui.showConsoleProgress": "false", "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1", "spark.ui.port": "0",
            "spark.cores.max": "2", "spark.executor.cores": "1", "spark.executor.memory": "512m",
            "spark.speculation": "false",
            # short-lived JVMs on a small shared machine: the C1 compiler only, less CPU at start
            "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
            "spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=1",
            "spark.executorEnv.MARKS": os.environ["MARKS"],
            "spark.executorEnv.RUN": os.environ["RUN"],
            "spark.executorEnv.SLOW": os.environ.get("SLOW", "0"),
            "spark.executorEnv.ROWS": str(rows)}
    if os.environ.get("JAR"):
        conf["spark.jars"] = os.environ["JAR"]
    if os.environ.get("RECOVERY_DIR"):
        conf.update({"spark.fullwindow.recovery.enabled": "true",
                     "spark.fullwindow.recovery.dir": os.environ["RECOVERY_DIR"],
                     "spark.fullwindow.recovery.jobId": os.environ["JOB_ID"],
                     "spark.fullwindow.eventStore.flushInterval": "200ms"})
    spark = fullwindow.session(master=os.environ["MASTER"], conf=conf,
                               app_name="recovery-cluster-job")
    spark.sparkContext.setLogLevel("WARN")
    sc = spark.sparkContext
    # the test reads the driver's REST API (executors, stages) through this
    print("DRIVER UI", sc.uiWebUrl, sc.applicationId, flush=True)
    out = spark.range(0, parts * rows, numPartitions=parts).fullWindowPartition().mapPartition(
        enrich, "id long, part long, n long, total long, pos long")
    out.write.mode("overwrite").parquet(os.environ["OUT"])
    print("JOB DONE", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
