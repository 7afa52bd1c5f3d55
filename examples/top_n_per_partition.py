"""Top-N per partition: the three largest sales of each store's daily file, in one pass.

Each input partition is one store's file (here: three ranges of sale ids). A non-keyed full
window (``fullWindowPartition()``) sees a whole partition at once with no exchange: the function
keeps only a heap of N rows while the partition streams through, so memory stays bounded
however large the file. ``mapPartitionInPandas`` does the same with pandas frames, one Arrow
batch at a time.

    .venv/bin/python examples/top_n_per_partition.py
"""
from __future__ import annotations

import heapq

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import fullwindow

N = 3
TOP = "store string, sale_id long, amount double, rank int"


def top_n(rows):
    """Rows of one partition -> its N largest sales, ranked (a heap of N rows, never more)."""
    best: list = []
    for r in rows:
        item = (r.amount, -r.sale_id, r.store)
        if len(best) < N:
            heapq.heappush(best, item)
        else:
            heapq.heappushpop(best, item)
    for rank, (amount, neg_id, store) in enumerate(sorted(best, reverse=True), 1):
        yield (store, -neg_id, amount, rank)


def top_n_pandas(frames):
    """The same with pandas: keep the N largest of (kept so far + this frame)."""
    best = None
    for pdf in frames:
        both = pdf if best is None else pd.concat([best, pdf])
        best = both.sort_values(["amount", "sale_id"], ascending=[False, True]).head(N)
    if best is not None:
        best = best.rename(columns={"id": "sale_id"}).assign(rank=range(1, len(best) + 1))
        yield best[["store", "sale_id", "amount", "rank"]]


def sales(spark: SparkSession) -> DataFrame:
    """Three partitions of 1,000 sales, one store each (as one file per store would be read)."""
    stores = F.element_at(F.array(*map(F.lit, ["north", "south", "east"])),
                          (F.col("id") / 1000 + 1).cast("int"))
    return (spark.range(0, 3000, 1, 3)
            .select(stores.alias("store"), F.col("id").alias("sale_id"),
                    ((F.col("id") * 7919) % 1000 / 10).alias("amount")))


def top_sales(df: DataFrame, use_pandas: bool = False) -> DataFrame:
    window = df.fullWindowPartition()
    return window.mapPartitionInPandas(top_n_pandas, TOP) if use_pandas else window.mapPartition(top_n, TOP)


def main(spark: SparkSession) -> list:
    out = top_sales(sales(spark)).orderBy("store", "rank")
    out.show()
    return out.collect()


if __name__ == "__main__":
    session = fullwindow.session(conf={"spark.ui.showConsoleProgress": "false"})
    session.sparkContext.setLogLevel("ERROR")
    main(session)
    session.stop()
