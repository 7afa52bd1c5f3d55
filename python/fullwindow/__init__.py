"""fullwindow: Flink-style full-window (bounded) processing for Spark DataFrames.

```python
import fullwindow

spark = fullwindow.session(master="local[2]")
df = spark.range(0, 12, 1, numPartitions=3).selectExpr("id % 3 AS k", "id AS v")
df.fullWindowPartition().sortPartition("v", fullwindow.Order.DESCENDING).show()
```

Importing the package adds ``DataFrame.fullWindowPartition`` and ``DataFrame.keyBy`` (see
``fullwindow.dataframe``).
"""
from __future__ import annotations

from pyspark.sql import DataFrame

from fullwindow._jvm import EXTENSION_CLASS, jar_path
from fullwindow._operation import operator_metrics
from fullwindow._order import Order
from fullwindow._session import configure, session
from fullwindow.errors import (ConfigurationError, FullWindowAnalysisError, FullWindowError,
                               FullWindowSetupError, FullWindowTypeError, FullWindowValueError,
                               KeyNotSortableError, KeyTypeMismatchError, SchemaMismatchError,
                               StreamingNotSupportedError)
from fullwindow.functions import (AggregateFunction, EndOfStreamWindows, FiringInfo,
                                  ProcessWindowFunction)
from fullwindow.keyed import (CoGroupedDataFrames, CoGroupedWindowedDataFrames, KeyedDataFrame,
                              KeyedPartitionWindowedDataFrame, KeyedWindowedDataFrame, key_by)
from fullwindow.partition import PartitionWindowedDataFrame
from fullwindow import recovery  # noqa: E402 - fullwindow.recovery.cleanup(spark), ...

from fullwindow._version import __version__  # noqa: E402,F401

__all__ = [
    "AggregateFunction", "CoGroupedDataFrames", "CoGroupedWindowedDataFrames",
    "ConfigurationError", "EXTENSION_CLASS", "EndOfStreamWindows", "FiringInfo",
    "FullWindowAnalysisError", "FullWindowError", "FullWindowSetupError", "FullWindowTypeError",
    "FullWindowValueError", "KeyNotSortableError", "KeyTypeMismatchError", "KeyedDataFrame",
    "KeyedPartitionWindowedDataFrame", "KeyedWindowedDataFrame", "Order",
    "PartitionWindowedDataFrame", "ProcessWindowFunction", "SchemaMismatchError",
    "StreamingNotSupportedError", "configure", "jar_path", "operator_metrics", "recovery",
    "session",
]


from fullwindow.dataframe import install as _install  # noqa: E402

_install()  # DataFrame.fullWindowPartition and DataFrame.keyBy (fullwindow.dataframe)

from fullwindow.recovery._actions import install as _install_actions  # noqa: E402

_install_actions()  # foreach / foreachPartition as writes of a recovery job

from fullwindow.recovery._autostart import install as _install_autostart  # noqa: E402

_install_autostart()  # SparkSession.builder...getOrCreate() starts a recovery job's runtime
