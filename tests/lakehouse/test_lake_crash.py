"""Delta Lake and Iceberg inputs across a real driver crash (issue 43, item 3): the driver of
tests/recovery_inputs_job.py (B over an Iceberg table, A over a Delta table) is killed with
SIGKILL while both operations are partly done, a commit lands on the Delta table, and the job is
started again: A (its input's version changed) runs again whole over the new version, with a
warning naming the table and both versions; B (its table has no new snapshot) reuses what it had
committed."""
from __future__ import annotations

import pytest

from helpers import kill_when
from lake import require
from tables import DeltaTable, IcebergTable
from test_recovery_inputs import Job  # tests/: the crash job of the Parquet case


class LakeJob(Job):
    """The inputs job over a Delta table (X) and an Iceberg table (Y) of ``warehouse``."""

    def __init__(self, base, name: str, delta: DeltaTable, iceberg: IcebergTable, warehouse: str):
        super().__init__(base, name)
        self.x, self.y = f"delta:{delta.where}", f"iceberg:{iceberg.where}"
        self.roots = (delta.root, iceberg.root)
        self.warehouse = warehouse

    def options(self, on_input_change: str | None = None) -> dict:
        return {**super().options(on_input_change), "LAKE_WAREHOUSE": self.warehouse}


def _expected(a_ids, b_ids) -> list[tuple]:  # what the job writes (tests/recovery_inputs_job.py)
    return sorted([("a", i, i * 3 % 7) for i in a_ids] + [("b", i, i % 5) for i in b_ids])


@pytest.fixture(scope="module")
def crashed(spark, tmp_path_factory, warehouse):
    require("delta", "iceberg")
    base = tmp_path_factory.mktemp("lake-crash")
    delta = DeltaTable(spark, str(base / "x"))
    delta.append(0, 1500)
    delta.append(1500, 3000)
    iceberg = IcebergTable(spark, "crash_y")
    iceberg.append(0, 800)
    job = LakeJob(base, "lake-inputs", delta, iceberg, warehouse)
    root_a, root_b = job.roots
    p = job.start("r1", slow=0.5)

    def both_partly_done() -> bool:
        a, b = job.over(root_a), job.over(root_b)
        return (a is not None and b is not None and job.finished(b) == {0, 1, 2}
                and 1 <= len(job.finished(a)) < 8)

    kill_when(p, both_partly_done)
    fp_a, fp_b = job.over(root_a), job.over(root_b)
    assert 1 <= len(job.finished(fp_a)) < 8 and job.finished(fp_b) == {0, 1, 2}
    before = delta.version()
    delta.append(3000, 4500)  # the commit landing between the crash and the resume
    return job, delta, fp_a, fp_b, before


def test_a_commit_on_the_delta_input_recomputes_what_reads_it(crashed):
    job, delta, fp_a, fp_b, before = crashed
    root_a, root_b = job.roots
    job.run("r2")
    assert job.output() == _expected(range(4500), range(800))
    # A's table has a new version: a new fingerprint, and all of its partitions ran again (A's
    # partitions are 4..11 of the stage that writes B's then A's)
    assert job.over(root_a) != fp_a
    assert job.ran("A", "r2") == [4 + p for p in range(8)]
    # B's table did not change: same fingerprint, only its unfinished partition ran
    assert job.over(root_b) == fp_b
    assert job.ran("B", "r2") == [3]
    warning = [line for line in job.log("r2").splitlines() if "its input changed" in line]
    assert len(warning) == 1, warning
    assert f"{root_a} (version {before} of table " in warning[0], warning
    assert f"version {delta.version()} of table " in warning[0] and root_b not in warning[0]
