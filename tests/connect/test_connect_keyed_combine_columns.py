"""tests/test_keyed_combine_columns.py's cases, run on a Spark Connect session (see conftest.py):
the same plans (partial and final aggregation around one exchange) and results."""
from test_keyed_combine_columns import *  # noqa: F401,F403 - the classic module's tests and fixtures
