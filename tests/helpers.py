"""Assertions shared by the test modules."""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import textwrap
from typing import Any, Callable, Iterable, Iterator

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Where the fullwindow package these tests import lives: the checkout's python/ (dev/setup
# installs it editable) or, in a line's venv, the installed wheel. Processes the tests start get
# it first on their path, so they run the same package.
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(
    __import__("fullwindow").__file__)))


def connect_result_metrics_missing() -> str | None:
    """Why ``fullwindow.operator_metrics`` cannot work over Spark Connect on this line, or None:
    a Connect client whose DataFrame has no ``executionInfo`` (3.5) keeps no result metrics, and
    operator_metrics raises ``FullWindowValueError`` saying so (tests/smoke_connect checks it)."""
    try:
        from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame
    except ImportError as err:
        return f"no Spark Connect client ({err})"
    if hasattr(ConnectDataFrame, "executionInfo"):
        return None
    return "pyspark's Connect DataFrame has no executionInfo (the result's metrics)"


def needs_connect_result_metrics(refused: bool = False):
    """A skip mark for a case that reads operator metrics over Spark Connect (see
    connect_result_metrics_missing); ``refused=True``: for the case that checks the refusal."""
    import pytest

    why = connect_result_metrics_missing()
    if refused:
        return pytest.mark.skipif(why is None, reason="this line's Connect client keeps metrics")
    return pytest.mark.skipif(why is not None, reason=f"not on this line: {why}")


@contextlib.contextmanager
def session_conf(spark: Any, settings: dict[str, str]) -> Iterator[None]:
    """``settings`` set on ``spark``'s runtime conf for the block, unset after it."""
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key in settings:
            spark.conf.unset(key)


@contextlib.contextmanager
def kept_conf(spark: Any, keys: Iterable[str]) -> Iterator[None]:
    """The block may change ``keys`` of ``spark``'s runtime conf: after it each has its value
    from before again (unset when it had none)."""
    before = {key: spark.conf.get(key, None) for key in keys}
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def is_connect(df: DataFrame) -> bool:
    """True for a Spark Connect DataFrame (tests/connect runs the suites over Connect)."""
    return type(df).__module__.startswith("pyspark.sql.connect.")


def executed_plan(df: DataFrame) -> str:
    """The executed physical plan as text; under adaptive execution, the current (after an
    action: final) plan only, not the initial one printed beside it. Over Spark Connect, the
    physical plan the server explains (adaptive execution's initial plan)."""
    if is_connect(df):
        return df._explain_string(mode="simple")
    plan = df._jdf.queryExecution().executedPlan()
    if plan.nodeName() == "AdaptiveSparkPlan":
        plan = plan.executedPlan()
    return plan.toString()


def _plan_nodes(df: DataFrame, metrics: tuple[str, ...]) -> list[tuple[str, dict, list]]:
    """``df``'s executed plan after an action as (name, {metric: value}, children) trees, the
    roots first, with the named metrics a node has; query stages are opened. Over Spark Connect,
    from the metrics the server sent with the last result (clients from 4.0 on keep them)."""
    if is_connect(df):
        from fullwindow._compat import connect_execution_metrics

        sent = connect_execution_metrics(df)._metrics
        ids = {n.plan_id for n in sent}
        # a root names itself (or a node not sent) as its parent
        roots = [n for n in sent if n.parent_plan_id == n.plan_id or n.parent_plan_id not in ids]
        kids: dict[int, list[Any]] = {}
        for n in sent:
            if n not in roots:
                kids.setdefault(n.parent_plan_id, []).append(n)

        def from_connect(n):
            return (n.name, {m.name: m.value for m in n.metrics if m.name in metrics},
                    [from_connect(c) for c in kids.get(n.plan_id, [])])

        return [from_connect(n) for n in roots]

    def from_jvm(node):
        if node.nodeName().endswith("QueryStage"):
            return from_jvm(node.plan())
        m = node.metrics()
        return (node.nodeName(), {k: m.apply(k).value() for k in metrics if m.contains(k)},
                [from_jvm(node.children().apply(i)) for i in range(node.children().size())])

    plan = df._jdf.queryExecution().executedPlan()
    return [from_jvm(plan.executedPlan() if plan.nodeName() == "AdaptiveSparkPlan" else plan)]


def sorts_under_fullwindow(df: DataFrame) -> list[dict[str, Any]]:
    """For each local sort feeding a FullWindow node of ``df``'s executed plan, after an action:
    its node's name (Spark's ``Sort`` or fullwindow's ``FullWindowColumnarSort``), the sort's
    peak memory, and the time its whole-stage-codegen stage (when it sits in one)
    spent producing rows, -1 when it sits in none."""
    found = []
    stack = _plan_nodes(df, ("pipelineTime", "peakMemory"))
    while stack:
        name, _, children = stack.pop()
        stack.extend(children)
        if not name.startswith("FullWindow"):
            continue
        for child in children:
            stage, sort = None, child
            if child[0].startswith("WholeStageCodegen"):
                stage, sort = child, child[2][0]
            if sort[0] in ("Sort", "FullWindowColumnarSort"):
                found.append({"name": sort[0], "peakMemory": int(sort[1]["peakMemory"]),
                              "stageTime": -1 if stage is None else int(stage[1]["pipelineTime"])})
    return found


def num_partitions(df: DataFrame) -> int:
    """The number of partitions of ``df`` (over Connect: counted by a mapInArrow, which Spark
    calls once per partition, empty ones too)."""
    if not is_connect(df):
        return df.rdd.getNumPartitions()
    import pyarrow as pa

    def one(batches):
        for _ in batches:
            pass
        yield pa.RecordBatch.from_pylist([{"n": 1}], schema=pa.schema([("n", pa.int64())]))

    return df.mapInArrow(one, "n long").count()


def partitions(df: DataFrame) -> list[list[tuple]]:
    """The rows of each partition, in order, as tuples."""
    if not is_connect(df):
        return [[tuple(r) for r in part] for part in df.rdd.glom().collect()]
    from pyspark.sql import functions as F

    cols = df.columns
    tagged = df.select(F.spark_partition_id().alias("__pid"),
                       F.monotonically_increasing_id().alias("__pos"), *[df[c] for c in cols])
    parts: list[list[tuple]] = [[] for _ in range(num_partitions(df))]
    for r in sorted(tagged.collect(), key=lambda r: (r[0], r[1])):
        parts[r[0]].append(tuple(r)[2:])
    return parts


def assert_sorted_within(parts: list[list[Any]], key: Callable[[Any], Any], reverse: bool = False):
    for i, part in enumerate(parts):
        keys = [key(r) for r in part]
        assert keys == sorted(keys, reverse=reverse), f"partition {i} is not sorted: {keys}"


def run_python(code: str, timeout: int = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    """Runs ``code`` in a fresh Python process (a fresh JVM), from the repo root."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join(
        [PACKAGE_PARENT, os.path.join(ROOT, "tests"), full_env.get("PYTHONPATH", "")])
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


#: The JVM option (a system property, so a default under every session's own settings) that makes
#: a Spark JVM run tests/preload_daemon.py as its Python daemon; tests/conftest.py adds it to
#: ``SPARK_SUBMIT_OPTS`` for every JVM the tests start through spark-submit.
PRELOAD_DAEMON = "-Dspark.python.daemon.module=preload_daemon"


def without_preload_daemon(env: dict) -> dict:
    """``env`` whose JVMs run pyspark's own daemon: for one whose Python cannot import
    tests/preload_daemon.py (another interpreter, without the tests' path)."""
    opts = env.get("SPARK_SUBMIT_OPTS", "").split()
    env["SPARK_SUBMIT_OPTS"] = " ".join(w for w in opts if w != PRELOAD_DAEMON)
    return env


#: JVM options for the short-lived driver processes the crash tests start, kill and start again
#: (a driver JVM runs a job of seconds): the client compiler only and the serial collector. Most
#: of such a JVM's CPU goes to the optimizing compiler and the parallel collector's threads; on
#: the 2-core CI machine these options about halve a driver's wall time. Passed as
#: ``JDK_JAVA_OPTIONS`` (read by every ``java`` launcher: spark-submit's, and so the driver's).
FAST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def fast_jvm(env: dict) -> dict:
    """``env`` with FAST_JVM_OPTIONS added to its ``JDK_JAVA_OPTIONS`` (kept)."""
    given = env.get("JDK_JAVA_OPTIONS", "")
    if FAST_JVM_OPTIONS not in given:
        env["JDK_JAVA_OPTIONS"] = f"{given} {FAST_JVM_OPTIONS}".strip()
    return env


def class_data_archive_options(env: dict) -> list[str]:
    """The class-data archive options dev/test gives the line's JVMs in ``SPARK_SUBMIT_OPTS``
    (``-XX:SharedArchiveFile=...`` and its ``-Xlog:cds`` settings); none without an archive."""
    opts = env.get("SPARK_SUBMIT_OPTS", "").split()
    if not any(w.startswith("-XX:SharedArchiveFile=") for w in opts):
        return []
    return [w for w in opts if w.startswith(("-XX:SharedArchiveFile=", "-Xlog:cds"))]


def with_class_data_archive(env: dict) -> dict:
    """``env`` whose ``JDK_JAVA_OPTIONS`` carry the line's class-data archive options too: for JVMs
    started by another JVM without spark-submit's options (a standalone worker's executors),
    which then map the archive as the drivers do, if their class path begins with the archived
    one (an executor's does). spark-class's own launcher JVM (jars/* alone: not the archived
    class path) would read them too, fail to validate the archive and run with none at all, not
    even the JDK's; its options (``SPARK_LAUNCHER_OPTS``, after ``JDK_JAVA_OPTIONS``) put it back
    on the JDK's."""
    archive = class_data_archive_options(env)
    if not archive:
        return env
    given = env.get("JDK_JAVA_OPTIONS", "").split()
    env["JDK_JAVA_OPTIONS"] = " ".join(given + [w for w in archive if w not in given])
    base = _jdk_class_data_archive(env)
    launcher = env.get("SPARK_LAUNCHER_OPTS", "").split()
    if base and f"-XX:SharedArchiveFile={base}" not in launcher:
        env["SPARK_LAUNCHER_OPTS"] = " ".join(launcher + [f"-XX:SharedArchiveFile={base}"])
    return env


def _jdk_class_data_archive(env: dict) -> str | None:
    """The JDK's own class-data archive (the java spark-class runs: JAVA_HOME's, else PATH's), or
    None where it has none."""
    java = shutil.which("java", path=env.get("PATH"))
    home = env.get("JAVA_HOME") or (os.path.dirname(os.path.dirname(os.path.realpath(java)))
                                    if java else "")
    base = os.path.join(home, "lib", "server", "classes.jsa")
    return base if home and os.path.exists(base) else None


#: the job events each RecoveryJob read while one poll's condition is evaluated (None: outside a
#: poll): a condition such as ``len(job.finished(job.fingerprints()[1])) >= 1`` reads them once
_POLL_READS: dict | None = None


def poll_once(condition: Callable[[], Any]) -> tuple[Any, float]:
    """``condition()`` evaluated once, each job's events read at most once in it; with the
    seconds it took. A poll of a recovery directory on HDFS or S3 costs tens of milliseconds of
    CPU (the test's JVM, the store's server): the pollers here wait four times that long before
    the next one (at most half a second: the kill points' windows are a second or more), so that
    a wait costs about a fifth of a core, not most of one."""
    import time

    global _POLL_READS
    start = time.time()
    _POLL_READS = {}
    try:
        return condition(), time.time() - start
    finally:
        _POLL_READS = None


def poll_pause(spent: float, every: float) -> float:
    """The seconds to sleep before the next poll: ``every``, or four times what the last one
    took if that is longer, up to half a second."""
    return max(every, min(4 * spent, 0.5))


def wait_until(condition: Callable[[], Any], timeout: float, what: str,
               proc: subprocess.Popen | None = None, log: Callable[[], str] | None = None,
               every: float = 0.1) -> Any:
    """Polls ``condition()`` until it gives a true value, which it returns; fails the test when
    ``timeout`` seconds pass first, or when ``proc`` (a process that should still run) ends
    first (with ``log()``'s text in the message). For waits on an event, never on the clock."""
    import time

    import pytest

    deadline = time.time() + timeout
    while True:
        got, spent = poll_once(condition)
        if got:
            return got
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"the process ended (rc {proc.returncode}) before {what}"
                        + (f":\n{log()[-3000:]}" if log else ""))
        if time.time() >= deadline:
            pytest.fail(f"not within {timeout:.0f} s: {what}"
                        + (f":\n{log()[-3000:]}" if log else ""))
        time.sleep(poll_pause(spent, every))


def run_begun(fs: Any, job_dir: str) -> bool:
    """The driver of the job in ``job_dir`` (on ``fs``, a ``fullwindow.recovery._fs`` file
    system) holds a live lease and has begun its run: its first event is written, so it is past
    taking the lease (stopped inside that create, it could not run at all)."""
    from fullwindow.recovery import lease

    events = f"{job_dir}/events"
    return bool((lease.read(fs, job_dir) or {}).get("live")
                and fs.exists(events) and fs.listdir(events))


def kill_group(p: subprocess.Popen, timeout: float = 30) -> None:
    """SIGKILLs a driver started in a session of its own, ``p``: its process group (Python and
    its JVM) and every process descending from it at the kill (the JVM's Python workers, which
    pyspark's daemon puts in a process group of their own), all at once; then waits until they
    are gone (reaped), not a fixed time: no worker of the killed run writes anything after it."""
    import signal
    import time

    doomed = _descendants(p.pid)
    # the group is ``p``'s (a session leader's): its id is not reused while a member lives
    if p.poll() is None or _group_members(p.pid):
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for pid in doomed:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    p.wait(timeout)
    deadline = time.time() + timeout
    while (_group_members(p.pid) or _alive(doomed)) and time.time() < deadline:
        time.sleep(0.05)


def _proc_stat(pid: str) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command's name: state, ppid, pgrp, ..."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _descendants(pid: int) -> list[int]:
    """The processes descending from ``pid`` now (children, their children, ...)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = _proc_stat(name)
            if fields is not None:
                children.setdefault(int(fields[1]), []).append(int(name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _alive(pids: list[int]) -> bool:
    """Whether any of ``pids`` is still a live (not zombie) process."""
    for pid in pids:
        fields = _proc_stat(str(pid))
        if fields is not None and fields[0] not in ("Z", "X"):
            return True
    return False


def _group_members(pgid: int) -> list[int]:
    """The processes of process group ``pgid`` that are not yet dead (zombies do not count: an
    orphan's is reaped by whoever adopted it, when it does)."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = _proc_stat(name)
            if fields is not None and int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
                out.append(int(name))
    return out


def short_jvm_env() -> dict[str, str]:
    """An environment (for ``run_python``'s ``env`` or a subprocess's) under which every JVM a
    child process starts runs with FAST_JVM_OPTIONS: for children whose JVM lives for a check or
    two on tiny data (a session's set-up error). The JVM notes the setting on stderr ("Picked up
    JDK_JAVA_OPTIONS")."""
    return fast_jvm({"JDK_JAVA_OPTIONS": os.environ.get("JDK_JAVA_OPTIONS", "")})


def kill_when(p: subprocess.Popen, condition: Callable[[], bool], timeout: float = 600) -> None:
    """SIGKILLs the process group of ``p`` (a driver started in a session of its own: Python,
    its JVM and the JVM's Python workers) as soon as ``condition()`` holds; fails the test if
    ``p`` ends first or the point is not reached within ``timeout`` seconds."""
    import signal
    import time

    import pytest

    deadline = time.time() + timeout
    while time.time() < deadline:
        if p.poll() is not None:
            pytest.fail("the job ended before the kill point was reached")
        hit, spent = poll_once(condition)
        if hit:
            kill_group(p)  # the driver, its JVM and its workers, until they are reaped
            return
        time.sleep(poll_pause(spent, 0.1))
    os.killpg(p.pid, signal.SIGKILL)
    pytest.fail("the kill point was not reached in time")


def parquet_rows(path: str) -> list[tuple]:
    """The rows of a Parquet output, as sorted tuples."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    return sorted(zip(*[table.column(c).to_pylist() for c in table.column_names]))


class RecoveryJob:
    """A batch job run as its own driver process (``script``, settings from the environment) by
    the recovery crash tests: where its output, markers and recovery state go, how to start it
    (``start``: to be killed; ``run``: to completion), and what its event store says."""

    script = ""
    #: each run writes its output to a directory of its own (``out-<name>-<run>``), so that a
    #: run's write is a new write: a write an earlier run committed is skipped on a resume
    #: (exactly once), and these jobs' tests are about what the full-window operations recompute
    #: (tests/test_recovery_writes.py keeps one target across runs)
    fresh_output = True

    def __init__(self, base, name: str, recovery: bool = True):
        self.base = str(base)
        self.name = name
        self.dir = os.path.join(self.base, "recovery")
        self.out = os.path.join(self.base, f"out-{name}")
        self.marks = os.path.join(self.base, f"marks-{name}")
        os.makedirs(self.marks, exist_ok=True)
        self.recovery = recovery

    def options(self, **options) -> dict:
        """Environment variables for a subclass's options (None: unset)."""
        return {}

    def env(self, run: str, slow: float, variant: str, gate: str | None = None,
            **options) -> dict:
        if self.fresh_output:
            self.out = os.path.join(self.base, f"out-{self.name}-{run}")
            self.runs = [r for r in getattr(self, "runs", []) if r != run] + [run]
        env = dict(os.environ)
        env.update(OUT=self.out, MARKS=self.marks, RUN=run, SLOW=str(slow), VARIANT=variant,
                   PYTHONPATH=os.pathsep.join([PACKAGE_PARENT, env.get("PYTHONPATH", "")]))
        for k, v in self.options(**options).items():
            env.pop(k, None)
            if v is not None:
                env[k] = v
        if self.recovery:
            env.update(RECOVERY_DIR=self.dir, JOB_ID=self.name)
        if gate is not None:
            env["GATE"] = gate
        return fast_jvm(env)  # every driver: the kill points wait on events, not on speed

    def _log(self, run: str) -> str:
        return os.path.join(self.base, f"{self.name}-{run}.log")

    def start(self, run: str, slow: float = 0.0, variant: str = "1", prefix: tuple = (),
              **options) -> subprocess.Popen:
        """``prefix``: a command the driver runs under (e.g. strace); ``gate``: a file the
        job's script waits for where it supports one (tests/recovery_job.py: before each of
        B's partitions finishes)."""
        log = open(self._log(run), "w")
        return subprocess.Popen([*prefix, sys.executable, self.script],
                                env=self.env(run, slow, variant, **options),
                                stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
                                start_new_session=True)

    def run(self, run: str, slow: float = 0.0, variant: str = "1", **options) -> None:
        rc = self.start(run, slow, variant, **options).wait(timeout=300)
        log = open(self._log(run)).read()
        assert rc == 0 and "JOB DONE" in log, log[-3000:]

    def log(self, run: str) -> str:
        """The whole log (stdout and stderr) of ``run``."""
        with open(self._log(run), errors="replace") as f:
            return f.read()

    def ran(self, stage: str, run: str) -> list[int]:
        """Partitions of ``stage`` whose user function ran during ``run`` (sorted, repeated
        when a partition ran more than once), from the markers ``<stage>-<partition>-<run>-...``
        the job's user functions leave in ``marks``."""
        return sorted(int(n.split("-")[1]) for n in os.listdir(self.marks)
                      if n.startswith(stage + "-") and n.split("-")[2] == run)

    def events(self) -> list[dict]:
        import warnings

        from fullwindow.recovery import job_events

        key = (self.dir, self.name)
        if _POLL_READS is not None and key in _POLL_READS:
            return _POLL_READS[key]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = job_events(self.dir, self.name)
        if _POLL_READS is not None:
            _POLL_READS[key] = got
        return got

    def finished(self, fp: str | None) -> set[int]:
        return {e["partition"] for e in self.events()
                if e["type"] == "taskFinished" and e["fingerprint"] == fp}

    def output(self) -> list[tuple]:
        """The output of the last run that finished (with ``fresh_output``, each run has its own:
        of two racing runs, the one that won)."""
        if self.fresh_output:
            for run in reversed(getattr(self, "runs", [])):
                log = self._log(run)
                if os.path.exists(log) and "JOB DONE" in open(log, errors="replace").read():
                    return parquet_rows(os.path.join(self.base, f"out-{self.name}-{run}"))
        return parquet_rows(self.out)


def record_offsets(data: bytes) -> list[int]:
    """Where each record of an event-store segment starts."""
    import struct

    from fullwindow.recovery.eventstore import HEADER_SIZE

    out, pos = [], 0
    while pos < len(data):
        out.append(pos)
        (length,) = struct.unpack_from(">I", data, pos + 4)
        pos += HEADER_SIZE + length
    return out


def fixed_width_parquet(spark, path, n, keys, parts=3):
    """Parquet (`parts` files) with a long key k (nulls among them when `keys` > 1) and
    fixed-width columns of every width (boolean to long, float and double), NaN and -0.0 among
    the doubles (tests/test_keyed_columnar.py, tests/test_sort_columnar_arrow.py)."""
    h = F.xxhash64("id")
    k = (F.lit(7) if keys == 1 else
         F.when(F.col("id") % 23 == 0, None).otherwise(F.abs(h) % keys)).cast("long")
    spark.range(0, n, 1, parts).select(
        k.alias("k"), F.col("id").alias("v"),
        F.when(F.col("id") % 13 == 0, None).otherwise((h % 1000).cast("int")).alias("i"),
        F.when(F.col("id") % 11 == 0, F.lit(float("nan"))).when(F.col("id") % 7 == 0, F.lit(-0.0))
        .when(F.col("id") % 19 == 0, None).otherwise((h % 100) / 7.0).alias("x"),
        (h % 3 == 0).alias("b"),
        F.date_add(F.lit("2024-01-01").cast("date"), (h % 50).cast("int")).alias("d"),
        (h % 100).cast("tinyint").alias("t"), (h % 1000).cast("smallint").alias("s"),
        ((h % 1000) / 8.0).cast("float").alias("f"),
    ).write.mode("overwrite").parquet(path)
    return spark.read.parquet(path)


def with_decimals(df, col="v"):
    """`df` with decimal columns derived from `col`: d9 (decimal(9,2), which Spark's vectors hold
    as an int) and d18 (decimal(18,4), as a long), with nulls, negatives, ties and each type's
    extremes."""
    h = F.xxhash64(col)
    c = F.col(col)

    def dec(t, top, value):
        return (F.when(c % 29 == 0, None).when(c % 31 == 0, F.lit(f"-{top}").cast(t))
                .when(c % 37 == 0, F.lit(top).cast(t)).otherwise(value.cast(t)))

    return (df.withColumn("d9", dec("decimal(9,2)", "9999999.99", h % 2000 / 100))
            .withColumn("d18", dec("decimal(18,4)", "99999999999999.9999", h % 10 ** 13 / 10_000)))


def with_strings(df):
    """`df` with a string column s (nulls, empty, multi-byte, up to ~60 bytes) and a binary bin."""
    return df.withColumn("s", F.when(F.col("v") % 17 == 0, None).when(F.col("v") % 5 == 0, "")
                         .otherwise(F.expr("repeat(concat('é', cast(v as string)), cast(v % 6 as int))"))) \
        .withColumn("bin", F.when(F.col("v") % 9 == 0, None)
                    .otherwise(F.unhex(F.hex(F.col("v") * 31))))
