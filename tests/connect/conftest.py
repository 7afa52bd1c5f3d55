"""The Connect half of the suite: the same operation tests, on a Spark Connect session.

Spark does not allow a classic session and a Spark Connect session in one process, so dev/test
runs this folder as a pytest process of its own (``pytest tests/connect``), after the classic
run (which ignores it). The ``spark`` fixture here replaces the classic one: one local Connect
server for the whole process, started by ``fullwindow.session(remote="local[2]")`` with the
suite's usual settings. Cases that need what a Connect client does not have (the SparkContext,
accumulators, the JVM through py4j, a classic session in a child process) are skipped, with the
reason, at collection.
"""
from __future__ import annotations

import importlib.util
import inspect
import os

import pytest

from helpers import connect_result_metrics_missing

HERE = os.path.dirname(os.path.abspath(__file__))


def _classic_conftest():
    """tests/conftest.py (its module name, conftest, is this file's too)."""
    spec = importlib.util.spec_from_file_location(
        "fullwindow_classic_conftest", os.path.join(os.path.dirname(HERE), "conftest.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BASE_CONF = _classic_conftest().BASE_CONF
# Python workers unpickle functions of these modules by reference
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [HERE, os.environ.get("PYTHONPATH", "")] if p)

_CLASSIC_ONLY = {
    "sparkContext": "uses the SparkContext (accumulators, status tracker), which Connect has not",
    "._jdf": "reads the JVM plan through py4j",
    "._jvm": "calls the JVM through py4j",
    "run_python(": "runs a classic session in a child process (covered by the classic run)",
    "get_session(": "restarts the classic session with other JVM settings",
}

# Classic cases whose Connect rerun would repeat only what runs in the JVM and the Python
# workers: each streams one big key through a worker and reads the worker's memory, through a
# call of the same shape as other cases of its module that do run here (the request, the
# relation plugin's planning and the result's way back are what Connect changes, and those run
# there). Deselected (not skipped: they are not missing here), and counted at the end.
JVM_ONLY = {
    "test_cogroup.py::test_big_key_streams_on_both_sides_when_left_is_read_first",
    "test_cogroup.py::test_arrow_big_key_streams_on_both_sides",
    "test_keyed_combine_python.py::test_a_heavy_key_never_grows_the_dict",
    "test_pandas.py::test_cogroup_big_key_streams_when_left_is_read_first",
    "test_pandas.py::test_keyed_heavy_key_streams_in_bounded_memory",
    "test_partition_python.py::test_map_partition_memory_stays_bounded",
}

_state: dict = {"spark": None}


def connect_session():
    """The process's Connect session (a local Connect server with fullwindow)."""
    import fullwindow

    if _state["spark"] is None:
        _state["spark"] = fullwindow.session(remote="local[2]", conf=BASE_CONF,
                                             app_name="fullwindow-connect-tests")
    return _state["spark"]


def _case(item) -> str:
    """``<defining module's file>::<function>`` of a collected item ('' when not a function)."""
    fn = getattr(item, "function", None)
    try:
        return f"{os.path.basename(inspect.getfile(fn))}::{fn.__name__}"
    except TypeError:
        return ""


def pytest_collection_modifyitems(config, items):
    mine = [i for i in items if str(i.fspath).startswith(HERE + os.sep)]
    if len(mine) != len(items):
        # collected together with the classic suites (e.g. a bare `pytest tests`): a Connect
        # session cannot join a process that runs classic ones
        for item in mine:
            item.add_marker(pytest.mark.skip(
                reason="Spark Connect tests run in a pytest process of their own: "
                       "pytest tests/connect (dev/test runs it after the classic suites)"))
        return
    jvm_only = [i for i in items if _case(i) in JVM_ONLY]
    if jvm_only:
        config.hook.pytest_deselected(items=jvm_only)
        items[:] = [i for i in items if i not in jvm_only]
    metrics_missing = connect_result_metrics_missing()
    for item in items:
        fn = getattr(item, "function", None)
        if fn is None or getattr(fn, "_connect_ok", False):
            continue
        try:
            source = inspect.getsource(fn)
        except (OSError, TypeError):
            continue
        for marker, why in _CLASSIC_ONLY.items():
            if marker in source:
                item.add_marker(pytest.mark.skip(reason=f"classic only: {why}"))
                break
        else:
            # a classic module's case that reads operator metrics, where this line's Connect
            # client keeps none (the refusal itself is tested in tests/smoke_connect)
            if (metrics_missing and "operator_metrics(" in source
                    and not os.path.abspath(inspect.getfile(fn)).startswith(HERE + os.sep)):
                item.add_marker(pytest.mark.skip(reason=f"not on this line: {metrics_missing}"))


@pytest.fixture(scope="session", autouse=True)
def _connect_server():
    yield
    if _state["spark"] is not None:
        _state["spark"].stop()
        _state["spark"] = None


@pytest.fixture(scope="module")
def spark():
    """The shared Connect session (replaces tests/conftest.py's classic one here)."""
    s = connect_session()
    yield s
    for key in ("spark.fullwindow.runtimeMode", "spark.fullwindow.processingTime.allow",
                "spark.fullwindow.processingTime.endOfInput"):
        s.conf.unset(key)
