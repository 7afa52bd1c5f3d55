"""Delta Lake and Iceberg tables as the outputs of a recovered job (issue 43, item 3), with real
processes: the driver of tests/recovery_writes_job.py appends A's rows to a Delta table and an
Iceberg table (writes 1 and 2), then with ``saveAsTable(mode="append")`` into a Delta table and an
Iceberg table that do not exist yet (writes 3 and 4: a CTAS in that run, an append in a resumed
one; A_WRITES=4), then writes B's rows with an overwrite of each (writes 5 and 6), and is killed
with SIGKILL while B computes (inside write 5). The job's own records of writes 1-4 are then
deleted, as if it had died between the tables' commits and those records: the resumed run must
still skip them, told by the tables themselves (Delta's transaction of the write's app id,
Iceberg's snapshot summary property), and write 5 and 6 once. Each table's history then shows
one commit per write."""
from __future__ import annotations

import glob
import json
import os

import pytest

from helpers import kill_when
from lake import require
from tables import DeltaTable, IcebergTable
from test_recovery_writes import A_ROWS, B_ROWS, Job  # tests/: the writes job of the file case

WRITES = "delta,iceberg,deltaSaveAsTable,icebergSaveAsTable,deltaOverwrite,icebergOverwrite"
A_WRITES = 4  # writes 1-4 write A's rows, committed before the kill


class LakeJob(Job):
    warehouse = ""

    def options(self, writes: str = WRITES, **_) -> dict:
        # writes 1-4 write A's rows; the Iceberg tables go to the suite's warehouse
        return {**super().options(writes), "A_WRITES": str(A_WRITES),
                "LAKE_WAREHOUSE": self.warehouse}

    def table(self, spark, i: int, kind: str):
        if kind == "deltaSaveAsTable":  # a managed table of the job's metastore
            return DeltaTable(spark, os.path.join(self.out, "warehouse", f"t{i}"))
        if kind.startswith("delta"):
            return DeltaTable(spark, self.target(i, kind))
        return IcebergTable(spark, f"t{i}")

    def rows_of(self, spark, i: int, kind: str) -> list[tuple]:
        return sorted((r.k, r.v) for r in self.table(spark, i, kind).read().collect())


@pytest.fixture(scope="module")
def resumed(spark, tmp_path_factory, warehouse):
    require("delta", "iceberg")
    base = tmp_path_factory.mktemp("lake-writes")
    job = LakeJob(base, "lake-writes")
    job.warehouse = warehouse  # the test session reads the job's Iceberg tables
    p = job.start("r1", slow=2.0, writes=WRITES)
    kill_when(p, lambda: bool(job.ran("B", "r1")))
    kinds = WRITES.split(",")
    first = {i: job.rows_of(spark, i, kinds[i - 1]) for i in range(1, A_WRITES + 1)}
    # the driver died after the tables committed writes 1-4, before it recorded them
    records = job.records()
    for name in records:
        if name[0].isdigit() and int(name.split(".")[0]) <= A_WRITES and \
                name.endswith(".committed"):
            os.remove(os.path.join(job.dir, job.name, "writes", name))
    job.run("r2", writes=WRITES)
    return job, first, records


def test_appends_and_overwrites_are_written_once(spark, resumed):
    job, first, records = resumed
    assert first == {i: A_ROWS for i in range(1, A_WRITES + 1)}, \
        "writes 1-4 had committed before the kill"
    assert {r.split(".")[0] + "." + r.split(".")[-1] for r in records} >= {
        f"{i}.committed" for i in range(1, A_WRITES + 1)}
    kinds = dict(enumerate(WRITES.split(","), start=1))
    for i, kind in kinds.items():
        assert job.rows_of(spark, i, kind) == (A_ROWS if i <= A_WRITES else B_ROWS), (i, kind)
    # writes 1-4 were skipped: nothing of A was computed again, and their rows' UDF never ran;
    # the saveAsTable appends (3, 4) too, though they were CTAS in the run that made them
    assert all(job.ran(f"W{i}", "r2") == [] for i in range(1, A_WRITES + 1))
    assert job.ran("A", "r2") == []
    assert job.ran("W5", "r2") and job.ran("W6", "r2")
    log = open(job._log("r2")).read()
    assert "write 1 of job lake-writes (delta: " in log and "the delta sink holds its commit" in log
    assert "the iceberg sink holds its commit" in log
    skipped = {e["number"]: e["reason"] for e in job.events() if e["type"] == "writeSkipped"}
    assert skipped == {1: "the delta sink holds its commit", 2: "the iceberg sink holds its commit",
                       3: "the delta sink holds its commit",
                       4: "the iceberg sink holds its commit"}, skipped


def test_each_table_history_has_one_commit_per_write(spark, resumed):
    job, _, _ = resumed
    delta1, delta5 = job.table(spark, 1, "delta"), job.table(spark, 5, "deltaOverwrite")
    assert [c["operation"] for c in delta1.commits()] == ["WRITE"]
    assert [(c["operation"], c["parameters"]["mode"]) for c in delta5.commits()] == \
        [("WRITE", "Overwrite")]
    # the saveAsTable of a table that did not exist: its one commit is the CTAS of the first run
    delta3 = job.table(spark, 3, "deltaSaveAsTable")
    assert [c["operation"] for c in delta3.commits()] == ["CREATE TABLE AS SELECT"]
    # the txn action of each commit: the write's app id (Delta's idempotent writes): the job,
    # the write's fingerprint and occurrence (1: each write here is its fingerprint's only one),
    # at version = its occurrence
    fingerprints = {int(r.split(".")[0]): r.split(".")[1] for r in job.records()
                    if r[0].isdigit()}
    for table, number in ((delta1, 1), (delta3, 3), (delta5, 5)):
        logs = sorted(glob.glob(f"{table.where}/_delta_log/*.json"))
        txns = [json.loads(line)["txn"] for f in logs for line in open(f) if '"txn"' in line]
        assert len(txns) == 1 and txns[0]["version"] == 1, txns
        assert txns[0]["appId"].startswith("fullwindow/lake-writes-") and \
            txns[0]["appId"].endswith(f".{fingerprints[number]}.1"), (txns, fingerprints)
    ice2, ice4 = job.table(spark, 2, "iceberg"), job.table(spark, 4, "icebergSaveAsTable")
    ice6 = job.table(spark, 6, "icebergOverwrite")
    assert [c["operation"] for c in ice2.commits()] == ["append"]
    assert [c["operation"] for c in ice4.commits()] == ["append"]
    assert [c["operation"] for c in ice6.commits()] == ["overwrite"]
    for table, number in ((ice2, 2), (ice4, 4), (ice6, 6)):
        (commit,) = table.commits()
        # the write's identity (job, fingerprint, occurrence), not its start number
        assert commit["summary"]["fullwindow.write-id"].endswith(
            f".{fingerprints[number]}.1"), (commit["summary"], fingerprints)


# ---- in this process: every way of writing to the two formats ------------------------------------

def _writes(spark, base: str, fmt: str) -> dict:
    """Each write form of format ``fmt`` once, in order (all write the same 30 rows); returns
    how to read each target's history: name -> Table."""
    from pyspark.sql import functions as F

    from tables import DeltaTable, IcebergTable

    rows = spark.range(0, 30, 1, 2).selectExpr("id % 3 AS k", "id AS v")
    rows.createOrReplaceTempView("lake_rows")
    path = lambda name: os.path.join(base, name)  # noqa: E731
    if fmt == "delta":
        rows.write.format("delta").mode("append").save(path("d_save"))
        rows.write.format("delta").mode("overwrite").save(path("d_overwrite"))
        spark.sql(f"CREATE TABLE IF NOT EXISTS d_sql (k long, v long) USING delta "
                  f"LOCATION '{path('d_sql')}'")
        spark.sql("INSERT INTO d_sql SELECT * FROM lake_rows")
        spark.sql(f"CREATE TABLE IF NOT EXISTS d_to (k long, v long) USING delta "
                  f"LOCATION '{path('d_to')}'")
        rows.writeTo("d_to").append()
        return {n: DeltaTable(spark, path(n)) for n in ("d_save", "d_overwrite", "d_sql", "d_to")}
    for t in ("i_append", "i_overwrite", "i_dynamic", "i_sql", "i_sql_overwrite", "i_save"):
        spark.sql(f"CREATE TABLE IF NOT EXISTS ice.db.{t} (k long, v long) USING iceberg "
                  "PARTITIONED BY (k)")
    rows.writeTo("ice.db.i_append").append()
    rows.writeTo("ice.db.i_overwrite").overwrite(F.lit(True))
    rows.writeTo("ice.db.i_dynamic").overwritePartitions()
    spark.sql("INSERT INTO ice.db.i_sql SELECT * FROM lake_rows")
    spark.sql("INSERT OVERWRITE ice.db.i_sql_overwrite SELECT * FROM lake_rows")
    rows.write.format("iceberg").mode("append").save("ice.db.i_save")
    spark.sql("CREATE TABLE IF NOT EXISTS ice.db.i_ctas USING iceberg AS SELECT * FROM lake_rows")
    rows.writeTo("ice.db.i_rtas").using("iceberg").createOrReplace()
    return {n: IcebergTable(spark, n) for n in (
        "i_append", "i_overwrite", "i_dynamic", "i_sql", "i_sql_overwrite", "i_save", "i_ctas",
        "i_rtas")}


@pytest.mark.every_line
@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_every_write_form_is_skipped_from_the_tables_own_record(spark, tmp_path, fmt):
    """Each form of format ``fmt`` writes once; the job then "restarts" with its own records of
    the writes gone (as if it had died before making them durable): every write is skipped, told
    by the table alone, and no table gains a commit."""
    import fullwindow
    from fullwindow.recovery import job_events
    from fullwindow.recovery._jobs import _runtime

    rec = str(tmp_path / "recovery")
    conf = {"spark.fullwindow.recovery.enabled": "true", "spark.fullwindow.recovery.dir": rec,
            "spark.fullwindow.recovery.jobId": f"lake-forms-{fmt}",
            "spark.fullwindow.eventStore.flushInterval": "100ms"}
    require(fmt)
    job = conf["spark.fullwindow.recovery.jobId"]
    for k, v in conf.items():
        spark.conf.set(k, v)
    try:
        fullwindow.recovery.start(spark)
        tables = _writes(spark, str(tmp_path), fmt)
        history = {n: t.commits() for n, t in tables.items()}
        # one commit per write (and Delta's CREATE TABLE of the two catalog tables)
        writes = {n: [c["operation"] for c in h if c["operation"] != "CREATE TABLE"]
                  for n, h in history.items()}
        assert all(len(w) == 1 for w in writes.values()), writes
        fullwindow.recovery.flush(spark)
        _runtime.close_job(os.path.join(rec, job))
        for name in glob.glob(os.path.join(rec, job, "writes", "*")):
            os.remove(name)
        fullwindow.recovery.start(spark)
        _writes(spark, str(tmp_path), fmt)
        assert {n: t.commits() for n, t in tables.items()} == history
        fullwindow.recovery.flush(spark)
        skipped = [(e["number"], e["sink"], e["reason"]) for e in job_events(rec, job)
                   if e["type"] == "writeSkipped"]
        assert skipped == [(n, fmt, f"the {fmt} sink holds its commit")
                           for n in range(1, len(tables) + 1)], skipped
    finally:
        fullwindow.recovery.cleanup(spark)
        for k in conf:
            spark.conf.unset(k)
