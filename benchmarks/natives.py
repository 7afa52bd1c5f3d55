"""Spark's own per-key forms, for the keyed and coGroup cases to be measured against the fastest
one the running line has (4.0 added ``groupBy().applyInArrow``, ``cogroup().applyInArrow`` and
Python UDTFs over ``df.asTable().partitionBy(...)`` and ``transformWithStateInPandas``; 4.1 the
iterator forms of ``applyInArrow`` and ``applyInPandas``, picked by type hints, ``@arrow_udtf`` and
``transformWithState`` with Rows).

Each ``*_natives()`` form is a ``NativeForm``: besides the harness's ``run(df)`` it keeps
``frame(df)``, the DataFrame that ``run`` executes, so a test can collect each form's result
(tests/test_benchmarks_natives.py) and check it is the per-key count and sum the cases time.

Each form does the keyed cases' per-key work (count the key's rows and sum ``x``) in the way its
API is naturally written; ``*_natives()`` return the forms of one shape that this line has,
found by what pyspark offers (never by its version string).
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Iterator, Tuple

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, GroupedData

from benchmarks.data import run_noop
from benchmarks.registry import Native

COUNT_SUM_SCHEMA = "k long, n long, s double"


def count_sum_schema(df: DataFrame) -> str:
    """COUNT_SUM_SCHEMA with ``df``'s key type (a long, or a string in the string-key cases)."""
    return f"k {df.schema['k'].dataType.simpleString()}, n long, s double"


def count_sum_arrow(key_type: pa.DataType) -> pa.Schema:
    """The Arrow schema of a (k, n, s) result with a key of ``key_type``."""
    return pa.schema([("k", key_type), ("n", pa.int64()), ("s", pa.float64())])


@dataclasses.dataclass(frozen=True)
class NativeForm(Native):
    """A ``Native`` whose ``run`` is ``run_noop(frame(data))``."""
    frame: Callable[[Any], DataFrame] | None = None


def _form(name: str, frame: Callable[[Any], DataFrame], node: str) -> NativeForm:
    return NativeForm(name, lambda data: run_noop(frame(data)), node, frame)


def _eval_types() -> set[str]:
    try:
        from pyspark.util import PythonEvalType
    except ImportError:  # 3.5 keeps it in pyspark.rdd
        from pyspark.rdd import PythonEvalType

    return set(vars(PythonEvalType))


def has_grouped_arrow() -> bool:
    return hasattr(GroupedData, "applyInArrow")


def has_grouped_iterators() -> bool:
    """Whether ``applyInArrow`` / ``applyInPandas`` take iterator functions (by type hints)."""
    types = _eval_types()
    return {"SQL_GROUPED_MAP_ARROW_ITER_UDF", "SQL_GROUPED_MAP_PANDAS_ITER_UDF"} <= types


def has_table_args() -> bool:
    return hasattr(DataFrame, "asTable")


def has_arrow_udtf() -> bool:
    from pyspark.sql import functions

    return has_table_args() and hasattr(functions, "arrow_udtf")


def has_transform_with_state() -> bool:
    """``groupBy().transformWithState`` with Rows (4.1+); it runs on batch DataFrames too."""
    return hasattr(GroupedData, "transformWithState")


def has_transform_with_state_in_pandas() -> bool:
    """``groupBy().transformWithStateInPandas`` (4.0+); it runs on batch DataFrames too."""
    return hasattr(GroupedData, "transformWithStateInPandas")


# transformWithState's plan node: TransformWithStateInPandasExec on 4.0 (pandas only), one
# TransformWithStateInPySparkExec for both the Row and the pandas form from 4.1 on.
_TWS_NODE = "TransformWithStateInPySpark|TransformWithStateInPandas"


def _with_state_store_coordinator(df: DataFrame) -> DataFrame:
    """transformWithState in a batch query keeps its state in a temporary RocksDB store per task,
    and RocksDB reports its snapshot uploads to the driver's StateStoreCoordinator, which exists
    only once the session's StreamingQueryManager does. On 4.1 and 4.2 a session that never
    touched ``spark.streams`` fails the task with CANNOT_LOAD_STATE_STORE (SPARK-58973; 4.3 logs
    a warning and goes on), so the form touches it first, as a user of those lines must."""
    df.sparkSession.streams  # noqa: B018  (creates the coordinator; once per session)
    return df


# ---- the keyed shape: one input, per key (k, count, sum of x) -------------------------------

def arrow_table(key, table):
    """groupBy().applyInArrow, whole-table form."""
    return pa.Table.from_pydict({"k": [key[0].as_py()], "n": [table.num_rows],
                                 "s": [pc.sum(table.column("x")).as_py() or 0.0]},
                                schema=count_sum_arrow(key[0].type))


def arrow_iterator(key: Tuple[pa.Scalar, ...],
                   batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """groupBy().applyInArrow, iterator form (4.1+: picked by these type hints)."""
    n = 0
    s = 0.0
    for b in batches:
        n += b.num_rows
        s += pc.sum(b.column("x")).as_py() or 0.0
    yield pa.RecordBatch.from_pydict({"k": [key[0].as_py()], "n": [n], "s": [s]},
                                     schema=count_sum_arrow(key[0].type))


def pandas_iterator(key: Tuple[Any, ...],
                    frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    """groupBy().applyInPandas, iterator form (4.1+: picked by these type hints)."""
    n = 0
    s = 0.0
    for pdf in frames:
        n += len(pdf)
        s += float(pdf["x"].sum())
    yield pd.DataFrame({"k": [key[0]], "n": [n], "s": [s]})


def _row_udtf():
    from pyspark.sql.functions import udtf

    @udtf(returnType=COUNT_SUM_SCHEMA)
    class CountSum:
        """Python UDTF over TABLE(df) PARTITION BY k: one row at a time, a row per partition."""

        def __init__(self):
            self.k = None
            self.n = 0
            self.s = 0.0

        def eval(self, row):
            self.k = row["k"]
            self.n += 1
            self.s += row["x"]

        def terminate(self):
            yield self.k, self.n, self.s

    return CountSum


@functools.lru_cache(maxsize=None)
def _arrow_udtf(schema: str = COUNT_SUM_SCHEMA):
    from pyspark.sql.functions import arrow_udtf

    @arrow_udtf(returnType=schema)
    class CountSumArrow:
        """@arrow_udtf over TABLE(df) PARTITION BY k: a record batch at a time."""

        def __init__(self):
            self.k = None
            self.k_type = pa.int64()
            self.n = 0
            self.s = 0.0

        def eval(self, batch: pa.RecordBatch):
            if batch.num_rows:
                self.k = batch.column("k")[0].as_py()
                self.k_type = batch.column("k").type
                self.n += batch.num_rows
                self.s += pc.sum(batch.column("x")).as_py() or 0.0
            return iter(())

        def terminate(self):
            yield pa.table({"k": pa.array([self.k], self.k_type), "n": pa.array([self.n], pa.int64()),
                            "s": pa.array([self.s], pa.float64())})

    return CountSumArrow


def _row_processor():
    from pyspark.sql import Row
    from pyspark.sql.streaming import StatefulProcessor

    class CountSumRows(StatefulProcessor):
        """transformWithState with Rows, in a batch query: the operator sorts each task's input
        by key and calls handleInputRows once per key with all the key's rows (a lazy
        iterator), so the count and sum are emitted there; no state variable is needed (a
        batch query's state store is a temporary one, dropped at the end of the task)."""

        def init(self, handle) -> None:
            pass

        def handleInputRows(self, key, rows, timerValues):
            n = 0
            s = 0.0
            for r in rows:
                n += 1
                s += r.x
            yield Row(k=key[0], n=n, s=s)

    return CountSumRows


def _pandas_processor():
    from pyspark.sql.streaming import StatefulProcessor

    class CountSumFrames(StatefulProcessor):
        """transformWithStateInPandas in a batch query: handleInputRows gets the key's rows as
        an iterator of pandas DataFrames (one Arrow batch at most each), once per key."""

        def init(self, handle) -> None:
            pass

        def handleInputRows(self, key, rows, timerValues):
            n = 0
            s = 0.0
            for pdf in rows:
                n += len(pdf)
                s += float(pdf["x"].sum())
            yield pd.DataFrame({"k": [key[0]], "n": [n], "s": [s]})

    return CountSumFrames


def keyed_row_natives() -> list[Native]:
    """The row-at-a-time forms: a Python UDTF over ``asTable().partitionBy`` (4.0+) and
    ``transformWithState`` with Rows (4.1+)."""
    out = []
    if has_table_args():
        f = _row_udtf()
        out.append(_form("Python UDTF over asTable().partitionBy",
                         lambda df: f(df.asTable().partitionBy("k")),
                         "BatchEvalPythonUDTF|ArrowEvalPythonUDTF"))
    if has_transform_with_state():
        processor = _row_processor()
        out.append(_form("transformWithState (rows)", lambda df: _with_state_store_coordinator(
            df).groupBy("k").transformWithState(processor(), COUNT_SUM_SCHEMA,
                                                outputMode="Append", timeMode="None"), _TWS_NODE))
    return out


def keyed_arrow_natives() -> list[Native]:
    out = []
    if has_grouped_arrow():
        out.append(_form("applyInArrow (table)", lambda df: df.groupBy("k").applyInArrow(
            arrow_table, count_sum_schema(df)), "FlatMapGroupsInArrow"))
    if has_grouped_iterators():
        out.append(_form("applyInArrow (iterator)", lambda df: df.groupBy("k").applyInArrow(
            arrow_iterator, count_sum_schema(df)), "FlatMapGroupsInArrow"))
    if has_arrow_udtf():
        out.append(_form("@arrow_udtf over asTable().partitionBy",
                         lambda df: _arrow_udtf(count_sum_schema(df))(df.asTable().partitionBy("k")),
                         "ArrowEvalPythonUDTF|BatchEvalPythonUDTF"))
    return out


def keyed_pandas_natives() -> list[Native]:
    """Besides whole-group ``applyInPandas`` (the cases' baseline): its iterator form (4.1+)
    and ``transformWithStateInPandas`` (4.0+), both a key's rows as a stream of frames."""
    out = []
    if has_grouped_iterators():
        out.append(_form("applyInPandas (iterator)", lambda df: df.groupBy("k").applyInPandas(
            pandas_iterator, COUNT_SUM_SCHEMA), "FlatMapGroupsInPandas"))
    if has_transform_with_state_in_pandas():
        processor = _pandas_processor()
        out.append(_form("transformWithStateInPandas", lambda df: _with_state_store_coordinator(
            df).groupBy("k").transformWithStateInPandas(processor(), COUNT_SUM_SCHEMA,
                                                        outputMode="Append", timeMode="None"),
            _TWS_NODE))
    return out


# ---- the coGroup shape: per key (k, count and sum of x on each side) -------------------------

COGROUP_SCHEMA = "k long, nl long, sl double, nr long, sr double"
_COGROUP_ARROW = pa.schema([("k", pa.int64()), ("nl", pa.int64()), ("sl", pa.float64()),
                            ("nr", pa.int64()), ("sr", pa.float64())])


def cogroup_tables(key, left, right):
    """cogroup().applyInArrow: the key's two sides as whole Arrow Tables."""
    return pa.Table.from_pydict(
        {"k": [key[0].as_py()], "nl": [left.num_rows],
         "sl": [pc.sum(left.column("x")).as_py() or 0.0], "nr": [right.num_rows],
         "sr": [pc.sum(right.column("x")).as_py() or 0.0]}, schema=_COGROUP_ARROW)


# the wide coGroup shape (benchmarks/heavy_key.py's *_wide variants): each record also carries
# a string payload p, and per key and side the payload's total length is summed as well, so the
# payload is really read, not only shipped

WIDE_COGROUP_SCHEMA = "k long, nl long, sl double, bl long, nr long, sr double, br long"
WIDE_COGROUP_ARROW = pa.schema([("k", pa.int64()), ("nl", pa.int64()), ("sl", pa.float64()),
                                ("bl", pa.int64()), ("nr", pa.int64()), ("sr", pa.float64()),
                                ("br", pa.int64())])


def payload_length(column) -> int:
    """The summed length (UTF-8 bytes; the payload is ASCII) of an Arrow string column."""
    return pc.sum(pc.binary_length(column)).as_py() or 0


def cogroup_tables_wide(key, left, right):
    """cogroup().applyInArrow, wide records: the key's two sides as whole Arrow Tables."""
    return pa.Table.from_pydict(
        {"k": [key[0].as_py()], "nl": [left.num_rows],
         "sl": [pc.sum(left.column("x")).as_py() or 0.0], "bl": [payload_length(left.column("p"))],
         "nr": [right.num_rows], "sr": [pc.sum(right.column("x")).as_py() or 0.0],
         "br": [payload_length(right.column("p"))]}, schema=WIDE_COGROUP_ARROW)


def cogroup_natives() -> list[Native]:
    """Besides cogroup().applyInPandas (the cases' baseline): cogroup().applyInArrow."""
    from pyspark.sql.pandas.group_ops import PandasCogroupedOps

    out = []
    if hasattr(PandasCogroupedOps, "applyInArrow"):
        out.append(Native("cogroup().applyInArrow", lambda data: run_noop(
            data[0].groupBy("k").cogroup(data[1].groupBy("k")).applyInArrow(
                cogroup_tables, COGROUP_SCHEMA)), "FlatMapCoGroupsInArrow"))
    return out


# ---- the keyed aggregate shape: per key (k, count, sum of x) by a Python aggregate ----------
#
# What a user would write for a per-key count and sum in Python with Spark's own APIs: grouped
# aggregate UDFs (one per result column; Spark runs them in one Python pass per group) in every
# form the line has, and the RDD API's aggregateByKey, which combines before the shuffle.

def _aggregate_udfs():
    """(name, build(df) -> the grouped aggregate) for each grouped aggregate UDF form this line
    has. The series / array forms run two UDFs (n, s), which Spark evaluates in one Python pass
    per group; the iterator forms allow one UDF per aggregate, so theirs returns a struct."""
    from pyspark.sql.functions import pandas_udf

    def two(n, s):
        return lambda df: df.groupBy("k").agg(n("x").alias("n"), s("x").alias("s"))

    def one(f):
        return lambda df: df.groupBy("k").agg(f("x").alias("r")).select("k", "r.n", "r.s")

    def pandas_n(v: pd.Series) -> int:
        return len(v)

    def pandas_s(v: pd.Series) -> float:
        return float(v.sum())

    forms = [("groupBy().agg(pandas_udf)",
              two(pandas_udf("long")(pandas_n), pandas_udf("double")(pandas_s)))]
    types = _eval_types()
    if "SQL_GROUPED_AGG_PANDAS_ITER_UDF" in types:
        def pandas_iter(it: Iterator[pd.Series]) -> dict:
            n = 0
            s = 0.0
            for v in it:
                n += len(v)
                s += float(v.sum())
            return {"n": n, "s": s}

        forms.append(("groupBy().agg(pandas_udf, iterator)",
                      one(pandas_udf("struct<n:long,s:double>")(pandas_iter))))
    try:
        from pyspark.sql.functions import arrow_udf
    except ImportError:  # before 4.1
        arrow_udf = None
    if arrow_udf is not None and "SQL_GROUPED_AGG_ARROW_UDF" in types:
        def arrow_n(v: pa.Array) -> int:
            return len(v)

        def arrow_s(v: pa.Array) -> float:
            return pc.sum(v).as_py() or 0.0

        forms.append(("groupBy().agg(arrow_udf)",
                      two(arrow_udf("long")(arrow_n), arrow_udf("double")(arrow_s))))
    if arrow_udf is not None and "SQL_GROUPED_AGG_ARROW_ITER_UDF" in types:
        def arrow_iter(it: Iterator[pa.Array]) -> dict:
            n = 0
            s = 0.0
            for v in it:
                n += len(v)
                s += pc.sum(v).as_py() or 0.0
            return {"n": n, "s": s}

        forms.append(("groupBy().agg(arrow_udf, iterator)",
                      one(arrow_udf("struct<n:long,s:double>")(arrow_iter))))
    return forms


_AGG_NODE = "ArrowAggregatePython|AggregateInPandas"


def keyed_aggregate_natives() -> list[Native]:
    """The vectorized grouped aggregate forms: ``groupBy("k").agg(...)`` with pandas UDFs
    (series and, 4.2+, iterator form) and Arrow UDFs (4.1+; iterator form 4.2+)."""
    return [_form(name, build, _AGG_NODE) for name, build in _aggregate_udfs()]


def count_sum_add(acc, row):
    """The per-record step of the aggregate cases: count and sum x."""
    return (acc[0] + 1, acc[1] + row.x)


def count_sum_merge(a, b):
    return (a[0] + b[0], a[1] + b[1])


def rdd_aggregate_by_key(df: DataFrame) -> int:
    """``rdd.aggregateByKey`` with the same steps as the fullwindow AggregateFunction (add,
    merge); it combines before the shuffle (combineByKey's map side). The count action runs
    every stage (an RDD has no optimizer to skip work)."""
    return (df.rdd.map(lambda r: (r.k, r))
            .aggregateByKey((0, 0.0), count_sum_add, count_sum_merge).count())


def reduce_last_plus(a, b):
    """The reduce cases' function: keep the first two fields, add up the third (x)."""
    return (a[0], a[1], a[2] + b[2])


def rdd_reduce_by_key(df: DataFrame) -> int:
    """``rdd.reduceByKey`` with the reduce cases' function over the records keyed by k."""
    return df.rdd.map(lambda r: (r[0], r)).reduceByKey(reduce_last_plus).count()


def arrow_handoff_floor() -> Native:
    """A floor of every Python form of the keyed_combine cases: the input handed to Python
    workers as Arrow batches (``mapInArrow``) that read each batch and return nothing; no
    exchange, no per-record work. What ours' map side pays before its first ``add``
    (benchmarks/record_floor.py gives the per-record Python that comes on top)."""
    def drain(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        rows = 0
        for b in batches:
            rows += b.num_rows
        yield pa.RecordBatch.from_pylist([{"k": rows, "n": 0, "s": 0.0}],
                                         schema=count_sum_arrow(pa.int64()))

    return Native("Arrow hand-off to Python (mapInArrow reading every batch; no per-record "
                  "work, no exchange)",
                  lambda data: run_noop(data.mapInArrow(drain, COUNT_SUM_SCHEMA)),
                  "MapInArrow|PythonMapInArrow")
