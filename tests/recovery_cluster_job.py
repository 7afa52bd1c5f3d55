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
PAUSE_PARTS            (optional) partitions whose rows are slowed after the full-window operation
                       (comma-separated): PAUSES pauses (default 4) of PAUSE seconds (default 1)
                       spread over each such partition. A resumed run reads its recovered
                       partitions' committed files lazily, as the write pulls their rows, so this
                       keeps such a read in progress long enough for a test to kill the executor
                       doing it. Rows pass through unchanged.
REPORT                 (optional) a file where the driver writes, after the job, what its own REST
                       API says about it: the task attempts of its stages and the full-window
                       commit's SQL metrics (recovered / committed partitions)

The job: range(0, PARTS * ROWS) in PARTS partitions, then one non-keyed full-window mapPartition
that gives every row its partition's row count, sum and the row's position in the partition, then a
parquet write (all in one stage; with PAUSE_PARTS, a pass-through filter that pauses comes before
the write, in the same stage). The user function runs on the executors, which do not inherit
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


def pauses(parts: str, rows: int, seconds: float, count: int):
    """A filter condition true for every row that sleeps ``seconds`` in the task's thread at
    ``count`` evenly spread rows of each partition in ``parts``: evaluated in the JVM row by row as
    the write pulls the rows, so the rows before a pause have been read and those after it not yet
    (Spark's ``java_method``: no Python involved, which a recovered partition never runs)."""
    from pyspark.sql import functions as F

    ids = ",".join(str(int(p)) for p in parts.split(","))
    step = max(1, rows // count)
    sleep = (f"java_method('java.lang.Thread', 'sleep', {int(seconds * 1000)}L)")
    return F.expr(f"CASE WHEN spark_partition_id() IN ({ids}) AND pos % {step} = {step // 2} "
                  f"THEN {sleep} ELSE 'null' END = 'null'")


def write_report(sc, path: str) -> None:
    """What this driver's REST API says about the job, as JSON: the write stage's task attempts
    (index, attempt, executor, status, error) and the metrics of its FullWindowCommit node."""
    import json
    import time
    import urllib.request

    base = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}"

    def get(path):
        with urllib.request.urlopen(base + path, timeout=60) as r:
            return json.load(r)

    deadline = time.time() + 120
    while True:  # the listener bus may not have caught up with the job's end yet
        stages = get("/stages?details=true")
        sql = get("/sql?details=true&planDescription=false")
        commit = [m for e in sql if e.get("status") == "COMPLETED" for n in e.get("nodes", [])
                  if n.get("nodeName") == "FullWindowCommit" for m in n.get("metrics", [])]
        done = stages and all(s.get("status") in ("COMPLETE", "FAILED", "SKIPPED") for s in stages)
        if (done and commit) or time.time() > deadline:
            break
        time.sleep(0.5)
    tasks = [{"stage": s["stageId"], "index": t["index"], "attempt": t["attempt"],
              "executor": t["executorId"], "status": t["status"],
              "error": (t.get("errorMessage") or "")[:300]}
             for s in stages for t in (s.get("tasks") or {}).values()]
    with open(path + ".tmp", "w") as f:
        json.dump({"tasks": tasks, "commitMetrics": {m["name"]: m["value"] for m in commit}}, f)
    os.replace(path + ".tmp", path)


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
    if os.environ.get("PAUSE_PARTS"):
        out = out.where(pauses(os.environ["PAUSE_PARTS"], rows, float(os.environ.get("PAUSE", "1")),
                               int(os.environ.get("PAUSES", "4"))))
    out.write.mode("overwrite").parquet(os.environ["OUT"])
    print("JOB DONE", flush=True)
    if os.environ.get("REPORT"):
        write_report(sc, os.environ["REPORT"])
    spark.stop()


if __name__ == "__main__":
    main()
