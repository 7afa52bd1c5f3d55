"""On this line: a remote Connect server with fullwindow's jar and three settings but no
fullwindow in its Python runs every operation from a client process, the package travelling as
a session artifact (tests/connect/test_connect_remote.py's case, with its server on a free
port)."""
from __future__ import annotations

from test_connect_remote import (  # noqa: F401 - the fixtures come with the case
    bare_python, server, test_every_operation_runs_on_a_server_whose_python_has_no_fullwindow)
