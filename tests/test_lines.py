"""The Spark lines: the package's list agrees with dev/spark-lines (what the build and the scripts
read), the jar of the running line is chosen, and any other line is refused with the list."""
from __future__ import annotations

import os

import pyspark
import pytest

import fullwindow
from fullwindow import FullWindowSetupError
from fullwindow._jvm import SUPPORTED_LINES, spark_line

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _rows():
    with open(os.path.join(ROOT, "dev", "spark-lines")) as f:
        return [line.split() for line in f if line.strip() and not line.startswith("#")]


def test_supported_lines_are_dev_spark_lines():
    rows = _rows()
    assert {r[0]: ".".join(r[2].split(".")[:2]) for r in rows} == SUPPORTED_LINES
    for line, pyspark_version, *_ in rows:
        assert spark_line(pyspark_version) == line


def test_the_running_pysparks_jar_is_picked_and_present():
    line = spark_line()
    assert line == ".".join(pyspark.__version__.split(".")[:2])
    path = fullwindow.jar_path()
    assert os.path.basename(path) == f"fullwindow-spark{line}_{SUPPORTED_LINES[line]}.jar"
    assert os.path.isfile(path)


@pytest.mark.parametrize("version,scala", [("3.5.9", "2.12"), ("3.5.0", "2.12"), ("4.1.4", "2.13"),
                                           ("4.0.0", "2.13"), ("4.2.0.dev1", "2.13"),
                                           ("4.3.0", "2.13")])
def test_each_supported_line_has_its_jar_name(version, scala):
    assert os.path.basename(fullwindow.jar_path(version)).startswith(
        f"fullwindow-spark{version[:3]}_{scala}")


@pytest.mark.parametrize("version", ["3.4.1", "3.3.0", "4.4.0", "5.0.0"])
def test_an_unsupported_line_names_the_supported_ones(version):
    with pytest.raises(FullWindowSetupError) as e:
        fullwindow.jar_path(version)
    msg = str(e.value)
    assert f"Spark {version[:3]}" in msg and "supports Spark 3.5, 4.0, 4.1, 4.2, 4.3" in msg


def test_session_refuses_an_unsupported_pyspark_before_the_jvm_starts():
    from helpers import run_python

    r = run_python("""
        import pyspark
        pyspark.__version__ = "3.4.1"   # what an unsupported install reports
        import fullwindow
        from pyspark import SparkContext
        for make in (lambda: fullwindow.session(master="local[1]"),
                     lambda: fullwindow.configure(pyspark.sql.SparkSession.builder)):
            try:
                make()
            except fullwindow.FullWindowSetupError as e:
                print("REFUSED", e)
        print("JVM", SparkContext._jvm is not None)
    """)
    assert r.stdout.count("REFUSED fullwindow supports Spark 3.5, 4.0, 4.1, 4.2, 4.3") == 2, r.stderr[-2000:]
    assert "JVM False" in r.stdout
