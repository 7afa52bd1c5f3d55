"""A batch job with several writes, run as its own driver process by tests/test_recovery_writes.py
(which kills it with SIGKILL and starts it again). Settings come from the environment:

RECOVERY_DIR, JOB_ID   where and under which name recovery keeps the job's state (unset: no
                       recovery, the reference run)
OUT                    a directory holding every target (files, the warehouse, the metastore)
TARGETS                where the file writes' targets go instead (a Hadoop URI: hdfs://, s3a://)
MARKS, RUN             a directory where user functions leave one file per partition run, and
                       this run's name (part of each marker's name)
SLOW                   seconds each partition of the second full-window step sleeps
WRITES                 the writes, in order, comma-separated (each writes the same rows):
                       append, overwrite, partitioned (partitionBy, append), dynamic (dynamic
                       partition overwrite), saveAsTable, insertInto, sql (INSERT INTO), ctas (SQL's
                       CREATE TABLE AS SELECT),
                       jdbc (Derby, a sink that keeps no record of its commits);
                       foreachPartition, foreach (DataFrame.foreachPartition and
                       DataFrame.rdd.foreach appending "k v" lines to OUT/<i>-<kind>.txt, a sink
                       that keeps no record; ACTION_SLOW seconds a row); threads (writes i and
                       i + 1: two appends of A's rows, 100 ms a row, into OUT/<n>-threads at once
                       from two threads of the session); twothreads (writes i and i + 1, into
                       OUT/<i>-twothreads and OUT/<i+1>-twothreads from two threads, started in
                       THREAD_ORDER, forward or reverse, the second once the first has begun;
                       i + 1 sleeps ROW_SLOW a row; with ROW_HOLD=1 the second starts once
                       the first's tasks run, and its rows wait for the first's commit, then
                       for the kill); twice (writes i and i + 1: one append of one
                       DataFrame into OUT/<i>-twice, made twice, ROW_SLOW a row);
                       delta, deltaOverwrite (DataFrameWriter.save into a Delta table at a path,
                       append or overwrite), deltaSql (SQL INSERT INTO a Delta table of the
                       catalog), iceberg, icebergOverwrite (writeTo(...).append() or
                       .overwrite(true) into ice.db.t<i>, an Iceberg table of the Hadoop catalog
                       ``ice``), deltaSaveAsTable, icebergSaveAsTable (saveAsTable(mode="append")
                       into t<i> / ice.db.t<i>, which do not exist before: a CTAS in the run
                       that creates the table): tests/lakehouse, which gives
FULLWINDOW_LAKE_JARS   the folder of the Delta and Iceberg jars (tests/lakehouse/lake.py), and
LAKE_WAREHOUSE         the warehouse directory of the Iceberg catalog ``ice``
A_WRITES               how many of the first writes write A's rows (default 1)
FW_EXTRA_CONF          more Spark settings, as a JSON object
FW_REMOTE, FW_CTL      as in tests/recovery_job.py: the job runs as a Spark Connect client

The job: A, a full-window mapPartition over range(0, 40) in 4 partitions, is written by the first
write; B, a keyed step over A that sleeps SLOW a partition, by every later write. Each write's
rows pass a UDF that leaves a marker ``W<i>-<partition>-<run>-<attempt>``: a skipped write leaves
none.
"""
import json
import os

import fullwindow
from pyspark.sql import functions as F


def env(name, default=None):
    ctl = os.environ.get("FW_CTL")
    if ctl and os.path.exists(os.path.join(ctl, "run.json")):
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
    mark("A")
    return [(r.id % 5, r.id) for r in rows]


def fb(rows):
    import time

    out = [(r.k, r.v * 10) for r in rows]
    time.sleep(float(env("SLOW", "0")))
    mark("B")
    return out


def append_to(path):
    """A foreachPartition function: each row of the partition, one line ``k v`` appended to
    ``path`` (a sink that keeps no record of what it wrote); sleeps ACTION_SLOW a row."""
    def append(rows):
        import time

        for r in rows:
            with open(path, "a") as f:
                f.write(f"{r.k} {r.v}\n")
            time.sleep(float(env("ACTION_SLOW", "0")))
    return append


def append_row_to(path):
    """append_to's foreach form."""
    def append(r):
        import time

        with open(path, "a") as f:
            f.write(f"{r.k} {r.v}\n")
        time.sleep(float(env("ACTION_SLOW", "0")))
    return append


def slow(v):
    import time

    time.sleep(float(env("ROW_SLOW", "0.1")))
    # ROW_HOLD=1: each row waits until the job has recorded a committed write (another
    # write's, whose tasks had the slots first: this one cannot commit first), for at most
    # 120 s, then until the kill (this write cannot commit before the test sees the other's
    # commit either), however fast or slow the machine is.
    if env("ROW_HOLD", "") == "1":
        records = os.path.join(os.environ["RECOVERY_DIR"], os.environ["JOB_ID"], "writes")
        deadline = time.time() + 120
        while time.time() < deadline or committed(records):
            time.sleep(0.2)
    return v


def committed(records):
    return any(r.endswith(".committed") for r in os.listdir(records))


def begun(target, thread, since):
    """Whether the recovered write into ``target`` (a thread's) has begun in this run: the job
    recorded its start (a record under RECOVERY_DIR/JOB_ID/writes/ naming ``target``, made since
    ``since``), or its thread is done (a skipped write records nothing)."""
    if not thread.is_alive():
        return True
    d = os.path.join(os.environ["RECOVERY_DIR"], os.environ["JOB_ID"], "writes")
    for name in os.listdir(d) if os.path.isdir(d) else []:
        path = os.path.join(d, name)
        if name.startswith(".") or not name.endswith(".started") or \
                os.path.getmtime(path) < since:
            continue
        try:
            with open(path) as f:
                if json.load(f).get("target", "").rstrip("/").endswith(target):
                    return True
        except (OSError, ValueError):
            continue
    return False


def main():
    out = os.environ["OUT"]
    conf = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "4", "spark.sql.adaptive.enabled": "false",
            "spark.sql.warehouse.dir": os.path.join(out, "warehouse")}
    writes = [w for w in os.environ.get("WRITES", "append").split(",") if w]
    if any(w in ("saveAsTable", "insertInto", "sql", "ctas", "deltaSql", "deltaSaveAsTable")
           for w in writes):
        # a catalog that outlives the driver: Hive's metastore in an embedded Derby database
        conf.update({"spark.sql.catalogImplementation": "hive",
                     "spark.hadoop.javax.jdo.option.ConnectionURL":
                         f"jdbc:derby:;databaseName={os.path.join(out, 'metastore')};create=true"})
    if os.environ.get("RECOVERY_DIR"):
        conf.update({"spark.fullwindow.recovery.enabled": "true",
                     "spark.fullwindow.recovery.dir": os.environ["RECOVERY_DIR"],
                     "spark.fullwindow.recovery.jobId": os.environ["JOB_ID"],
                     "spark.fullwindow.eventStore.flushInterval": "200ms"})
    if os.environ.get("FW_EXTRA_CONF"):
        conf.update(json.loads(os.environ["FW_EXTRA_CONF"]))
    remote = os.environ.get("FW_REMOTE")
    if os.environ.get("FULLWINDOW_LAKE_JARS"):
        import lake  # tests/lakehouse, on the path the suite gives its jobs

        spark = lake.session(os.environ["FULLWINDOW_LAKE_JARS"], os.environ["LAKE_WAREHOUSE"],
                             conf, app_name="recovery-writes-job")
        spark.sparkContext.setLogLevel("WARN")
    elif remote:
        with open(os.path.join(os.environ["FW_CTL"], "run.json"), "w") as f:
            json.dump({k: os.environ.get(k) for k in ("MARKS", "RUN", "SLOW")}, f)
        conf = {k: v for k, v in conf.items()
                if not k.startswith(("spark.ui.", "spark.sql.warehouse", "spark.sql.catalogImpl",
                                     "spark.hadoop."))}
        spark = fullwindow.session(remote=remote, conf=conf)
    else:
        spark = fullwindow.session(master="local[2]", conf=conf, app_name="recovery-writes-job")
        spark.sparkContext.setLogLevel("WARN")
    a = spark.range(0, 40, numPartitions=4).fullWindowPartition().mapPartition(
        fa, "k long, v long")
    b = a.repartition(4, "k").fullWindowPartition().mapPartition(fb, "k long, v long")

    def marked(df, i):
        @F.udf("long")
        def w(v):
            mark(f"W{i}")
            return v

        return df.withColumn("v", w("v"))

    for i, kind in enumerate(writes, start=1):
        rows = marked(a if i <= int(os.environ.get("A_WRITES") or 1) else b, i)
        target = f"{os.environ.get('TARGETS') or out}/{i}-{kind}"
        if kind == "append":
            rows.write.mode("append").parquet(target)
        elif kind == "overwrite":
            rows.write.mode("overwrite").parquet(target)
        elif kind == "partitioned":
            rows.write.mode("append").partitionBy("k").parquet(target)
        elif kind == "dynamic":
            rows.write.mode("overwrite").option("partitionOverwriteMode", "dynamic") \
                .partitionBy("k").parquet(target)
        elif kind == "saveAsTable":
            rows.write.mode("append").format("parquet").saveAsTable(f"t{i}")
        elif kind == "ctas":  # fails if it runs again: the table exists
            rows.createOrReplaceTempView(f"src{i}")
            spark.sql(f"CREATE TABLE t{i} USING parquet AS SELECT * FROM src{i}")
        elif kind == "insertInto":
            spark.sql(f"CREATE TABLE IF NOT EXISTS t{i} (k long, v long) USING parquet")
            rows.write.insertInto(f"t{i}")
        elif kind == "sql":
            spark.sql(f"CREATE TABLE IF NOT EXISTS t{i} (k long, v long) USING parquet")
            rows.createOrReplaceTempView(f"src{i}")
            spark.sql(f"INSERT INTO t{i} SELECT * FROM src{i}")
        elif kind in ("delta", "deltaOverwrite"):
            rows.write.format("delta").mode("append" if kind == "delta" else "overwrite") \
                .save(target)
        elif kind == "deltaSaveAsTable":  # a CTAS while t<i> does not exist, then an append
            rows.write.format("delta").mode("append").saveAsTable(f"t{i}")
        elif kind == "icebergSaveAsTable":
            rows.write.format("iceberg").mode("append").saveAsTable(f"ice.db.t{i}")
        elif kind == "deltaSql":
            spark.sql(f"CREATE TABLE IF NOT EXISTS t{i} (k long, v long) USING delta")
            rows.createOrReplaceTempView(f"src{i}")
            spark.sql(f"INSERT INTO t{i} SELECT * FROM src{i}")
        elif kind in ("iceberg", "icebergOverwrite"):
            spark.sql(f"CREATE TABLE IF NOT EXISTS ice.db.t{i} (k long, v long) USING iceberg")
            if kind == "iceberg":
                rows.writeTo(f"ice.db.t{i}").append()
            else:
                rows.writeTo(f"ice.db.t{i}").overwrite(F.lit(True))
        elif kind == "foreachPartition":  # appends each partition's rows to a local file
            rows.foreachPartition(append_to(f"{out}/{i}-{kind}.txt"))
        elif kind == "foreach":  # the RDD form a DataFrame's rdd gives, row by row
            rows.rdd.foreach(append_row_to(f"{out}/{i}-{kind}.txt"))
        elif kind == "threads":  # writes i and i + 1 at once, from two threads of the session
            import threading

            from pyspark.sql.types import LongType

            slowed = marked(a, i).withColumn("v", F.udf(slow, LongType())("v"))
            errors = []

            def write(n):
                try:
                    slowed.write.mode("append").parquet(f"{out}/{n}-threads")
                except BaseException as err:  # noqa: BLE001 - the test reads it in the log
                    errors.append(err)

            threads = [threading.Thread(target=write, args=(n,)) for n in (i, i + 1)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert not errors, errors
            print("PROTOCOL AFTER:", spark.conf.get("spark.sql.sources.commitProtocolClass"),
                  flush=True)
        elif kind == "twothreads":  # writes i (A's rows) and i + 1 (A's rows, ROW_SLOW a row)
            # into two targets from two threads, started in THREAD_ORDER (forward: i first,
            # reverse: i + 1 first), the second once the first's write has begun
            import threading
            import time

            from pyspark.sql.types import LongType

            jobs = {i: marked(a, i),
                    i + 1: marked(a, i + 1).withColumn("v", F.udf(slow, LongType())("v"))}
            errors = []

            def write(n):
                try:
                    jobs[n].write.mode("append").parquet(f"{out}/{n}-twothreads")
                except BaseException as err:  # noqa: BLE001 - the test reads it in the log
                    errors.append(err)

            order = [i, i + 1] if env("THREAD_ORDER", "forward") == "forward" else [i + 1, i]
            threads = {n: threading.Thread(target=write, args=(n,)) for n in order}
            since = time.time() - 1
            threads[order[0]].start()
            if os.environ.get("RECOVERY_DIR"):
                while not begun(f"/{order[0]}-twothreads", threads[order[0]], since):
                    time.sleep(0.02)
            if env("ROW_HOLD", "") == "1":  # and its tasks run: they have the slots first
                while threads[order[0]].is_alive() and not any(
                        m.startswith(f"W{order[0]}-") and f"-{env('RUN')}-" in m
                        for m in os.listdir(env("MARKS"))):
                    time.sleep(0.02)
            print(f"THREAD {order[0]} BEGUN", flush=True)
            threads[order[1]].start()
            for t in threads.values():
                t.join()
            assert not errors, errors
        elif kind == "twice":  # writes i and i + 1: the same append (one DataFrame, one target,
            # ROW_SLOW a row), twice: one fingerprint, occurrences 1 and 2
            from pyspark.sql.types import LongType

            same = marked(a, i).withColumn("v", F.udf(slow, LongType())("v"))
            for _ in range(2):
                same.write.mode("append").parquet(f"{out}/{i}-twice")
        elif kind == "jdbc":
            url = f"jdbc:derby:{os.path.join(out, 'jdbc')};create=true"
            rows.write.mode("append").jdbc(url, f"T{i}", properties={
                "driver": "org.apache.derby.jdbc.EmbeddedDriver"})
        else:
            raise ValueError(kind)
    print("JOB DONE", flush=True)


if __name__ == "__main__":
    main()
