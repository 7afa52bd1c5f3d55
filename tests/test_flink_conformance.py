"""Flink's own tests of what fullwindow implements (tests/flink_conformance.py), on the classic
session of the default line."""
import importlib.util
import os

import flink_conformance
from flink_conformance import *  # noqa: F401,F403 - the cases and their fixture

HERE = os.path.dirname(os.path.abspath(__file__))


def _cases(module) -> set[str]:
    return {n for n in vars(module) if n.startswith("test_") and callable(getattr(module, n))}


def test_every_thin_module_runs_every_case():
    """The smoke (every other line) and Connect modules hold nothing but a star import of the
    cases: each must bring all of them, or a case would silently not run there."""
    cases = _cases(flink_conformance)
    assert len(cases) >= 16, cases
    for path in ("smoke/test_smoke_flink_conformance.py",
                 "connect/test_connect_flink_conformance.py"):
        spec = importlib.util.spec_from_file_location(f"thin_{len(path)}", os.path.join(HERE, path))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        assert _cases(module) == cases, path
