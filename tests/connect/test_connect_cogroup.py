"""tests/test_cogroup.py's cases, run on a Spark Connect session (see conftest.py)."""
from test_cogroup import *  # noqa: F401,F403 - the classic module's tests and fixtures
