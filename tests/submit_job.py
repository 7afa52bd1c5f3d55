"""A job run by tests/test_submit.py with spark-submit (and, for the default master, as a plain
``python`` script). Argument: how it builds its session, ``session`` (``fullwindow.session()``)
or ``configure`` (``fullwindow.configure(SparkSession.builder).getOrCreate()``), or
``session-delta`` (``fullwindow.session(conf={"spark.sql.extensions": <Delta's>})``). It prints its
session's settings (``SETTING key=value``, ``<unset>`` when absent) and the result of a keyed
``mapPartition`` (``RESULT``, sorted rows)."""
import sys

from pyspark.sql import SparkSession

import fullwindow

KEYS = ("spark.master", "spark.app.name", "spark.sql.shuffle.partitions",
        "spark.sql.extensions", "spark.pyspark.python")


def total(key, rows):
    values = [r.v for r in rows]
    yield key, len(values), sum(values)


def main():
    how = sys.argv[1]
    if how == "session":
        spark = fullwindow.session()
    elif how == "session-delta":  # the Delta Lake docs' idiom: merged with spark-submit's too
        spark = fullwindow.session(conf={
            "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension"})
    else:
        spark = fullwindow.configure(SparkSession.builder).getOrCreate()
    conf = spark.sparkContext.getConf()
    for key in KEYS:
        print(f"SETTING {key}={conf.get(key, '<unset>')}", flush=True)
    df = spark.createDataFrame([(i % 3, i) for i in range(12)], "k long, v long")
    out = df.keyBy("k").fullWindowPartition().mapPartition(total, "k long, n long, total long")
    print("RESULT", sorted(tuple(r) for r in out.collect()), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
