from __future__ import annotations

import enum


class Order(enum.Enum):
    """Sort direction for [`sortPartition`][fullwindow.PartitionWindowedDataFrame.sortPartition].

    Nulls follow Spark's defaults: first when ascending, last when descending. For another
    placement pass a ``Column`` key such as ``F.col("v").asc_nulls_last()``.
    """

    ASCENDING = "ASCENDING"
    DESCENDING = "DESCENDING"

    @classmethod
    def parse(cls, value: object, argument: str = "order") -> "Order":
        if isinstance(value, Order):
            return value
        if isinstance(value, str):
            v = value.strip().upper()
            if v in ("ASC", "ASCENDING"):
                return cls.ASCENDING
            if v in ("DESC", "DESCENDING"):
                return cls.DESCENDING
        from fullwindow.errors import FullWindowTypeError, FullWindowValueError

        err = FullWindowValueError if isinstance(value, str) else FullWindowTypeError
        raise err(f"{argument} must be Order.ASCENDING or Order.DESCENDING, got {value!r}")
