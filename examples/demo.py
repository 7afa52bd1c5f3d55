"""fullwindow demo: sort each partition of a DataFrame (one full window per partition)."""
import fullwindow
from fullwindow import Order
from pyspark.sql import functions as F

spark = fullwindow.session(conf={"spark.ui.showConsoleProgress": "false"})
spark.sparkContext.setLogLevel("ERROR")

orders = spark.range(0, 12, 1, 3).select(
    (F.col("id") % 3).alias("customer"),
    ((F.col("id") * 37) % 100).alias("amount"),
)

print("Input, partition by partition:")
for i, part in enumerate(orders.rdd.glom().collect()):
    print(f"  partition {i}: {[(r.customer, r.amount) for r in part]}")

by_amount = orders.fullWindowPartition().sortPartition(
    [("customer", Order.ASCENDING), ("amount", Order.DESCENDING)])

print("\nsortPartition([customer ASC, amount DESC]), partition by partition:")
for i, part in enumerate(by_amount.rdd.glom().collect()):
    print(f"  partition {i}: {[(r.customer, r.amount) for r in part]}")

print("\nIts plan: a per-partition sort, no exchange")
by_amount.explain()

orders.createOrReplaceTempView("orders")
print("The same through SQL:")
spark.sql("SELECT /*+ FULL_WINDOW_PARTITION */ * FROM orders ORDER BY customer, amount DESC").explain()
spark.stop()
