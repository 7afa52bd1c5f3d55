"""The lakehouse suite: Delta Lake and Iceberg tables as the inputs and outputs of recovered
jobs, on each Spark line a Delta or an Iceberg release is built for (dev/lines.sh
FW_LAKE_VERSIONS), in that line's venv (dev/test runs it there: whole on FW_LAKE_LINE, the tests
marked ``every_line`` on the others; dev/lakehouse/fetch brings the line's jars and the
delta-spark package). A test of a format the line has no release of is skipped, naming it. One
session for the whole suite: a JVM takes its jars at launch."""
from __future__ import annotations

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# the job scripts' processes and the Python workers import lake.py and this suite's modules
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [HERE, os.environ.get("PYTHONPATH", "")] if p)

import lake  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "every_line: run on every line with a Delta or Iceberg release (dev/test "
        "-m every_line); the whole suite runs on FW_LAKE_LINE")


@pytest.fixture(scope="session")
def lake_jars():
    """The folder of this line's Delta and Iceberg jars; the suite is skipped on a line with
    neither."""
    line = lake.spark_line()
    if not any(lake.versions(line).values()):
        pytest.skip(f"neither Delta Lake nor Iceberg is released for Spark {line} "
                    "(dev/lines.sh FW_LAKE_VERSIONS)")
    jars = lake.fetch(line)
    os.environ[lake.JARS_ENV] = jars
    # the delta-spark package of a line whose pyspark its pin excludes is beside the venv
    # (dev/lakehouse/fetch: Spark 4.2)
    overlay = os.path.join(lake.ROOT, ".venvs", f"spark-{line}-delta")
    if os.path.isdir(overlay) and overlay not in sys.path:
        sys.path.append(overlay)
    return jars


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory):
    """The Iceberg Hadoop catalog ``ice``'s warehouse directory."""
    return str(tmp_path_factory.mktemp("warehouse"))


@pytest.fixture(scope="session")
def spark(lake_jars, warehouse):
    """One session with Delta, Iceberg and fullwindow for the whole suite."""
    s = lake.session(lake_jars, warehouse, app_name="fullwindow-lakehouse-tests")
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()
