"""A bad-input sweep (issue 51), property-based with Hypothesis: the public API's arguments (keys,
orders, schemas, functions, settings values, session settings) and the command lines' arguments
(``python -m fullwindow.recovery``, ``python -m fullwindow.server``, parsed in this process) each
get a ``FullWindowError`` subclass, ``TypeError`` or ``ValueError`` naming the argument, or an
argparse usage error (exit 2), never a JVM stack trace, never a hang (each example's time is
bounded), never anything deleted (the recovery command line runs against a directory tree
checked intact after every example).

Example counts are modest and derandomized (the same examples on every run; CI time is bounded):
``CASES`` counts the examples each property ran, printed by the last test (``pytest -s``)."""
from __future__ import annotations

import contextlib
import io
import os
import socket
import tempfile
import time
from collections import Counter

import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import fullwindow
from fullwindow.errors import ConfigurationError, FullWindowError
from fullwindow.recovery import _fs
from fullwindow.recovery.config import check_job_id, settings_from

CASES: Counter = Counter()
#: the longest one example may take (a hang fails here, not in CI's timeout)
SLOWEST = 20.0
_slowest: dict = {}


def sweep(n: int):
    return settings(max_examples=n, deadline=None, database=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def _timed(name: str):
    @contextlib.contextmanager
    def run():
        t = time.monotonic()
        yield
        took = time.monotonic() - t
        CASES[name] += 1
        _slowest[name] = max(_slowest.get(name, 0.0), took)
        assert took < SLOWEST, f"{name}: one example took {took:.1f} s"
    return run()


def _acceptable(err: BaseException, *names: str) -> None:
    """A fullwindow error, TypeError or ValueError, naming one of ``names``, with no JVM stack
    trace in its message."""
    assert isinstance(err, (FullWindowError, TypeError, ValueError)), \
        f"{type(err).__module__}.{type(err).__name__}: {err}"
    text = str(err)
    assert any(n in text for n in names), (names, text)
    assert "\tat org.apache" not in text and "py4j" not in text.lower(), text


# anything a user might pass where a specific value is expected
ANYTHING = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
                     st.text(max_size=10), st.binary(max_size=4),
                     st.lists(st.integers(), max_size=3),
                     st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


@pytest.fixture(scope="module")
def df(spark):
    return spark.createDataFrame([(i % 3, i) for i in range(6)], "k long, v long")


# --- job ids and recovery settings (plain Python) -------------------------------------------

@sweep(200)
@given(st.text(max_size=12))
def test_a_job_id_is_one_directory_name(job_id):
    with _timed("job id"):
        one_name = (job_id.strip() != "" and job_id not in (".", "..")
                    and not any(c in job_id for c in "/\\\x00"))
        if one_name:
            assert check_job_id(job_id, "w") == job_id
        else:
            with pytest.raises(ConfigurationError, match="^w: job_id "):
                check_job_id(job_id, "w")


RECOVERY_KEYS = ["spark.fullwindow.recovery.enabled", "spark.fullwindow.recovery.dir",
                 "spark.fullwindow.recovery.jobId", "spark.fullwindow.eventStore.writeBufferSize",
                 "spark.fullwindow.eventStore.flushInterval",
                 "spark.fullwindow.recovery.leaseTimeout", "spark.fullwindow.recovery.leaseWait",
                 "spark.fullwindow.recovery.onInputChange",
                 "spark.fullwindow.recovery.onUncheckedWrite"]


@sweep(150)
@given(st.sampled_from(RECOVERY_KEYS[1:]),
       st.one_of(st.text(max_size=8), st.sampled_from(["-1s", "0", "1e400", "nan", "inf", "1x",
                                                         "..", "a/b", "10zb", "5 min"])))
def test_recovery_settings_values(key, value):
    conf = {"spark.fullwindow.recovery.enabled": "true", "spark.fullwindow.recovery.dir": "/d",
            "spark.fullwindow.recovery.jobId": "j", key: value}
    with _timed("recovery settings"):
        try:
            settings_from(conf.get, "w")
        except ConfigurationError as err:
            _acceptable(err, key.rsplit(".", 1)[-1])


# --- session settings: list settings merged or refused (plain Python: no session started) ---

LIST_KEYS = ["spark.sql.extensions", "spark.jars", "spark.jars.packages",
             "spark.connect.extensions.relation.classes"]


@sweep(80)
@given(st.sampled_from(LIST_KEYS), ANYTHING)
def test_list_settings_are_merged_or_refused(key, value):
    from pyspark.sql import SparkSession

    with _timed("list settings"):
        builder = SparkSession.builder.master("local[1]")
        try:
            fullwindow.configure(builder, {key: value})
        except TypeError as err:
            _acceptable(err, key)
            assert not isinstance(value, str) and value is not None
            return
        merged = builder._options.get(key, "")
        items = merged.split(",") if merged else []
        assert len(items) == len(set(items)), merged
        if key == "spark.sql.extensions":
            assert items.count(fullwindow.EXTENSION_CLASS) == 1, merged


@sweep(40)
@given(st.one_of(ANYTHING.filter(lambda v: not isinstance(v, dict) and v is not None),
                 st.dictionaries(st.one_of(st.integers(), st.just("")), st.text(max_size=2),
                                 min_size=1, max_size=2)))
def test_session_conf_that_is_no_mapping_of_names(conf):
    with _timed("session conf"):
        with pytest.raises(TypeError) as err:
            fullwindow.session(conf=conf)
        _acceptable(err.value, "conf")


@sweep(30)
@given(st.one_of(st.integers(), st.floats(), st.just(""), st.just("  "), st.binary(max_size=3),
                 st.lists(st.text(max_size=2), max_size=2)))
def test_session_master_and_app_name(value):
    with _timed("session master/app_name"):
        for name in ("master", "app_name"):
            with pytest.raises(TypeError) as err:
                fullwindow.session(**{name: value})
            _acceptable(err.value, name)


# --- DataFrame operations (a real classic session) ------------------------------------------

def _valid_key(key) -> bool:
    if isinstance(key, bool):
        return False
    if isinstance(key, int):
        return key in (0, 1)
    if isinstance(key, str):
        return key.strip("`").lower() in ("k", "v") and key.count("`") in (0, 2)
    return False


@sweep(60)
@given(st.one_of(ANYTHING, st.lists(st.text(max_size=4), min_size=1, max_size=2)))
def test_sort_keys(df, key):
    assume(not _valid_key(key))
    if isinstance(key, list):
        assume(not all(_valid_key(k) for k in key))
    with _timed("sortPartition key"):
        with pytest.raises(Exception) as err:
            df.fullWindowPartition().sortPartition(key)
        _acceptable(err.value, "key", "field index")


@sweep(50)
@given(ANYTHING)
def test_sort_orders(df, order):
    if isinstance(order, str):
        assume(order.strip().upper() not in ("ASC", "ASCENDING", "DESC", "DESCENDING"))
    with _timed("sortPartition order"):
        with pytest.raises(Exception) as err:
            df.fullWindowPartition().sortPartition("v", order)
        _acceptable(err.value, "order")


@sweep(40)
@given(st.one_of(st.text(max_size=12), ANYTHING))
def test_schemas(df, schema):
    with _timed("mapPartition schema"):
        try:
            out = df.fullWindowPartition().mapPartition(lambda rows: [], schema)
        except Exception as err:  # noqa: BLE001 - checked
            _acceptable(err, "schema")
            return
        assert isinstance(schema, str) and len(out.columns) >= 1  # a valid DDL schema


@sweep(40)
@given(ANYTHING.filter(lambda v: not callable(v)))
def test_functions(df, func):
    w = df.fullWindowPartition()
    keyed = df.keyBy("k").fullWindowPartition()
    with _timed("functions"):
        for call in (lambda: w.mapPartition(func, "n long"), lambda: w.reduce(func),
                     lambda: keyed.mapPartition(func, "n long"), lambda: keyed.reduce(func)):
            with pytest.raises(Exception) as err:
                call()
            _acceptable(err.value, "func")


@sweep(40)
@given(ANYTHING)
def test_key_columns(df, key):
    assume(not (isinstance(key, str) and key.lower() in ("k", "v")))
    with _timed("keyBy"):
        with pytest.raises(Exception) as err:
            df.keyBy(key)
        _acceptable(err.value, "key")


@sweep(25)
@given(st.text(max_size=8))
def test_runtime_mode_values(spark, df, mode):
    assume(mode.strip().upper() not in ("BATCH", "STREAMING", "AUTOMATIC", ""))
    with _timed("runtimeMode"):
        spark.conf.set("spark.fullwindow.runtimeMode", mode)
        try:
            with pytest.raises(Exception) as err:
                df.fullWindowPartition().sortPartition("v").collect()
            _acceptable(err.value, "runtimeMode")
        finally:
            spark.conf.unset("spark.fullwindow.runtimeMode")


# --- the command lines -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tree():
    from test_recovery_safe import job_tree

    base = tempfile.mkdtemp(prefix="fw-sweep-")
    fs = _fs.LocalFS()
    yield fs, job_tree(fs, base)
    import shutil

    shutil.rmtree(base, ignore_errors=True)


IDS = st.one_of(st.sampled_from(["..", ".", "", "x/../..", "photos", "empty", "notes.txt", "rec",
                                 "a.jpg", "/", "../rec", "nightly/..", "nightly"]),
                st.text(max_size=8))


@sweep(60)
@given(st.sampled_from(["status", "verify", "cleanup", "delete", ""]),
       st.sampled_from(["rec", "base", "photos", "rec/", "missing", ""]), IDS,
       st.lists(st.sampled_from(["--json", "--force", "-r", "x"]), max_size=1))
def test_the_recovery_command_line_deletes_nothing_but_what_it_says(tree, command, where,
                                                                    job_id, extra):
    from fullwindow.recovery._status import main
    from test_recovery_safe import intact

    fs, p = tree
    # the job itself is never named for cleanup here: every example must leave the tree whole
    assume(not (command == "cleanup" and where in ("rec", "rec/") and job_id == "nightly"))
    directory = {"rec": p["rec"], "rec/": p["rec"] + "/", "base": p["base"],
                 "photos": p["photos"], "missing": p["rec"] + "-missing", "": ""}[where]
    argv = [command, "--dir", directory, "--job-id", job_id, *extra]
    out, err = io.StringIO(), io.StringIO()
    with _timed("recovery command line"):
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exit_:
                code = exit_.code
    assert code in (0, 1, 2), (argv, code, err.getvalue())
    assert "Traceback" not in err.getvalue() and "deleted " not in out.getvalue(), argv
    if code == 2:
        assert "usage:" in err.getvalue() or err.getvalue().startswith("refused: "), argv
    intact(fs, p)


HOSTS = ["localhost", "127.0.0.1", "::1", "0.0.0.0", "::", socket.gethostname(), ""]


@sweep(80)
@given(st.lists(st.one_of(
    st.tuples(st.just("--host"), st.sampled_from(HOSTS)),
    st.tuples(st.just("--port"), st.sampled_from(["15002", "0", "-1", "65536", "x", ""])),
    st.tuples(st.just("--token"), st.sampled_from(["", "secret", " "])),
    st.tuples(st.just("--conf"), st.sampled_from(["a=b", "novalue", "=x",
                                                  "spark.connect.authenticate.token=t"])),
    st.tuples(st.sampled_from(["--insecure", "--bogus"])),
), max_size=4))
def test_the_server_command_line(monkeypatch_env, pairs):
    from fullwindow.server import _parse, is_loopback

    argv = [a for pair in pairs for a in pair]
    err = io.StringIO()
    with _timed("server command line"):
        with contextlib.redirect_stderr(err):
            try:
                args = _parse(argv)
            except SystemExit as exit_:
                assert exit_.code == 2 and "usage:" in err.getvalue(), (argv, err.getvalue())
                return
    # what starts either listens on loopback, has a token, or was told --insecure
    assert is_loopback(args.host) or args.auth or args.insecure, argv
    assert 0 < args.port < 65536


@pytest.fixture(scope="module")
def monkeypatch_env():
    saved = os.environ.pop("SPARK_CONNECT_AUTHENTICATE_TOKEN", None)
    yield
    if saved is not None:
        os.environ["SPARK_CONNECT_AUTHENTICATE_TOKEN"] = saved


def test_zz_how_many_cases_ran():
    """The sweep's size (printed with ``pytest -s``; the issue asks for it to be recorded)."""
    total = sum(CASES.values())
    print(f"\nbad-input sweep: {total} cases: " + ", ".join(
        f"{k} {v} (slowest {_slowest[k]:.2f} s)" for k, v in sorted(CASES.items())))
    if CASES:
        assert total >= 100
