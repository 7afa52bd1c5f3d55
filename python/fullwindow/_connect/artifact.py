"""What a Spark Connect server's fullwindow is, and fullwindow's Python package as a session
artifact for its Python workers.

A remote Connect server needs fullwindow's jar and three settings, nothing Python. On a
session's first fullwindow operation the client asks the server (one ExecutePlan of a
``ServerInfo`` relation, answered by the relation plugin) for its jar's version and for the
fullwindow version its Python workers' interpreter imports. The jar's version must be the
client's. Before the first operation that runs Python, unless the workers import the client's
version, the client sends its own package (a zip of the installed package without its jars/,
made once per process) with ``spark.addArtifacts(path, pyfile=True)``: Spark Connect puts it on
the Python path of that session's workers only. Both answers are kept per session.
"""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
import zipfile
from dataclasses import dataclass
from typing import Any, Optional

from fullwindow.errors import FullWindowSetupError

_ATTR = "_fullwindow_server"
_LOCK = threading.Lock()
_ZIP: dict[str, str] = {}

# what a jar older than the ServerInfo message answers: its planner sees no operation and plans
# the (empty) input, a spark.connect.Relation with nothing set; or names the unknown operation
_OLDER_JAR = ("unknown fullwindow operation", "RELTYPE_NOT_SET", "Expected Relation to be set")


@dataclass
class ServerState:
    """One Connect session's server, as far as fullwindow asked it."""

    jar_version: str
    python_version: Optional[str]  # what the workers' interpreter imports; None: no fullwindow
    shipped: bool = False  # the package was sent as this session's artifact
    sent_bytes: int = 0


def _server_info_plan() -> Any:
    """The question of ServerInfo: no input; the server answers one row (jar_version,
    python_version)."""
    from fullwindow._connect.plan import FullWindowCallPlan

    return FullWindowCallPlan(lambda rel: rel.server_info.SetInParent(), "FullWindowServerInfo")


def client_version() -> str:
    from fullwindow._version import __version__

    return __version__


def server_state(session: Any) -> ServerState:
    """The session's server state, asked of the server once per session (one ExecutePlan);
    raises FullWindowSetupError when the server's jar is not the client's version."""
    state = session.__dict__.get(_ATTR)
    if state is not None:
        return state
    with _LOCK:
        state = session.__dict__.get(_ATTR)
        if state is None:
            state = _ask(session)
            session.__dict__[_ATTR] = state
    return state


def _ask(session: Any) -> ServerState:
    from fullwindow._compat import connect_dataframe
    from fullwindow._jvm_errors import _is_connect_error, raise_from_java

    mine = client_version()
    try:
        row = connect_dataframe(_server_info_plan(), session).collect()[0]
    except Exception as err:  # noqa: BLE001 - a Connect error is said below, others re-raised
        if not _is_connect_error(err):
            raise
        if any(marker in str(err) for marker in _OLDER_JAR):
            raise FullWindowSetupError(
                f"the Spark Connect server's fullwindow jar is older than this client's "
                f"fullwindow {mine}: it does not report its version (a jar built before "
                f"fullwindow's Connect version check). Start the server with the jar of "
                f"fullwindow {mine} (fullwindow.jar_path() on this client), or install the "
                f"fullwindow version of the server's jar on the client.") from None
        raise_from_java(err, "Spark Connect")
        raise
    state = ServerState(jar_version=row[0], python_version=row[1])
    if state.jar_version != mine:
        raise FullWindowSetupError(
            f"the Spark Connect server runs fullwindow's jar version {state.jar_version}, and "
            f"this client has the fullwindow Python package version {mine}: they must be the "
            f"same version. Start the server with the jar of fullwindow {mine} "
            f"(fullwindow.jar_path() on this client), or install fullwindow "
            f"{state.jar_version} on the client.")
    return state


def prepare(session: Any, python: bool) -> ServerState:
    """Before a Connect operation: the server's versions are checked (once per session); for
    an operation that runs Python, the package is sent to the session unless the server's
    workers import the client's version (once per session)."""
    state = server_state(session)
    if python and not state.shipped and state.python_version != client_version():
        with _LOCK:
            if not state.shipped:
                path = package_zip()
                session.addArtifacts(path, pyfile=True)
                state.shipped, state.sent_bytes = True, os.path.getsize(path)
    return state


def package_zip() -> str:
    """A zip of the installed fullwindow package (Python sources and package data, without the
    jars/ folder and bytecode caches), made once per process in a temporary folder."""
    mine = client_version()
    path = _ZIP.get(mine)
    if path is not None and os.path.isfile(path):
        return path
    # the package folder: two levels above this module (fullwindow/_connect/artifact.py)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    folder = tempfile.mkdtemp(prefix="fullwindow-artifact-")
    atexit.register(shutil.rmtree, folder, True)
    path = os.path.join(folder, f"fullwindow-{mine}.zip")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for here, dirs, files in os.walk(root):
            rel = os.path.relpath(here, root)
            dirs[:] = sorted(d for d in dirs if d != "__pycache__"
                             and not (rel == "." and d == "jars"))
            for name in sorted(files):
                if name.endswith((".pyc", ".pyo")):
                    continue
                full = os.path.join(here, name)
                z.write(full, os.path.join("fullwindow", os.path.relpath(full, root)))
    _ZIP[mine] = path
    return path
