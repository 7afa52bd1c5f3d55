"""Reconcile orders and payments with a two-sorter ``coGroup``.

Orders and payments are keyed by ``order_id`` and grouped together
(``orders.keyBy(...).coGroup(payments.keyBy(...)).window(EndOfStreamWindows.get())``): each
side is hash-partitioned by the key and sorted by its own sorter, and the function is called
once per order id present on either side, with that id's orders and payments. It says whether
the order is paid, partly paid, overpaid, unpaid, or a payment without an order. The pandas form
(``applyInPandas``) gets the same records as pandas frames.

    .venv/bin/python examples/orders_payments.py
"""
from __future__ import annotations

import pandas as pd
from pyspark.sql import DataFrame, SparkSession

import fullwindow
from fullwindow import EndOfStreamWindows

STATUS = "order_id long, customer string, due double, paid double, payments int, status string"


def _status(due: float | None, paid: float) -> str:
    if due is None:
        return "payment without order"
    if paid == 0:
        return "unpaid"
    if abs(paid - due) < 0.005:
        return "paid"
    return "partly paid" if paid < due else "overpaid"


def reconcile(order_id, orders, payments):
    """Rows: at most one order per id (read first: the left side streams), any payments."""
    customer = due = None
    for o in orders:
        customer, due = o.customer, (due or 0.0) + o.amount
    paid = n = 0
    for p in payments:
        paid += p.amount
        n += 1
    yield (order_id, customer, due, float(paid), n, _status(due, paid))


def reconcile_pandas(order_id, orders, payments):
    """The same on each side's pandas frames (left first: it streams)."""
    customer = due = None
    for o in orders:
        customer, due = o.customer.iloc[0], (due or 0.0) + float(o.amount.sum())
    paid, n = 0.0, 0
    for p in payments:
        paid, n = paid + float(p.amount.sum()), n + len(p)
    yield pd.DataFrame({"order_id": [order_id], "customer": [customer], "due": [due],
                        "paid": [paid], "payments": [n], "status": [_status(due, paid)]})


def reconciled(orders: DataFrame, payments: DataFrame, use_pandas: bool = False) -> DataFrame:
    grouped = (orders.keyBy("order_id").coGroup(payments.keyBy("order_id"))
               .window(EndOfStreamWindows.get()))
    if use_pandas:
        return grouped.applyInPandas(reconcile_pandas, STATUS)
    return grouped.apply(reconcile, STATUS)


def sample(spark: SparkSession) -> tuple[DataFrame, DataFrame]:
    orders = spark.createDataFrame(
        [(1, "ana", 30.0), (2, "bo", 12.5), (3, "cy", 99.0), (4, "ana", 5.0)],
        "order_id long, customer string, amount double")
    payments = spark.createDataFrame(
        [(101, 1, 30.0), (102, 2, 10.0), (103, 3, 50.0), (104, 3, 60.0), (105, 9, 7.0)],
        "payment_id long, order_id long, amount double")
    return orders, payments


def main(spark: SparkSession) -> list:
    out = reconciled(*sample(spark)).orderBy("order_id")
    out.show()
    return out.collect()


if __name__ == "__main__":
    session = fullwindow.session(conf={"spark.ui.showConsoleProgress": "false"})
    session.sparkContext.setLogLevel("ERROR")
    main(session)
    session.stop()
