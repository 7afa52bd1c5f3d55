"""tests/test_keyed.py's cases, run on a Spark Connect session (see conftest.py)."""
from test_keyed import *  # noqa: F401,F403 - the classic module's tests and fixtures
