"""Flink's own tests of what fullwindow implements (tests/flink_conformance.py), over Spark
Connect on every other line, with the installed wheel."""
from flink_conformance import *  # noqa: F401,F403 - the cases and their fixture
