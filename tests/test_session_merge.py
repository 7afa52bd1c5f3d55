"""Settings merge as users expect (issue 51): the list settings fullwindow also sets
(``spark.sql.extensions``, ``spark.jars``, ``spark.jars.packages``, the Connect relation plugin
classes) are merged with fullwindow's whichever way the user passes them (``session(conf=...)``,
``configure(builder, conf)``, a builder's own setting; spark-submit's ``--conf`` in
tests/test_submit.py), keeping the user's order, each item once; and a session whose extensions
were replaced says so, not that a session was already running."""
from __future__ import annotations

import os

import pyspark
import pytest
from pyspark.sql import SparkSession

import fullwindow
from fullwindow._backend import PLUGIN_CLASS, PLUGIN_CONF
from helpers import run_python

EXT = fullwindow.EXTENSION_CLASS
DELTA = "io.delta.sql.DeltaSparkSessionExtension"
# a real jar (already on Spark's class path: adding it changes nothing else)
TAGS = next(os.path.join(os.path.dirname(pyspark.__file__), "jars", n)
            for n in sorted(os.listdir(os.path.join(os.path.dirname(pyspark.__file__), "jars")))
            if n.startswith("spark-tags_"))


def _options(builder) -> dict:
    return builder._options


def test_configure_merges_conf_lists_with_fullwindows():
    b = fullwindow.configure(SparkSession.builder.master("local[1]"), {
        "spark.sql.extensions": f"{DELTA}, example.B",
        "spark.jars": TAGS, "spark.jars.packages": "org.example:a:1",
        "spark.sql.shuffle.partitions": 3})
    o = _options(b)
    assert o["spark.sql.extensions"] == f"{DELTA},example.B,{EXT}"
    assert o["spark.jars"] == f"{TAGS},{fullwindow.jar_path()}"
    assert o["spark.jars.packages"] == "org.example:a:1"
    assert o["spark.sql.shuffle.partitions"] == "3"


def test_the_builders_own_then_conf_then_fullwindows_each_once():
    b = SparkSession.builder.master("local[1]").config("spark.sql.extensions", "example.A")
    b = b.config("spark.jars", f"{TAGS},{fullwindow.jar_path()}")
    fullwindow.configure(b, {"spark.sql.extensions": ["example.B", "example.A", EXT]})
    o = _options(b)
    assert o["spark.sql.extensions"] == f"example.A,example.B,{EXT}"
    assert o["spark.jars"] == f"{TAGS},{fullwindow.jar_path()}"
    # configuring twice changes nothing
    fullwindow.configure(b, {"spark.sql.extensions": "example.B"})
    assert _options(b)["spark.sql.extensions"] == f"example.A,example.B,{EXT}"


def test_a_local_connect_builder_merges_the_plugin_classes():
    b = SparkSession.builder.remote("local[1]")
    fullwindow.configure(b, {PLUGIN_CONF: "org.example.MyPlugin", "spark.sql.extensions": DELTA})
    o = _options(b)
    assert o[PLUGIN_CONF] == f"org.example.MyPlugin,{PLUGIN_CLASS}"
    assert o["spark.sql.extensions"] == f"{DELTA},{EXT}"


def test_a_remote_builder_keeps_the_users_lists():
    b = SparkSession.builder.remote("sc://localhost:15002")
    fullwindow.configure(b, {"spark.jars.packages": "org.example:a:1,org.example:a:1"})
    assert _options(b)["spark.jars.packages"] == "org.example:a:1"
    assert "spark.sql.extensions" not in _options(b)


@pytest.mark.parametrize("bad", [3, {"a": 1}, [1, 2]])
def test_a_list_setting_that_is_no_list_is_refused_naming_it(bad):
    with pytest.raises(TypeError, match="conf: spark.sql.extensions must be a comma-separated"):
        fullwindow.configure(SparkSession.builder.master("local[1]"),
                             {"spark.sql.extensions": bad})


def test_the_delta_idiom_adds_to_fullwindows_extension():
    """``session(conf={"spark.sql.extensions": <Delta's>, ...})`` as Delta Lake's docs write it
    (Delta's class is not on this line's class path: Spark warns and goes on), with a jar of the
    user's: the session has both extensions and both jars, and fullwindow runs."""
    r = run_python(f"""
        import fullwindow
        spark = fullwindow.session(master="local[1]", conf={{
            "spark.ui.enabled": "false",
            "spark.sql.extensions": {DELTA!r},
            "spark.jars": {TAGS!r}}})
        conf = spark.sparkContext.getConf()
        print("EXT", conf.get("spark.sql.extensions"))
        print("JARS", conf.get("spark.jars"))
        out = spark.range(6).fullWindowPartition().sortPartition("id").collect()
        print("ROWS", [r.id for r in out])
    """)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    assert f"EXT {DELTA},{EXT}\n" in r.stdout, r.stdout
    assert f"JARS {TAGS},{fullwindow.jar_path()}\n" in r.stdout, r.stdout
    assert "ROWS [0, 1, 2, 3, 4, 5]" in r.stdout
    assert "already running" not in r.stderr


def test_an_overridden_extension_is_named_as_the_cause():
    """A builder whose extensions were set again after configure (replacing fullwindow's):
    the first fullwindow call names the session's extensions and says they lack fullwindow's."""
    r = run_python("""
        from pyspark.sql import SparkSession
        import fullwindow
        b = fullwindow.configure(SparkSession.builder.master("local[1]")
                                 .config("spark.ui.enabled", "false"))
        spark = b.config("spark.sql.extensions", "example.Other").getOrCreate()
        try:
            spark.range(3).fullWindowPartition().sortPartition("id")
        except fullwindow.FullWindowSetupError as e:
            print("CAUGHT", e)
    """)
    assert "CAUGHT" in r.stdout, r.stderr[-3000:]
    assert "spark.sql.extensions is 'example.Other', which does not include " \
           "fullwindow.sql.FullWindowExtensions" in r.stdout, r.stdout
    assert "already running" not in r.stdout


def test_a_running_session_is_named_with_its_extensions():
    r = run_python("""
        from pyspark.sql import SparkSession
        import fullwindow
        SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false") \\
            .config("spark.sql.extensions", "example.Other").getOrCreate()
        try:
            fullwindow.session(master="local[1]", conf={"spark.sql.extensions": "example.Mine"})
        except fullwindow.FullWindowSetupError as e:
            print("CAUGHT", e)
    """)
    assert "CAUGHT" in r.stdout, r.stderr[-3000:]
    assert "already running without fullwindow (its spark.sql.extensions is " \
           "'example.Other')" in r.stdout and "spark.stop()" in r.stdout, r.stdout


def test_spark_defaults_conf_lists_are_merged(tmp_path):
    """A plain ``python`` process: the list settings of spark-defaults.conf (which a builder
    setting replaces) are kept, before fullwindow's."""
    (tmp_path / "spark-defaults.conf").write_text(
        "# the user's defaults\n"
        "spark.sql.extensions   example.FromDefaults\n"
        f"spark.jars={TAGS}\n")
    r = run_python("""
        import fullwindow
        spark = fullwindow.session(master="local[1]", conf={"spark.ui.enabled": "false"})
        conf = spark.sparkContext.getConf()
        print("EXT", conf.get("spark.sql.extensions"))
        print("JARS", conf.get("spark.jars"))
        print("N", spark.range(4).fullWindowPartition().sortPartition("id").count())
    """, env={"SPARK_CONF_DIR": str(tmp_path)})
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    assert f"EXT example.FromDefaults,{EXT}\n" in r.stdout, r.stdout
    assert f"JARS {TAGS},{fullwindow.jar_path()}\n" in r.stdout, r.stdout
    assert "N 4" in r.stdout
