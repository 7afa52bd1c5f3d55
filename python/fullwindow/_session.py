"""Building SparkSessions that carry the fullwindow jar and extension."""
from __future__ import annotations

import os
import sys
from typing import Callable, Mapping

from pyspark.sql import SparkSession

from fullwindow._compat import client_only, connect_server_conf, submitted_api_mode_connect
from fullwindow._backend import PLUGIN_CLASS, PLUGIN_CONF
from fullwindow._jvm import EXTENSION_CLASS, facade, jar_path
from fullwindow.errors import FullWindowSetupError


def _append_csv(existing: str | None, item: str) -> str:
    return _merge_csv(existing, item)


#: settings holding comma-separated lists that fullwindow also sets: what a user gives for them
#: (a builder's setting, ``conf``, spark-submit's ``--conf``) is merged with fullwindow's, never
#: replaced by it nor replacing it
LIST_KEYS = ("spark.sql.extensions", "spark.jars", "spark.jars.packages", PLUGIN_CONF)


def _merge_csv(*values: object) -> str:
    """The items of each comma-separated ``values`` in turn (None and empty ones skipped), each
    once, in the order first given."""
    out: list[str] = []
    for value in values:
        if value is None:
            continue
        if not isinstance(value, str):
            raise TypeError(f"a list setting must be a comma-separated string, got {value!r}")
        for item in value.split(","):
            item = item.strip()
            if item and item not in out:
                out.append(item)
    return ",".join(out)


def _defaults_file_lists() -> dict[str, str]:
    """The list settings (``LIST_KEYS``) of the ``spark-defaults.conf`` that the JVM pyspark is
    about to start will read (``$SPARK_CONF_DIR``, else ``$SPARK_HOME/conf``): a builder setting
    replaces a default, so fullwindow's own would drop the user's unless merged with them."""
    import re

    home: str | None = os.environ.get("SPARK_HOME")
    if not home:
        try:
            from pyspark.find_spark_home import _find_spark_home

            home = _find_spark_home()
        except Exception:  # noqa: BLE001 - no Spark home found: no defaults either
            home = None
    folder = os.environ.get("SPARK_CONF_DIR") or (os.path.join(home, "conf") if home else None)
    path = os.path.join(folder, "spark-defaults.conf") if folder else None
    if not path or not os.path.isfile(path):
        return {}
    out: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:  # java.util.Properties' format, as Spark reads it
                line = line.strip()
                if not line or line[0] in "#!":
                    continue
                parts = re.split(r"\s*[=:]\s*|\s+", line, maxsplit=1)
                key, value = parts[0].strip(), (parts[1].strip() if len(parts) > 1 else "")
                if key in LIST_KEYS:
                    out[key] = value
    except OSError:
        return {}
    return out


def _apply_conf(builder: SparkSession.Builder, conf: Mapping[str, object] | None,
                given: Mapping[str, str | None], ours: Mapping[str, str]) -> None:
    """Applies ``conf`` to ``builder`` (last, so its settings win), except that each list
    setting (``LIST_KEYS``) is the merge of what was ``given`` before (the builder's, or
    spark-submit's), ``conf``'s, and what fullwindow adds (``ours``), in that order."""
    conf = dict(conf or {})
    for key, value in conf.items():
        if not isinstance(key, str) or not key.strip():
            raise TypeError(f"conf: keys must be setting names (non-empty strings), got {key!r}")
        if key not in LIST_KEYS:
            builder.config(key, _conf_value(value))
    for key in LIST_KEYS:
        mine = conf.get(key)
        if mine is not None and not isinstance(mine, str):
            if isinstance(mine, (list, tuple)) and all(isinstance(v, str) for v in mine):
                mine = ",".join(mine)
            else:
                raise TypeError(f"conf: {key} must be a comma-separated string (or a list of "
                                f"strings), got {mine!r}")
        if mine is None and key not in ours:
            continue
        merged = _merge_csv(given.get(key), mine, ours.get(key))
        if merged or key in conf:
            builder.config(key, merged)


def configure(builder: SparkSession.Builder,
              conf: Mapping[str, object] | None = None) -> SparkSession.Builder:
    """Adds fullwindow to a ``SparkSession.Builder`` you own and returns it.

    Puts the package's jar on the driver and executor class paths (``spark.jars``), registers
    ``spark.sql.extensions=fullwindow.sql.FullWindowExtensions`` (keeping extensions already
    set), and makes Python workers run the driver's interpreter. ``conf`` entries are applied
    last, so they win, except the list settings fullwindow also sets (``spark.sql.extensions``,
    ``spark.jars``, ``spark.jars.packages``, ``spark.connect.extensions.relation.classes``):
    those are merged, the builder's items first, then ``conf``'s (a comma-separated string or a
    list of strings), then fullwindow's, each once. The Delta Lake idiom
    ``conf={"spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension"}`` adds Delta's
    extension to fullwindow's.

    On a Spark Connect builder (``SparkSession.builder.remote(...)``): for ``local[...]``, which
    starts a Connect server in this process, the same settings plus fullwindow's relation
    plugin (``spark.connect.extensions.relation.classes``) go to that server; a remote server
    (``sc://host:port``) is configured where it is started, so only ``conf`` is applied (the
    first fullwindow call on a server without fullwindow says what to add).

    In a script run by ``spark-submit``, whose JVM is already running, the jar must come with
    ``--jars`` (``FullWindowSetupError`` says so when it did not); only the extension is added,
    and what spark-submit set (jars, extensions, the Python of driver and workers) is kept.

    Examples:
        ```python
        builder = SparkSession.builder.master("local[2]").appName("nightly")
        spark = fullwindow.configure(builder, conf={"spark.sql.shuffle.partitions": 8}).getOrCreate()
        ```
    """
    return _configure(builder, conf, _submitted_conf)


def _configure(builder: SparkSession.Builder, conf: Mapping[str, object] | None,
               read_submitted: Callable[[], dict[str, str] | None]) -> SparkSession.Builder:
    """``configure``, reading spark-submit's settings (a dict, or None outside spark-submit)
    through ``read_submitted``: ``session()``, which has read them already, hands them over."""
    if builder is None or not hasattr(builder, "config"):
        raise TypeError(f"configure: builder must be a SparkSession.Builder, got {builder!r}")
    if conf is not None and not isinstance(conf, Mapping):
        raise TypeError(f"configure: conf must be a mapping of setting names to values, got "
                        f"{conf!r}")
    remote = getattr(builder, "_options", {}).get("spark.remote")
    if remote is not None and not str(remote).startswith("local"):
        options = getattr(builder, "_options", {})
        _apply_conf(builder, conf, {k: options.get(k) for k in LIST_KEYS}, {})
        return builder
    if client_only():
        raise _thin_client_error(remote)
    submitted = read_submitted() if remote is None else None
    if submitted is not None:
        return _configure_submitted(builder, conf, submitted)
    jar = jar_path()
    if not os.path.isfile(jar):
        raise FullWindowSetupError(
            f"the fullwindow jar is missing at {jar}: the package was installed without it. "
            "Run dev/setup from the source checkout (it builds the jar with sbt), or install "
            "a built wheel.")
    if remote is not None:
        _require_connect_plugin(jar)  # before the builder is touched
    options = getattr(builder, "_options", {})
    # the builder's own, before ours; else spark-defaults.conf's, which a setting would replace
    defaults = _defaults_file_lists() if remote is None else {}
    given = {k: options.get(k, defaults.get(k)) for k in LIST_KEYS}
    ours: dict[str, str] = {"spark.jars": jar, "spark.sql.extensions": EXTENSION_CLASS}
    if remote is not None:
        ours[PLUGIN_CONF] = PLUGIN_CLASS
        # Spark 3.5: the server itself is a Maven artifact, unless the builder or conf brings one
        brought = ",".join(str(v) for v in (
            given["spark.jars"], given["spark.jars.packages"], (conf or {}).get("spark.jars"),
            (conf or {}).get("spark.jars.packages")) if v)
        if "spark-connect_" not in brought:
            for key, value in connect_server_conf(jar).items():
                ours[key] = _merge_csv(ours.get(key), value) if key in LIST_KEYS else value
    for key, value in ours.items():
        if key not in LIST_KEYS:
            builder.config(key, value)
    for key in ("spark.pyspark.python", "spark.pyspark.driver.python"):
        if key not in options:
            builder.config(key, sys.executable)
    _apply_conf(builder, conf, given, {k: v for k, v in ours.items() if k in LIST_KEYS})
    _check_recovery(builder, {})
    return builder


def _check_recovery(builder: SparkSession.Builder, submitted: Mapping[str, str]) -> None:
    """Recovery enabled without dir or jobId, or a job another driver runs, fails here, before
    a SparkContext is started (settings of the builder first, then spark-submit's)."""
    from fullwindow.recovery.config import settings_from

    options = getattr(builder, "_options", {})
    settings = settings_from(lambda k: options.get(k, submitted.get(k)),
                             "building the fullwindow session")
    if settings is not None:
        from fullwindow.recovery.lease import check_free

        check_free(settings, "building the fullwindow session")


def _submitted_conf() -> dict[str, str] | None:
    """The settings of the JVM that launched this Python process, when one did (spark-submit),
    else None (a plain ``python`` process, whose JVM pyspark starts later from the builder).

    The signal is the one pyspark itself goes by (``pyspark.java_gateway.launch_gateway``): the
    JVM that runs a Python application (spark-submit's PythonRunner, and the notebook services
    built the same way) starts a Py4J gateway and hands its port to the Python process in
    ``PYSPARK_GATEWAY_PORT``, so pyspark connects to that JVM instead of starting one. Its
    settings (``--master``, ``--conf``, ``--jars``, ``--name``, spark-defaults.conf) are its
    ``spark.*`` system properties, which a SparkConf with defaults loaded reads. Neither a JVM
    left by an earlier session of a plain ``python`` process nor ``spark.master`` being set tells
    the two apart: pyspark starts its own JVM with the first session's settings as well."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return None
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # connects to the running JVM's gateway; starts nothing
    return dict(SparkConf(loadDefaults=True).getAll())


def _configure_submitted(builder: SparkSession.Builder, conf: Mapping[str, object] | None,
                         submitted: Mapping[str, str]) -> SparkSession.Builder:
    """``configure`` under spark-submit: its JVM is running, so the jar must already be on its
    class path (``--jars``), and what spark-submit set (the Python of the driver and workers,
    the jars, other extensions) is kept: a builder setting would replace it. Only the extension
    is added to ``spark.sql.extensions``; ``conf`` is applied last, so it wins."""
    from pyspark import SparkContext

    from fullwindow._jvm import _facade_class

    if submitted_api_mode_connect(submitted, SparkContext._jvm):
        raise FullWindowSetupError(
            "spark-submit ran this script with spark.api.mode=connect, which starts its JVM as a "
            "Spark Connect client: neither a classic session nor a Spark Connect server with "
            "fullwindow can run in it. Submit without spark.api.mode=connect (the session is "
            "then a classic one with spark-submit's other settings), or start a Spark Connect "
            "server with the fullwindow jar and plugin and have the script connect to it: "
            "fullwindow.session(remote=\"sc://host:15002\").")
    try:
        _facade_class(SparkContext._gateway, SparkContext._jvm)
    except FullWindowSetupError:
        raise FullWindowSetupError(
            "the fullwindow jar is not on the class path of the JVM spark-submit started, and "
            "a running JVM cannot be given it: pass it with --jars "
            f"{jar_path()} (the path fullwindow.jar_path() gives)") from None
    options = getattr(builder, "_options", {})
    # spark-submit's lists (--conf, --jars, --packages), or the builder's, merged with conf's
    _apply_conf(builder, conf, {k: options.get(k, submitted.get(k)) for k in LIST_KEYS},
                {"spark.sql.extensions": EXTENSION_CLASS})
    _check_recovery(builder, submitted)
    return builder


def _setup_error(spark: SparkSession, running: bool,
                 err: FullWindowSetupError) -> FullWindowSetupError:
    """What to tell a user whose new session cannot run fullwindow: its real cause, from the
    session's own settings. A session that was running before (``running``) kept its settings;
    a new one whose ``spark.sql.extensions`` lacks fullwindow's had it replaced after fullwindow
    set it; a session that has it, but no jar, says so (``err``)."""
    extensions = spark.sparkContext.getConf().get("spark.sql.extensions", "") or ""
    listed = [e.strip() for e in extensions.split(",") if e.strip()]
    if running and EXTENSION_CLASS not in listed:
        return FullWindowSetupError(
            "a SparkSession was already running without fullwindow (its spark.sql.extensions "
            f"is {extensions!r}), and its JVM cannot load extensions any more; call "
            f"spark.stop() first. ({err})")
    if EXTENSION_CLASS not in listed:
        return FullWindowSetupError(
            f"this session's spark.sql.extensions is {extensions!r}, which does not include "
            f"fullwindow's ({EXTENSION_CLASS}): a setting applied after fullwindow's replaced "
            "it (fullwindow merges the extensions of session(conf=...), configure(builder, "
            "conf), the builder's and spark-submit's; not one set on the builder after "
            "configure, nor a SparkConf given to the session). List both, comma-separated: "
            f"{_merge_csv(extensions, EXTENSION_CLASS)!r}. ({err})")
    return err


def _thin_client_error(remote: object) -> FullWindowSetupError:
    """A classic or local session asked of pyspark-client, which cannot start a JVM."""
    import pyspark

    asked = f"remote={remote!r}" if remote is not None else "a classic session (master=...)"
    return FullWindowSetupError(
        f"{asked} starts Spark from the local pyspark install, which needs the full pyspark; "
        "this environment "
        f"has pyspark-client {pyspark.__version__}, Spark's pure-Python Spark Connect client "
        "(what pip install fullwindow-client brings), which only connects to a running Spark "
        "Connect server: fullwindow.session(remote=\"sc://host:15002\"), the server started "
        "with the fullwindow jar and settings (see the README). For local sessions, install "
        "the full pyspark: pip install fullwindow, in an environment without pyspark-client.")


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
            app_name: str | None = None, *, remote: str | None = None) -> SparkSession:
    """A SparkSession with the fullwindow jar and extension (``local[*]`` by default; under
    spark-submit, spark-submit's master).

    With ``remote``, a Spark Connect session: ``remote="local[2]"`` starts a local Connect
    server carrying the jar, the extension and fullwindow's relation plugin;
    ``remote="sc://host:15002"`` connects to a server started with them (see the README). A
    thin install (``fullwindow-client``, with Spark's pure-Python ``pyspark-client``) starts no
    Spark of its own: there only ``remote="sc://..."`` works, anything else raises
    ``FullWindowSetupError``.

    Puts the jar on the driver and executor class paths, registers the extension, makes Python
    workers run this interpreter, and applies ``conf`` (list settings such as
    ``spark.sql.extensions`` and ``spark.jars`` merged with fullwindow's, as ``configure``
    does). An already running session without the extension cannot be given it: stop it first.

    In a script run by ``spark-submit``, whose JVM is already running, the session keeps what
    spark-submit set (``--master``, ``--name``, ``--conf``, the Python settings) unless
    ``master``, ``app_name`` or ``conf`` say otherwise, and only adds the extension; the jar must
    come with ``--jars`` (``FullWindowSetupError`` says so when it did not). Under
    ``spark-submit --conf spark.api.mode=connect`` the script's JVM is a Spark Connect client's,
    where no session with fullwindow can start: ``FullWindowSetupError`` says what to do
    (``remote="sc://..."`` to a server started with fullwindow, or submit without it).

    Examples:
        ```python
        spark = fullwindow.session(master="local[2]", conf={"spark.sql.shuffle.partitions": 4})
        spark = fullwindow.session(remote="local[2]")          # Spark Connect
        ```
    """
    if conf is not None and not isinstance(conf, Mapping):
        raise TypeError(f"session: conf must be a mapping of config keys to values, got {conf!r}")
    for name, value in (("master", master), ("app_name", app_name)):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise TypeError(f"session: {name} must be a non-empty string (or None), got "
                            f"{value!r}")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from fullwindow.recovery._autostart import start_if_on, suspended

    if remote is not None:
        if master is not None:
            raise TypeError("session: give master (a classic session) or remote (Spark "
                            f"Connect), not both; got master={master!r}, remote={remote!r}")
        if not isinstance(remote, str) or not (remote.startswith("local")
                                               or remote.startswith("sc://")):
            raise TypeError("session: remote must be 'local[N]' or 'sc://host:port'; "
                            f"got {remote!r}")
        builder = configure(SparkSession.builder.remote(remote).appName(app_name or "fullwindow"),
                            conf)
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
            with suspended():  # started below, once this process serves its runtime
                connect = builder.getOrCreate()
        # the local server runs in this process's JVM, beside a classic session: this process
        # is its recovery runtime (what python -m fullwindow.server is for a remote one)
        from fullwindow.recovery._connect_runtime import install_local

        install_local()
        start_if_on(connect, "session", getattr(builder, "_options", None))
        return connect
    builder = SparkSession.builder
    submitted = _submitted_conf()
    if submitted is None:  # a plain python process: local unless told otherwise
        builder = builder.appName(app_name or "fullwindow").master(master or "local[*]")
    else:  # spark-submit's master and name, unless given here
        if master is not None:
            builder = builder.master(master)
        if app_name is not None:
            builder = builder.appName(app_name)
    running = False
    if not client_only():  # a thin client has no SparkContext: _configure says what to do
        from pyspark import SparkContext

        running = SparkContext._active_spark_context is not None
    with suspended():  # recovery starts below, once the session is known to have the jar
        spark = _configure(builder, conf, lambda: submitted).getOrCreate()
    try:
        facade(spark)
    except FullWindowSetupError as err:
        raise _setup_error(spark, running, err) from None
    # with recovery on, open the job now, so that SQL-hint operations run before any DataFrame
    # operation are committed too (a builder of one's own calls fullwindow.recovery.start)
    from fullwindow.recovery import start

    start(spark)
    return spark
