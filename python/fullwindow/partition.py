"""Non-keyed full windows: one window per Spark partition."""
from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql.types import DataType

from fullwindow._jvm import facade, jvm_errors
from fullwindow._keys import resolve_sort_keys, to_java_booleans, to_java_columns
from fullwindow._order import Order


class PartitionWindowedDataFrame:
    """A DataFrame seen as one full window per partition (FLIP-380's ``PartitionWindowedStream``).

    Each operation processes a whole partition at the end of its input. No exchange is added and
    the partition count is kept. Get one with ``df.fullWindowPartition()``.
    """

    def __init__(self, df: DataFrame):
        if not isinstance(df, DataFrame):
            raise TypeError(f"fullWindowPartition needs a DataFrame, got {type(df).__name__}")
        self._df = df

    @property
    def dataframe(self) -> DataFrame:
        """The DataFrame this window is over."""
        return self._df

    def __repr__(self) -> str:
        return f"PartitionWindowedDataFrame[{self._df.schema.simpleString()}]"

    @jvm_errors("sortPartition")
    def sortPartition(self, key: Any, order: Order | str = Order.ASCENDING, *,
                      key_type: DataType | None = None) -> DataFrame:
        """Sorts the records of each partition, spilling to disk when they do not fit in memory.

        ``key`` is a 0-based field index, a column name (nested ``"a.b"`` too), a ``Column``
        (``F.col("v").desc_nulls_first()`` keeps its own direction), a Python key selector
        called on each ``Row``, or a list of ``(key, Order)`` pairs for several keys. Nulls come
        first when ascending and last when descending. A key selector's result type is inferred
        from the first row unless ``key_type`` is given.

        >>> df.fullWindowPartition().sortPartition("v").show()
        >>> df.fullWindowPartition().sortPartition([("a", Order.ASCENDING), ("b", Order.DESCENDING)])
        >>> df.fullWindowPartition().sortPartition(lambda r: r.name.lower())
        """
        df = self._df
        spark = df.sparkSession
        fw = facade(df)
        keys = resolve_sort_keys("sortPartition", df, key, order, key_type)
        if keys is None:
            return df
        jdf = fw.sortPartition(keys.df._jdf, to_java_columns(spark, keys.columns),
                               to_java_booleans(spark, keys.ascending))
        out = DataFrame(jdf, spark)
        return out.drop(*keys.hidden) if keys.hidden else out
