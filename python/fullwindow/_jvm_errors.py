"""Failures of fullwindow's JVM code or of a Spark Connect server, raised as fullwindow's own
exceptions. Below fullwindow._backend, fullwindow._operation and fullwindow._connect, which all
raise through it."""
from __future__ import annotations

import re
from typing import Any

from fullwindow._compat import error_condition
from fullwindow.errors import FullWindowSetupError, class_for_kind

PLUGIN_CLASS = "org.apache.spark.sql.fullwindow.connect.FullWindowRelationPlugin"
PLUGIN_CONF = "spark.connect.extensions.relation.classes"


def setup_error_for_connect() -> FullWindowSetupError:
    """What a Connect server without fullwindow's plugin answers, said as what to do."""
    import os

    from fullwindow._compat import client_only, connect_server_conf
    from fullwindow._jvm import EXTENSION_CLASS, jar_path

    jar = jar_path()
    if not os.path.isfile(jar):  # fullwindow-client (a thin client) ships no jars
        jar = (f"{os.path.basename(jar)} (shipped in the fullwindow wheel, for the server's "
               "Spark line: fullwindow.jar_path() on a full install prints its path)")
    server = connect_server_conf(jar_path()).get("spark.jars.packages")
    local = ("" if client_only() else ", or connect with fullwindow.session(remote='local[2]'), "
             "which starts a local server carrying them")
    return FullWindowSetupError(
        "the Spark Connect server does not run fullwindow's relation plugin. Start the server "
        "with these three settings: --jars " + jar + " --conf spark.sql.extensions="
        + EXTENSION_CLASS + " --conf " + PLUGIN_CONF + "=" + PLUGIN_CLASS + " (e.g. "
        "$SPARK_HOME/sbin/start-connect-server.sh " + (f"--packages {server} " if server else "")
        + "--jars ... --conf ... --conf ...)" + local + ".")


_JVM_ERROR = "org.apache.spark.sql.fullwindow.FullWindowAnalysisException"


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
    from fullwindow._compat import classic_error_types

    classic = classic_error_types()  # () without py4j (pyspark-client): Connect errors only
    py4j_error = classic[0] if classic else None
    # pyspark's py4j hook usually has turned the Py4JJavaError into a CapturedException already;
    # either way the Java throwable is at hand, and ours may be anywhere in its cause chain.
    is_py4j = py4j_error is not None and isinstance(err, py4j_error)
    java_exc = getattr(err, "java_exception" if is_py4j else "_origin", None)
    if java_exc is not None:
        fw = _find_fullwindow_cause(java_exc)
        if fw is not None:
            raise class_for_kind(fw.kind())(fw.getMessage()) from None
    if is_py4j:
        from pyspark.errors.exceptions.captured import convert_exception

        err = convert_exception(java_exc)
    if _is_connect_error(err):
        condition = error_condition(err)
        text = f"{condition or ''} {err}"
        if any(marker in text for marker in _NO_PLUGIN):
            raise setup_error_for_connect() from None
    if isinstance(err, classic) or _is_connect_error(err):
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
