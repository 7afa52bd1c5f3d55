"""Shared fixtures: one real SparkSession (local mode, with the fullwindow jar and extension)
for the whole run, re-created only for the few modules that need other JVM-start settings."""
from __future__ import annotations

import os
import sys
from typing import Mapping

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(ROOT, "tests")

# Python workers unpickle functions defined in test modules by reference: let them import those
# modules (the JVM, and through it every worker, inherits this environment).
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in [TESTS, os.environ.get("PYTHONPATH", "")] if p)

# Every Spark JVM the tests start (shared sessions, the crash tests' drivers, Connect servers,
# standalone executors: all through spark-submit, with this environment) runs the test daemon
# (tests/preload_daemon.py): pyspark's own, after importing what nearly every worker imports
# after its fork (helpers.PRELOAD_DAEMON). FW_TEST_PRELOAD=0: pyspark's own daemon.
from helpers import PRELOAD_DAEMON  # noqa: E402

if os.environ.get("FW_TEST_PRELOAD", "1") != "0" and \
        PRELOAD_DAEMON not in os.environ.get("SPARK_SUBMIT_OPTS", "").split():
    os.environ["SPARK_SUBMIT_OPTS"] = f"{os.environ.get('SPARK_SUBMIT_OPTS', '')} {PRELOAD_DAEMON}".strip()

BASE_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "2",
    "spark.sql.adaptive.enabled": "true",
    "spark.driver.memory": "2g",
    "spark.sql.session.timeZone": "UTC",
}

# A session whose tasks get a few MB of execution memory each, for tests that force the sorters'
# runs on disk. Execution may evict every block the block manager holds (storageFraction 0):
# otherwise task results of a previous collect or broadcasts still held in memory take part of
# a task's share, by timing, and a test that counts runs or row-sorter fallbacks would flake.
SMALL_MEMORY = {"spark.memory.fraction": "0.01", "spark.memory.storageFraction": "0"}

_current: dict = {"spark": None, "conf": None}


def _s3a_class_path() -> list[str]:
    """The S3A connector's jars (tests/s3.py fetches them once, for this pyspark's Hadoop), for
    the shared session's driver class path, so that the S3 recovery tests read the bucket through
    the recovery code's own Hadoop file system: a JVM takes its class path at launch. Empty where
    the line's Hadoop has no such S3A (its jars cannot be fetched)."""
    import s3

    if os.environ.get("FULLWINDOW_TESTS_S3", "1") == "0":
        s3.SESSION["error"] = "FULLWINDOW_TESTS_S3=0"
        return []
    try:
        folder = s3.fetch()
        jars = sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".jar"))
    except Exception as err:  # noqa: BLE001 - no S3A for this line: the S3 tests say so
        s3.SESSION["error"] = err
        return []
    s3.SESSION["classpath"] = os.pathsep.join(jars)
    return jars


def _launch(conf: dict):
    """``fullwindow.session`` with the S3A jars at the end of the driver's class path, for the
    JVM this launches only (``s3.appended_class_path``: the line's class-data archive needs the
    class path to begin with the Spark jars)."""
    import fullwindow
    import s3

    before = os.environ.get("SPARK_DIST_CLASSPATH")
    if _current["s3a"]:
        os.environ.update(s3.appended_class_path(_current["s3a"]))
    try:
        return fullwindow.session(master="local[2]", conf=conf, app_name="fullwindow-tests")
    finally:
        if before is None:
            os.environ.pop("SPARK_DIST_CLASSPATH", None)
        else:
            os.environ["SPARK_DIST_CLASSPATH"] = before


def _require_jar() -> None:
    import fullwindow

    if not os.path.isfile(fullwindow.jar_path()):
        pytest.exit(f"The fullwindow jar was not built ({fullwindow.jar_path()}): run dev/setup "
                    "(or dev/test, which runs it).", returncode=3)


def get_session(extra: Mapping[str, str] | None = None):
    """A fullwindow session with BASE_CONF plus ``extra``; reuses the running one when its
    settings match, otherwise stops it and starts another (same JVM)."""
    conf = dict(BASE_CONF)
    if "s3a" not in _current:
        _current["s3a"] = _s3a_class_path()
    conf.update(extra or {})
    if _current["spark"] is not None and _current["conf"] == conf:
        return _current["spark"]
    if _current["spark"] is not None:
        old = _current["conf"]
        system = _current["spark"].sparkContext._jvm.java.lang.System
        _current["spark"].stop()
        _current["spark"] = None
        # The JVM was launched with the first session's settings as system properties, which
        # every later SparkConf in this JVM loads as defaults: a setting one module needed
        # (e.g. spark.memory.fraction=0.01) would leak into the next module's session.
        for key in set(old) - set(conf):
            system.clearProperty(key)
    spark = _launch(conf)
    spark.sparkContext.setLogLevel("ERROR")
    _current.update(spark=spark, conf=conf)
    return spark


@pytest.fixture(scope="session", autouse=True)
def _jar_built():
    _require_jar()
    yield
    if _current["spark"] is not None:
        _current["spark"].stop()


@pytest.fixture(scope="module")
def spark():
    """The shared local-mode session."""
    s = get_session()
    yield s
    # a test may have changed runtime confs; put the ones we rely on back
    for key in ("spark.fullwindow.runtimeMode", "spark.fullwindow.processingTime.allow",
                "spark.fullwindow.processingTime.endOfInput"):
        s.conf.unset(key)


def python_exe() -> str:
    return sys.executable


#: The modules that take longest (most of their time waits: driver processes started, killed and
#: started again, HDFS, YARN, S3 and standalone clusters, lease timeouts, mypy and mkdocs runs),
#: longest first. dev/test runs the classic suite in three pytest-xdist workers, a module to a
#: worker, handed out in collection order (--no-loadscope-reorder: by default xdist hands out
#: the modules with the most tests first, whatever the collection order): these go first, so that no long module is left running
#: alone at the end while the other workers idle. dev/test-times lists each module's time.
LONGEST_FIRST = [
    "test_benchmarks_smoke", "test_recovery_writes", "test_recovery_hdfs",
    "test_recovery_jobscope", "test_recovery_s3", "test_recovery_tpch", "test_pandas",
    "test_docs",
    "test_sort_columnar", "test_keyed", "test_recovery_yarn", "test_recovery_lease",
    "test_recovery_crash", "test_recovery_cluster", "test_cogroup", "test_examples",
    "test_recovery_chaos_cluster", "test_recovery_chaos", "test_recovery_inputs",
    "test_recovery_keyed", "test_recovery_durability", "test_recovery_storage",
    "test_recovery_status", "test_recovery_lease_attempts", "test_recovery_scale",
    "test_recovery_input", "test_cluster", "test_errors", "test_types", "test_submit",
    "test_session_merge",
]


def pytest_collection_modifyitems(config, items):
    """Orders the modules of LONGEST_FIRST first (in that order), the rest as collected; the
    tests of a module keep their order. The same order in every worker (xdist requires it)."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}

    def module_rank(item):
        name = os.path.splitext(os.path.basename(str(item.fspath)))[0]
        return rank.get(name, len(rank))

    items.sort(key=module_rank)  # stable: the rest keep the collected order


# CPU seconds per module (issue 49: on 2 cores CPU, not wall time, is what a module costs).
# dev/test runs each suite in a cpuacct cgroup of its own and names it in FW_TEST_CGROUP; here
# each pytest-xdist worker moves into a group of its own inside it (its JVMs, drivers and Python
# workers follow), and each module's CPU is that group's usage from the module's first test to
# its last, appended to $FW_TEST_TIMES/module-cpu-<suite>-<worker>.tsv (dev/test-times prints
# the costliest). Nothing where dev/test made no group.
_CPU: dict = {}


def _cpu_group() -> str | None:
    if "group" not in _CPU:
        group = os.environ.get("FW_TEST_CGROUP")
        worker = os.environ.get("PYTEST_XDIST_WORKER")
        if group and worker:
            try:
                os.makedirs(os.path.join(group, worker), exist_ok=True)
                with open(os.path.join(group, worker, "cgroup.procs"), "w") as f:
                    f.write(str(os.getpid()))
                group = os.path.join(group, worker)
            except OSError:
                group = None
        _CPU["group"] = group if group and os.path.exists(os.path.join(group, "cpuacct.usage")) \
            else None
    return _CPU["group"]


def _cpu_seconds(group: str) -> float:
    with open(os.path.join(group, "cpuacct.usage")) as f:
        return int(f.read()) / 1e9


def _cpu_row(kind: str, label: str):
    """A generator fixture's body: the CPU seconds (the worker's cgroup) and wall seconds
    between its set-up and its tear-down, appended as ``label TAB cpu TAB wall`` to
    $FW_TEST_TIMES/<kind>-cpu-<suite>-<worker>.tsv; nothing where dev/test made no group."""
    import time

    group, times = _cpu_group(), os.environ.get("FW_TEST_TIMES")
    if not group or not times:
        yield
        return
    cpu0, wall0 = _cpu_seconds(group), time.monotonic()
    yield
    name = f"{kind}-cpu-{os.path.basename(os.environ['FW_TEST_CGROUP'])}-" \
           f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.tsv"
    with open(os.path.join(times, name), "a") as f:
        f.write(f"{label}\t{_cpu_seconds(group) - cpu0:.1f}\t{time.monotonic() - wall0:.1f}\n")


@pytest.fixture(scope="module", autouse=True)
def _module_cpu(request):
    yield from _cpu_row("module", request.module.__name__)


@pytest.fixture(autouse=True)
def _test_cpu(request):
    """The same per test, its function-scoped fixtures included (pytest sets up module- and
    session-scoped ones before this one: the module's row counts them)."""
    yield from _cpu_row("test", request.node.nodeid)
