"""The server side of tests/thin: run by tests/thin/conftest.py with the Python of a full pyspark
install of the thin client's line (.venvs/spark-<line>, with the fullwindow wheel), it starts a
real Spark Connect server carrying fullwindow, started with fullwindow's launcher (python -m
fullwindow.server: recovery's runtime beside the server), through tests/connect/server.py's
ConnectServer, whose Python workers run this interpreter; prints ``URL sc://...`` and stops the server when its
stdin closes: when the test process ends, however it ends."""
from __future__ import annotations

import os
import sys

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [TESTS, os.path.join(TESTS, "connect")]

from server import ConnectServer  # noqa: E402  (tests/connect/server.py)


def main() -> None:
    with ConnectServer(launcher=True) as server:
        print("URL " + server.url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
