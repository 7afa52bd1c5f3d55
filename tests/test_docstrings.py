"""The ``>>>`` examples in fullwindow's docstrings run, and print what they show.

Each docstring is a doctest run on the shared session with a small namespace: ``spark``, ``df``
(columns k and v, six rows in two partitions: (0, 1), (1, 2), (0, 3) | (2, 4), (1, 5), (2, 6)),
``F``, ``Row``, ``fullwindow``, the public classes, and ``Mean`` (the example class of
``AggregateFunction``'s docstring, which the aggregate methods' examples use). Examples that need their own session,
files or a cluster are written as plain usage blocks (a fenced ``python`` block, not a ``>>>``
transcript), which this does not run.
"""
from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil

import pytest

import fullwindow

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _docstring_tests() -> list[doctest.DocTest]:
    found = []
    finder = doctest.DocTestFinder(exclude_empty=True)
    # every module but the command-line entry points (python -m ...), which run when imported
    names = ["fullwindow"] + [m.name for m in pkgutil.walk_packages(fullwindow.__path__,
                                                                    "fullwindow.")
                              if not m.name.endswith(".__main__")]
    for name in names:
        if name == "fullwindow.mypy_plugin" and importlib.util.find_spec("mypy") is None:
            continue  # the mypy plugin needs mypy, a dev tool the line venvs do not install
        module = importlib.import_module(name)
        found += [t for t in finder.find(module) if t.examples]
    return found


TESTS = {t.name: t for t in _docstring_tests()}


def test_there_are_docstring_examples():
    assert len(TESTS) >= 20


@pytest.fixture(scope="module")
def namespace(spark):
    from pyspark.sql import Row, SparkSession
    from pyspark.sql import functions as F

    class Mean(fullwindow.AggregateFunction):
        """The example of AggregateFunction's docstring, used by the aggregate methods' ones."""

        def create_accumulator(self):
            return (0, 0)

        def add(self, row, acc):
            return (acc[0] + row.v, acc[1] + 1)

        def get_result(self, acc):
            return (acc[0] / acc[1],)

        def merge(self, a, b):
            return (a[0] + b[0], a[1] + b[1])

    rows = [(0, 1), (1, 2), (0, 3), (2, 4), (1, 5), (2, 6)]
    df = spark.createDataFrame(spark.sparkContext.parallelize(rows, 2), "k long, v long")
    return {"spark": spark, "df": df, "F": F, "Row": Row, "SparkSession": SparkSession,
            "fullwindow": fullwindow, "Order": fullwindow.Order,
            "AggregateFunction": fullwindow.AggregateFunction,
            "ProcessWindowFunction": fullwindow.ProcessWindowFunction,
            "EndOfStreamWindows": fullwindow.EndOfStreamWindows, "Mean": Mean}


@pytest.mark.parametrize("name", sorted(TESTS))
def test_docstring(name, namespace):
    test = TESTS[name]
    test.globs = dict(test.globs)
    test.globs.update(namespace)
    # a name no module has: cloudpickle then ships the examples' functions by value
    test.globs["__name__"] = "fullwindow_docstring_examples"
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report: list[str] = []
    runner.run(test, out=report.append)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, "".join(report)
