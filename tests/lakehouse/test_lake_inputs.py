"""Delta Lake and Iceberg tables as the inputs of recovered full-window operations (issue 43,
item 3): an operation's fingerprint covers the table version it reads (Delta's table version,
Iceberg's snapshot: recovery/InputFingerprint.scala), so a commit landing on the table between a
run and the resumed run recomputes the operation (a warning naming the table and both versions)
or, under ``onInputChange=fail``, raises ``RecoveryInputChangedError``; a read pinned by time
travel (``versionAsOf``, ``VERSION AS OF``, ``TIMESTAMP AS OF``) is not changed by later commits,
and is recovered.

In this process, as tests/test_recovery_inputs.py does: a "restart" closes the job and reads its
events anew. tests/lakehouse/test_lake_crash.py kills real drivers."""
from __future__ import annotations

import logging

import pytest

from lake import require, spark_line
from tables import make

SCHEMA = "id long, v long"


def _f(rows):  # the operation's function
    return [(r.id, r.id * 3 % 7) for r in rows]


def _op(df):
    return df.repartition(3, "id").fullWindowPartition().mapPartition(_f, SCHEMA)


def _first_node(df) -> str:
    return df._jdf.queryExecution().analyzed().toString().splitlines()[0]


def _job(spark, tmp_path, name: str):
    """A recovery job of the shared session (tests/test_recovery_input.py's), its
    onInputChange reset when it ends."""
    from test_recovery_input import Run

    return Run(spark, tmp_path, name, {"spark.fullwindow.recovery.onInputChange": "recompute"})


@pytest.fixture(params=["delta", "iceberg"])
def fmt(request):
    require(request.param)
    return request.param


@pytest.mark.every_line
def test_a_commit_between_runs_recomputes_or_fails(spark, tmp_path, fmt, caplog):
    import fullwindow
    from fullwindow.recovery import RecoveryInputChangedError, job_events

    table = make(spark, fmt, str(tmp_path), f"changes_{fmt}")
    table.append(0, 300)
    v1 = table.version()
    with _job(spark, tmp_path, f"changes-{fmt}") as job:
        assert sorted(_op(table.read()).collect()) == sorted(_f(_Rows(range(300))))
        job.restart()
        again = _op(table.read())  # unchanged: read back whole
        assert _first_node(again).startswith("FullWindowRecoveredScan")
        assert again.count() == 300

        table.append(300, 400)  # a commit lands between the runs
        v2 = table.version()
        job.restart()
        with caplog.at_level(logging.WARNING, logger="fullwindow"):
            changed = _op(table.read())
        assert _first_node(changed).startswith("FullWindowCommit")  # computed again
        assert sorted(changed.collect()) == sorted(_f(_Rows(range(400))))
        warning = [r.getMessage() for r in caplog.records if "its input changed" in r.getMessage()]
        assert len(warning) == 1, warning
        assert f"{table.root} (version {_shown(fmt, v1)}" in warning[0], warning
        assert f"version {_shown(fmt, v2)}" in warning[0] and " now)" in warning[0]

        table.append(400, 450)
        v3 = table.version()
        job.restart()
        spark.conf.set("spark.fullwindow.recovery.onInputChange", "fail")
        events = job_events(job.dir, job.name)
        with pytest.raises(RecoveryInputChangedError) as err:
            _op(table.read())
        message = str(err.value)
        assert message.startswith("mapPartition: its input changed since an earlier run")
        assert f"{table.root} (version {_shown(fmt, v2)}" in message, message
        assert f"version {_shown(fmt, v3)}" in message
        fullwindow.recovery.flush(spark)
        assert job_events(job.dir, job.name) == events  # nothing recorded


def test_time_travel_pins_the_input(spark, tmp_path, fmt):
    from fullwindow.recovery._jobs import _fingerprints

    table = make(spark, fmt, str(tmp_path), f"pinned_{fmt}")
    table.append(0, 200)
    v1 = table.version()
    table.append(200, 250)
    with _job(spark, tmp_path, f"pinned-{fmt}") as job:
        reads = {"option": lambda: table.read_at(v1), "sql": lambda: spark.sql(table.sql_at(v1)),
                 "timestamp": lambda: spark.sql(table.sql_at_time(v1))}
        before = {how: _fingerprints(_op(read()), "mapPartition", _f)[:2]
                  for how, read in reads.items()}
        for read in reads.values():
            assert sorted(_op(read()).collect()) == sorted(_f(_Rows(range(200))))
        table.append(250, 300)  # later commits change nothing of a pinned read
        job.restart()
        for how, read in reads.items():
            assert _fingerprints(_op(read()), "mapPartition", _f)[:2] == before[how]
            df = _op(read())
            assert _first_node(df).startswith("FullWindowRecoveredScan"), how
            assert sorted(df.collect()) == sorted(_f(_Rows(range(200))))
        # the table read at its latest version is another operation
        assert _fingerprints(_op(table.read()), "mapPartition", _f)[0] != before["option"][0]


def test_a_commit_to_the_iceberg_branch_read_recomputes(spark, tmp_path):
    """An Iceberg read of a branch by read option (``option("branch", b)``) reads that branch's
    latest snapshot, which neither the table's version nor its snapshot id names: the
    fingerprint has the branch's snapshot, so a commit to the branch alone recomputes."""
    require("iceberg")
    table = make(spark, "iceberg", str(tmp_path), "branched")
    table.append(0, 100)
    spark.sql(f"ALTER TABLE {table.where} CREATE BRANCH audit")
    table.append(100, 110)  # main moves on; the branch stays at 0..99

    def read():
        return spark.read.option("branch", "audit").table(table.where)

    with _job(spark, tmp_path, "branched") as job:
        assert sorted(_op(read()).collect()) == sorted(_f(_Rows(range(100))))
        job.restart()
        assert _first_node(_op(read())).startswith("FullWindowRecoveredScan")
        # a commit to the branch only, between the runs
        spark.range(200, 230, 1, 2).writeTo(f"{table.where}.branch_audit").append()
        job.restart()
        changed = _op(read())
        assert _first_node(changed).startswith("FullWindowCommit")
        assert sorted(changed.collect()) == sorted(_f(_Rows([*range(100), *range(200, 230)])))


def _shown(fmt: str, version) -> str:
    """How the fingerprint names a version: Delta's number; Iceberg's branch and snapshot, as
    the table gives them (``Table.version()``, Spark 4.1 on), or before Spark 4.1 as
    recovery/InputFingerprint.scala reads them from the table."""
    if fmt == "delta":
        return str(version)
    line = tuple(int(p) for p in spark_line().split("."))
    return f"branch_null_snapshot_{version}" if line >= (4, 1) else f"snapshot {version}"


class _Rows(list):
    """Rows with an ``id`` attribute, for computing what ``_f`` gives."""

    def __init__(self, ids):
        super().__init__(type("R", (), {"id": i})() for i in ids)
