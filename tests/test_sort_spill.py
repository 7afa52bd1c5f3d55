"""sortPartition spills through Spark's sorter instead of holding a partition in memory. Spills are
forced with a tiny in-memory record threshold (a JVM-start setting, hence a session of its own)."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

import fullwindow
from conftest import get_session
from fullwindow import Order

ROWS, PARTS = 60_000, 2


@pytest.fixture(scope="module")
def spill_spark():
    return get_session({"spark.shuffle.spill.numElementsForceSpillThreshold": "5000"})


def test_sort_with_forced_spills_is_correct_and_reports_spill(spill_spark):
    df = spill_spark.range(0, ROWS, 1, PARTS).select(
        F.col("id"), ((F.col("id") * 2654435761) % 1000003).alias("k"))
    out = df.fullWindowPartition().sortPartition([("k", Order.DESCENDING), ("id", Order.ASCENDING)])
    parts = out.rdd.mapPartitions(lambda it: [[(r.k, r.id) for r in it]]).collect()
    assert len(parts) == PARTS
    assert sum(len(p) for p in parts) == ROWS
    for p in parts:
        assert p == sorted(p, key=lambda t: (-t[0], t[1]))
    # ids are contiguous per partition: nothing lost or duplicated
    assert sorted(i for p in parts for _, i in p) == list(range(ROWS))

    out.collect()
    m = fullwindow.operator_metrics(out)
    assert m["FullWindowSortPartition.spillSize"] > 0, m
    assert m["FullWindowSortPartition.numOutputRows"] == ROWS
