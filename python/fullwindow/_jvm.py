"""The only door from Python into the JVM side of fullwindow."""
from __future__ import annotations

import functools
import os
import re
from typing import Any, Callable, TypeVar

from pyspark.sql import DataFrame, SparkSession

from fullwindow._compat import error_condition
from fullwindow.errors import (FullWindowAnalysisError, FullWindowError, FullWindowSetupError,
                               class_for_kind)

EXTENSION_CLASS = "fullwindow.sql.FullWindowExtensions"
_FACADE = "org.apache.spark.sql.fullwindow.FullWindowPython"
_JVM_ERROR = "org.apache.spark.sql.fullwindow.FullWindowAnalysisException"


# The Spark lines this package carries a jar for (dev/spark-lines), with their Scala binary version.
SUPPORTED_LINES = {"3.5": "2.12", "4.0": "2.13", "4.1": "2.13", "4.2": "2.13", "4.3": "2.13"}


def spark_line(version: str | None = None) -> str:
    """The Spark line (``major.minor``) of ``version``, by default the running pyspark's."""
    if version is None:
        import pyspark

        version = pyspark.__version__
    m = re.match(r"(\d+)\.(\d+)", version)
    return f"{m.group(1)}.{m.group(2)}" if m else version


def jar_path(version: str | None = None) -> str:
    """The path of the extension jar, shipped inside this package, for the running pyspark's
    Spark line (or ``version``'s). Raises FullWindowSetupError on a line with no jar."""
    line = spark_line(version)
    if line not in SUPPORTED_LINES:
        import pyspark

        raise FullWindowSetupError(
            f"fullwindow supports Spark {', '.join(SUPPORTED_LINES)}; "
            f"the running pyspark is {version or pyspark.__version__} (Spark {line}). Install a "
            "pyspark of a supported line (e.g. pip install 'pyspark>=3.5,<4.4').")
    name = f"fullwindow-spark{line}_{SUPPORTED_LINES[line]}.jar"
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "jars", name)


_HOW_TO_FIX = (
    "Build the session with fullwindow.session(...) or "
    "fullwindow.configure(SparkSession.builder)...getOrCreate(), which put the jar on the class "
    "path and set spark.sql.extensions={ext}. With spark-submit or pyspark, pass "
    "--jars {jar} --conf spark.sql.extensions={ext}. Such settings only take effect when the "
    "JVM starts: stop any running session first."
)


def _how_to_fix() -> str:
    return _HOW_TO_FIX.format(ext=EXTENSION_CLASS, jar=jar_path())


def _session_of(source: DataFrame | SparkSession | None) -> SparkSession:
    if source is not None:
        if type(source).__module__.startswith("pyspark.sql.connect"):
            # every DataFrame operation goes through fullwindow._backend, which sends Connect
            # DataFrames to the server's plugin; only the classic-only helpers end up here
            raise FullWindowSetupError(
                "this fullwindow call needs a classic SparkSession (the driver's JVM), which a "
                "Spark Connect client does not have.")
        return source if isinstance(source, SparkSession) else source.sparkSession
    spark = SparkSession.getActiveSession()
    if spark is None:
        raise FullWindowSetupError("there is no active SparkSession. " + _how_to_fix())
    return spark


_facade_classes: dict[int, tuple[Any, Any]] = {}


def _facade_class(gateway: Any, jvm: Any) -> Any:
    """The facade's JavaClass, looked up once per JVM gateway: py4j resolves a dotted name one
    call per package, a cost every full-window operation paid again."""
    known = _facade_classes.get(id(gateway))
    if known is not None and known[0] is gateway:
        return known[1]
    from py4j.java_gateway import JavaClass

    cls = jvm
    for part in _FACADE.split("."):
        cls = getattr(cls, part)
    if not isinstance(cls, JavaClass):
        raise FullWindowSetupError(
            "the fullwindow jar is not on the driver's class path. " + _how_to_fix())
    _facade_classes[id(gateway)] = (gateway, cls)
    return cls


def facade(source: DataFrame | SparkSession | None = None) -> Any:
    """The JVM facade object for a session (given, of a DataFrame, or the active one), checked:
    the jar must be loadable and the extension registered with the session."""
    spark = _session_of(source)
    jvm = spark.sparkContext._jvm
    if jvm is None:
        raise FullWindowSetupError("the SparkSession has no JVM (Spark Connect?). " + _how_to_fix())
    obj = _facade_class(spark.sparkContext._gateway, jvm)
    if not obj.extensionEnabled(spark._jsparkSession):
        raise FullWindowSetupError(
            f"the fullwindow extension is not registered with this session "
            f"(spark.sql.extensions does not include {EXTENSION_CLASS}). " + _how_to_fix())
    return obj


def _find_fullwindow_cause(java_exc: Any) -> Any:
    seen = 0
    while java_exc is not None and seen < 20:
        if java_exc.getClass().getName() == _JVM_ERROR:
            return java_exc
        java_exc = java_exc.getCause()
        seen += 1
    return None


_TAG = re.compile(r"\[FULLWINDOW\.([A-Z_]+)\]")

# Spark's own error conditions that mean the same as one of ours.
_SPARK_CONDITIONS = {
    "DATATYPE_MISMATCH.INVALID_ORDERING_TYPE": "KEY_NOT_SORTABLE",
}


def _is_connect_error(err: Exception) -> bool:
    """An error a Spark Connect client raised for its server (pyspark.errors.exceptions.connect)."""
    return type(err).__module__.startswith("pyspark.errors.exceptions.connect")


# what a Connect server answers for a relation extension no plugin of its takes
_NO_PLUGIN = ("NO_HANDLER_FOR_EXTENSION", "No handler found for extension")


def raise_from_java(err: Exception, operation: str) -> None:
    """Turns a JVM-side failure of ``operation`` into a fullwindow Python exception, without the
    JVM stack dump; over Spark Connect, the server's failure as the client raised it. Re-raises
    ``err`` when it is not a JVM failure."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors.exceptions.captured import CapturedException, convert_exception

    # pyspark's py4j hook usually has turned the Py4JJavaError into a CapturedException already;
    # either way the Java throwable is at hand, and ours may be anywhere in its cause chain.
    java_exc = err.java_exception if isinstance(err, Py4JJavaError) else getattr(err, "_origin", None)
    if java_exc is not None:
        fw = _find_fullwindow_cause(java_exc)
        if fw is not None:
            raise class_for_kind(fw.kind())(fw.getMessage()) from None
    if isinstance(err, Py4JJavaError):
        err = convert_exception(err.java_exception)
    if _is_connect_error(err):
        condition = error_condition(err)
        text = f"{condition or ''} {err}"
        if any(marker in text for marker in _NO_PLUGIN):
            from fullwindow._backend import setup_error_for_connect

            raise setup_error_for_connect() from None
    if isinstance(err, CapturedException) or _is_connect_error(err):
        message = err.getMessage() if hasattr(err, "getMessage") else str(err)
        # a Connect client appends the server's JVM stack trace to the message: not for users
        message = message.split("\n\nJVM stacktrace:")[0].split("\nJVM stacktrace:")[0]
        # The analyzer may re-create our exception as a plain AnalysisException; the kind
        # survives in the message.
        tagged = _TAG.search(message)
        if tagged:
            raise class_for_kind(tagged.group(1))(message[tagged.start():].split("\n")[0]) from None
        condition = error_condition(err)
        cls = class_for_kind(_SPARK_CONDITIONS.get(condition or "", ""))
        raise cls(f"{operation}: {message}") from None
    raise err


F = TypeVar("F", bound=Callable[..., Any])


def jvm_errors(operation: str) -> Callable[[F], F]:
    """Decorator: JVM failures inside the wrapped call become fullwindow exceptions."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> Any:
            from fullwindow._backend import operation_settings

            try:
                with operation_settings():
                    return fn(*args, **kwargs)
            except FullWindowError:
                raise
            except Exception as err:  # noqa: BLE001 - filtered in raise_from_java
                from py4j.protocol import Py4JJavaError
                from pyspark.errors.exceptions.captured import CapturedException

                if isinstance(err, (Py4JJavaError, CapturedException)) or _is_connect_error(err):
                    raise_from_java(err, operation)
                raise

        return inner  # type: ignore[return-value]

    return wrap


def operator_metrics(df: DataFrame) -> dict[str, int]:
    """SQL metrics of the full-window operators in the plan ``df`` last executed, as
    ``{"FullWindowSortPartition.spillSize": 1234, ...}``. Run an action on ``df`` first.

    Examples:
        >>> out = df.fullWindowPartition().sortPartition("v")
        >>> _ = out.collect()
        >>> fullwindow.operator_metrics(out)["FullWindowSortPartition.numOutputRows"]
        6
    """
    from fullwindow._backend import backend

    return backend(df).operator_metrics(df)
