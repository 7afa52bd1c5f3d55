"""Flink's own tests of what fullwindow implements (tests/flink_conformance.py), on the classic
session of the default line."""
from flink_conformance import *  # noqa: F401,F403 - the cases and their fixture
