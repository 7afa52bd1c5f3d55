"""A batch job run as its own driver process by the recovery tests (which kill it with SIGKILL
and start it again). Settings come from the environment:

RECOVERY_DIR, JOB_ID   where and under which name recovery keeps the job's state (scope
                       ``fullWindow``: the full-window operations' recovery)
OUT                    the parquet directory the job writes
MARKS                  a directory where each user function leaves one file per partition run
RUN                    a name for this run, part of each marker's name
SLOW                   seconds each partition's user function sleeps (to be killed midway)
VARIANT                "2" changes the second operation's code (a changed program)
LEASE_TIMEOUT          spark.fullwindow.recovery.leaseTimeout (unset: the default)
FW_EXTRA_CONF          more Spark settings, as a JSON object (e.g. an S3 server's, tests/s3.py)
GATE                   a file B's partitions wait for before they finish (a driver the test
                       stops and wakes must still have work to commit when it wakes); set,
                       Spark's own heartbeat timeout is raised out of the way (a driver stopped
                       for minutes must fail by its lease, not by its executor's heartbeat)
FW_REMOTE              a Spark Connect server's URL (sc://...): the job runs as its client
FW_CTL                 with FW_REMOTE: a directory the server's environment names too; the
                       user functions, which run on the server, read MARKS, RUN and SLOW from
                       the run.json the client writes there (a setting in their code or
                       closure would change the operations' fingerprints)

Stages: (1) A: mapPartition over range(0, 4000) in 4 partitions, (2) B: mapPartition after a
hash repartition by k, per-key count and sum, (3) the final write after another repartition,
through a slow UDF that also leaves markers.
"""
import os
import time

# The fullwindow package comes from the environment (the tests put the one they import first on
# PYTHONPATH): a line's venv runs its installed wheel, not this checkout's python/.
import fullwindow
from pyspark.sql import functions as F


def env(name, default=None):
    """A setting of this run: from FW_CTL's run.json (a Connect server's workers), else the
    environment."""
    ctl = os.environ.get("FW_CTL")
    if ctl and os.path.exists(os.path.join(ctl, "run.json")):
        import json

        with open(os.path.join(ctl, "run.json")) as f:
            value = json.load(f).get(name)
        if value is not None:
            return value
    return os.environ.get(name, default)


def mark(stage):
    from pyspark import TaskContext

    tc = TaskContext.get()
    name = f"{stage}-{tc.partitionId()}-{env('RUN')}-{tc.taskAttemptId()}"
    open(os.path.join(env("MARKS"), name), "w").close()


def fa(rows):
    import time

    out = [(r.id % 13, r.id * 2) for r in rows]
    time.sleep(float(env("SLOW", "0")))
    mark("A")
    return out


def hold():
    """Waits for GATE's file, if the run has one."""
    import time

    gate = env("GATE")
    while gate and not os.path.exists(gate):
        time.sleep(0.1)


def fb(rows):
    import time

    acc = {}
    for r in rows:
        n, t = acc.get(r.k, (0, 0))
        acc[r.k] = (n + 1, t + r.v)
    time.sleep(float(env("SLOW", "0")))
    hold()
    mark("B")
    return [(k, n, t) for k, (n, t) in sorted(acc.items())]


def fb2(rows):
    import time

    acc = {}
    for r in rows:
        n, t = acc.get(r.k, (0, 0))
        acc[r.k] = (n + 1, t + r.v + 0)
    time.sleep(float(env("SLOW", "0")))
    hold()
    mark("B")
    return [(k, n, t) for k, (n, t) in sorted(acc.items())]


def main():
    conf = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "4", "spark.sql.adaptive.enabled": "true",
            "spark.sql.adaptive.coalescePartitions.enabled": "false"}
    if os.environ.get("RECOVERY_DIR"):
        conf.update({"spark.fullwindow.recovery.enabled": "true",
                     "spark.fullwindow.recovery.dir": os.environ["RECOVERY_DIR"],
                     "spark.fullwindow.recovery.jobId": os.environ["JOB_ID"],
                     "spark.fullwindow.eventStore.flushInterval": "200ms",
                     # the full-window operations' own recovery: what these tests count (which
                     # of A's and B's partitions run, their committed files read back or
                     # damaged) is hidden under the default scope, where the shuffle above B is
                     # kept too and read back whole (tests/test_recovery_jobscope.py tests that)
                     "spark.fullwindow.recovery.scope": "fullWindow"})
        if os.environ.get("LEASE_TIMEOUT"):
            conf["spark.fullwindow.recovery.leaseTimeout"] = os.environ["LEASE_TIMEOUT"]
    if os.environ.get("GATE"):
        conf.update({"spark.network.timeout": "3600s", "spark.executor.heartbeatInterval": "10s"})
    if os.environ.get("FW_EXTRA_CONF"):
        import json

        conf.update(json.loads(os.environ["FW_EXTRA_CONF"]))
    remote = os.environ.get("FW_REMOTE")
    if remote:  # a Spark Connect client: the session's SQL settings only
        import json

        with open(os.path.join(os.environ["FW_CTL"], "run.json"), "w") as f:
            json.dump({k: os.environ.get(k) for k in ("MARKS", "RUN", "SLOW", "GATE")}, f)
        conf = {k: v for k, v in conf.items() if not k.startswith("spark.ui.")}
        spark = fullwindow.session(remote=remote, conf=conf)
    else:
        spark = fullwindow.session(master="local[2]", conf=conf, app_name="recovery-job")
        spark.sparkContext.setLogLevel("ERROR")
    src = spark.range(0, 4000, numPartitions=4)
    a = src.fullWindowPartition().mapPartition(fa, "k long, v long")
    b = a.repartition(4, "k").fullWindowPartition().mapPartition(
        fb2 if os.environ.get("VARIANT") == "2" else fb, "k long, n long, total long")

    @F.udf("long")
    def slow(k):
        import time

        time.sleep(float(env("SLOW", "0")) / 5)
        mark("W")
        return k

    final = b.repartition(2, "k").withColumn("k2", slow("k"))
    final.write.mode("overwrite").parquet(os.environ["OUT"])
    print("JOB DONE", flush=True)


if __name__ == "__main__":
    main()
