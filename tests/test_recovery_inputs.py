"""Recovery when the files a job reads change between a crash and the resume (issue 33 item 4).
The listing of each file-based input (path, size, modification time, ETag) and each versioned
table's version are part of an operation's fingerprint, so a resumed run never mixes partitions
committed from the old input with the new one.

With real processes: the driver of tests/recovery_inputs_job.py (B over directory Y, A over
directory X, written together) is killed with SIGKILL while both operations are partly done, a
file is added to X, and the job is started again: with the default (``onInputChange=recompute``)
A runs again whole over the new X while B, whose input did not change, reuses what it had
committed. In this process (a "restart" closes the job and reads its events anew, as
tests/test_recovery_input.py does): ``onInputChange=fail`` stops before anything is written or
recorded, naming the directory; the SQL hint path; and the input kinds (V2 file tables,
partitioned catalog tables) the fingerprint covers.
"""
from __future__ import annotations

import os

import pytest

from helpers import RecoveryJob, kill_when

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JOB = os.path.join(ROOT, "tests", "recovery_inputs_job.py")


def write_ids(directory: str, name: str, lo: int, hi: int) -> None:
    """One Parquet file of ids lo..hi-1 in ``directory``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(directory, exist_ok=True)
    pq.write_table(pa.table({"id": pa.array(range(lo, hi), pa.int64())}),
                   os.path.join(directory, name))


def _fa(rows):  # what the job's A computes
    return [("a", r.id, r.id * 3 % 7) for r in rows]


def _fb(rows):  # what the job's B computes
    return [("b", r.id, r.id % 5) for r in rows]


def fresh_run(spark, x: str, y: str) -> list[tuple]:
    """The job's output computed afresh (no recovery) over the inputs as they are now."""
    schema = "op string, id long, v long"
    b = spark.read.parquet(y).repartition(4, "id").fullWindowPartition().mapPartition(_fb, schema)
    a = spark.read.parquet(x).repartition(8, "id").fullWindowPartition().mapPartition(_fa, schema)
    return sorted(tuple(r) for r in b.union(a).collect())


class Job(RecoveryJob):
    script = JOB

    def __init__(self, base, name: str):
        super().__init__(base, name)
        self.x = os.path.join(self.base, "in-x")
        self.y = os.path.join(self.base, "in-y")

    def options(self, on_input_change: str | None = None) -> dict:
        return {"IN_X": self.x, "IN_Y": self.y, "ON_INPUT_CHANGE": on_input_change}

    def over(self, directory: str) -> str | None:
        """The last fingerprint recorded for the operation that reads ``directory``."""
        fp = None
        for e in self.events():
            if e["type"] == "vertexInputs" and list(e["inputs"]) == [directory]:
                fp = e["fingerprint"]
        return fp


@pytest.fixture(scope="module")
def crashed(tmp_path_factory):
    """The job killed with both operations partly done, then a file added to X."""
    job = Job(tmp_path_factory.mktemp("inputs"), "inputs")
    write_ids(job.x, "part-0.parquet", 0, 1500)
    write_ids(job.x, "part-1.parquet", 1500, 3000)
    write_ids(job.y, "part-0.parquet", 0, 800)
    p = job.start("r1", slow=0.5)

    def both_partly_done() -> bool:
        a, b = job.over(job.x), job.over(job.y)
        return (a is not None and b is not None and job.finished(b) == {0, 1, 2}
                and 1 <= len(job.finished(a)) < 8)

    kill_when(p, both_partly_done)
    fp_a, fp_b = job.over(job.x), job.over(job.y)
    done_a, done_b = job.finished(fp_a), job.finished(fp_b)
    assert 1 <= len(done_a) < 8 and done_b == {0, 1, 2}
    write_ids(job.x, "part-2.parquet", 3000, 4500)  # the new input
    return job, fp_a, fp_b


def test_recompute_reruns_the_changed_operation_whole_and_reuses_the_unchanged_one(crashed,
                                                                                   spark):
    job, fp_a, fp_b = crashed
    job.run("r2")
    # the output is a fresh run's over the new input: no partition of the old X mixed in
    assert job.output() == fresh_run(spark, job.x, job.y)
    assert len([r for r in job.output() if r[0] == "a"]) == 4500
    # A's input changed: a new fingerprint, and every one of its partitions ran again (A's
    # partitions are 4..11 of the stage that writes B's then A's)
    assert job.over(job.x) != fp_a
    assert job.ran("A", "r2") == [4 + p for p in range(8)]
    # B's input did not change: same fingerprint, and only its unfinished partition ran
    assert job.over(job.y) == fp_b
    assert job.ran("B", "r2") == [3]
    warning = [line for line in job.log("r2").splitlines() if "its input changed" in line]
    assert len(warning) == 1 and f"{job.x} (then 2 files" in warning[0], warning
    assert "now 3 files" in warning[0] and "onInputChange=recompute" in warning[0]
    assert job.y not in warning[0]


# ---- in this process -----------------------------------------------------------------------------

def _recovery(spark, directory: str, job_id: str, **extra: str) -> dict:
    conf = {"spark.fullwindow.recovery.enabled": "true",
            "spark.fullwindow.recovery.dir": directory,
            "spark.fullwindow.recovery.jobId": job_id,
            "spark.fullwindow.eventStore.flushInterval": "100ms", **extra}
    for k, v in conf.items():
        spark.conf.set(k, v)
    return conf


def _restart(spark, directory: str, job_id: str) -> None:
    """As if the driver started again: events flushed, the job's state read anew."""
    import fullwindow
    from fullwindow.recovery._jobs import _runtime

    fullwindow.recovery.flush(spark)
    _runtime.close_job(os.path.join(directory, job_id))
    fullwindow.recovery.start(spark)


def test_fail_names_the_changed_directory_and_writes_nothing(spark, tmp_path):
    import fullwindow
    from fullwindow.recovery import RecoveryInputChangedError, job_events

    data, rec = str(tmp_path / "data"), str(tmp_path / "rec")
    write_ids(data, "part-0.parquet", 0, 500)
    write_ids(data, "part-1.parquet", 500, 1000)
    conf = _recovery(spark, rec, "fail", **{"spark.fullwindow.recovery.onInputChange": "fail"})
    out = str(tmp_path / "out")

    def job():
        return spark.read.parquet(data).repartition(4, "id").fullWindowPartition() \
            .mapPartition(_fa, "op string, id long, v long")

    try:
        assert job().count() == 1000
        _restart(spark, rec, "fail")
        assert job()._jdf.queryExecution().analyzed().toString().startswith(
            "FullWindowRecoveredScan")  # unchanged: read back
        write_ids(data, "part-2.parquet", 1000, 1200)
        _restart(spark, rec, "fail")
        events = job_events(rec, "fail")
        operators = sorted(os.listdir(os.path.join(rec, "fail", "operators")))
        for attempt in range(2):  # nothing recorded: failing again the second time
            with pytest.raises(RecoveryInputChangedError) as err:
                job().write.parquet(out)
            message = str(err.value)
            assert message.startswith("mapPartition: its input changed since an earlier run of "
                                      "recovery job 'fail'")
            assert f"{data} (then 2 files" in message and "now 3 files" in message
            assert "spark.fullwindow.recovery.onInputChange=recompute" in message
            assert "new spark.fullwindow.recovery.jobId" in message
            fullwindow.recovery.flush(spark)
            assert job_events(rec, "fail") == events
            assert sorted(os.listdir(os.path.join(rec, "fail", "operators"))) == operators
            assert not os.path.exists(out)
        assert isinstance(err.value, fullwindow.FullWindowError)

        spark.conf.set("spark.fullwindow.recovery.onInputChange", "recompute")
        assert job().count() == 1200  # computed again from the new input
        spark.conf.set("spark.fullwindow.recovery.onInputChange", "sometimes")
        with pytest.raises(fullwindow.ConfigurationError,
                           match="spark.fullwindow.recovery.onInputChange is 'sometimes'; "
                                 "expected recompute .* or fail"):
            job()
    finally:
        fullwindow.recovery.cleanup(spark)
        for k in conf:
            spark.conf.unset(k)


def test_sql_hint_operations_over_a_changed_directory(spark, tmp_path):
    import fullwindow
    from pyspark.errors import AnalysisException

    data, rec = str(tmp_path / "data"), str(tmp_path / "rec")
    write_ids(data, "part-0.parquet", 0, 300)
    conf = _recovery(spark, rec, "sql")
    query = f"SELECT /*+ FULL_WINDOW_PARTITION */ id FROM parquet.`{data}` ORDER BY id DESC"

    def first_node(df) -> str:
        return df._jdf.queryExecution().analyzed().toString().splitlines()[0]

    try:
        fullwindow.recovery.start(spark)
        df = spark.sql(query)
        assert first_node(df).startswith("FullWindowCommit sql sortPartition")
        assert df.count() == 300
        _restart(spark, rec, "sql")
        df = spark.sql(query)  # unchanged: read back
        assert first_node(df).startswith("FullWindowRecoveredScan sql sortPartition")
        assert df.count() == 300

        write_ids(data, "part-1.parquet", 300, 400)
        _restart(spark, rec, "sql")
        df = spark.sql(query)  # changed, recompute: computed again
        assert first_node(df).startswith("FullWindowCommit sql sortPartition")
        assert sorted(r.id for r in df.collect()) == list(range(400))

        write_ids(data, "part-2.parquet", 400, 450)
        _restart(spark, rec, "sql")
        spark.conf.set("spark.fullwindow.recovery.onInputChange", "fail")
        with pytest.raises(AnalysisException) as err:
            spark.sql(query)
        text = str(err.value)
        assert "[FULLWINDOW.RECOVERY_INPUT_CHANGED] sql sortPartition: its input changed" in text
        assert f"{data} (then 2 files" in text and "now 3 files" in text
    finally:
        fullwindow.recovery.cleanup(spark)
        for k in (*conf, "spark.fullwindow.recovery.onInputChange"):
            spark.conf.unset(k)


def test_what_the_fingerprint_covers(spark, tmp_path):
    """A glob, a V2 file table (a file source not in useV1SourceList) and a partitioned catalog
    table (a CatalogFileIndex): another file changes the fingerprint, not the structural one;
    the same listing read again gives the same fingerprint."""
    from fullwindow.recovery._jobs import _fingerprints

    def op(df):
        return df.fullWindowPartition().mapPartition(_fa, "op string, id long, v long")

    glob = str(tmp_path / "glob" / "*.parquet")
    write_ids(str(tmp_path / "glob"), "a.parquet", 0, 10)
    fp1, s1, in1 = _fingerprints(op(spark.read.parquet(glob)), "mapPartition", _fa)
    write_ids(str(tmp_path / "glob"), "b.parquet", 10, 20)
    fp2, s2, in2 = _fingerprints(op(spark.read.parquet(glob)), "mapPartition", _fa)
    assert fp2 != fp1 and s2 == s1  # a file matching the glob anew: a changed input
    assert [line.split("\t")[:1] + line.split("\t")[2:3] for line in in1 + in2] == \
        [[glob, "1"], [glob, "2"]]

    data = str(tmp_path / "v2")
    write_ids(data, "part-0.parquet", 0, 10)
    spark.conf.set("spark.sql.sources.useV1SourceList", "")
    try:
        read = lambda: spark.read.parquet(data)  # noqa: E731
        assert "RelationV2" in read()._jdf.queryExecution().analyzed().toString()
        fp1, s1, in1 = _fingerprints(op(read()), "mapPartition", _fa)
        assert _fingerprints(op(read()), "mapPartition", _fa)[:2] == (fp1, s1)
        write_ids(data, "part-1.parquet", 10, 20)
        fp2, s2, in2 = _fingerprints(op(read()), "mapPartition", _fa)
    finally:
        spark.conf.unset("spark.sql.sources.useV1SourceList")
    assert fp2 != fp1 and s2 == s1
    # one input each: root, digest, files, bytes
    assert [line.split("\t")[0] for line in in1 + in2] == [data] * 2  # the path as given
    assert [line.split("\t")[2] for line in in1 + in2] == ["1", "2"]

    table = "fw_inputs_partitioned"
    spark.sql(f"CREATE TABLE {table} (id BIGINT, p INT) USING parquet PARTITIONED BY (p) "
              f"LOCATION '{tmp_path / 'table'}'")
    try:
        spark.sql(f"INSERT INTO {table} VALUES (1, 0), (2, 1)")
        plan = spark.table(table)._jdf.queryExecution().analyzed().toString()
        assert "Relation" in plan
        fp1, s1, in1 = _fingerprints(op(spark.table(table)), "mapPartition", _fa)
        assert _fingerprints(op(spark.table(table)), "mapPartition", _fa)[:2] == (fp1, s1)
        spark.sql(f"INSERT INTO {table} VALUES (3, 1)")
        fp2, s2, in2 = _fingerprints(op(spark.table(table)), "mapPartition", _fa)
        assert fp2 != fp1 and s2 == s1
        root, _, files, _ = in2[0].split("\t")
        assert root.endswith(f"{table} at file:{tmp_path / 'table'}") and files == "3", in2
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {table}")


def _total(rows):
    yield (sum(r[0] for r in rows),)


def _text_versions(directory: str, job_id: str) -> list:
    """The ``textVersion`` each run of the job recorded in its ``runStarted`` record."""
    from fullwindow.recovery.eventstore import EventStore

    runs: list = []
    EventStore.read_segments(os.path.join(directory, job_id, "events"), runs=runs)
    return [r.get("textVersion") for r in runs]


def test_operations_over_other_columns_of_one_input_are_told_apart(spark, tmp_path):
    """Two full-window operations with one function over ``select("a")`` and ``select("b")`` of
    the same files, and an SQL hint operation over a filter on either column: each has its own
    fingerprint, so a resume reads back each one's own committed output. Plan texts of version
    1 (a job directory whose first run recorded no ``textVersion``) dropped the column
    positions: there the two had one fingerprint and the resume returned b's total for a."""
    import fullwindow
    from fullwindow._jvm import facade
    from fullwindow.recovery import job_events
    from fullwindow.recovery._jobs import _fingerprints

    data, rec = str(tmp_path / "data"), str(tmp_path / "rec")
    spark.range(100).selectExpr("id AS a", "id * 2 AS b").coalesce(1).write.parquet(data)
    # the full-window operations' own recovery (the vertices counted below are theirs; the
    # default scope would keep the shuffles of the queries too)
    conf = _recovery(spark, rec, "columns", **{"spark.fullwindow.recovery.scope": "fullWindow"})

    def totals():
        df = spark.read.parquet(data)
        return [df.select(c).fullWindowPartition().mapPartition(_total, "s long").collect()[0].s
                for c in ("a", "b")]

    def hinted(column):
        return spark.sql(f"SELECT /*+ FULL_WINDOW_PARTITION */ * FROM parquet.`{data}` "
                         f"WHERE {column} > 150 ORDER BY a").count()

    try:
        fullwindow.recovery.start(spark)
        assert totals() == [4950, 9900] and [hinted("a"), hinted("b")] == [0, 24]
        _restart(spark, rec, "columns")
        assert totals() == [4950, 9900] and [hinted("a"), hinted("b")] == [0, 24]
        events = job_events(rec, "columns")
        ops = {(e["operator"], e["fingerprint"]) for e in events
               if e["type"] == "vertexInitialized"}
        assert {op for op, _ in ops} == {"mapPartition", "sql sortPartition"} and len(ops) == 4, ops
        # the resume read each one back: nothing was initialized again
        assert sum(e["type"] == "vertexInitialized" for e in events) == 4
        assert _text_versions(rec, "columns") == [2, 2]
    finally:
        fullwindow.recovery.cleanup(spark)
        for k in conf:
            spark.conf.unset(k)

    # version 1's texts, as an older job directory keeps using them: one fingerprint for both
    df = spark.read.parquet(data)
    legacy = str(tmp_path / "legacy-job")
    facade(df).textVersion(legacy, 1)
    one = [_fingerprints(df.select(c), "mapPartition", _total, job_dir=legacy)[0]
           for c in ("a", "b")]
    two = [_fingerprints(df.select(c), "mapPartition", _total)[0] for c in ("a", "b")]
    assert one[0] == one[1] and two[0] != two[1]


_SCRIPT = """
hold = "/x/hold"
def helper():
    return hold
def f(batches):
    for b in batches:
        yield b
    helper()
"""


def _pickled_udf(path: str, src: str = _SCRIPT) -> bytes:
    """The command pyspark ships for a UDF whose function a driver script at ``path`` defines
    (cloudpickle keeps such a function by value, its code naming ``path``)."""
    from pyspark.serializers import CloudPickleSerializer

    g = {"__name__": "__main__"}
    exec(compile(src, path, "exec"), g)
    return CloudPickleSerializer().dumps((g["f"], "k long"))


def test_a_udfs_fingerprint_leaves_out_the_directory_of_the_driver_script(spark):
    """The fingerprint of a shuffle over a Python UDF hashes the UDF's pickled command with the
    driver script's path (recovery puts it in the session) given as its file name alone, so a
    script run from another directory on the resume (YARN's next attempt in cluster mode: the
    attempt's container directory; a scheduler's temporary copy) finds its kept shuffles: the
    same script's UDF from two directories, of paths of either length, hashes the same; another
    file name, or other code or captured values, do not. (End to end: tests/test_recovery_yarn.py
    resumes a plain job in YARN's next attempt.)"""
    from fullwindow.recovery._jobs import tell_driver_script
    from fullwindow.recovery.config import DRIVER_SCRIPT, driver_script

    jvm = spark.sparkContext._jvm
    paths = getattr(jvm.org.apache.spark.sql.fullwindow.recovery, "PickledPaths")

    def hashed(path: str, src: str = _SCRIPT, script: str | None = None) -> bytes:
        return bytes(paths.withoutDirectory(bytearray(_pickled_udf(path, src)),
                                            path if script is None else script))

    one, two = "/srv/attempt_01/job.py", "/srv/attempt_02/job.py"
    deep = "/tmp/" + "d" * 300 + "/job.py"  # a BINUNICODE string, and another frame length
    assert _pickled_udf(one) != _pickled_udf(two)
    assert hashed(one) == hashed(two) == hashed(deep)
    assert hashed("/srv/attempt_02/other.py") != hashed(one)
    assert hashed(two, _SCRIPT.replace("/x/hold", "/y/hold")) != hashed(one)
    assert hashed(two, _SCRIPT.replace("yield b", "yield b.head(1)")) != hashed(one)
    # another script's path given: the pickle is hashed as it is
    assert hashed(one, script="/srv/elsewhere.py") == _pickled_udf(one)
    # what recovery tells the session: this process's __main__ file (none in a pytest-xdist
    # worker, started from a string: nothing is set then)
    import sys

    main = getattr(sys.modules["__main__"], "__file__", None)
    assert driver_script() == (main if isinstance(main, str) else "")
    try:
        tell_driver_script(spark, one)
        assert spark.conf.get(DRIVER_SCRIPT) == one
        tell_driver_script(spark, "")  # no script: the session keeps what it has
        assert spark.conf.get(DRIVER_SCRIPT) == one
    finally:
        spark.conf.unset(DRIVER_SCRIPT)


def test_a_job_directory_written_before_text_version_2_keeps_its_fingerprints(spark, tmp_path,
                                                                             monkeypatch):
    """A job directory whose runs recorded no ``textVersion`` (written before it existed, with
    the fingerprints of version 1) is resumed with version 1's plan texts: its committed
    operation is read back, not computed again, its committed append is not appended again;
    the resumed run records version 1."""
    import fullwindow
    from fullwindow.recovery import _jobs, job_events
    from fullwindow.recovery.eventstore import decode_records, encode_record

    data, rec = str(tmp_path / "data"), str(tmp_path / "rec")
    write_ids(data, "part-0.parquet", 0, 100)
    conf = _recovery(spark, rec, "old")

    out = str(tmp_path / "out")

    def total():
        spark.read.parquet(data).where("id % 2 = 0").write.mode("append").parquet(out)
        return spark.read.parquet(data).fullWindowPartition().mapPartition(
            _total, "s long").collect()[0].s

    try:
        with monkeypatch.context() as m:  # the first run as an older fullwindow made it
            m.setattr(_jobs, "_new_text_version", lambda jvm: 1)
            fullwindow.recovery.start(spark)
            assert total() == 4950
            fullwindow.recovery.flush(spark)
            _jobs._runtime.close_job(os.path.join(rec, "old"))
        events_dir = os.path.join(rec, "old", "events")
        for name in os.listdir(events_dir):  # ... which recorded no textVersion
            path = os.path.join(events_dir, name)
            with open(path, "rb") as f:
                events, problems = decode_records(f.read())
            assert not problems
            with open(path, "wb") as f:
                for e in events:
                    e.pop("textVersion", None)
                    f.write(encode_record(e))
        assert _text_versions(rec, "old") == [None]
        fullwindow.recovery.start(spark)
        assert total() == 4950
        assert _text_versions(rec, "old") == [None, 1]
        inits = [e["fingerprint"] for e in job_events(rec, "old")
                 if e["type"] == "vertexInitialized"]
        assert len(inits) == 1, inits  # read back under its old fingerprint: not computed
        # the write the first run committed, under its old fingerprint, is not written again
        assert spark.read.parquet(out).count() == 50
    finally:
        fullwindow.recovery.cleanup(spark)
        for k in conf:
            spark.conf.unset(k)
