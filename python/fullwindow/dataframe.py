"""The two methods ``import fullwindow`` adds to ``pyspark.sql.DataFrame``.

They are attached to pyspark's ``DataFrame`` class when the package is imported. Type checkers
do not see such additions on their own: with mypy, enable fullwindow's plugin
(``plugins = fullwindow.mypy_plugin`` in the mypy configuration) and ``df.fullWindowPartition()``
and ``df.keyBy(...)`` get the types below. Without it, the same objects are available as
``PartitionWindowedDataFrame(df)`` and ``fullwindow.key_by(df, "k")``, both typed.
"""
from __future__ import annotations

from pyspark.sql import DataFrame

from fullwindow.keyed import KeyedDataFrame, key_by
from fullwindow.partition import PartitionWindowedDataFrame

__all__ = ["fullWindowPartition", "keyBy"]


def fullWindowPartition(self: DataFrame) -> PartitionWindowedDataFrame:
    """``df.fullWindowPartition()``: one full window per partition of ``df`` (no exchange; the
    partition count is kept).

    Examples:
        >>> df.fullWindowPartition().sortPartition("v").rdd.glom().collect()
        [[Row(k=0, v=1), Row(k=1, v=2), Row(k=0, v=3)],
         [Row(k=2, v=4), Row(k=1, v=5), Row(k=2, v=6)]]
    """
    return PartitionWindowedDataFrame(self)


def keyBy(self: DataFrame, *cols: str) -> KeyedDataFrame:
    """``df.keyBy("k")`` or ``df.keyBy("k1", "k2")``: ``df`` keyed by top-level columns
    (Flink's ``KeyedStream``). Keyed operations see it hash-partitioned by the key, one window per
    key.

    Examples:
        >>> best = df.keyBy("k").fullWindowPartition().reduce(lambda a, b: a if a.v >= b.v else b)
        >>> best.orderBy("k").show()
        +---+---+
        |  k|  v|
        +---+---+
        |  0|  3|
        |  1|  5|
        |  2|  6|
        +---+---+
        <BLANKLINE>
    """
    return key_by(self, *cols)


def install() -> None:
    """Attaches the methods to ``pyspark.sql.DataFrame`` (done by ``import fullwindow``), and to
    the Spark Connect DataFrame where that is a class of its own (3.5)."""
    from fullwindow._compat import DATAFRAME_TYPES

    for cls in DATAFRAME_TYPES:
        cls.fullWindowPartition = fullWindowPartition
        cls.keyBy = keyBy
