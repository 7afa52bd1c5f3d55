"""tests/test_pandas.py's cases, run on a Spark Connect session (see conftest.py)."""
from test_pandas import *  # noqa: F401,F403 - the classic module's tests and fixtures
