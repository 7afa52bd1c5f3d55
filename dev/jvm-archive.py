"""The workload whose loaded classes dev/jvm-archive stores in a line's class-data archive (AppCDS).

A test JVM started with the archive maps these classes instead of reading, parsing and verifying
them again from the jars. Run by dev/jvm-archive with the JVM option
-XX:ArchiveClassesAtExit=<file>: the JVM writes the archive when it exits, so this waits for it.
What runs here is a cross-section of what the tests do: a session with fullwindow's extension,
fullwindow sorts and a keyed Python operation, SQL text and DDL strings parsed, a shuffle join
and aggregation, Arrow to pandas, and a Parquet write and read.
"""
import sys
import tempfile

import fullwindow
from pyspark.sql import functions as F

#: "lean" (dev/jvm-archive LINE lean): a session start and one small fullwindow sort only. It dumps
#: in 34-47 CPU seconds, not 73-85, and served the default line's tests as well as the broad
#: one in the measurements of docs/development.md; used for the other lines, whose suites start
#: tens of JVMs, not hundreds
LEAN = sys.argv[1:] == ["lean"]

spark = fullwindow.session(master="local[2]", conf={
    "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2", "spark.sql.execution.arrow.pyspark.enabled": "true"})
if LEAN:
    assert spark.range(1000).fullWindowPartition().sortPartition("id").count() == 1000
    proc = spark.sparkContext._gateway.proc
    spark.stop()
    proc.stdin.close()
    sys.exit(proc.wait(timeout=300))
df = spark.range(0, 2000, 1, 2).select((F.col("id") % 7).alias("k"), (F.col("id") * 37 % 100).alias("v"))
assert df.fullWindowPartition().sortPartition("v").count() == 2000
assert df.keyBy("k").fullWindowPartition().reduce(lambda a, b: a if a.v >= b.v else b).count() == 7
# SQL text, a DDL schema and expression strings: Spark's parser (spark-sql-api's and ANTLR's
# classes, ~350 of them) is loaded by nearly every test JVM, and only by a parse
assert spark.sql("SELECT k, count(*) AS n FROM VALUES (1), (1), (2) AS t(k) GROUP BY k").count() == 2
typed = spark.createDataFrame([(1, "a")], "a long, b string").selectExpr("a + 1 AS a", "upper(b) AS b")
assert typed.collect()[0].a == 2
joined = df.join(df.groupBy("k").agg(F.sum("v").alias("s")), "k")
assert len(joined.orderBy("k", "v").toPandas()) == 2000
with tempfile.TemporaryDirectory() as d:
    joined.write.parquet(d + "/t")
    assert spark.read.parquet(d + "/t").count() == 2000
proc = spark.sparkContext._gateway.proc
spark.stop()
proc.stdin.close()          # the JVM exits when its stdin closes, and writes the archive then
sys.exit(proc.wait(timeout=300))
