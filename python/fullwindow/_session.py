"""Building SparkSessions that carry the fullwindow jar and extension."""
from __future__ import annotations

import os
import sys
from typing import Mapping

from pyspark.sql import SparkSession

from fullwindow._jvm import EXTENSION_CLASS, facade, jar_path
from fullwindow.errors import FullWindowSetupError


def _append_csv(existing: str | None, item: str) -> str:
    parts = [p.strip() for p in (existing or "").split(",") if p.strip()]
    if item not in parts:
        parts.append(item)
    return ",".join(parts)


def configure(builder: SparkSession.Builder,
              conf: Mapping[str, object] | None = None) -> SparkSession.Builder:
    """Adds fullwindow to a ``SparkSession.Builder`` you own and returns it.

    Puts the package's jar on the driver and executor class paths (``spark.jars``), registers
    ``spark.sql.extensions=fullwindow.sql.FullWindowExtensions`` (keeping extensions already
    set), and makes Python workers run the driver's interpreter. ``conf`` entries are applied
    last, so they win.

    Examples:
        ```python
        builder = SparkSession.builder.master("local[2]").appName("nightly")
        spark = fullwindow.configure(builder, conf={"spark.sql.shuffle.partitions": 8}).getOrCreate()
        ```
    """
    if builder is None or not hasattr(builder, "config"):
        raise TypeError(f"configure: builder must be a SparkSession.Builder, got {builder!r}")
    jar = jar_path()
    if not os.path.isfile(jar):
        raise FullWindowSetupError(
            f"the fullwindow jar is missing at {jar}: the package was installed without it. "
            "Run dev/setup from the source checkout (it builds the jar with sbt), or install "
            "a built wheel.")
    options = getattr(builder, "_options", {})
    builder.config("spark.jars", _append_csv(options.get("spark.jars"), jar))
    builder.config("spark.sql.extensions",
                   _append_csv(options.get("spark.sql.extensions"), EXTENSION_CLASS))
    for key in ("spark.pyspark.python", "spark.pyspark.driver.python"):
        if key not in options:
            builder.config(key, sys.executable)
    for key, value in (conf or {}).items():
        builder.config(key, str(value) if not isinstance(value, bool) else str(value).lower())
    # recovery enabled without dir or jobId fails here, before a JVM is started
    from fullwindow.recovery.config import settings_from

    options = getattr(builder, "_options", {})
    settings_from(lambda k: options.get(k), "building the fullwindow session")
    return builder


def session(master: str | None = None, conf: Mapping[str, object] | None = None,
            app_name: str = "fullwindow") -> SparkSession:
    """A SparkSession with the fullwindow jar and extension (``local[*]`` by default).

    Puts the jar on the driver and executor class paths, registers the extension, makes Python
    workers run this interpreter, and applies ``conf``. An already running session without the
    extension cannot be given it: stop it first.

    Examples:
        ```python
        spark = fullwindow.session(master="local[2]", conf={"spark.sql.shuffle.partitions": 4})
        ```
    """
    if conf is not None and not isinstance(conf, Mapping):
        raise TypeError(f"session: conf must be a mapping of config keys to values, got {conf!r}")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name).master(master or "local[*]")
    spark = configure(builder, conf).getOrCreate()
    try:
        facade(spark)
    except FullWindowSetupError as err:
        raise FullWindowSetupError(
            "a SparkSession was already running without fullwindow, and its JVM cannot load "
            f"extensions any more; call spark.stop() first. ({err})") from None
    # with recovery on, open the job now, so that SQL-hint operations run before any DataFrame
    # operation are committed too (a builder of one's own calls fullwindow.recovery.start)
    from fullwindow.recovery import start

    start(spark)
    return spark
