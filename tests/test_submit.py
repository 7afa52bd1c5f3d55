"""``fullwindow.session()`` and ``fullwindow.configure()`` in scripts run by a real spark-submit
(pyspark's bin/spark-submit, local mode): spark-submit's master, name and settings are kept and
only the extension is added; the jar comes with ``--jars``, and without it the script fails with
a FullWindowSetupError that says to pass it so. A plain ``python`` script still gets local[*]."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pyspark
import pyspark.util
import pytest

import fullwindow
from helpers import PACKAGE_PARENT, ROOT, run_python

SCRIPT = os.path.join(ROOT, "tests", "submit_job.py")
SPARK_HOME = os.path.dirname(pyspark.__file__)
# submit_job.py's keyed mapPartition: per key of i % 3 over range(12), the count and the sum
EXPECTED = [(k, 4, sum(range(k, 12, 3))) for k in range(3)]


def spark_submit(*args: str) -> subprocess.CompletedProcess:
    """Runs ``spark-submit ARGS`` (local mode, no UI) to the end; driver and workers run this
    interpreter and import this checkout's fullwindow."""
    env = dict(os.environ)
    env.update(SPARK_HOME=SPARK_HOME, PYSPARK_PYTHON=sys.executable,
               PYTHONPATH=os.pathsep.join([PACKAGE_PARENT, os.path.join(ROOT, "tests"),
                                           env.get("PYTHONPATH", "")]))
    env.pop("PYSPARK_DRIVER_PYTHON", None)
    env.pop("PYSPARK_GATEWAY_PORT", None)
    command = [os.path.join(SPARK_HOME, "bin", "spark-submit"),
               "--conf", "spark.ui.enabled=false", "--conf", "spark.ui.showConsoleProgress=false",
               *args]
    return subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def settings(out: str) -> dict[str, str]:
    return dict(re.findall(r"^SETTING ([^=\s]+)=(.*)$", out, re.M))


def result(out: str) -> list[tuple]:
    found = re.search(r"^RESULT (.*)$", out, re.M)
    assert found, out
    return eval(found.group(1))  # noqa: S307 - the job's own printout of int tuples


@pytest.mark.parametrize("how", ["session", "configure"])
def test_the_session_keeps_spark_submits_master_and_settings(how):
    r = spark_submit("--master", "local[1]", "--name", "submitted-job",
                     "--jars", fullwindow.jar_path(),
                     "--conf", "spark.sql.shuffle.partitions=3",
                     # another extension spark-submit registers stays (Spark warns that it
                     # cannot load this one and goes on)
                     "--conf", "spark.sql.extensions=example.OtherExtensions",
                     SCRIPT, how)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
    got = settings(r.stdout)
    assert got["spark.master"] == "local[1]", got
    assert got["spark.app.name"] == "submitted-job", got
    assert got["spark.sql.shuffle.partitions"] == "3", got
    assert got["spark.sql.extensions"] == \
        "example.OtherExtensions,fullwindow.sql.FullWindowExtensions", got
    # the workers' Python is spark-submit's (PYSPARK_PYTHON here), not set over it
    assert got["spark.pyspark.python"] == "<unset>", got
    assert result(r.stdout) == EXPECTED


def test_extensions_of_spark_submit_and_of_conf_are_merged_with_fullwindows():
    """Issue 51: spark-submit's --conf spark.sql.extensions, the script's session(conf=...)
    extensions (the Delta Lake idiom; its class is not on this class path: Spark warns and goes
    on) and fullwindow's, in that order, each once."""
    r = spark_submit("--master", "local[1]", "--jars", fullwindow.jar_path(),
                     "--conf", "spark.sql.extensions=example.OtherExtensions,"
                     "fullwindow.sql.FullWindowExtensions", SCRIPT, "session-delta")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
    got = settings(r.stdout)
    assert got["spark.sql.extensions"] == ("example.OtherExtensions,"
                                           "fullwindow.sql.FullWindowExtensions,"
                                           "io.delta.sql.DeltaSparkSessionExtension"), got
    assert result(r.stdout) == EXPECTED


def test_without_the_jar_spark_submit_is_told_to_pass_it():
    r = spark_submit("--master", "local[1]", SCRIPT, "session")
    assert r.returncode != 0
    assert "RESULT" not in r.stdout
    # spark-submit passes the Python driver's stderr on to its stdout
    message = re.search(r"^fullwindow\.errors\.FullWindowSetupError: (.*)$", r.stdout, re.M)
    assert message, r.stdout[-5000:]
    assert message.group(1) == (
        "the fullwindow jar is not on the class path of the JVM spark-submit started, and a "
        f"running JVM cannot be given it: pass it with --jars {fullwindow.jar_path()} (the "
        "path fullwindow.jar_path() gives)")


def test_plain_python_gets_local_mode_on_all_cores():
    r = run_python(f"""
        import runpy, sys
        sys.argv = [{SCRIPT!r}, "session"]
        runpy.run_path({SCRIPT!r}, run_name="__main__")
    """)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
    got = settings(r.stdout)
    assert got["spark.master"] == "local[*]", got
    assert got["spark.app.name"] == "fullwindow", got
    assert got["spark.sql.extensions"] == "fullwindow.sql.FullWindowExtensions", got
    assert got["spark.pyspark.python"] == sys.executable, got
    assert result(r.stdout) == EXPECTED


@pytest.mark.skipif(not hasattr(pyspark.util, "default_api_mode"),
                    reason="spark.api.mode is 4.0+; 3.5 ignores it")
def test_spark_submit_in_connect_api_mode_is_told_what_to_do():
    """``--conf spark.api.mode=connect`` (4.0+) makes spark-submit start the script's JVM as a
    Spark Connect client: it has neither the classic session classes nor a Connect server, so
    ``session()`` and ``configure()`` fail before building a session, saying what works
    instead (pyspark's builder would fail later with an unrelated error)."""
    for how in ("session", "configure"):
        r = spark_submit("--master", "local[1]", "--jars", fullwindow.jar_path(),
                         "--conf", "spark.api.mode=connect", SCRIPT, how)
        assert r.returncode != 0
        assert "RESULT" not in r.stdout
        message = re.search(r"^fullwindow\.errors\.FullWindowSetupError: (.*)$", r.stdout, re.M)
        assert message, r.stdout[-5000:]
        assert message.group(1).startswith(
            "spark-submit ran this script with spark.api.mode=connect, which starts its JVM as "
            "a Spark Connect client"), message.group(1)
        assert 'fullwindow.session(remote="sc://host:15002")' in message.group(1)
