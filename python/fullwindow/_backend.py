"""Where a fullwindow operation goes: the classic backend (py4j, the JVM facade of the driver) or
the Connect backend (a fullwindow relation message sent to a Spark Connect server), chosen per
DataFrame by its own type. Validation, errors and the user-facing classes stay above this module
(partition.py, keyed.py): both backends take the same already-checked arguments and build the
same logical nodes on the JVM side (the Connect plugin calls the facade's builders).
"""
from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Callable, Iterator, Optional, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from fullwindow._compat import (PythonEvalType, connect_dataframe, connect_execution_metrics,
                                dataframe_schema, keep_schema)

from fullwindow._jvm_errors import PLUGIN_CLASS, PLUGIN_CONF, setup_error_for_connect  # noqa: F401


def is_connect(obj: Any) -> bool:
    """True for a Spark Connect DataFrame, Column or SparkSession (by its own type)."""
    return type(obj).__module__.startswith("pyspark.sql.connect.")


def backend(df: DataFrame) -> "ClassicBackend | ConnectBackend":
    return _CONNECT if is_connect(df) else _CLASSIC


# ---- session settings, read once per operation ----------------------------------------------
# A classic session reads a setting in this process (py4j); a Connect session asks the server,
# one Config round trip per read. An operation reads up to six of these settings (recovery,
# Arrow batch size and string types, runtime mode, processing-time policy), so on Connect the
# first read inside an operation fetches all of them in ONE round trip and the later reads of
# the same operation are answered from that snapshot. Settings are read when the operation is
# defined (as before); nothing outlives the call of the public method.

RECOVERY_ENABLED = "spark.fullwindow.recovery.enabled"
OPERATION_SETTINGS: dict[str, Optional[str]] = {
    RECOVERY_ENABLED: None,
    "spark.sql.execution.arrow.useLargeVarTypes": "false",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "10000",
    "spark.fullwindow.runtimeMode": "AUTOMATIC",
    "spark.fullwindow.processingTime.allow": None,
    "spark.fullwindow.processingTime.endOfInput": None,
    "spark.fullwindow.combine.enabled": "true",
    "spark.fullwindow.combine.maxKeys": None,
    "spark.fullwindow.combine.maxBytes": None,
}
_SNAPSHOT: contextvars.ContextVar[Optional[dict]] = contextvars.ContextVar(
    "fullwindow_operation_settings", default=None)


@contextlib.contextmanager
def operation_settings() -> Iterator[None]:
    """The scope of one public operation: Connect settings read inside it are fetched once.
    Nested scopes (an operation calling another) share the outer one's snapshot."""
    if _SNAPSHOT.get() is not None:
        yield
        return
    token = _SNAPSHOT.set({})
    try:
        yield
    finally:
        _SNAPSHOT.reset(token)


def conf_get(session: Any, key: str, default: Optional[str] = None) -> Optional[str]:
    """``session.conf.get(key, default)``; on a Connect session inside an operation, served
    from the operation's snapshot (the first read fetches every OPERATION_SETTINGS key in one
    Config round trip)."""
    snapshot = _SNAPSHOT.get()
    if snapshot is None or not is_connect(session):
        return session.conf.get(key, default)
    values = snapshot.get(id(session))
    if values is None:
        wanted = dict(OPERATION_SETTINGS)
        wanted.setdefault(key, default)
        values = snapshot[id(session)] = _connect_conf_many(session, wanted)
    if (key, default) not in values:
        values[(key, default)] = session.conf.get(key, default)
    return values[(key, default)]


def _connect_conf_many(session: Any, wanted: dict[str, Optional[str]]) -> dict:
    """``{(key, default): value}`` for every pair of ``wanted``, in one Config round trip (the
    request ``conf.get(key, default)`` sends, with all pairs in it)."""
    from pyspark.sql.connect.proto import ConfigRequest, KeyValue

    pairs = list(wanted.items())
    op = ConfigRequest.Operation(get_with_default=ConfigRequest.GetWithDefault(
        pairs=[KeyValue(key=k, value=d) for k, d in pairs]))
    result = session.conf._client.config(op)
    return {(k, d): v for (k, d), (_, v) in zip(pairs, result.pairs)}


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class _Backend:
    """What both backends share: the Python function as a UDF column of every input column."""

    def _udf_class(self) -> type:  # pragma: no cover - overridden
        raise NotImplementedError

    def udf_column(self, df: DataFrame, schema: StructType,
                   runner: Callable[[Any], Any]) -> Column:
        """``runner`` (Arrow batches in, batches out) as a Python UDF of eval type
        SQL_MAP_ARROW_ITER_UDF, what mapInArrow takes; the JVM hands it the whole input row."""
        udf = self._udf_class()(runner, returnType=schema,
                                evalType=PythonEvalType.SQL_MAP_ARROW_ITER_UDF)
        return udf(*[F.col(_quote(c)) for c in dataframe_schema(df).names])


class ClassicBackend(_Backend):
    """The py4j facade of the driver JVM (a classic SparkSession)."""

    def check(self, df: DataFrame) -> None:
        """Fails fast when the session cannot run fullwindow (jar, extension)."""
        self._fw(df)

    def _udf_class(self) -> type:
        from pyspark.sql.udf import UserDefinedFunction

        return UserDefinedFunction

    @staticmethod
    def _fw(df: DataFrame) -> Any:
        from fullwindow._jvm import facade

        return facade(df)

    @staticmethod
    def _array(spark: Any, java_type: Callable[[Any], Any], values: Sequence[Any],
               convert: Callable[[Any], Any] = lambda v: v) -> Any:
        gateway = spark.sparkContext._gateway
        arr = gateway.new_array(java_type(gateway.jvm), len(values))
        for i, v in enumerate(values):
            arr[i] = convert(v)
        return arr

    def _columns(self, spark, columns):
        return self._array(spark, lambda j: j.org.apache.spark.sql.Column, columns, lambda c: c._jc)

    def _strings(self, spark, values):
        return self._array(spark, lambda j: j.java.lang.String, values)

    def sort_partition(self, df, columns, ascending):
        fw, spark = self._fw(df), df.sparkSession
        booleans = self._array(spark, lambda j: j.boolean, ascending, bool)
        return DataFrame(fw.sortPartition(df._jdf, self._columns(spark, columns), booleans), spark)

    def aggregate(self, df, columns):
        spark = df.sparkSession
        return DataFrame(self._fw(df).aggregate(df._jdf, self._columns(spark, columns)), spark)

    def python_partition(self, df, operation, udf, pandas):
        jdf = self._fw(df).pythonPartition(df._jdf, operation, udf._jc, bool(pandas))
        return DataFrame(jdf, df.sparkSession)

    def combine_input(self, df, operation, udf, schema):
        """The map side of a keyed operation that combines (a Python partition step of output
        ``schema``); a classic Dataset is analyzed as it is made, which costs no round trip."""
        return self.python_partition(df, operation, udf, False)

    def is_streaming(self, df) -> bool:
        return bool(df.isStreaming)

    def keyed_repartition(self, df, keys):
        spark = df.sparkSession
        return DataFrame(self._fw(df).keyedRepartition(df._jdf, self._strings(spark, keys)), spark)

    def keyed_aggregate(self, df, keys, columns):
        spark = df.sparkSession
        jdf = self._fw(df).keyedAggregate(df._jdf, self._strings(spark, keys),
                                          self._columns(spark, columns))
        return DataFrame(jdf, spark)

    def keyed_python(self, df, operation, keys, udf, pandas):
        spark = df.sparkSession
        jdf = self._fw(df).keyedPythonPartition(df._jdf, operation, self._strings(spark, keys),
                                                udf._jc, bool(pandas))
        return DataFrame(jdf, spark)

    def keyed_running(self, df, operation, keys, sequence, udf):
        spark = df.sparkSession
        jdf = self._fw(df).keyedRunning(df._jdf, operation, self._strings(spark, keys), sequence,
                                        udf._jc)
        return DataFrame(jdf, spark)

    def co_group(self, left, right, left_keys, right_keys, udf, pandas):
        spark = left.sparkSession
        jdf = self._fw(left).coGroup(left._jdf, right._jdf, self._strings(spark, left_keys),
                                     self._strings(spark, right_keys), udf._jc, bool(pandas))
        return DataFrame(jdf, spark)

    def operator_metrics(self, df) -> dict[str, int]:
        return {str(k): int(v) for k, v in self._fw(df).operatorMetrics(df._jdf).items()}


class ConnectBackend(_Backend):
    """A fullwindow relation message (proto/fullwindow/connect.proto) inside a Spark Connect
    plan, planned on the server by FullWindowRelationPlugin."""

    def check(self, df: DataFrame) -> None:
        """The server is checked when the first operation is analyzed (recovery: by the
        server, when the operation's Commit is analyzed: fullwindow._connect.recovery)."""

    def _udf_class(self) -> type:
        from pyspark.sql.connect.udf import UserDefinedFunction

        return UserDefinedFunction

    def _build(self, df, fill: Callable[[Any, Any], None], others: Sequence[Any] = (),
               python: bool = False, schema: Optional[StructType] = None):
        """A Connect DataFrame over ``df`` whose plan is a FullWindowRelation that ``fill(rel,
        client)`` completes; analyzed at once (one round trip), so that a bad argument fails
        here with the same error as on a classic session, not at the first action. The
        session's first operation checks the server's jar version (one round trip); its first
        ``python`` one sends the package to the session's workers where they lack it. With
        ``schema`` (a step inside one operation whose output schema is known), nothing is asked:
        the operation's result is analyzed with it, and that analysis reports its errors."""
        from fullwindow._connect.artifact import prepare
        from fullwindow._connect.plan import FullWindowPlan

        session = df.sparkSession
        prepare(session, python)
        out = connect_dataframe(FullWindowPlan(df._plan, fill, [o._plan for o in others]), session)
        if schema is None or not keep_schema(out, schema):
            dataframe_schema(out)  # analyze now (and keep the schema where the client does not)
        return out

    @staticmethod
    def _expr(client, column: Any) -> bytes:
        return column.to_plan(client).SerializeToString()

    def sort_partition(self, df, columns, ascending):
        def fill(rel, client):
            rel.sort_partition.keys.extend(self._expr(client, c) for c in columns)
            rel.sort_partition.ascending.extend(bool(a) for a in ascending)
        return self._build(df, fill)

    def aggregate(self, df, columns):
        def fill(rel, client):
            rel.aggregate.columns.extend(self._expr(client, c) for c in columns)
        return self._build(df, fill)

    def python_partition(self, df, operation, udf, pandas, schema=None):
        def fill(rel, client):
            rel.python_partition.operation = operation
            rel.python_partition.udf = self._expr(client, udf)
            rel.python_partition.pandas = bool(pandas)
        return self._build(df, fill, python=True, schema=schema)

    def combine_input(self, df, operation, udf, schema):
        """The map side of a keyed operation that combines, not analyzed on its own: its schema
        is ``schema``, and the keyed step above it is analyzed whole (one round trip for the
        operation, as without the combine)."""
        return self.python_partition(df, operation, udf, False, schema)

    def is_streaming(self, df) -> bool:
        """False: asking costs a round trip, and a stream is refused anyway when the
        operation's plan is analyzed (the top full-window node, the keyed step, is named)."""
        return False

    def keyed_repartition(self, df, keys):
        def fill(rel, client):
            rel.keyed_repartition.keys.extend(keys)
        return self._build(df, fill)

    def keyed_aggregate(self, df, keys, columns):
        def fill(rel, client):
            rel.keyed_aggregate.keys.extend(keys)
            rel.keyed_aggregate.columns.extend(self._expr(client, c) for c in columns)
        return self._build(df, fill)

    def keyed_python(self, df, operation, keys, udf, pandas):
        def fill(rel, client):
            m = rel.keyed_python_partition
            m.operation, m.udf, m.pandas = operation, self._expr(client, udf), bool(pandas)
            m.keys.extend(keys)
        return self._build(df, fill, python=True)

    def keyed_running(self, df, operation, keys, sequence, udf):
        def fill(rel, client):
            m = rel.keyed_running
            m.operation, m.sequence, m.udf = operation, sequence, self._expr(client, udf)
            m.keys.extend(keys)
        return self._build(df, fill, python=True)

    def co_group(self, left, right, left_keys, right_keys, udf, pandas):
        def fill(rel, client):
            m = rel.co_group
            m.right = right._plan.plan(client).SerializeToString()
            m.left_keys.extend(left_keys)
            m.right_keys.extend(right_keys)
            m.udf, m.pandas = self._expr(client, udf), bool(pandas)
        return self._build(left, fill, [right], python=True)

    def operator_metrics(self, df) -> dict[str, int]:
        """Spark Connect sends the executed plan's SQL metrics with each result; the last
        action's are on ``df.executionInfo``."""
        from fullwindow.errors import FullWindowValueError

        collected = connect_execution_metrics(df)
        if collected is None:
            raise FullWindowValueError(
                "operator_metrics: this Spark Connect DataFrame has no execution metrics yet; "
                "run an action on it first (e.g. df.collect()): Spark Connect sends the plan's "
                "metrics with the result of an action")
        out: dict[str, int] = {}

        def add(key: str, value: Any) -> None:
            out[key] = out.get(key, 0) + int(value)

        nodes = {n.plan_id: n for n in collected._metrics}
        for node in collected._metrics:
            if node.name == "FullWindowCombineInput":
                # a keyed aggregate that combines, as the classic facade reports it: rows in
                # before the combine, and after it (Spark's partial aggregation's rows out)
                for m in node.metrics:
                    if m.name == "numInputRows":
                        add("FullWindowAggregate.numInputRows", m.value)
                partial = nodes.get(node.parent_plan_id)
                while partial is not None and partial.name.startswith(
                        ("WholeStageCodegen", "InputAdapter")):
                    partial = nodes.get(partial.parent_plan_id)
                for m in (partial.metrics if partial is not None else ()):
                    if m.name == "numOutputRows":
                        add("FullWindowAggregate.numCombinedRows", m.value)
            elif node.name.startswith("FullWindow") or node.name.startswith("KeyedRunning"):
                for m in node.metrics:
                    add(f"{node.name}.{m.name}", m.value)
        return out


_CLASSIC = ClassicBackend()
_CONNECT = ConnectBackend()
