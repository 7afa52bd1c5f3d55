"""Every native form the keyed benchmark cases are measured against (benchmarks/natives.py:
keyed_row_natives, keyed_arrow_natives, keyed_pandas_natives, the forms this pyspark line has)
computes what the cases' own variants compute: per key, the count of rows and the sum of x. The
harness only times the forms (writing to the noop sink), so a form computing something else
would be timed without anyone noticing; here each form's rows are collected and compared, and
its plan must hold the node the harness looks for."""
from __future__ import annotations

import re
from collections import defaultdict

import pytest
from pyspark.sql import functions as F

from benchmarks import natives

ROWS = 1_000


def _key_column():
    """Keys of unequal size (key 10 has one row), spread over 3 input partitions; with Arrow
    batches of 7 rows every key but the smallest reaches the Python worker in several batches."""
    return F.when(F.col("id") == 999, F.lit(10)).otherwise(
        F.when(F.col("id") % 10 < 5, F.col("id") % 3).otherwise(F.col("id") % 7 + 3))


def _expected() -> list[tuple[int, int, float]]:
    n: dict[int, int] = defaultdict(int)
    s: dict[int, float] = defaultdict(float)
    for i in range(ROWS):
        k = 10 if i == 999 else (i % 3 if i % 10 < 5 else i % 7 + 3)
        n[k] += 1
        s[k] += float(i % 13)
    return sorted((k, n[k], s[k]) for k in n)


def _forms():
    return [pytest.param(form, id=f"{shape}: {form.name}")
            for shape, forms in (("rows", natives.keyed_row_natives()),
                                 ("arrow", natives.keyed_arrow_natives()),
                                 ("pandas", natives.keyed_pandas_natives()))
            for form in forms]


@pytest.fixture(scope="module")
def small(spark):
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "7")
    df = (spark.range(0, ROWS, numPartitions=3)
          .select(_key_column().cast("long").alias("k"), F.col("id").alias("v"),
                  (F.col("id") % 13).cast("double").alias("x")))
    yield df
    spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")


def test_the_expected_result_is_sound(small):
    """The expected rows (computed here in Python) match Spark's own count and sum."""
    got = sorted((r.k, r.n, r.s) for r in small.groupBy("k").agg(
        F.count("*").alias("n"), F.sum("x").alias("s")).collect())
    assert got == _expected()
    assert len(got) == 11 and (10, 1, float(999 % 13)) in got


@pytest.mark.parametrize("form", _forms())
def test_native_form_counts_and_sums_per_key(small, form):
    assert isinstance(form, natives.NativeForm) and form.frame is not None
    out = form.frame(small)
    assert [f.name for f in out.schema.fields] == ["k", "n", "s"]
    got = sorted((r.k, r.n, r.s) for r in out.collect())
    assert got == _expected()
    # the node the harness checks in the Spark UI is in the plan that ran
    plan = out._jdf.queryExecution().executedPlan().toString()
    names = set(re.findall(r"[A-Za-z]+", plan))
    assert any(node in names for node in form.node.split("|")), (form.node, plan)


@pytest.mark.parametrize("form", [pytest.param(f, id=f.name) for f in natives.keyed_arrow_natives()])
def test_arrow_form_keeps_a_string_key(small, form):
    # the string-key case (keyed_map_partition_in_arrow_string_key): the same per-key results,
    # the key's type carried to the result
    out = form.frame(small.withColumn("k", F.format_string("customer-%05d", "k")))
    assert out.schema["k"].dataType.simpleString() == "string"
    got = sorted((r.k, r.n, r.s) for r in out.collect())
    assert got == sorted((f"customer-{k:05d}", n, s) for k, n, s in _expected())


def test_the_line_offers_the_forms_it_has():
    """Feature detection, not version strings: each form is listed exactly when pyspark has
    its API (transformWithState with Rows from 4.1, transformWithStateInPandas from 4.0)."""
    from pyspark.sql import GroupedData

    rows = [f.name for f in natives.keyed_row_natives()]
    pandas_forms = [f.name for f in natives.keyed_pandas_natives()]
    assert ("transformWithState (rows)" in rows) == hasattr(GroupedData, "transformWithState")
    assert ("transformWithStateInPandas" in pandas_forms) == hasattr(
        GroupedData, "transformWithStateInPandas")
    assert ("Python UDTF over asTable().partitionBy" in rows) == natives.has_table_args()
