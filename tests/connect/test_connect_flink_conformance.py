"""Flink's own tests of what fullwindow implements (tests/flink_conformance.py), on a Spark
Connect session (see conftest.py)."""
from flink_conformance import *  # noqa: F401,F403 - the cases and their fixture
