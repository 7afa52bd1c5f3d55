"""On this line: a remote Connect server with fullwindow's jar and three settings but no
fullwindow in its Python runs every operation from a client process, the package travelling as
a session artifact (tests/connect/test_connect_remote.py's checks, with its server on a free
port), and that server is this line's Spark."""
from __future__ import annotations

import pyspark
from test_connect_remote import (  # noqa: F401 - the fixtures the test below takes
    bare_python, every_operation_result, server)


def test_every_operation_runs_on_this_lines_server_whose_python_has_no_fullwindow(server):
    out = every_operation_result(server)
    assert out["spark_version"] == pyspark.__version__, out["spark_version"]
