"""Whole-job recovery (``spark.fullwindow.recovery.scope=job``, issue 48), with real processes:
the driver of tests/recovery_jobscope_job.py, a plain job (Python UDFs, a shuffle join, a
``groupBy().agg``, a Parquet write; no full-window operation), is killed with SIGKILL while its
slow map stage runs and started again. The output must equal an uninterrupted run's, and the
markers its Python UDFs leave per task show which tasks ran again: only the map tasks whose
output was not kept."""
from __future__ import annotations

import os

import pytest

from helpers import RecoveryJob, kill_when

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JOB = os.path.join(ROOT, "tests", "recovery_jobscope_job.py")
PARTS = [0, 1, 2, 3]


def _write_input(base: str) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    d = os.path.join(base, "in")
    os.makedirs(os.path.join(d, "facts"), exist_ok=True)
    os.makedirs(os.path.join(d, "dims"), exist_ok=True)
    for f in range(4):
        ids = list(range(f * 1000, (f + 1) * 1000))
        pq.write_table(pa.table({"id": ids, "k": [i % 50 for i in ids], "v": ids}),
                       os.path.join(d, "facts", f"part-{f}.parquet"))
    pq.write_table(pa.table({"k": list(range(50)), "name": [f"n{k:02d}" for k in range(50)]}),
                   os.path.join(d, "dims", "part-0.parquet"))
    return d


class Job(RecoveryJob):
    script = JOB

    def __init__(self, base, name, recovery=True, aqe="true", mode="plain",
                 settings="submit"):
        super().__init__(base, name, recovery)
        self.input = _write_input(self.base)
        self.aqe, self.mode, self.settings = aqe, mode, settings
        #: more Spark settings and driver environment (a store's: tests/test_recovery_s3.py)
        self.more_settings: dict = {}
        self.more_env: dict = {}

    def options(self, **options) -> dict:
        """The job's settings from a file it never reads itself (item 5 of issue 48: recovery
        from the settings alone): ``settings="defaults"``, ``spark-defaults.conf`` in the
        ``SPARK_CONF_DIR`` given; ``"submit"``, the same file given to spark-submit
        (``--properties-file`` in ``PYSPARK_SUBMIT_ARGS``). Both reach the driver the same
        way (spark-submit's properties); a ``SPARK_CONF_DIR`` also goes first on the driver's
        class path, which the test JVMs' class-data archive does not begin with, so that
        driver runs without the archive: about 10 CPU seconds more (issue 49), paid by the one
        test that runs this way."""
        conf = {"IN": self.input, "AQE": self.aqe, "MODE": self.mode, **self.more_env}
        if self.settings == "defaults":
            conf["SPARK_CONF_DIR"] = self.defaults()
        else:
            conf["PYSPARK_SUBMIT_ARGS"] = submit_args(self.defaults())
        return conf

    def defaults(self) -> str:
        """A Spark configuration directory whose ``spark-defaults.conf`` puts fullwindow's jar and
        extension on the session and, with recovery, the job's recovery settings: the job
        itself only imports fullwindow (item 5 of issue 48: recovery from the settings alone)."""
        return defaults_dir(self, self.more_settings)

    def shuffles(self) -> list[dict]:
        """The shuffle vertices' vertexInitialized events, in the order their stages started."""
        return [e for e in self.events()
                if e["type"] == "vertexInitialized" and e["operator"] == "shuffle"]

    def slow_shuffle(self) -> str | None:
        """The shuffle the slow UDF's stage writes: the last one to start (after both join
        sides' shuffles; the round-robin one in ``roundrobin`` mode comes before it)."""
        want = 4 if self.mode == "roundrobin" else 3
        fps = []
        for e in self.shuffles():
            if e["fingerprint"] not in fps:
                fps.append(e["fingerprint"])
        return fps[want - 1] if len(fps) >= want else None


def defaults_dir(job: RecoveryJob, more: dict | None = None) -> str:
    """``<job.base>/conf``, whose ``spark-defaults.conf`` puts fullwindow's jar and extension on
    the session and, when ``job.recovery``, whole-job recovery of job ``job.name`` under
    ``job.dir``; ``more``: further settings."""
    import fullwindow

    d = os.path.join(job.base, "conf")
    os.makedirs(d, exist_ok=True)
    settings = {"spark.jars": fullwindow.jar_path(),
                "spark.sql.extensions": fullwindow.EXTENSION_CLASS}
    if job.recovery:
        settings.update({"spark.fullwindow.recovery.enabled": "true",
                         "spark.fullwindow.recovery.dir": job.dir,
                         "spark.fullwindow.recovery.jobId": job.name,
                         "spark.fullwindow.recovery.scope": "job",
                         "spark.fullwindow.eventStore.flushInterval": "200ms"})
    settings.update(more or {})
    with open(os.path.join(d, "spark-defaults.conf"), "w") as f:
        f.writelines(f"{k} {v}\n" for k, v in settings.items())
    return d


def submit_args(conf_dir: str) -> str:
    """``PYSPARK_SUBMIT_ARGS`` giving spark-submit ``conf_dir``'s ``spark-defaults.conf`` as its
    properties file (a driver whose class path the test JVMs' class-data archive still begins
    with, unlike one given a ``SPARK_CONF_DIR``)."""
    return f"--properties-file {os.path.join(conf_dir, 'spark-defaults.conf')} pyspark-shell"


def expected_output() -> list[tuple]:
    """An uninterrupted run's output (name, total, n) for the input _write_input writes: ids 0
    to 3999, k = id % 50 named ``n<k>``, w = 3 * v. Computed, not run (a driver started only for
    it cost a JVM start); test_an_uninterrupted_run_without_recovery_writes_the_reference runs
    the job for it."""
    return sorted((f"n{k:02d}", sum(3 * i for i in range(k, 4000, 50)), len(range(k, 4000, 50)))
                  for k in range(50))


@pytest.fixture(scope="module")
def reference():
    return expected_output()


def test_an_uninterrupted_run_without_recovery_writes_the_reference(tmp_path, reference):
    job = Job(tmp_path, "reference", recovery=False)
    job.run("r1")
    rows = job.output()
    assert len(rows) == 50 and sum(r[2] for r in rows) == 4000
    assert rows == reference


def killed_midway_and_resumed(job: Job, files=None, then_settings: str | None = None) -> str:
    """The plain job killed once 2 of its slow stage's 4 map outputs are kept, then resumed (here,
    and for the other stores and masters: tests/test_recovery_hdfs.py, _s3.py, _cluster.py):
    the slow stage ran in the first run; the output is exact; the join's shuffles are read back
    (A runs no task); only the missing map tasks run; the kept ones are placed as they are (no
    fallback to their rows in the log); the resumed slow shuffle is stable and says how many it
    reused. ``files``: the job directory's store (a Hadoop file system wrapper), where the kept
    map outputs must be before the resume; ``then_settings``: how the resume gets its settings
    (``Job.settings``; None: as the killed run). Returns the slow shuffle's vertex."""
    p = job.start("r1", slow=4.0)
    kill_when(p, lambda: len(job.finished(job.slow_shuffle())) >= 2)
    if then_settings is not None:
        job.settings = then_settings
    slow = job.slow_shuffle()
    done = job.finished(slow)
    assert 2 <= len(done) < len(PARTS), job.log("r1")[-3000:]
    assert job.ran("U", "r1")
    if files is not None:
        kept = files.listdir(f"{job.dir}/{job.name}/shuffles/{slow.split(':', 1)[-1]}")
        assert sum(n.endswith(".data") for n in kept) >= len(done), kept
        # the map tasks did not wait for the store: each output was uploaded by a thread of
        # its executor after its task ended (the event says how long the upload took)
        events = [e for e in job.events() if e["type"] == "taskFinished"]
        assert events and all(isinstance(e.get("uploadMs"), int) for e in events), events[:3]
    job.run("r2")
    assert job.output() == expected_output()
    assert job.ran("A", "r2") == []
    assert job.ran("U", "r2") == sorted(set(PARTS) - done)
    assert "could not place the kept map output" not in job.log("r2")
    last = [e for e in job.shuffles() if e["fingerprint"] == slow][-1]
    assert last["recovered"] == len(done) and last["stable"] is True
    return slow


def _killed_midway(tmp_path, reference, aqe: str, settings: str = "submit") -> tuple[Job, str]:
    """``settings``: how the killed run gets its settings; the runs after it get them from
    spark-submit (a ``SPARK_CONF_DIR`` costs each driver the class-data archive: issue 49)."""
    job = Job(tmp_path, f"midway-{aqe}", aqe=aqe, settings=settings)
    slow = killed_midway_and_resumed(job, then_settings="submit")
    # a third run: every shuffle kept whole, nothing upstream of the write runs
    job.run("r3")
    assert job.output() == reference
    assert job.ran("A", "r3") == [] and job.ran("U", "r3") == []
    return job, slow


def test_killed_midway_through_a_map_stage(tmp_path, reference):
    from fullwindow.recovery import status
    from fullwindow.recovery._status import render

    job, slow = _killed_midway(tmp_path, reference, "true")
    # recovery status lists the job's shuffles: map tasks kept of all, stable, the query
    st = status(job.dir, job.name)
    shuffles = {op["fingerprint"]: op for op in st["operations"] if op["operation"] == "shuffle"}
    assert len(shuffles) == 3 and all(op["intact"] for op in shuffles.values())
    assert shuffles[slow]["committed"] == shuffles[slow]["partitions"] == 4
    assert shuffles[slow]["stable"] is True and shuffles[slow]["query"]
    assert "map tasks of query" in render(st)

    # a changed input (dims rewritten: the same rows in a file of another name): the shuffles
    # that read it, and the slow one above the join, are computed again; facts' shuffle is still
    # read back, but for one of its kept map outputs damaged in place (a byte changed, its size
    # the same): its CRC32 differs from the one its event recorded, so that map task alone runs
    # again, and the output is exact
    import shutil

    dims = os.path.join(job.input, "dims")
    src = os.path.join(dims, "part-0.parquet")
    shutil.copy(src, src + ".tmp")
    os.replace(src + ".tmp", os.path.join(dims, "part-1.parquet"))
    os.remove(src)
    # facts' shuffle: of the join's two, the one with more map tasks (dims is one small file)
    facts = max((e for e in job.shuffles() if e["fingerprint"] != slow),
                key=lambda e: e["numPartitions"])["fingerprint"]
    [victim] = [e for e in job.events() if e["type"] == "taskFinished"
                and e["fingerprint"] == facts and e["partition"] == 1][-1:]
    path = victim["path"].removeprefix("file:")
    with open(path, "r+b") as f:
        f.seek(os.path.getsize(path) // 2)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0xFF]))
    assert os.path.getsize(path) == victim["bytes"]
    job.run("r4")
    assert job.output() == reference
    assert job.ran("A", "r4") == [1]
    assert job.ran("U", "r4") == PARTS


def test_killed_midway_without_adaptive_execution(tmp_path, reference):
    """As above with adaptive execution off, and the killed run's settings in
    ``spark-defaults.conf`` (a ``SPARK_CONF_DIR``) rather than given to spark-submit: recovery
    started from them alone, and kept the map outputs the resume reads back."""
    _killed_midway(tmp_path, reference, "false", settings="defaults")


@pytest.mark.parametrize("mode", ["roundrobin", "nondeterministic"])
def test_unstable_shuffle_is_kept_whole_or_computed_whole(tmp_path, reference, mode):
    """A round-robin repartition under the slow stage (that shuffle and the slow one above it
    are unstable), or the slow UDF marked non-deterministic: the slow shuffle partly kept
    is computed whole on the resume (rows from two runs never mix), then, kept whole, read
    back."""
    job = Job(tmp_path, mode, mode=mode)
    p = job.start("r1", slow=4.0)
    kill_when(p, lambda: len(job.finished(job.slow_shuffle())) >= 2)
    slow = job.slow_shuffle()
    assert 2 <= len(job.finished(slow)) < 4
    assert [e["stable"] for e in job.shuffles() if e["fingerprint"] == slow] == [False]
    job.run("r2")
    assert job.output() == reference
    assert job.ran("U", "r2") == PARTS  # computed whole
    assert job.ran("A", "r2") == []     # the join's shuffles, stable, were read back
    assert any(e["type"] == "vertexReset" and e["fingerprint"] == slow for e in job.events())
    job.run("r3")
    assert job.output() == reference
    assert job.ran("U", "r3") == [] and job.ran("A", "r3") == []
