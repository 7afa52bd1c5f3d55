"""Building SparkSessions that carry the fullwindow jar and extension."""
from __future__ import annotations

import os
import sys
from typing import Mapping

from pyspark.sql import SparkSession

from fullwindow._compat import connect_server_conf
from fullwindow._backend import PLUGIN_CLASS, PLUGIN_CONF
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

    On a Spark Connect builder (``SparkSession.builder.remote(...)``): for ``local[...]``, which
    starts a Connect server in this process, the same settings plus fullwindow's relation
    plugin (``spark.connect.extensions.relation.classes``) go to that server; a remote server
    (``sc://host:port``) is configured where it is started, so only ``conf`` is applied (the
    first fullwindow call on a server without fullwindow says what to add).

    Examples:
        ```python
        builder = SparkSession.builder.master("local[2]").appName("nightly")
        spark = fullwindow.configure(builder, conf={"spark.sql.shuffle.partitions": 8}).getOrCreate()
        ```
    """
    if builder is None or not hasattr(builder, "config"):
        raise TypeError(f"configure: builder must be a SparkSession.Builder, got {builder!r}")
    remote = getattr(builder, "_options", {}).get("spark.remote")
    if remote is not None and not str(remote).startswith("local"):
        for key, value in (conf or {}).items():
            builder.config(key, _conf_value(value))
        return builder
    jar = jar_path()
    if not os.path.isfile(jar):
        raise FullWindowSetupError(
            f"the fullwindow jar is missing at {jar}: the package was installed without it. "
            "Run dev/setup from the source checkout (it builds the jar with sbt), or install "
            "a built wheel.")
    if remote is not None:
        _require_connect_plugin(jar)  # before the builder is touched
    options = getattr(builder, "_options", {})
    builder.config("spark.jars", _append_csv(options.get("spark.jars"), jar))
    builder.config("spark.sql.extensions",
                   _append_csv(options.get("spark.sql.extensions"), EXTENSION_CLASS))
    if remote is not None:
        builder.config(PLUGIN_CONF, _append_csv(options.get(PLUGIN_CONF), PLUGIN_CLASS))
        # Spark 3.5: the server itself is a Maven artifact, unless the builder brings one
        given = f"{options.get('spark.jars', '')},{options.get('spark.jars.packages', '')}"
        if "spark-connect_" not in given:
            for key, value in connect_server_conf(jar).items():
                builder.config(key, _append_csv(options.get(key), value))
    for key in ("spark.pyspark.python", "spark.pyspark.driver.python"):
        if key not in options:
            builder.config(key, sys.executable)
    for key, value in (conf or {}).items():
        builder.config(key, _conf_value(value))
    # recovery enabled without dir or jobId fails here, before a JVM is started
    from fullwindow.recovery.config import settings_from

    options = getattr(builder, "_options", {})
    settings = settings_from(lambda k: options.get(k), "building the fullwindow session")
    if settings is not None:  # a job another driver runs fails here, before a JVM is started
        from fullwindow.recovery.lease import check_free

        check_free(settings, "building the fullwindow session")
    return builder


def _require_connect_plugin(jar: str) -> None:
    """The jar of the running Spark line must carry the Spark Connect plugin (every line's
    does; a jar built without jvm/src/connect would not)."""
    import zipfile

    entry = PLUGIN_CLASS.replace(".", "/") + ".class"
    with zipfile.ZipFile(jar) as z:
        if entry in z.namelist():
            return
    raise FullWindowSetupError(
        f"{os.path.basename(jar)} has no Spark Connect plugin, so a Connect server cannot run "
        "fullwindow with it: rebuild the jar with dev/jars (it carries the plugin on every "
        "supported Spark line), or use fullwindow.session(master=...), a classic session.")


def _conf_value(value: object) -> str:
    return str(value) if not isinstance(value, bool) else str(value).lower()


def session(master: str | None = None, conf: Mapping[str, object] | None = None,
            app_name: str = "fullwindow", *, remote: str | None = None) -> SparkSession:
    """A SparkSession with the fullwindow jar and extension (``local[*]`` by default).

    With ``remote``, a Spark Connect session: ``remote="local[2]"`` starts a local Connect
    server carrying the jar, the extension and fullwindow's relation plugin;
    ``remote="sc://host:15002"`` connects to a server started with them (see the README).

    Puts the jar on the driver and executor class paths, registers the extension, makes Python
    workers run this interpreter, and applies ``conf``. An already running session without the
    extension cannot be given it: stop it first.

    Examples:
        ```python
        spark = fullwindow.session(master="local[2]", conf={"spark.sql.shuffle.partitions": 4})
        spark = fullwindow.session(remote="local[2]")          # Spark Connect
        ```
    """
    if conf is not None and not isinstance(conf, Mapping):
        raise TypeError(f"session: conf must be a mapping of config keys to values, got {conf!r}")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if remote is not None:
        if master is not None:
            raise TypeError("session: give master (a classic session) or remote (Spark "
                            f"Connect), not both; got master={master!r}, remote={remote!r}")
        if not isinstance(remote, str) or not (remote.startswith("local")
                                               or remote.startswith("sc://")):
            raise TypeError("session: remote must be 'local[N]' or 'sc://host:port'; "
                            f"got {remote!r}")
        builder = configure(SparkSession.builder.remote(remote).appName(app_name), conf)
        if not remote.startswith("local"):
            return builder.getOrCreate()
        # a local server takes every setting when it starts; pyspark then tries to set them
        # again as session settings and warns for each static one: those warnings say nothing
        import re
        import warnings

        keys = "|".join(re.escape(k) for k in getattr(builder, "_options", {}))
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=f"Failed to set ({keys}) to ",
                                    category=UserWarning)
            return builder.getOrCreate()
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
