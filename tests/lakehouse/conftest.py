"""The lakehouse suite: Delta Lake and Iceberg tables as the inputs and outputs of recovered
jobs, on the Spark line FW_LAKE_LINE (dev/lines.sh) only, in that line's venv (dev/test runs it
there; dev/lakehouse/fetch brings the jars and the delta-spark package). One session for the
whole suite: a JVM takes its jars at launch."""
from __future__ import annotations

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# the job scripts' processes and the Python workers import lake.py and this suite's modules
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [HERE, os.environ.get("PYTHONPATH", "")] if p)

import lake  # noqa: E402


@pytest.fixture(scope="session")
def lake_jars():
    """The folder of the Delta and Iceberg jars; the suite is skipped on another line."""
    import pyspark

    line = ".".join(pyspark.__version__.split(".")[:2])
    wanted = lake.lines_value("FW_LAKE_LINE")
    if line != wanted:
        pytest.skip(f"the lakehouse suite runs on Spark {wanted} (dev/lines.sh FW_LAKE_LINE), "
                    f"this is pyspark {pyspark.__version__}: dev/test --spark {wanted}")
    jars = lake.fetch()
    os.environ[lake.JARS_ENV] = jars
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
