"""A plain batch job (no full-window operation) run as its own driver process by
tests/test_recovery_jobscope.py, which kills it with SIGKILL and starts it again, with
whole-job recovery (``spark.fullwindow.recovery.scope=job``). Settings come from the
environment:

SPARK_CONF_DIR         a directory whose spark-defaults.conf has the jar, the extension and,
                       with recovery, its settings; or
PYSPARK_SUBMIT_ARGS    ``--properties-file <that file> pyspark-shell``: the same settings,
                       given to spark-submit
IN                     a directory with two Parquet inputs, ``facts`` (id, k, v) and ``dims``
                       (k, name), written by the test
OUT                    the Parquet directory the job writes
MARKS, RUN             a directory where the Python UDFs leave one file per task they run in,
                       ``<stage>-<partition>-<run>-<attempt>``, and this run's name
SLOW                   seconds the slow UDF sleeps once per task
AQE                    "false": spark.sql.adaptive.enabled=false
MASTER                 the master URL (none: local[2])
MODE                   "plain": the slow step over a hash shuffle join; "roundrobin": a
                       round-robin ``repartition(4)`` before the slow step (an indeterminate
                       shuffle: kept whole or computed whole); "nondeterministic": the slow UDF
                       marked non-deterministic (its shuffle too is kept whole or computed whole)
FW_REMOTE              a Spark Connect server's URL (sc://...): the job runs as its client, its
                       recovery settings (RECOVERY_DIR, JOB_ID, FW_EXTRA_CONF: a JSON object of
                       more) given to ``fullwindow.session(remote=...)``, as a Connect client
                       gives them; MARKS, RUN and SLOW reach the server's Python workers through
                       ``run.json`` in FW_CTL, a directory the server's environment names too

The job: facts pass a Python UDF (marker ``A``), are joined with dims (a shuffle join: both
sides hash-shuffled), pass a slow Python UDF (marker ``U``, in the map stage of the next
shuffle), are grouped by name (``groupBy().agg``) and written as Parquet.

The job calls no fullwindow method: it imports fullwindow and makes its session with
``SparkSession.builder``. The jar, the extension and (with recovery) the recovery settings come
from ``spark-defaults.conf`` in the ``SPARK_CONF_DIR`` the test writes, or from that file given to
spark-submit (``Job.options``), as a job's settings may come from a cluster's defaults or its
submit command.
"""
import os
import sys

import fullwindow  # noqa: F401  (recovery's runtime starts with the session: settings alone)
from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def setting(name, default=None):
    """A setting of this run: from FW_CTL's run.json (a Connect server's Python workers, which do
    not have the client's environment), else the environment."""
    import json
    import os

    ctl = os.environ.get("FW_CTL")
    if ctl and os.path.exists(os.path.join(ctl, "run.json")):
        with open(os.path.join(ctl, "run.json")) as f:
            value = json.load(f).get(name)
        if value is not None:
            return value
    return os.environ.get(name, default)


def mark(stage):
    import os

    from pyspark import TaskContext

    tc = TaskContext.get()
    name = os.path.join(setting("MARKS"),
                        f"{stage}-{tc.partitionId()}-{setting('RUN')}-{tc.taskAttemptId()}")
    if os.path.exists(name):
        return False
    open(name, "w").close()
    return True


def connect_session(remote, sql):
    """A Spark Connect client's session, its job's recovery settings given as a client gives
    them (the server's own settings turn recovery on)."""
    import json

    with open(os.path.join(os.environ["FW_CTL"], "run.json"), "w") as f:
        json.dump({k: os.environ.get(k) for k in ("MARKS", "RUN", "SLOW")}, f)
    conf = {**sql, "spark.fullwindow.recovery.enabled": "true",
            "spark.fullwindow.recovery.dir": os.environ["RECOVERY_DIR"],
            "spark.fullwindow.recovery.jobId": os.environ["JOB_ID"],
            "spark.fullwindow.recovery.scope": "job",
            **json.loads(os.environ.get("FW_EXTRA_CONF") or "{}")}
    return fullwindow.session(remote=remote, conf=conf)


def main():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the workers' Python: this one
    sql = {"spark.sql.shuffle.partitions": "4",
           "spark.sql.adaptive.enabled": os.environ.get("AQE", "true"),
           "spark.sql.adaptive.coalescePartitions.enabled": "false",
           "spark.sql.autoBroadcastJoinThreshold": "-1"}
    remote = os.environ.get("FW_REMOTE")
    if remote:
        spark = connect_session(remote, sql)
    else:
        builder = (SparkSession.builder.master(os.environ.get("MASTER", "local[2]"))
                   .appName("recovery-jobscope")
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false"))
        for k, v in sql.items():
            builder = builder.config(k, v)
        # the UDFs' settings, for executors of a cluster too (their workers do not inherit this
        # process's environment)
        for name in ("MARKS", "RUN", "SLOW"):
            if name in os.environ:
                builder = builder.config(f"spark.executorEnv.{name}", os.environ[name])
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        # fullwindow's own warnings stay in the log: the test reads them (a kept map output
        # that could not be placed as it was, and was written again from its rows)
        jvm = spark.sparkContext._jvm
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
            "org.apache.spark.sql.fullwindow", jvm.org.apache.logging.log4j.Level.WARN)

    @F.udf("long")
    def tag(v):
        mark("A")
        return v

    @F.udf("long")
    def slow(v):
        import os
        import time

        if mark("U"):
            time.sleep(float(setting("SLOW", "0")))
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
