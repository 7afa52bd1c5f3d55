"""Runtime mode (FLIP-134): full windows run in BATCH (and AUTOMATIC on bounded input) and fail
at analysis, before any task runs, on a stream or in STREAMING mode."""
from __future__ import annotations

import pytest

from fullwindow import ConfigurationError, StreamingNotSupportedError


@pytest.fixture()
def runtime_mode(spark):
    def set_mode(mode):
        spark.conf.set("spark.fullwindow.runtimeMode", mode)
    yield set_mode
    spark.conf.unset("spark.fullwindow.runtimeMode")


def test_streaming_input_is_rejected_at_analysis(spark):
    stream = spark.readStream.format("rate").option("rowsPerSecond", 1).load()
    assert stream.isStreaming
    jobs_before = len(spark.sparkContext.statusTracker().getJobIdsForGroup())
    with pytest.raises(StreamingNotSupportedError,
                       match=r"sortPartition is a full-window operation and cannot run in STREAMING "
                             r"runtime mode \(its input is a streaming DataFrame\)"):
        stream.fullWindowPartition().sortPartition("value")
    assert len(spark.sparkContext.statusTracker().getJobIdsForGroup()) == jobs_before


def test_streaming_input_in_sql_is_rejected(spark):
    from pyspark.errors import AnalysisException

    spark.readStream.format("rate").load().createOrReplaceTempView("fw_stream")
    with pytest.raises(AnalysisException, match=r"FULLWINDOW.STREAMING_NOT_SUPPORTED.*sortPartition"):
        spark.sql("SELECT /*+ FULL_WINDOW_PARTITION */ * FROM fw_stream ORDER BY value")


def test_streaming_mode_rejects_a_bounded_input(spark, runtime_mode):
    runtime_mode("STREAMING")
    with pytest.raises(StreamingNotSupportedError,
                       match=r"sortPartition .* STREAMING runtime mode \(spark.fullwindow.runtimeMode=STREAMING\)"):
        spark.range(5).fullWindowPartition().sortPartition("id")


@pytest.mark.parametrize("mode", ["BATCH", "AUTOMATIC", "batch"])
def test_batch_and_automatic_run(spark, runtime_mode, mode):
    runtime_mode(mode)
    out = spark.range(0, 5, 1, 1).fullWindowPartition().sortPartition("id", "desc")
    assert [r.id for r in out.collect()] == [4, 3, 2, 1, 0]


def test_batch_mode_still_rejects_a_stream(spark, runtime_mode):
    runtime_mode("BATCH")
    stream = spark.readStream.format("rate").load()
    with pytest.raises(StreamingNotSupportedError, match="streaming DataFrame"):
        stream.fullWindowPartition().sortPartition("value")


def test_unknown_runtime_mode(spark, runtime_mode):
    runtime_mode("SOMETIMES")
    with pytest.raises(ConfigurationError,
                       match=r"spark.fullwindow.runtimeMode is 'SOMETIMES'; expected one of: BATCH, STREAMING, AUTOMATIC"):
        spark.range(5).fullWindowPartition().sortPartition("id")
