"""Recovery of a full-window operation's shuffle input: with recovery on, the map tasks of the
shuffles an operation's stage reads commit their outputs too, so a run that resumes a partly
done operation reads its input back instead of running the scan, the upstream work and the
shuffle again. In-process: a job is "restarted" by closing it in the Python runtime (its state is
read again from the event store), after deleting committed outputs as a crash would have left
them. Markers left by a Python UDF upstream of the shuffle show whether the upstream ran."""
from __future__ import annotations

import glob
import os
import warnings

from fullwindow.recovery import job_events

ROWS = 400


def _mark(marks: str):
    def mark(v):
        with open(os.path.join(marks, f"{os.getpid()}"), "a") as f:
            f.write("x")
        return v
    return mark


def _count(rows):
    n = sum(1 for _ in rows)
    if n:
        yield (n,)


def _key_count(key, rows):
    yield (key, sum(1 for _ in rows))


def _cogroup(key, left, right):
    yield (key, sum(1 for _ in left), sum(1 for _ in right))


class Run:
    """One recoverable job in the shared session: its settings, markers and event store."""

    def __init__(self, spark, tmp_path, name: str, extra: dict | None = None):
        self.spark = spark
        self.dir = str(tmp_path / "recovery")
        self.name = name
        self.marks = str(tmp_path / "marks")
        os.makedirs(self.marks, exist_ok=True)
        self.conf = {"spark.fullwindow.recovery.enabled": "true",
                     "spark.fullwindow.recovery.dir": self.dir,
                     "spark.fullwindow.recovery.jobId": name,
                     "spark.fullwindow.eventStore.flushInterval": "100ms",
                     **(extra or {})}

    def __enter__(self):
        for k, v in self.conf.items():
            self.spark.conf.set(k, v)
        return self

    def __exit__(self, *exc):
        import fullwindow

        fullwindow.recovery.cleanup(self.spark)
        for k in self.conf:
            self.spark.conf.unset(k)

    def restart(self) -> None:
        """As if the driver started again: events flushed, the job's state read anew."""
        import fullwindow
        from fullwindow.recovery._jobs import _runtime

        fullwindow.recovery.flush(self.spark)
        _runtime.close_job(os.path.join(self.dir, self.name))

    def upstream(self, rows: int = ROWS, partitions: int = 3):
        """Input rows passing through a marking Python UDF (the upstream work)."""
        from pyspark.sql import functions as F
        from pyspark.sql.types import LongType

        mark = F.udf(_mark(self.marks), LongType())
        return (self.spark.range(0, rows, numPartitions=partitions)
                .select(mark(F.col("id")).alias("id"))
                .select("id", (F.col("id") % 11).alias("k")))

    def counted(self):
        """The operation most tests use: a row count per partition after repartition(4, "k")."""
        return self.upstream().repartition(4, "k").fullWindowPartition().mapPartition(
            _count, "n long")

    def marked(self) -> int:
        return sum(os.path.getsize(p) for p in glob.glob(os.path.join(self.marks, "*")))

    def events(self) -> list[dict]:
        import fullwindow

        fullwindow.recovery.flush(self.spark)  # this run's events too
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return job_events(self.dir, self.name)

    def vertices(self, operator: str) -> list[dict]:
        return [e for e in self.events()
                if e["type"] == "vertexInitialized" and e["operator"] == operator]

    def operator_dir(self, fp: str) -> str:
        return os.path.join(self.dir, self.name, "operators", fp)

    def lose_outputs(self, fp: str, partitions) -> None:
        for p in partitions:
            for f in glob.glob(os.path.join(self.operator_dir(fp), f"part-{p:05d}-*.rows")):
                os.remove(f)


def _final_plan(df) -> str:
    """The plan the query ran (the adaptive plan's final part)."""
    return df._jdf.queryExecution().executedPlan().toString().split("== Initial Plan ==")[0]


def _collect(df):
    rows = sorted(tuple(r) for r in df.collect())
    return rows, _final_plan(df)


def test_a_partly_done_operation_reads_its_committed_shuffle_input(spark, tmp_path):
    with Run(spark, tmp_path, "partly") as run:
        job = run.counted
        first, plan = _collect(job())
        assert sum(r[0] for r in first) == ROWS
        assert "committed as" in plan and "FullWindowCommittedInput" not in plan
        assert run.marked() == ROWS
        run.restart()
        [vertex] = run.vertices("mapPartition")
        fp = vertex["fingerprint"]
        assert vertex["reads"] == ["stage(4)"]
        [inp] = run.vertices("shuffle input")
        assert inp["fingerprint"] == f"{fp}/input0" and inp["numPartitions"] == 3
        maps = [e for e in run.events() if e["type"] == "taskFinished"
                and e["fingerprint"] == f"{fp}/input0"]
        assert sorted(e["partition"] for e in maps) == [0, 1, 2]
        assert all(os.path.exists(e["path"].removeprefix("file:")) for e in maps)

        run.lose_outputs(fp, [2, 3])  # the crash came half way through the operation
        again, plan = _collect(job())
        assert again == first
        assert "FullWindowCommittedInput" in plan and "Exchange" not in plan, plan
        assert run.marked() == ROWS  # nothing upstream ran again
        last = run.vertices("mapPartition")[-1]
        assert last["recovered"] == 2 and last["layout"] == vertex["layout"]


def _launch_order(spark, group: str) -> list[tuple[int, int]]:
    """(task id, partition) of every task of the one job run under ``group``'s last stage, in
    the order the scheduler launched them (task ids are given out in launch order)."""
    tracker = spark.sparkContext.statusTracker()
    [job] = tracker.getJobIdsForGroup(group)
    stage = max(tracker.getJobInfo(job).stageIds)
    info = tracker.getStageInfo(stage)
    tasks = spark.sparkContext._jsc.sc().statusStore().taskList(stage, info.currentAttemptId,
                                                                 1000)
    return sorted((int(tasks.apply(i).taskId()), int(tasks.apply(i).index()))
                  for i in range(tasks.length()))


def test_recomputed_partitions_run_before_the_recovered_ones(spark, tmp_path):
    """A resumed stage launches the partitions it computes again first and reads the recovered
    ones back last, as fillers (they are short, and then run in a warm JVM), whatever their
    numbers: here partitions 0 and 1 were committed before the crash, 2 and 3 were not."""
    with Run(spark, tmp_path, "order") as run:
        job = run.counted
        first, _ = _collect(job())
        run.restart()
        fp = run.vertices("mapPartition")[0]["fingerprint"]
        run.lose_outputs(fp, [2, 3])
        sc = spark.sparkContext
        sc.setJobGroup("fw-resume-order", "resumed run")
        try:
            again, plan = _collect(job())
        finally:
            sc.setLocalProperty("spark.jobGroup.id", None)
        assert again == first
        assert "FullWindowCommittedInput" in plan, plan
        assert run.vertices("mapPartition")[-1]["recovered"] == 2
        order = [p for _, p in _launch_order(spark, "fw-resume-order")]
        assert sorted(order) == [0, 1, 2, 3]
        assert sorted(order[:2]) == [2, 3], order  # before the change: [0, 1, 2, 3]


def test_coalesced_partitions_are_read_as_they_were_committed(spark, tmp_path):
    aqe = {"spark.sql.shuffle.partitions": "24",
           "spark.sql.adaptive.coalescePartitions.parallelismFirst": "false",
           "spark.sql.adaptive.coalescePartitions.minPartitionSize": "1",
           "spark.sql.adaptive.advisoryPartitionSizeInBytes": "1500"}
    with Run(spark, tmp_path, "coalesced", aqe) as run:
        def job():
            return run.upstream(3000).keyBy("k").fullWindowPartition().mapPartition(
                _key_count, "k long, n long")

        first, plan = _collect(job())
        assert first == sorted((k, len(range(k, 3000, 11))) for k in range(11))
        run.restart()
        [vertex] = run.vertices("keyed mapPartition")
        [reads] = vertex["reads"]
        assert reads.startswith("read(24:"), reads  # adaptive execution coalesced the shuffle
        n = vertex["numPartitions"]
        assert 1 < n < 24
        run.lose_outputs(vertex["fingerprint"], [n - 1])
        again, plan = _collect(job())
        assert again == first
        assert "FullWindowCommittedInput" in plan, plan
        assert run.marked() == 3000
        last = run.vertices("keyed mapPartition")[-1]
        assert last["reads"] == [reads] and last["recovered"] == n - 1


def test_a_damaged_map_output_runs_the_upstream_again(spark, tmp_path, caplog):
    with Run(spark, tmp_path, "damaged") as run:
        job = run.counted
        first, _ = _collect(job())
        run.restart()
        fp = run.vertices("mapPartition")[0]["fingerprint"]
        run.lose_outputs(fp, [0])
        [data] = sorted(glob.glob(os.path.join(run.operator_dir(fp), "input0", "map-00001-*.data")))
        with open(data, "r+b") as f:
            f.truncate(os.path.getsize(data) - 1)
        with caplog.at_level("WARNING", logger="fullwindow"):
            again, plan = _collect(job())
        assert again == first
        assert "committed shuffle input 0 is missing or damaged (map outputs [1])" in caplog.text
        assert "FullWindowCommittedInput" not in plan and "committed as" in plan
        assert run.marked() == 2 * ROWS  # the upstream ran again, once
        assert run.vertices("mapPartition")[-1]["recovered"] == 3


def test_both_inputs_of_a_cogroup_are_read_back(spark, tmp_path):
    from fullwindow import EndOfStreamWindows

    with Run(spark, tmp_path, "cogroup") as run:
        def job():
            left = run.upstream(300)
            right = run.upstream(120, partitions=2)
            return (left.keyBy("k").coGroup(right.keyBy("k")).window(EndOfStreamWindows.get())
                    .apply(_cogroup, "k long, l long, r long"))

        first, _ = _collect(job())
        assert first == sorted((k, len(range(k, 300, 11)), len(range(k, 120, 11)))
                               for k in range(11))
        run.restart()
        [vertex] = run.vertices("coGroup")
        fp = vertex["fingerprint"]
        inputs = {v["fingerprint"] for v in run.vertices("shuffle input")}
        assert inputs == {f"{fp}/input0", f"{fp}/input1"}
        run.lose_outputs(fp, range(vertex["numPartitions"]))
        again, plan = _collect(job())
        assert again == first
        assert plan.count("FullWindowCommittedInput") == 2 and "Exchange" not in plan, plan
        assert run.marked() == 420


def test_committing_the_shuffle_input_can_be_switched_off(spark, tmp_path):
    off = {"spark.fullwindow.recovery.commitShuffleInput": "false"}
    with Run(spark, tmp_path, "off", off) as run:
        rows, plan = _collect(run.counted())
        assert sum(r[0] for r in rows) == ROWS
        assert "committed as" not in plan
        run.restart()
        fp = run.vertices("mapPartition")[0]["fingerprint"]
        assert not os.path.exists(os.path.join(run.operator_dir(fp), "input0"))
        assert not run.vertices("shuffle input")


def test_another_shuffle_codec_does_not_read_the_committed_input(spark, tmp_path):
    """The codec is a JVM-start setting: a run under another one is forged by re-recording the
    committed input (its vertex and every map output) as written with zstd."""
    import time

    from fullwindow.recovery.eventstore import encode_record

    with Run(spark, tmp_path, "codec") as run:
        job = run.counted
        first, _ = _collect(job())
        run.restart()
        fp = run.vertices("mapPartition")[0]["fingerprint"]
        inputs = [e for e in run.events() if e["fingerprint"] == f"{fp}/input0"]
        assert "codec=lz4" in inputs[0]["layout"]
        forged = [{**e, "layout": e["layout"].replace("codec=lz4", "codec=zstd")} for e in inputs]
        events = os.path.join(run.dir, run.name, "events")
        with open(os.path.join(events, f"segment-{int(time.time() * 1000):015d}-0-forged.log"),
                  "wb") as f:
            for e in forged:
                f.write(encode_record(e))
        run.lose_outputs(fp, [0])
        again, plan = _collect(job())
        assert again == first
        assert "FullWindowCommittedInput" not in plan and "committed as" in plan
        assert run.marked() == 2 * ROWS


def _pairs(rows):
    for r in rows:
        yield (r.k, r.id)


def test_a_count_commits_whole_rows(spark, tmp_path):
    """An action that reads no column (count) still commits whole rows: column pruning stops at
    the commit (it once put a Project under it, committed empty rows and, after a restart,
    read them back as garbage)."""
    with Run(spark, tmp_path, "count-then-read") as run:
        def op():
            return run.upstream(rows=60).fullWindowPartition().mapPartition(
                _pairs, "k long, id long")
        assert op().count() == 60
        run.restart()
        again = op()
        assert "FullWindowRecoveredScan" in again._jdf.queryExecution().optimizedPlan().toString()
        assert sorted(tuple(r) for r in again.collect()) == sorted((i % 11, i) for i in range(60))
