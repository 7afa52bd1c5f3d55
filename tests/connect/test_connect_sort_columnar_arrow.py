"""tests/test_sort_columnar_arrow.py's check on a Spark Connect session (see conftest.py): the
Arrow and pandas forms after sortPartition get their batches filled from the columnar sort (the
sort node's arrowBatches) and the same batches as with the switch off. The classic module's
session has a small memory pool, which a Connect server cannot take: its spill and fallback
cases stay classic."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from helpers import fixed_width_parquet, needs_connect_result_metrics, with_decimals, with_strings
from test_sort_columnar_arrow import FORMS, ORDERS, ROWS, _check


@pytest.fixture(scope="module")
def data(spark, tmp_path_factory):
    folder = tmp_path_factory.mktemp("connect_sort_arrow")
    fixed = fixed_width_parquet(spark, str(folder / "fixed"), ROWS, 1000)
    with_strings(fixed).write.parquet(str(folder / "strings"))
    return spark.read.parquet(str(folder / "strings"))


@needs_connect_result_metrics()
@pytest.mark.parametrize("order", ["v_desc", "k_desc_nulls_last_v"])
@pytest.mark.parametrize("form", ["arrow", "pandas"])
def test_same_batches_as_the_row_path(spark, data, form, order):
    call, node = FORMS[form]
    # _check compares the batches with the switch off and the Python node's metrics with its
    # (the server explains the plan before the columnar rule: no plan check over Connect)
    fed, m = _check(spark, lambda: call(data.fullWindowPartition().sortPartition(ORDERS[order]())
                                        .fullWindowPartition()), node)
    # the feed ran: the sort node filled every batch the Python form got
    assert sum(r[2] for r in fed) == ROWS
    assert m["FullWindowSortPartition.arrowBatches"] == len(fed) >= 2, m
    assert m["FullWindowSortPartition.columnarSorts"] >= 1, m


@needs_connect_result_metrics()
def test_decimal_columns(spark, data, tmp_path):
    # decimals of up to 18 digits beside strings: sorted on columns, sent as decimal128
    path = str(tmp_path / "dec")
    with_decimals(data).write.parquet(path)
    df = spark.read.parquet(path)
    call, node = FORMS["arrow"]
    fed, m = _check(spark, lambda: call(df.fullWindowPartition().sortPartition(
        [F.col("d18").desc(), "v"]).fullWindowPartition()), node)
    assert m["FullWindowSortPartition.arrowBatches"] == len(fed) >= 2, m
    assert m["FullWindowSortPartition.columnarSorts"] >= 1, m
