"""tests/test_keyed_combine_python.py's cases, run on a Spark Connect session (see conftest.py)."""
from test_keyed_combine_python import *  # noqa: F401,F403 - the classic module's tests and fixtures
