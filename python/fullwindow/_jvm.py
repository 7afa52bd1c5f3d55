"""The only door from Python into the JVM side of fullwindow."""
from __future__ import annotations

import os
import re
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from fullwindow.errors import FullWindowSetupError

EXTENSION_CLASS = "fullwindow.sql.FullWindowExtensions"
_FACADE = "org.apache.spark.sql.fullwindow.FullWindowPython"


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


def java_class(jvm: Any, name: str) -> Any:
    """The JVM class of dotted ``name`` through py4j (one lookup per package part)."""
    cls = jvm
    for part in name.split("."):
        cls = getattr(cls, part)
    return cls


def _facade_class(gateway: Any, jvm: Any) -> Any:
    """The facade's JavaClass, looked up once per JVM gateway: py4j resolves a dotted name one
    call per package, a cost every full-window operation paid again."""
    known = _facade_classes.get(id(gateway))
    if known is not None and known[0] is gateway:
        return known[1]
    from py4j.java_gateway import JavaClass

    cls = java_class(jvm, _FACADE)
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
        extensions = spark.sparkContext.getConf().get("spark.sql.extensions", "") or ""
        raise FullWindowSetupError(
            f"the fullwindow extension is not registered with this session "
            f"(spark.sql.extensions is {extensions!r}, which does not include {EXTENSION_CLASS}"
            "; a setting applied after fullwindow's may have replaced it). " + _how_to_fix())
    return obj
