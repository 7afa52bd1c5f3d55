"""What the Python-function operations of fullwindow.partition and fullwindow.keyed share:
argument checks, the output schema, the processing-time policy, and the Python UDF that runs a
function's worker in each task (with recovery when it is on)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from fullwindow._backend import backend, conf_get
from fullwindow.errors import ConfigurationError, FullWindowTypeError, FullWindowValueError

if TYPE_CHECKING:
    from fullwindow.functions import TimePolicy


def _parser_message(err: BaseException) -> str:
    """Spark's parser error without the JVM stack trace a Spark Connect client appends to it."""
    text = str(err).split("JVM stacktrace:", 1)[0]
    lines = [line for line in text.splitlines()
             if not line.lstrip().startswith(("at org.", "at java.", "at scala."))
             and not line.startswith("\tat ")]
    return "\n".join(lines).strip()


def _parse_schema(operation: str, schema: Any) -> "StructType":
    from pyspark.sql.types import StructType, _parse_datatype_string

    if isinstance(schema, StructType):
        return schema
    if isinstance(schema, str):
        from fullwindow._ddl import parse_simple_schema

        if not schema.strip():
            raise FullWindowValueError(
                f"{operation}: schema is empty; give the columns the function returns as a "
                "StructType or a DDL string like 'k long, total double'")

        simple = parse_simple_schema(schema)  # the common forms without a trip to the JVM
        if simple is not None and simple.fields:
            return simple
        try:
            parsed = _parse_datatype_string(schema)
        except Exception as err:  # noqa: BLE001 - re-raised with the argument named
            raise FullWindowValueError(
                f"{operation}: schema {schema!r} is not a valid DDL schema "
                f"(e.g. 'k long, total double'): {_parser_message(err)}") from None
        if isinstance(parsed, StructType):
            if not parsed.fields:  # such as a control character alone, which Spark's parser skips
                raise FullWindowValueError(
                    f"{operation}: schema {schema!r} names no columns; give the columns the "
                    "function returns, e.g. 'k long, total double'")
            return parsed
        raise FullWindowValueError(f"{operation}: schema must describe a struct, got {schema!r}")
    raise FullWindowTypeError(
        f"{operation}: schema must be a StructType or a DDL string like 'k long, total double'; "
        f"got {type(schema).__name__} {schema!r}")


def _require_callable(operation: str, argument: str, value: Any, expected: str) -> None:
    if value is None or not callable(value):
        got = "None" if value is None else f"{type(value).__name__} {value!r}"
        raise FullWindowTypeError(f"{operation}: {argument} must be {expected}; got {got}")


def _require_methods(operation: str, argument: str, value: Any, methods: tuple[str, ...],
                     expected: str) -> None:
    if value is None:
        raise FullWindowTypeError(f"{operation}: {argument} must be {expected}; got None")
    missing = [m for m in methods if not callable(getattr(value, m, None))]
    if missing:
        raise FullWindowTypeError(
            f"{operation}: {argument} must be {expected}; {type(value).__name__} has no "
            f"{', '.join(missing)}")


_ALLOW = ("ALLOW", "IGNORE", "FAIL")
_END_OF_INPUT = ("FIRE_AND_QUIESCE", "IGNORE")


def _time_policy(spark: Any) -> "TimePolicy":
    """The processing-time policy in force (FLIP-134), read when the operation is defined."""
    from fullwindow.functions import TimePolicy

    mode = (conf_get(spark, "spark.fullwindow.runtimeMode", "AUTOMATIC") or "AUTOMATIC").upper()
    streaming = mode == "STREAMING"
    allow = (conf_get(spark, "spark.fullwindow.processingTime.allow", None)
             or ("ALLOW" if streaming else "FAIL")).strip().upper()
    end = (conf_get(spark, "spark.fullwindow.processingTime.endOfInput", None)
           or ("FIRE_AND_QUIESCE" if streaming else "IGNORE")).strip().upper()
    if allow not in _ALLOW:
        raise ConfigurationError(f"spark.fullwindow.processingTime.allow is '{allow}'; "
                                 f"expected one of: {', '.join(_ALLOW)}.")
    if end not in _END_OF_INPUT:
        raise ConfigurationError(f"spark.fullwindow.processingTime.endOfInput is '{end}'; "
                                 f"expected one of: {', '.join(_END_OF_INPUT)}.")
    return TimePolicy(allow, end)


def _recoverable(out: DataFrame, operation: str, func: Any = None, extra: Any = None) -> DataFrame:
    """``out`` made recoverable when spark.fullwindow.recovery.enabled is true (else itself)."""
    from fullwindow.recovery._jobs import commit_operation

    return commit_operation(out, operation, func, extra)


def _python_partition(df: DataFrame, operation: str, schema: StructType,
                      make_runner: Callable[[Any], Any], func: Any = None,
                      extra: Any = None, pandas: bool = False) -> DataFrame:
    """Runs ``make_runner(encoder)`` (an Arrow-batches-in, batches-out function) once per
    partition, as the named full-window operation; ``pandas``: the function takes pandas
    frames (the JVM then sizes its input batches for pandas)."""
    column = _udf_column(df, operation, schema, make_runner, func)
    out = backend(df).python_partition(df, operation, column, pandas)
    return _recoverable(out, operation, func, extra)


def _udf_column(df: DataFrame, operation: str, schema: StructType,
                make_runner: Callable[[Any], Any], func: Any = None) -> Any:
    """The Python UDF of eval type SQL_MAP_ARROW_ITER_UDF that runs ``make_runner(encoder)`` in
    each task (the JVM gives it the whole input row, so its arguments are nominal), named after
    ``func``; keyed.py uses it too."""
    from fullwindow._worker import RowEncoder

    spark = df.sparkSession
    be = backend(df)
    be.check(df)
    large = (conf_get(spark, "spark.sql.execution.arrow.useLargeVarTypes", "false") or "false") \
        .lower() == "true"
    batch = int(conf_get(spark, "spark.sql.execution.arrow.maxRecordsPerBatch", "10000") or 10000)
    encoder = RowEncoder(operation, schema, large, batch)
    return be.udf_column(df, schema, _named(make_runner(encoder), func))


def _named(runner: Callable[..., Any], func: Any) -> Callable[..., Any]:
    """``runner`` named after the user's function (or its class, for an AggregateFunction or
    ProcessWindowFunction), so that explain() and the Spark UI show which function runs."""
    if func is not None:
        name = getattr(func, "__name__", None) or type(func).__name__
        runner.__name__ = runner.__qualname__ = str(name)
    return runner


_PREFETCH_DEPTH = 2
