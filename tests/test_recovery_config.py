"""Recovery configuration: off by default, and enabled without dir or jobId is a clear error at
session build time and when a full-window operation is defined."""
from __future__ import annotations

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import fullwindow
from fullwindow import ConfigurationError
from fullwindow.recovery.config import settings_from

KEYS = ("spark.fullwindow.recovery.enabled", "spark.fullwindow.recovery.dir",
        "spark.fullwindow.recovery.jobId", "spark.fullwindow.eventStore.writeBufferSize",
        "spark.fullwindow.eventStore.flushInterval", "spark.fullwindow.recovery.scope")


@pytest.fixture
def conf(spark):
    yield spark.conf
    for k in KEYS:
        spark.conf.unset(k)


def test_configure_rejects_recovery_without_dir_or_job_id():
    with pytest.raises(ConfigurationError) as err:
        fullwindow.configure(SparkSession.builder,
                             {"spark.fullwindow.recovery.enabled": True,
                              "spark.fullwindow.recovery.jobId": "j"})
    msg = str(err.value)
    assert msg.startswith("building the fullwindow session:")
    assert "spark.fullwindow.recovery.dir is not set" in msg and "Hadoop file system URI" in msg


def test_session_rejects_recovery_without_job_id_before_starting_anything():
    with pytest.raises(ConfigurationError) as err:
        fullwindow.session(master="local[1]", conf={"spark.fullwindow.recovery.enabled": "true",
                                                    "spark.fullwindow.recovery.dir": "/tmp/x"})
    msg = str(err.value)
    assert msg.startswith("building the fullwindow session:")
    assert "spark.fullwindow.recovery.jobId is not set" in msg


def test_neither_set_names_both_keys():
    with pytest.raises(ConfigurationError, match="recovery.dir and spark.fullwindow.recovery.jobId are not set"):
        settings_from({"spark.fullwindow.recovery.enabled": "true"}.get, "here")


def test_operation_definition_rejects_recovery_without_dir(spark, conf):
    conf.set("spark.fullwindow.recovery.enabled", "true")
    conf.set("spark.fullwindow.recovery.jobId", "job")
    df = spark.range(10).selectExpr("id AS v")
    with pytest.raises(ConfigurationError) as err:
        df.fullWindowPartition().mapPartition(lambda rows: rows, "v long")
    msg = str(err.value)
    assert msg.startswith("mapPartition: spark.fullwindow.recovery.enabled is true but "
                          "spark.fullwindow.recovery.dir is not set")
    with pytest.raises(ConfigurationError, match="^sortPartition: .*recovery.dir is not set"):
        df.fullWindowPartition().sortPartition("v")
    with pytest.raises(ConfigurationError, match="^aggregate: .*recovery.dir is not set"):
        df.fullWindowPartition().aggregate(F.sum("v"))


def test_operation_definition_rejects_recovery_without_job_id(spark, conf, tmp_path):
    conf.set("spark.fullwindow.recovery.enabled", "true")
    conf.set("spark.fullwindow.recovery.dir", str(tmp_path))
    with pytest.raises(ConfigurationError, match="^reduce: .*recovery.jobId is not set"):
        spark.range(3).fullWindowPartition().reduce(lambda a, b: a)


@pytest.mark.parametrize("key,value,expected", [
    ("spark.fullwindow.recovery.enabled", "maybe", "expected true or false"),
    ("spark.fullwindow.eventStore.writeBufferSize", "lots", "expected a size"),
    ("spark.fullwindow.eventStore.flushInterval", "soon", "expected a duration"),
    ("spark.fullwindow.recovery.jobId", "a/b", "jobId is 'a/b', which holds '/'"),
    ("spark.fullwindow.recovery.leaseTimeout", "soon", "expected a duration"),
    ("spark.fullwindow.recovery.leaseTimeout", "0s", "expected a positive duration"),
    ("spark.fullwindow.recovery.onInputChange", "ignore",
     "onInputChange is 'ignore'; expected recompute .* or fail"),
    ("spark.fullwindow.recovery.onUncheckedWrite", "skip",
     "onUncheckedWrite is 'skip'; expected rerun .* or fail"),
])
def test_bad_values(key, value, expected):
    conf = {"spark.fullwindow.recovery.enabled": "true", "spark.fullwindow.recovery.dir": "/d",
            "spark.fullwindow.recovery.jobId": "j", key: value}
    with pytest.raises(ConfigurationError, match=expected):
        settings_from(conf.get, "x")


def test_sizes_and_durations():
    s = settings_from({"spark.fullwindow.recovery.enabled": "true",
                       "spark.fullwindow.recovery.dir": "hdfs://nn/r",
                       "spark.fullwindow.recovery.jobId": "j",
                       "spark.fullwindow.eventStore.writeBufferSize": "512k",
                       "spark.fullwindow.eventStore.flushInterval": "250ms"}.get, "x")
    assert (s.write_buffer_size, s.flush_interval, s.job_dir) == (512 * 1024, 0.25, "hdfs://nn/r/j")
    d = settings_from({"spark.fullwindow.recovery.enabled": "true",
                       "spark.fullwindow.recovery.dir": "/r",
                       "spark.fullwindow.recovery.jobId": "j"}.get, "x")
    assert (d.write_buffer_size, d.flush_interval, d.lease_timeout) == (1 << 20, 1.0, 60.0)
    assert d.on_input_change == "recompute" and d.on_unchecked_write == "rerun"
    t = settings_from({"spark.fullwindow.recovery.enabled": "true",
                       "spark.fullwindow.recovery.dir": "/r", "spark.fullwindow.recovery.jobId": "j",
                       "spark.fullwindow.recovery.leaseTimeout": "2min"}.get, "x")
    assert t.lease_timeout == 120.0


def test_off_by_default_leaves_plans_alone(spark, conf):
    assert spark.conf.get("spark.fullwindow.recovery.enabled", None) in (None, "false")
    out = spark.range(10).fullWindowPartition().mapPartition(lambda rows: rows, "id long")
    plan = out._jdf.queryExecution().analyzed().toString()
    assert "FullWindowCommit" not in plan and "FullWindowRecovered" not in plan
    conf.set("spark.fullwindow.recovery.enabled", "false")
    out = spark.range(10).fullWindowPartition().sortPartition("id")
    assert "FullWindowCommit" not in out._jdf.queryExecution().analyzed().toString()


def test_recovery_switched_on_after_the_session_was_made_fails_at_the_first_action(
        spark, conf, tmp_path):
    """``import fullwindow`` starts a job's recovery runtime when a session is made with the
    recovery settings (tests/test_recovery_jobscope.py runs such a job, settings from
    spark-defaults.conf, killed and resumed). Settings switched on later, with no
    ``fullwindow.recovery.start(spark)``: the job's first write, SQL hint operation or query
    whose shuffles it keeps fails, naming the setting and what to do, and writes nothing."""
    from pyspark.errors import AnalysisException

    conf.set("spark.fullwindow.recovery.enabled", "true")
    conf.set("spark.fullwindow.recovery.dir", str(tmp_path / "recovery"))
    conf.set("spark.fullwindow.recovery.jobId", "late")
    out = tmp_path / "out"
    df = spark.range(10).selectExpr("id % 3 AS k", "id AS v")
    said = "RECOVERY_NOT_STARTED.*the job's recovery runtime is not started in this driver"
    with pytest.raises(AnalysisException, match=r"RECOVERY_NOT_STARTED\] a write: .*is not "
                                                r"started.*fullwindow.recovery.start\(spark\)"):
        df.write.parquet(str(out))
    assert not out.exists()
    df.createOrReplaceTempView("late_v")
    try:
        with pytest.raises(AnalysisException, match=said):
            spark.sql("SELECT /*+ FULL_WINDOW_PARTITION */ * FROM late_v ORDER BY v") \
                .collect()
    finally:
        spark.catalog.dropTempView("late_v")
    conf.set("spark.fullwindow.recovery.scope", "job")
    with pytest.raises(AnalysisException, match=r"RECOVERY_NOT_STARTED\] a query of the job"):
        df.groupBy("k").count().collect()
    conf.set("spark.fullwindow.recovery.scope", "fullWindow")  # keeps nothing of this query
    assert sorted(df.groupBy("k").count().collect()) == [(0, 4), (1, 3), (2, 3)]


def test_a_session_made_before_import_fullwindow_starts_recovery_at_the_import(tmp_path):
    """A plain PySpark driver that makes its session (jar, extension and the three recovery
    settings on the builder) and only then imports fullwindow: the import starts the job's
    runtime, so its write is one of the job's (recorded), not refused."""
    from helpers import run_python

    out = tmp_path / "out"
    r = run_python(f"""
        import glob, os
        from pyspark.sql import SparkSession

        spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
                 .config("spark.jars", {fullwindow.jar_path()!r})
                 .config("spark.sql.extensions", {fullwindow.EXTENSION_CLASS!r})
                 .config("spark.fullwindow.recovery.enabled", "true")
                 .config("spark.fullwindow.recovery.dir", {str(tmp_path / 'rec')!r})
                 .config("spark.fullwindow.recovery.jobId", "before").getOrCreate())
        import fullwindow  # noqa: F401
        spark.range(5).write.parquet({str(out)!r})
        print("WRITES", sorted(os.path.basename(p).rsplit(".", 1)[-1]
                               for p in glob.glob({str(tmp_path / 'rec' / 'before' / 'writes' / '*')!r})
                               if not p.endswith(".crc")))
    """, timeout=300)
    assert "WRITES ['committed', 'started']" in r.stdout, r.stdout + r.stderr[-3000:]
    assert len(list(out.glob("*.parquet"))) >= 1
