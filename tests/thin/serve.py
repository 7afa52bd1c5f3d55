"""The server side of tests/thin: run by tests/thin/conftest.py with the Python of a full pyspark
install of the thin client's line (.venvs/spark-<line>, with the fullwindow wheel), it starts a
real Spark Connect server carrying fullwindow, started with fullwindow's launcher (python -m
fullwindow.server: recovery's runtime beside the server), through tests/connect/server.py's
ConnectServer, whose Python workers run this interpreter, with a token every client must send;
prints ``URL sc://localhost:<port>/;token=<token>`` and stops the server when its stdin closes:
when the test process ends, however it ends."""
from __future__ import annotations

import os
import sys

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [TESTS, os.path.join(TESTS, "connect")]

from server import ConnectServer  # noqa: E402  (tests/connect/server.py)


def main() -> None:
    # the safe way: a token every client must send (Spark Connect's pre-shared token, through
    # the environment variable Spark reads); Spark's client sends it without TLS to localhost only
    import uuid

    token = uuid.uuid4().hex
    with ConnectServer(launcher=True, env={"SPARK_CONNECT_AUTHENTICATE_TOKEN": token}) as server:
        print(f"URL sc://localhost:{server.port}/;token={token}", flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
