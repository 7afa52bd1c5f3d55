"""Delta Lake and Iceberg tables as the outputs of a recovered job (issue 43, item 3), with real
processes: the driver of tests/recovery_writes_job.py appends A's rows to a Delta table and an
Iceberg table (writes 1 and 2), then writes B's rows with an overwrite of each (writes 3 and 4),
and is killed with SIGKILL while B computes (inside write 3; A_WRITES=2). The job's own records of writes 1
and 2 are then deleted, as if it had died between the tables' commits and those records: the
resumed run must still skip them, told by the tables themselves (Delta's transaction of the
write's app id, Iceberg's snapshot summary property), and write 3 and 4 once. Each table's
history then shows one commit per write."""
from __future__ import annotations

import glob
import json
import os

import pytest

from helpers import kill_when
from tables import DeltaTable, IcebergTable
from test_recovery_writes import A_ROWS, B_ROWS, Job  # tests/: the writes job of the file case

WRITES = "delta,iceberg,deltaOverwrite,icebergOverwrite"


class LakeJob(Job):
    def options(self, writes: str = WRITES, **_) -> dict:
        return {**super().options(writes), "A_WRITES": "2"}  # writes 1 and 2 write A's rows

    def table(self, spark, i: int, kind: str):
        if kind.startswith("delta"):
            return DeltaTable(spark, self.target(i, kind))
        return IcebergTable(spark, f"t{i}")

    def rows_of(self, spark, i: int, kind: str) -> list[tuple]:
        return sorted((r.k, r.v) for r in self.table(spark, i, kind).read().collect())


@pytest.fixture(scope="module")
def resumed(spark, tmp_path_factory, lake_jars):
    base = tmp_path_factory.mktemp("lake-writes")
    job = LakeJob(base, "lake-writes")
    # the test session reads the job's Iceberg tables: its catalog ice is over the same warehouse
    spark.conf.set("spark.sql.catalog.ice.warehouse", os.path.join(job.out, "iceberg"))
    p = job.start("r1", slow=2.0, writes=WRITES)
    kill_when(p, lambda: bool(job.ran("B", "r1")))
    first = {i: job.rows_of(spark, i, kind) for i, kind in ((1, "delta"), (2, "iceberg"))}
    # the driver died after the tables committed writes 1 and 2, before it recorded them
    records = job.records()
    for name in records:
        if name.split(".")[0] in ("1", "2") and name.endswith(".committed"):
            os.remove(os.path.join(job.dir, job.name, "writes", name))
    job.run("r2", writes=WRITES)
    return job, first, records


def test_appends_and_overwrites_are_written_once(spark, resumed):
    job, first, records = resumed
    assert first == {1: A_ROWS, 2: A_ROWS}, "writes 1 and 2 had committed before the kill"
    assert {r.split(".")[0] + "." + r.split(".")[-1] for r in records} >= {"1.committed",
                                                                          "2.committed"}
    kinds = dict(enumerate(WRITES.split(","), start=1))
    for i, kind in kinds.items():
        assert job.rows_of(spark, i, kind) == (A_ROWS if i <= 2 else B_ROWS), (i, kind)
    # writes 1 and 2 were skipped: nothing of A was computed again, and their rows' UDF never ran
    assert job.ran("W1", "r2") == [] and job.ran("W2", "r2") == [] and job.ran("A", "r2") == []
    assert job.ran("W3", "r2") and job.ran("W4", "r2")
    log = open(job._log("r2")).read()
    assert "write 1 of job lake-writes (delta: " in log and "the delta sink holds its commit" in log
    assert "the iceberg sink holds its commit" in log


def test_each_table_history_has_one_commit_per_write(spark, resumed):
    job, _, _ = resumed
    delta1, delta3 = job.table(spark, 1, "delta"), job.table(spark, 3, "deltaOverwrite")
    assert [c["operation"] for c in delta1.commits()] == ["WRITE"]
    assert [(c["operation"], c["parameters"]["mode"]) for c in delta3.commits()] == \
        [("WRITE", "Overwrite")]
    # the txn action of each commit: the write's app id (Delta's idempotent writes)
    for table, number in ((delta1, 1), (delta3, 3)):
        txns = [json.loads(line)["txn"] for f in sorted(glob.glob(f"{table.where}/_delta_log/*.json"))
                for line in open(f) if '"txn"' in line]
        assert len(txns) == 1 and txns[0]["version"] == number, txns
        assert txns[0]["appId"].startswith("fullwindow/lake-writes-") and \
            f".{number}." in txns[0]["appId"]
    ice2, ice4 = job.table(spark, 2, "iceberg"), job.table(spark, 4, "icebergOverwrite")
    assert [c["operation"] for c in ice2.commits()] == ["append"]
    assert [c["operation"] for c in ice4.commits()] == ["overwrite"]
    for table, number in ((ice2, 2), (ice4, 4)):
        (commit,) = table.commits()
        assert f".{number}." in commit["summary"]["fullwindow.write-id"], commit["summary"]
