"""Five TPC-H-like queries over generated tables, run by one driver process with whole-job
recovery, for tests/test_recovery_tpch.py, which kills the driver half way through one query per
run and starts it again: first q1 and q5 at once from two threads (started in the order
``PAIR_ORDER`` says), then q3, q13 and q18 one after another. Settings come from the
environment:

PYSPARK_SUBMIT_ARGS    ``--properties-file <file> pyspark-shell``: the jar, the extension and
                       the recovery settings (the job only imports fullwindow)
IN                     the tables (Parquet directories, written by the test: ``tables``)
OUT                    a directory where each query's collected rows go, ``q<N>.json``, written
                       by this process once the query has returned them
MARKS, RUN             a directory where the slow Python UDF of each query leaves one file per
                       task it runs in, ``q<N>-<partition>-<run>-<attempt>``, and this run's name
SLOW                   seconds that UDF sleeps once per task
PAIR_ORDER             ``forward`` (q1's thread started first, the default) or ``reverse``
                       (q5's): a query is recognised by what it computes, not by when or from
                       which thread it starts

Each query passes ``lineitem`` (six files, each a partition of its own: six map tasks) through a
slow Python UDF in the map stage of its first shuffle over it, so a kill can land half way
through that stage:

q1  pricing summary: ``lineitem`` grouped by return flag and line status (an aggregation)
q3  shipping priority: customer, orders and lineitem shuffle-joined, revenue per order, the top
    ten (a sort)
q5  local supplier volume: six tables joined, revenue per nation
q13 customer ranking: each nation's customers ranked by what they spent (a window function)
q18 large volume customers: orders whose quantity exceeds a bound (an ``IN`` subquery with a
    ``HAVING``), joined with their customers

``queries`` is also what the test runs in its own session, without recovery, for the expected
rows.
"""
import json
import os
import sys
import threading
import time

import fullwindow  # noqa: F401  (recovery's runtime starts with the session: settings alone)
from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F

NAMES = ["q1", "q3", "q5", "q13", "q18"]
#: the two queries run at once from two threads, before the others
PAIR = ("q1", "q5")
#: the order the queries start in (the pair's in PAIR_ORDER=forward)
ORDER = [*PAIR, *(n for n in NAMES if n not in PAIR)]


def slow_udf(name):
    """An identity on a long column that, in a job run by the test, leaves a marker per task
    and sleeps SLOW seconds once per task; in the test's own session (no MARKS) it does nothing
    else."""
    @F.udf("long")
    def slow(v):
        import os
        import time

        from pyspark import TaskContext

        marks = os.environ.get("MARKS")
        if marks:
            tc = TaskContext.get()
            mark = os.path.join(marks, f"{name}-{tc.partitionId()}-{os.environ['RUN']}-"
                                       f"{tc.taskAttemptId()}")
            if not os.path.exists(mark):
                open(mark, "w").close()
                time.sleep(float(os.environ.get("SLOW", "0")))
        return v

    return slow


def queries(spark, tables):
    """The five queries as DataFrames, by name."""
    t = {n: spark.read.parquet(os.path.join(tables, n))
         for n in ("nation", "supplier", "customer", "orders", "lineitem")}

    def lineitem(name, column="l_orderkey"):  # a column the query reads: the UDF is not pruned
        return t["lineitem"].withColumn(column, slow_udf(name)(column))

    revenue = F.col("l_extendedprice") * (100 - F.col("l_discount"))
    q1 = (lineitem("q1", "l_quantity").where(F.col("l_shipdate") <= 2400)
          .groupBy("l_returnflag", "l_linestatus")
          .agg(F.sum("l_quantity").alias("sum_qty"),
               F.round(F.sum(revenue), 2).alias("sum_disc_price"),
               F.round(F.avg("l_discount"), 6).alias("avg_disc"),
               F.count("*").alias("count_order"))
          .orderBy("l_returnflag", "l_linestatus"))
    q3 = (t["customer"].where(F.col("c_mktsegment") == "BUILDING")
          .join(t["orders"].where(F.col("o_orderdate") < 1500),
                F.col("c_custkey") == F.col("o_custkey"))
          .join(lineitem("q3").where(F.col("l_shipdate") > 1500),
                F.col("l_orderkey") == F.col("o_orderkey"))
          .groupBy("l_orderkey", "o_orderdate", "o_shippriority")
          .agg(F.round(F.sum(revenue), 2).alias("revenue"))
          .orderBy(F.desc("revenue"), "o_orderdate", "l_orderkey").limit(10))
    q5 = (t["customer"].join(t["orders"], F.col("c_custkey") == F.col("o_custkey"))
          .join(lineitem("q5"), F.col("l_orderkey") == F.col("o_orderkey"))
          .join(t["supplier"], (F.col("l_suppkey") == F.col("s_suppkey"))
                & (F.col("c_nationkey") == F.col("s_nationkey")))
          .join(t["nation"], F.col("s_nationkey") == F.col("n_nationkey"))
          .groupBy("n_name").agg(F.round(F.sum(revenue), 2).alias("revenue"))
          .orderBy(F.desc("revenue"), "n_name"))
    spent = (t["orders"].join(lineitem("q13"), F.col("l_orderkey") == F.col("o_orderkey"))
             .groupBy("o_custkey").agg(F.round(F.sum(revenue), 2).alias("spent"))
             .join(t["customer"], F.col("o_custkey") == F.col("c_custkey"))
             .join(t["nation"], F.col("c_nationkey") == F.col("n_nationkey")))
    by_nation = Window.partitionBy("n_name").orderBy(F.desc("spent"), "c_custkey")
    q13 = (spent.withColumn("rank", F.rank().over(by_nation)).where(F.col("rank") <= 2)
           .select("n_name", "c_custkey", "spent", "rank").orderBy("n_name", "rank"))
    t["orders"].createOrReplaceTempView("tpch_orders")
    t["customer"].createOrReplaceTempView("tpch_customer")
    lineitem("q18").createOrReplaceTempView("tpch_lineitem_q18")
    q18 = spark.sql("""
        SELECT c_name, o_orderkey, o_totalprice
        FROM tpch_orders JOIN tpch_customer ON o_custkey = c_custkey
        WHERE o_orderkey IN (SELECT l_orderkey FROM tpch_lineitem_q18
                             GROUP BY l_orderkey HAVING sum(l_quantity) > 130)
        ORDER BY o_totalprice DESC, o_orderkey""")
    return {"q1": q1, "q3": q3, "q5": q5, "q13": q13, "q18": q18}


def main():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the workers' Python: this one
    spark = (SparkSession.builder.master("local[2]").appName("recovery-tpch")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "4")
             .config("spark.sql.adaptive.coalescePartitions.enabled", "false")
             .config("spark.sql.autoBroadcastJoinThreshold", "-1")
             # a partition per file (small files are not packed together)
             .config("spark.sql.files.openCostInBytes", str(128 << 20))
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    jvm = spark.sparkContext._jvm
    jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
        "org.apache.spark.sql.fullwindow", jvm.org.apache.logging.log4j.Level.WARN)
    out = os.environ["OUT"]
    os.makedirs(out, exist_ok=True)
    wanted = os.environ.get("QUERIES", ",".join(NAMES)).split(",")
    dfs = queries(spark, os.environ["IN"])

    def run(name):
        print(f"QUERY STARTED {name}", flush=True)
        spark.sparkContext.setJobDescription(name)  # the query each kept shuffle names
        rows = [list(r) for r in dfs[name].collect()]
        with open(os.path.join(out, f"{name}.json.tmp"), "w") as f:
            json.dump(rows, f)
        os.replace(os.path.join(out, f"{name}.json.tmp"), os.path.join(out, f"{name}.json"))
        print(f"QUERY DONE {name}", flush=True)

    pair = [n for n in PAIR if n in wanted]
    if os.environ.get("PAIR_ORDER", "forward") == "reverse":
        pair.reverse()
    failed = []

    def in_thread(name):
        try:
            run(name)
        except BaseException as e:  # noqa: BLE001 - the job fails with it below
            failed.append(e)

    # pinned threads (pyspark's default): each Python thread its JVM thread, and its own job
    # description; the second starts once the first's query runs a Spark job (or is done), so
    # the two start in the order asked and then run side by side
    threads = [threading.Thread(target=in_thread, args=(n,)) for n in pair]
    tracker = spark.sparkContext.statusTracker()
    for i, t in enumerate(threads):
        if i:
            while threads[0].is_alive() and not tracker.getActiveJobsIds():
                time.sleep(0.05)
        t.start()
    for t in threads:
        t.join()
    if failed:
        raise failed[0]
    for name in ORDER[len(PAIR):]:
        if name in wanted:
            run(name)
    print("JOB DONE", flush=True)


if __name__ == "__main__":
    main()
