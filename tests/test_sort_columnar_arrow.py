"""sortPartition's columnar sort feeding a non-keyed Python form (jvm .../execution/
FullWindowPythonPartitionExec.scala `columnarInput`, KeyedColumnarSort.scala `SortedArrowInput`):
when the Python node's child is the columnar sort (FullWindowColumnarSortExec over a columnar
scan), the sorted partition reaches Python as Arrow batches filled straight from the sorter's
columns (ArrowChunks), never written as rows nor put into the batches row by row.

Checked here, over Parquet input: the plan marks the Python node `columnar=true` and the sort
node counts the batches it filled into Arrow (`arrowBatches`), none with the switch off; every
batch the Arrow, pandas and row forms get (its rows, their order and values, its size, its Arrow
schema) equals the row path's, over every fixed-width type with nulls, NaN and -0.0, string and
binary columns, ascending, descending and nulls-last orders on one and two keys, with and
without adaptive execution; the Python node's row and byte metrics equal the row path's;
maxRecordsPerBatch and the byte limit (4.0+) end the batches where they end on the row path;
a partition larger than the execution memory is sorted in runs spilled to disk and merged,
and rows too wide for any run fall back to the row sorter, still fed; empty partitions give no
batch either way; batches unbounded in rows keep the row path. One session, with a small
execution memory pool, for the whole module."""
from __future__ import annotations

import hashlib

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark.sql import functions as F

import fullwindow
from fullwindow import Order
from helpers import executed_plan, fixed_width_parquet, is_connect, with_decimals, with_strings

KEY = "spark.fullwindow.sort.columnar.enabled"
RECORDS = "spark.sql.execution.arrow.maxRecordsPerBatch"
# A pool of (2 GiB heap - 300 MiB) x 0.01 = 17.5 MiB, shared by the 2 tasks of a stage
ROWS = 12_000
BIG_ROWS = 600_000
OUT = "p int, i int, n long, digest string"


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def arrow_batches(batches):
    """Per batch: the partition, its position, its rows, a digest of its schema and its rows in
    order."""
    from pyspark import TaskContext

    p = TaskContext.get().partitionId()
    for i, b in enumerate(batches):
        yield pa.RecordBatch.from_pydict(
            {"p": [p], "i": [i], "n": [b.num_rows],
             "digest": [_digest(repr(b.schema) + repr(b.to_pylist()))]},
            schema=pa.schema([("p", pa.int32()), ("i", pa.int32()), ("n", pa.int64()),
                              ("digest", pa.string())]))


def pandas_frames(frames):
    import pandas as pd
    from pyspark import TaskContext

    p = TaskContext.get().partitionId()
    for i, pdf in enumerate(frames):
        text = repr(pdf.dtypes.tolist()) + repr(pdf.to_dict("list"))
        yield pd.DataFrame({"p": [p], "i": [i], "n": [len(pdf)], "digest": [_digest(text)]})


def row_partition(rows):
    from pyspark import TaskContext

    seen = [repr(tuple(r)) for r in rows]
    yield (TaskContext.get().partitionId(), 0, len(seen), _digest(repr(seen)))


FORMS = {
    "arrow": (lambda w: w.mapPartitionInArrow(arrow_batches, OUT), "FullWindowMapPartitionInArrow"),
    "pandas": (lambda w: w.mapPartitionInPandas(pandas_frames, OUT),
               "FullWindowMapPartitionInPandas"),
    "rows": (lambda w: w.mapPartition(row_partition, OUT), "FullWindowMapPartition"),
}

# Each order is total (v last, or alone): Spark's row sorter does not keep the input order of
# equal keys once it spills (and this module's small memory pool makes it spill).
ORDERS = {
    "v_desc": lambda: F.col("v").desc(),
    "k_v": lambda: ["k", "v"],
    "k_desc_nulls_last_v": lambda: [F.col("k").desc_nulls_last(), F.col("v")],
    "i_nulls_last_x_desc_v": lambda: [F.col("i").asc_nulls_last(), F.col("x").desc(), F.col("v")],
    "k_desc_v": lambda: [("k", Order.DESCENDING), ("v", Order.ASCENDING)],
    "s_desc_v": lambda: [F.col("s").desc(), F.col("v")],  # a string key
}


@pytest.fixture(scope="module")
def spark():
    from conftest import SMALL_MEMORY, get_session  # the classic conftest's (tests/connect imports this module)

    s = get_session(SMALL_MEMORY)
    yield s
    for key in (KEY, RECORDS, "spark.sql.adaptive.enabled"):
        s.conf.unset(key)


@pytest.fixture(scope="module")
def fixed(spark, tmp_path_factory):
    """Parquet with a long key k (1,000 values and nulls), v (unique) and columns of every fixed
    width (nulls, NaN and -0.0 among them), in 3 files."""
    return fixed_width_parquet(spark, str(tmp_path_factory.mktemp("sort_arrow") / "fixed"), ROWS,
                               1000)


@pytest.fixture(scope="module")
def data(spark, fixed, tmp_path_factory):
    """`fixed` with a string column s (nulls, empty, multi-byte) and a binary one, in Parquet
    (a projection over the scan would keep the row sort)."""
    path = str(tmp_path_factory.mktemp("sort_arrow") / "strings")
    with_strings(fixed).write.parquet(path)
    return spark.read.parquet(path)


def _run(spark, make, on: bool):
    """make()'s executed plan (None over Spark Connect, whose server explains adaptive
    execution's initial plan, before the columnar rule), rows and metrics."""
    spark.conf.set(KEY, "true" if on else "false")
    try:
        df = make()
        rows = sorted(tuple(r) for r in df.collect())
        plan = None if is_connect(df) else executed_plan(df)
        return plan, rows, fullwindow.operator_metrics(df)
    finally:
        spark.conf.unset(KEY)


def _node_line(plan: str, node: str) -> str:
    return next(ln for ln in plan.splitlines() if f"{node} " in ln)


def _check(spark, make, node, rows=ROWS):
    """make() with the feed and with the switch off: the same batches and Python metrics; the
    plans and the sort node's arrowBatches say which ran. Returns the feed's rows and metrics."""
    fplan, fed, fm = _run(spark, make, True)
    rplan, plain, rm = _run(spark, make, False)
    if fplan is not None:
        assert "columnar=true" in _node_line(fplan, node), fplan
        assert "columnar=true" in _node_line(fplan, "FullWindowSortPartition"), fplan
        assert "ColumnarToRow" not in fplan, fplan
        assert "columnar=true" not in rplan, rplan
    assert fed == plain
    assert sum(r[2] for r in fed) == rows
    assert fm[f"{node}.numInputRows"] == rm[f"{node}.numInputRows"] == rows, (fm, rm)
    assert fm[f"{node}.numOutputRows"] == rm[f"{node}.numOutputRows"], (fm, rm)
    # the same Arrow stream, byte for byte in size
    assert fm[f"{node}.pythonDataSent"] == rm[f"{node}.pythonDataSent"] > 0, (fm, rm)
    assert fm["FullWindowSortPartition.columnarSorts"] + \
        fm["FullWindowSortPartition.rowSortFallbacks"] >= 1, fm
    assert fm["FullWindowSortPartition.numOutputRows"] == rows, fm
    assert fm["FullWindowSortPartition.peakMemory"] > 0, fm
    if node != "FullWindowMapPartition":  # one output row a batch
        assert fm["FullWindowSortPartition.arrowBatches"] == len(fed) > 0, fm
    else:
        assert fm["FullWindowSortPartition.arrowBatches"] > 0, fm
    assert "FullWindowSortPartition.arrowBatches" not in rm, rm
    return fed, fm


@pytest.mark.parametrize("order", sorted(ORDERS))
@pytest.mark.parametrize("form", sorted(FORMS))
def test_same_batches_as_the_row_path(spark, data, form, order):
    call, node = FORMS[form]
    fed, _ = _check(spark, lambda: call(data.fullWindowPartition().sortPartition(ORDERS[order]())
                                        .fullWindowPartition()), node)
    assert len(fed) >= 2  # partitions of 4,000 or 8,000 rows: one batch each


@pytest.mark.parametrize("adaptive", ["true", "false"])
@pytest.mark.parametrize("form", ["arrow", "pandas"])
def test_small_batches_fixed_width_columns(spark, fixed, form, adaptive):
    # only fixed-width columns: with the rows held by index, the batches are gathered column by
    # column; 7 rows a batch
    call, node = FORMS[form]
    df = fixed
    spark.conf.set(RECORDS, "7")
    spark.conf.set("spark.sql.adaptive.enabled", adaptive)
    try:
        fed, _ = _check(spark, lambda: call(df.fullWindowPartition().sortPartition(
            [F.col("x").desc_nulls_last(), F.col("v").desc()]).fullWindowPartition()), node)
    finally:
        spark.conf.unset(RECORDS)
        spark.conf.unset("spark.sql.adaptive.enabled")
    assert max(r[2] for r in fed) == 7 and min(r[2] for r in fed) >= 1


def test_small_batches_with_strings(spark, data):
    call, node = FORMS["arrow"]
    spark.conf.set(RECORDS, "64")
    try:
        fed, _ = _check(spark, lambda: call(data.fullWindowPartition().sortPartition(
            [("k", Order.ASCENDING), ("v", Order.DESCENDING)]).fullWindowPartition()), node)
    finally:
        spark.conf.unset(RECORDS)
    assert max(r[2] for r in fed) == 64


@pytest.mark.parametrize("strings", [False, True])
@pytest.mark.parametrize("form", ["arrow", "pandas"])
def test_decimal_columns(spark, fixed, data, tmp_path, form, strings):
    # decimals of up to 18 digits go into the Arrow batches as decimal128 from their unscaled
    # longs: gathered column by column (fixed-width rows) or row by row (beside strings)
    call, node = FORMS[form]
    path = str(tmp_path / "dec")
    with_decimals(data if strings else fixed).write.parquet(path)
    df = spark.read.parquet(path)
    spark.conf.set(RECORDS, "64")
    try:
        for order in ([F.col("d9").desc(), "v"], [F.col("d18").asc_nulls_last(), "v"]):
            fed, _ = _check(spark, lambda: call(
                df.fullWindowPartition().sortPartition(order).fullWindowPartition()), node)
            assert max(r[2] for r in fed) == 64
    finally:
        spark.conf.unset(RECORDS)


def batch_string_bytes(batches):
    """Per batch: its rows and the bytes of its strings."""
    for b in batches:
        yield pa.RecordBatch.from_pydict(
            {"rows": [b.num_rows], "bytes": [pc.sum(pc.binary_length(b.column("s"))).as_py() or 0]},
            schema=pa.schema([("rows", pa.int64()), ("bytes", pa.int64())]))


def test_byte_limit_ends_batches(spark, data, tmp_path):
    # maxBytesPerBatch (4.0 on) ends a batch before maxRecordsPerBatch rows, where Spark's
    # Arrow writer ends it on the row path: with 1,000-byte strings and a 20,000-byte limit,
    # about 20 rows a batch
    if spark.version < "4.0":
        pytest.skip("spark.sql.execution.arrow.maxBytesPerBatch is Spark 4.0's")
    df = data.select("k", "v", F.repeat(F.lit("x"), 1000).alias("s"))
    path = str(tmp_path / "bytes")
    df.write.mode("overwrite").parquet(path)
    df = spark.read.parquet(path)
    spark.conf.set("spark.sql.execution.arrow.maxBytesPerBatch", "20000")
    try:
        def make():
            return df.fullWindowPartition().sortPartition(["k", "v"]).fullWindowPartition() \
                .mapPartitionInArrow(batch_string_bytes, "rows long, bytes long")
        fplan, fed, fm = _run(spark, make, True)
        _, plain, _ = _run(spark, make, False)
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxBytesPerBatch")
    assert "columnar=true" in _node_line(fplan, "FullWindowMapPartitionInArrow"), fplan
    assert sum(r[0] for r in fed) == sum(r[0] for r in plain) == ROWS
    assert all(1 <= r[0] <= 21 and r[1] < 21_000 for r in fed), fed
    assert max(r[0] for r in fed) >= 19, fed
    # Spark's own writer cuts the same place within a row or two (it counts validity bits)
    assert abs(max(r[0] for r in fed) - max(r[0] for r in plain)) <= 2, (fed[:3], plain[:3])


def test_batches_unbounded_in_rows_keep_the_row_path(spark, data):
    spark.conf.set(RECORDS, "0")
    try:
        df = data.fullWindowPartition().sortPartition("k").fullWindowPartition() \
            .mapPartitionInArrow(arrow_batches, OUT)
        rows = df.collect()
        plan = executed_plan(df)
    finally:
        spark.conf.unset(RECORDS)
    assert "columnar=true" not in _node_line(plan, "FullWindowMapPartitionInArrow"), plan
    assert "columnar=true" in _node_line(plan, "FullWindowSortPartition"), plan
    assert sum(r[2] for r in rows) == ROWS
    m = fullwindow.operator_metrics(df)
    assert m["FullWindowSortPartition.arrowBatches"] == 0, m


def test_larger_than_memory_sorts_in_runs(spark, tmp_path_factory):
    # 600,000 rows of 9 fixed-width columns in one partition (one task: the whole pool is its
    # own): each chunk of 65,536 rows reserves 6.8 MB, so the pool holds two; sorted runs go to
    # disk and are merged into the Arrow batches
    df = fixed_width_parquet(spark, str(tmp_path_factory.mktemp("sort_arrow") / "big"), BIG_ROWS,
                             3000, parts=1)
    call, node = FORMS["arrow"]
    _, m = _check(spark, lambda: call(df.fullWindowPartition().sortPartition(
        [F.col("k").desc(), F.col("v").asc()]).fullWindowPartition()), node, BIG_ROWS)
    assert m["FullWindowSortPartition.columnarRuns"] >= 2, m
    assert m["FullWindowSortPartition.spillSize"] > 0, m
    assert m["FullWindowSortPartition.rowSortFallbacks"] == 0, m


@pytest.mark.parametrize("strings", [False, True])
def test_rows_too_wide_for_memory_fall_back_to_the_row_sorter(spark, tmp_path, strings):
    # 40 long columns: one chunk of rows would need 23 MB, more than the whole pool; the Arrow
    # batches are then filled from the row sorter's rows (with a string column, whose rows are
    # held as records, only the keys take chunks: all 40 are keys then)
    path = str(tmp_path / "wide")
    extra = [F.when(F.col("id") % 10 == 0, None).otherwise(
        F.concat(F.lit("ü"), F.col("id").cast("string"))).alias("s")] if strings else []
    spark.range(0, 30_000, 1, 2).select(
        (F.col("id") % 97).alias("k"), *[(F.col("id") + j).alias(f"v{j}") for j in range(39)],
        *extra).write.parquet(path)
    df = spark.read.parquet(path)
    call, node = FORMS["arrow"]
    keys = ["k"] + [f"v{j}" for j in range(39 if strings else 1)]
    _, m = _check(spark, lambda: call(df.fullWindowPartition().sortPartition(keys)
                                      .fullWindowPartition()), node, 30_000)
    assert m["FullWindowSortPartition.rowSortFallbacks"] >= 1, m


@pytest.mark.parametrize("form", sorted(FORMS))
def test_empty_partitions(spark, fixed, form):
    # splits of 16 KiB: most of a file's splits hold none of its row groups, so most partitions
    # are empty; the function gets no batch from them (the row form: an empty iterator), with
    # the feed as without it
    call, node = FORMS[form]
    spark.conf.set("spark.sql.files.maxPartitionBytes", "16k")
    try:
        fed, _ = _check(spark, lambda: call(spark.read.parquet(*fixed.inputFiles())
                                            .fullWindowPartition().sortPartition(["k", "v"])
                                            .fullWindowPartition()), node)
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    if form == "rows":
        assert sum(r[2] == 0 for r in fed) >= 2, fed
