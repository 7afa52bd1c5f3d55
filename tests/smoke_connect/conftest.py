"""The Spark Connect smoke suite's set-up: the Connect suite's own (tests/connect/conftest.py: one
local Connect server with fullwindow for the process, the ``spark`` fixture), reused as it is.
Like tests/connect it runs in a pytest process of its own (Spark forbids a classic session and
a Connect session in one process): dev/test runs ``pytest tests/smoke_connect`` in each other
line's venv, next to tests/smoke."""
from __future__ import annotations

import importlib.util
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
CONNECT = os.path.join(os.path.dirname(HERE), "connect")
SMOKE = os.path.join(os.path.dirname(HERE), "smoke")
# Python workers unpickle this folder's functions, and the classic smoke suite's it reuses, by
# reference; tests/connect has the Connect server helper (server.py)
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in [HERE, SMOKE, os.environ.get("PYTHONPATH", "")] if p)
sys.path[:0] = [SMOKE, CONNECT]

_spec = importlib.util.spec_from_file_location("fullwindow_connect_conftest",
                                               os.path.join(CONNECT, "conftest.py"))
_connect = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_connect)

spark = _connect.spark
_connect_server = _connect._connect_server


def pytest_collection_modifyitems(config, items):
    mine = [i for i in items if str(i.fspath).startswith(HERE + os.sep)]
    if len(mine) != len(items):
        for item in mine:
            item.add_marker(pytest.mark.skip(
                reason="the Spark Connect smoke suite runs in a pytest process of its own: "
                       "pytest tests/smoke_connect (dev/test runs it on every other line)"))
