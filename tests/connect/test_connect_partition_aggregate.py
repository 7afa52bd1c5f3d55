"""tests/test_partition_aggregate.py's cases, run on a Spark Connect session (see conftest.py)."""
from test_partition_aggregate import *  # noqa: F401,F403 - the classic module's tests and fixtures
