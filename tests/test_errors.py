"""Every bad input named in DESIGN.md "Errors" for sortPartition and the session helpers: a clear
Python exception naming the argument, not a JVM stack dump."""
from __future__ import annotations

import functools
import json

import pytest
from pyspark.sql import functions as F

import fullwindow
from fullwindow import (FullWindowAnalysisError, FullWindowError, FullWindowSetupError,
                        FullWindowTypeError, FullWindowValueError, KeyNotSortableError, Order)
from helpers import run_python, short_jvm_env


@pytest.fixture(scope="module")
def df(spark):
    return spark.range(0, 10, 1, 2).select(
        F.col("id").alias("v"),
        F.create_map(F.lit("k"), F.col("id")).alias("m"),
        F.struct(F.col("id").alias("x"), F.create_map(F.lit("k"), F.col("id")).alias("mm")).alias("s"),
        F.struct(F.col("id").alias("x")).alias("ok"),
    )


def no_jvm_dump(err: BaseException) -> None:
    text = str(err)
    assert "at org.apache" not in text and "Py4JJavaError" not in text, text
    assert err.__cause__ is None or not type(err.__cause__).__name__.startswith("Py4J")


@pytest.mark.parametrize("index", [4, 99, -1])
def test_field_index_out_of_range(df, index):
    with pytest.raises(FullWindowValueError, match=rf"field index {index} is out of range; the input has 4 fields") as e:
        df.fullWindowPartition().sortPartition(index)
    assert isinstance(e.value, ValueError)


def test_unknown_column(df):
    with pytest.raises(FullWindowValueError, match=r"key 'nope' is not a column of the input; columns are v, m, s, ok"):
        df.fullWindowPartition().sortPartition("nope")


def test_unknown_nested_field(df):
    with pytest.raises(FullWindowValueError, match=r"key 'ok.zz' is not a column"):
        df.fullWindowPartition().sortPartition("ok.zz")


def test_unknown_column_in_a_column_expression(df):
    with pytest.raises(FullWindowAnalysisError, match=r"sortPartition: .*nope") as e:
        df.fullWindowPartition().sortPartition(F.col("nope") + 1)
    no_jvm_dump(e.value)


def test_map_key_is_not_sortable(df):
    with pytest.raises(KeyNotSortableError, match=r"key 'm' has type map<string,bigint>, which cannot be sorted") as e:
        df.fullWindowPartition().sortPartition("m")
    assert isinstance(e.value, TypeError)


def test_struct_holding_a_map_is_not_sortable(df):
    with pytest.raises(KeyNotSortableError, match=r"key 's'"):
        df.fullWindowPartition().sortPartition("s")
    with pytest.raises(KeyNotSortableError, match=r"#1 \('m'\)"):
        df.fullWindowPartition().sortPartition(1)


def test_map_column_expression_is_rejected_at_analysis(df):
    # A Column key's type is only known after analysis, where Spark rejects the ordering.
    with pytest.raises(KeyNotSortableError, match=r"sortPartition: .*does not support ordering on type \"MAP") as e:
        df.fullWindowPartition().sortPartition(F.map_concat("m", "m"))
    no_jvm_dump(e.value)


def test_key_selector_returning_a_map_is_not_sortable(df):
    with pytest.raises(KeyNotSortableError, match="selector"):
        df.fullWindowPartition().sortPartition(lambda r: {"a": r.v})


def test_none_key(df):
    with pytest.raises(FullWindowTypeError, match=r"sortPartition: key must be .*got None"):
        df.fullWindowPartition().sortPartition(None)
    with pytest.raises(FullWindowTypeError, match=r"got None"):
        df.fullWindowPartition().sortPartition([("v", Order.ASCENDING), (None, Order.ASCENDING)])


@pytest.mark.parametrize("bad", [3.5, object(), True, b"v"])
def test_non_callable_non_key(df, bad):
    with pytest.raises(FullWindowTypeError, match=r"sortPartition: key must be a 0-based field index"):
        df.fullWindowPartition().sortPartition(bad)


def test_empty_key_list(df):
    with pytest.raises(FullWindowValueError, match="empty list"):
        df.fullWindowPartition().sortPartition([])


def test_bad_order(df):
    with pytest.raises(FullWindowValueError, match=r"order must be Order.ASCENDING or Order.DESCENDING, got 'sideways'"):
        df.fullWindowPartition().sortPartition("v", "sideways")
    with pytest.raises(FullWindowTypeError, match=r"order must be"):
        df.fullWindowPartition().sortPartition("v", 1)


def test_key_selector_failing_on_the_first_row(df):
    with pytest.raises(FullWindowValueError, match=r"key selector .* failed on the first row.*ZeroDivisionError"):
        df.fullWindowPartition().sortPartition(lambda r: 1 / 0)


def test_key_selector_failing_later_surfaces_the_python_traceback(spark):
    from pyspark.errors import PythonException

    df = spark.range(0, 10, 1, 1)

    def boom(row):
        if row.id == 7:
            raise RuntimeError("bad row seven")
        return row.id

    with pytest.raises(PythonException) as e:
        df.fullWindowPartition().sortPartition(boom).collect()
    text = str(e.value)
    assert "bad row seven" in text and "in boom" in text


def test_all_errors_are_fullwindow_errors():
    for cls in (FullWindowTypeError, FullWindowValueError, KeyNotSortableError,
                FullWindowAnalysisError, FullWindowSetupError):
        assert issubclass(cls, FullWindowError)


def test_configure_rejects_a_non_builder():
    with pytest.raises(TypeError, match="builder must be a SparkSession.Builder"):
        fullwindow.configure(None)


def test_session_rejects_non_mapping_conf():
    with pytest.raises(TypeError, match="conf must be a mapping"):
        fullwindow.session(conf=[("a", "b")])


# ---- sessions that lack the jar or the extension: each needs a JVM of its own ----------------

@functools.lru_cache(maxsize=None)
def plain_session_run_python() -> dict:
    """One child process with a plain session (neither the jar nor the extension) for the two
    checks that need one, in the order each test had in a child of its own: sortPartition on
    it (the jar is missing), then fullwindow.session() over it (a plain session is running).
    Each check's error message is kept apart, and each test asserts on its own: one JVM start
    instead of two."""
    r = run_python("""
        import json
        from pyspark.sql import SparkSession
        import fullwindow
        spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
        caught = {}
        try:
            spark.range(3).fullWindowPartition().sortPartition("id")
        except fullwindow.FullWindowSetupError as e:
            caught["sortPartition"] = str(e)
        try:
            fullwindow.session(master="local[1]")
        except fullwindow.FullWindowSetupError as e:
            caught["session"] = str(e)
        print("CAUGHT " + json.dumps(caught))
    """, timeout=600, env=short_jvm_env())  # both checks: twice a check's 300 s
    line = next((l for l in r.stdout.splitlines() if l.startswith("CAUGHT ")), None)
    assert line is not None, r.stdout[-3000:] + r.stderr[-3000:]
    return json.loads(line[len("CAUGHT "):])


def test_missing_jar_says_how_to_fix():
    caught = plain_session_run_python()
    assert "sortPartition" in caught, caught
    message = caught["sortPartition"]
    assert "jar is not on the driver's class path" in message
    assert "fullwindow.session(" in message and "--jars" in message


def test_missing_extension_says_how_to_fix():
    r = run_python("""
        from pyspark.sql import SparkSession
        import fullwindow
        spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
                 .config("spark.jars", fullwindow.jar_path()).getOrCreate())
        try:
            spark.range(3).fullWindowPartition().sortPartition("id")
        except fullwindow.FullWindowSetupError as e:
            print("CAUGHT", e)
    """, env=short_jvm_env())
    assert "CAUGHT" in r.stdout, r.stderr[-3000:]
    assert "extension is not registered" in r.stdout
    assert "spark.sql.extensions=fullwindow.sql.FullWindowExtensions" in r.stdout


def test_configure_keeps_other_extensions_and_jars():
    r = run_python("""
        from pyspark.sql import SparkSession
        import fullwindow
        b = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
        b = b.config("spark.sql.extensions", "some.Other").config("spark.jars", "/tmp/x.jar")
        fullwindow.configure(b, {"spark.sql.shuffle.partitions": 3})
        print("EXT", b._options["spark.sql.extensions"])
        print("JARS", b._options["spark.jars"])
        print("SP", b._options["spark.sql.shuffle.partitions"])
    """)
    assert "EXT some.Other,fullwindow.sql.FullWindowExtensions" in r.stdout, r.stderr[-2000:]
    assert "JARS /tmp/x.jar," in r.stdout and "fullwindow-spark" in r.stdout
    assert "SP 3" in r.stdout


def test_session_over_a_running_plain_session_is_an_error():
    caught = plain_session_run_python()
    assert "session" in caught, caught
    assert "spark.stop()" in caught["session"]
