"""Whole-job recovery (``spark.fullwindow.recovery.scope=job``, issue 48) over the plan shapes
adaptive execution and Spark's own reuse give a query: a join split for a skewed key, a join
switched to a broadcast join on the resume, dynamic partition pruning, a reused exchange,
``persist()``, ``checkpoint()`` and ``localCheckpoint()``, a shuffle read coalesced in one run and
not in the other, a window function and a scalar subquery. Each query is run once to a crash and
then resumed: the resumed run must give exactly the rows computed here in Python, and the job's
events and the resumed plan show which shuffles were read back, partly reused or computed again.

In this process, in the shared session: a "restart" closes the job and reads its events anew, as
a new driver would (tests/test_recovery_inputs.py does the same). The crash is a deterministic
Python UDF that raises on one chosen row while a flag file exists; in local mode one failed task
fails the job at once, and the map tasks that finished before it stay kept. The UDF sleeps a
second before it raises, so that the other tasks of its stage have finished by then. The crash
is either in a map stage (its shuffle partly kept) or in the query's last stage (every shuffle
under it kept whole); a setting changed before the resume (the broadcast threshold, partition
coalescing) is how the resumed plan differs from the crashed one.
"""
from __future__ import annotations

import contextlib
import os
import re
import time
import warnings

import pytest
from pyspark.sql import Window
from pyspark.sql import functions as F
from pyspark.sql.types import LongType

from helpers import executed_plan, kept_conf, wait_until

ROWS = 4000
MAPS = 4  # map tasks of every shuffle over the facts (spark.range's 4 slices)
CRASH = "shapes: crash at"
RECOVERY = ("spark.fullwindow.recovery.enabled", "spark.fullwindow.recovery.dir",
            "spark.fullwindow.recovery.jobId", "spark.fullwindow.eventStore.flushInterval")
NO_BROADCAST = {"spark.sql.autoBroadcastJoinThreshold": "-1",
                "spark.sql.adaptive.autoBroadcastJoinThreshold": "-1"}
BROADCAST = {"spark.sql.autoBroadcastJoinThreshold": "10MB",
             "spark.sql.adaptive.autoBroadcastJoinThreshold": "10MB"}


def _key(i: int) -> int:
    """The facts' key: 0 for every even id (half the rows: the hot key), else id % 97."""
    return 0 if i % 2 == 0 else i % 97


def _sums() -> dict[int, int]:
    """sum(id) per key of the facts."""
    out: dict[int, int] = {}
    for i in range(ROWS):
        out[_key(i)] = out.get(_key(i), 0) + i
    return out


def _crash_at(flag: str, bad: int):
    """The identity, except that it raises on ``bad`` while ``flag`` exists (after a second, so
    that the other tasks of its stage have finished)."""
    def crash(v):
        if v == bad and os.path.exists(flag):
            time.sleep(1)
            raise RuntimeError(f"{CRASH} {v}")
        return v
    return crash


def _collect(df) -> list:
    return df.collect()


class Job:
    """One recoverable job in the shared session: its crash flag, its events, its runs."""

    def __init__(self, spark, directory: str, name: str):
        self.spark = spark
        self.dir = directory
        self.name = name
        self.flag = os.path.join(directory, f"{name}.crash")
        self.crashed: list[dict] = []

    def crash_on(self, bad: int):
        """A Python UDF (a long column) that crashes the crashing run on value ``bad``."""
        return F.udf(_crash_at(self.flag, bad), LongType())

    def events(self) -> list[dict]:
        import fullwindow
        from fullwindow.recovery import job_events

        fullwindow.recovery.flush(self.spark)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return job_events(self.dir, self.name)

    def crash(self, df, action=None) -> str:
        """Runs ``df`` to its crash (``action(df)``; None: ``df.collect()``); its plan as it
        stood (the stages it had planned)."""
        open(self.flag, "w").close()
        try:
            with pytest.raises(Exception, match=CRASH):
                (action or _collect)(df)
        finally:
            os.remove(self.flag)
        self.crashed = self.events()
        return executed_plan(df)

    def resume(self, build, settings: dict[str, str] | None = None, checked: int | None = None,
               action=None) -> tuple[list[tuple], str, list[dict]]:
        """The job started again (``settings`` changed first) and ``build()`` run (by
        ``action(df)``, which returns its rows; None: ``df.collect()``): its sorted rows, its
        plan, and the shuffle events (vertexInitialized, taskFinished) it recorded.
        ``checked``: that many kept shuffles' files are checked in the background from the
        job's open, before any query of it (the check is over before ``build()``)."""
        import fullwindow
        from fullwindow.recovery._jobs import _runtime

        for k, v in (settings or {}).items():
            self.spark.conf.set(k, v)
        fullwindow.recovery.flush(self.spark)
        job_dir = os.path.join(self.dir, self.name)
        _runtime.close_job(job_dir)
        fullwindow.recovery.start(self.spark)
        if checked is not None:
            shuffles = self.spark.sparkContext._jvm.org.apache.spark.sql.fullwindow.recovery \
                .JobShuffles
            wait_until(lambda: shuffles.checksOf(job_dir) == f"{checked}/{checked}", 60,
                       f"the checks of {checked} kept shuffles done before the first query",
                       every=0.05)
        df = build()
        rows = sorted(tuple(r) for r in (action or _collect)(df))
        new = [e for e in self.events()[len(self.crashed):]
               if e["type"] in ("vertexInitialized", "taskFinished")]
        return rows, executed_plan(df), new


@contextlib.contextmanager
def _job(spark, tmp_path, name: str, settings: dict[str, str], later=()):
    """A job with recovery on and ``settings`` set; every key set, and ``later`` (what the test
    changes before the resume), restored after it, the job's directory deleted."""
    import fullwindow

    conf = {"spark.fullwindow.recovery.enabled": "true",
            "spark.fullwindow.recovery.dir": str(tmp_path),
            "spark.fullwindow.recovery.jobId": name,
            "spark.fullwindow.eventStore.flushInterval": "100ms", **settings}
    with kept_conf(spark, [*RECOVERY, *settings, *later]):
        for k, v in conf.items():
            spark.conf.set(k, v)
        fullwindow.recovery.start(spark)
        try:
            yield Job(spark, str(tmp_path), name)
        finally:
            fullwindow.recovery.cleanup(spark)


def _shuffles(events: list[dict], fp: str | None = None) -> list[dict]:
    """The shuffle vertices' vertexInitialized events (of ``fp`` only, if given)."""
    return [e for e in events if e["type"] == "vertexInitialized" and e["operator"] == "shuffle"
            and fp in (None, e["fingerprint"])]


def _finished(events: list[dict], fp: str) -> list[int]:
    """The map tasks of shuffle ``fp`` whose output was kept, sorted (repeated when one was kept
    twice)."""
    return sorted(e["partition"] for e in events
                  if e["type"] == "taskFinished" and e["fingerprint"] == fp)


def _kept_whole(job: Job) -> dict[str, int]:
    """Every shuffle the crashed run initialized, each kept whole: fingerprint -> map tasks."""
    out = {e["fingerprint"]: e["numPartitions"] for e in _shuffles(job.crashed)}
    for fp, maps in out.items():
        assert set(_finished(job.crashed, fp)) == set(range(maps)), (fp, job.crashed)
    return out


def _partly_kept(job: Job, fp: str, maps: int = MAPS) -> set[int]:
    """The map tasks of ``fp`` the crashed run kept: some, not all (the crashing one not)."""
    done = set(_finished(job.crashed, fp))
    assert 1 <= len(done) < maps, job.crashed
    # each says how long its map task spent keeping it
    assert all(isinstance(e["commitMs"], int) and e["commitMs"] >= 0 for e in job.crashed
               if e["type"] == "taskFinished" and e["fingerprint"] == fp), job.crashed
    return done


def _partly_reused(new: list[dict], fp: str, done: set[int], maps: int = MAPS) -> None:
    """The resumed run reused the ``done`` map outputs of ``fp`` and ran only the others."""
    [v] = _shuffles(new, fp)
    assert (v["numPartitions"], v["recovered"], v["reused"]) == (maps, len(done), len(done)), v
    assert _finished(new, fp) == sorted(set(range(maps)) - done)


def _facts(spark):
    return spark.range(0, ROWS, 1, MAPS).select(
        "id", F.when(F.col("id") % 2 == 0, 0).otherwise(F.col("id") % 97).alias("k"))


def _dims(spark):
    return spark.range(0, 97, 1, 2).select(F.col("id").alias("k"), (F.col("id") * 10).alias("w"))


JOINED = sorted((i, _key(i), _key(i) * 10) for i in range(ROWS))

SKEW = {**NO_BROADCAST, "spark.sql.adaptive.skewJoin.enabled": "true",
        "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes": "100",
        "spark.sql.adaptive.skewJoin.skewedPartitionFactor": "1.5",
        "spark.sql.adaptive.advisoryPartitionSizeInBytes": "500"}


def test_skew_join_crashed_after_the_join_reads_both_sides_back(spark, tmp_path):
    """The crashed run split the hot key's partition (skew=true); the resume reads both join
    sides back whole (a read-back side is not split) and runs nothing under the join."""
    with _job(spark, tmp_path, "skew-after", SKEW) as job:
        def build():
            crash = job.crash_on(ROWS - 1)
            return _facts(spark).join(_dims(spark), "k").select(crash("id").alias("id"), "k", "w")

        plan = job.crash(build())
        assert "SortMergeJoin(skew=true)" in plan and "coalesced and skewed" in plan, plan
        kept = _kept_whole(job)
        assert sorted(kept.values()) == [2, MAPS]
        rows, plan, new = job.resume(build, checked=len(kept))
        assert rows == JOINED
        for fp, maps in kept.items():
            assert f"FullWindowCommittedInput {fp} ({maps} map outputs" in plan, plan
        assert "Exchange" not in plan and new == [], (plan, new)


def test_skew_join_split_over_a_partly_reused_shuffle(spark, tmp_path):
    """The facts' map stage crashed (their shuffle partly kept); the dimension side is a
    DataFrame over an RDD (never kept): on the resume both sides are real shuffles, the skewed
    one partly reused, and adaptive execution splits its hot partition by map ranges over the
    reused and the recomputed map outputs alike."""
    with _job(spark, tmp_path, "skew-map", SKEW) as job:
        def build():
            crash = job.crash_on(ROWS - 1)
            dims = spark.createDataFrame(
                spark.sparkContext.parallelize([(k, k * 10) for k in range(97)], 2),
                "k long, w long")
            return _facts(spark).select(crash("id").alias("id"), "k").join(dims, "k")

        job.crash(build())
        [facts] = _shuffles(job.crashed)  # the RDD side is not kept
        fp = facts["fingerprint"]
        done = _partly_kept(job, fp)
        rows, plan, new = job.resume(build)
        assert sorted((r[1], r[0], r[2]) for r in rows) == JOINED
        assert "SortMergeJoin(skew=true)" in plan, plan
        assert f"committed as {fp} ({len(done)} map outputs kept)" in plan, plan
        _partly_reused(new, fp, done)
        assert {e["fingerprint"] for e in new} == {fp}


def _dims_sums() -> dict[int, int]:
    out: dict[int, int] = {}
    for i in range(970):
        out[i % 97] = out.get(i % 97, 0) + i
    return out


@pytest.mark.parametrize("crash,resume", [("after", "static"), ("map", "static"),
                                          ("map", "adaptive")])
def test_join_switched_to_a_broadcast_join_on_the_resume(spark, tmp_path, crash, resume):
    """The crashed run had a shuffle join (broadcasts off) over the facts and an aggregated
    dimension; the resume may broadcast. ``static``: the planner picks a broadcast join at once;
    the aggregate's kept shuffle is read back under the broadcast exchange (the build side runs
    from it) and the facts, whose shuffle the plan has no more, are read again from their source
    (their kept map outputs unused): nothing is recorded. ``adaptive``: only adaptive execution
    may broadcast; it turns the shuffle join into a broadcast join once the facts' partly reused
    shuffle is done, building from it (a local read of its map outputs)."""
    later = BROADCAST if resume == "static" else {
        "spark.sql.adaptive.autoBroadcastJoinThreshold": "10MB"}
    with _job(spark, tmp_path, f"bhj-{crash}-{resume}", NO_BROADCAST, later) as job:
        def build():
            bad = job.crash_on(ROWS - 1)
            dims = spark.range(0, 970, 1, 2).select((F.col("id") % 97).alias("k"), "id") \
                .groupBy("k").agg(F.sum("id").alias("w"))
            facts = _facts(spark)
            if crash == "map":
                facts = facts.select(bad("id").alias("id"), "k")
                return facts.join(dims, "k").select("id", "k", "w")
            return facts.join(dims, "k").select(bad("id").alias("id"), "k", "w")

        plan = job.crash(build())
        assert "SortMergeJoin" in plan and "BroadcastHashJoin" not in plan, plan
        dims_fp = [e["fingerprint"] for e in _shuffles(job.crashed) if e["numPartitions"] == 2]
        [facts_fp] = [e["fingerprint"] for e in _shuffles(job.crashed)
                      if e["numPartitions"] == MAPS]
        assert len(dims_fp) == 1 and set(_finished(job.crashed, dims_fp[0])) == {0, 1}
        done = _partly_kept(job, facts_fp) if crash == "map" else set(range(MAPS))
        assert set(_finished(job.crashed, facts_fp)) == done
        rows, plan, new = job.resume(build, later)
        w = _dims_sums()
        assert rows == sorted((i, _key(i), w[_key(i)]) for i in range(ROWS))
        assert "BroadcastHashJoin" in plan and "SortMergeJoin" not in plan, plan
        assert f"FullWindowCommittedInput {dims_fp[0]} (2 map outputs" in plan, plan
        if resume == "static":
            assert plan.index("BroadcastExchange") < plan.index(dims_fp[0]), plan
            assert facts_fp not in plan and new == [], (plan, new)
        else:
            assert f"committed as {facts_fp} ({len(done)} map outputs kept)" in plan, plan
            assert "AQEShuffleRead local" in plan, plan
            _partly_reused(new, facts_fp, done)


@pytest.fixture(scope="module")
def partitioned(tmp_path_factory) -> str:
    """A Parquet table partitioned by p (id % 10), two files a partition: id, v = 3 * id."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = str(tmp_path_factory.mktemp("partitioned"))
    for p in range(10):
        ids = [i for i in range(ROWS) if i % 10 == p]
        os.makedirs(os.path.join(root, f"p={p}"))
        for f, part in enumerate((ids[:200], ids[200:])):
            pq.write_table(pa.table({"id": pa.array(part, pa.int64()),
                                     "v": pa.array([3 * i for i in part], pa.int64())}),
                           os.path.join(root, f"p={p}", f"part-{f}.parquet"))
    return root


def test_dynamic_partition_pruning(spark, tmp_path, partitioned):
    """The table joined with a filtered dimension (p % 3 = 1: 3 of its 10 partitions read),
    pruned at run time (dynamicpruning in the scan); the crash in the map stage of the
    aggregation above the join. The resume's rows are exact, and the aggregation's shuffle over
    the pruned scan has the fingerprint it had (the pruning subquery's plan, whose hash varies
    from run to run, no longer decides the order the scan's filters print in): it is partly
    reused, only its missing map tasks run."""
    settings = {**BROADCAST, "spark.sql.optimizer.dynamicPartitionPruning.enabled": "true"}
    with _job(spark, tmp_path, "dpp", settings) as job:
        def build():
            crash = job.crash_on(ROWS - 3)  # in partition p=7
            dims = spark.range(0, 10, 1, 1).select(F.col("id").alias("p"),
                                                   (F.col("id") % 3).alias("c")).filter("c = 1")
            return spark.read.parquet(partitioned).join(dims, "p") \
                .select(crash("id").alias("id"), "p", "v").groupBy("p") \
                .agg(F.sum("v").alias("s"), F.count("*").alias("n"), F.max("id").alias("m"))

        plan = job.crash(build())
        assert "dynamicpruning" in plan, plan
        [crashed] = _shuffles(job.crashed)
        maps = crashed["numPartitions"]
        done = _partly_kept(job, crashed["fingerprint"], maps)
        rows, plan, new = job.resume(build)
        assert rows == [(p, sum(3 * i for i in range(p, ROWS, 10)), ROWS // 10, ROWS - 10 + p)
                        for p in (1, 4, 7)]
        assert "dynamicpruning" in plan, plan
        fp = crashed["fingerprint"]
        assert f"committed as {fp} ({len(done)} map outputs kept)" in plan, (plan, done)
        _partly_reused(new, fp, done, maps)


def test_reused_exchange_under_a_union(spark, tmp_path):
    """An aggregate unioned with itself: without recovery Spark computes its exchange once
    (ReusedExchange), and so it does with recovery on (the kept exchange canonicalizes as
    Spark's own does): each run computes and keeps the aggregate's map side once. The crash is
    in the aggregate's map stage; the resume partly reuses what it kept, exactly, still once."""
    with _job(spark, tmp_path, "reuse-union", {}) as job:
        def build():
            crash = job.crash_on(ROWS - 1)
            agg = _facts(spark).select(crash("id").alias("id"), "k").groupBy("k") \
                .agg(F.sum("id").alias("s"))
            return agg.union(agg.select("k", (F.col("s") + 1).alias("s")))

        spark.conf.set("spark.fullwindow.recovery.enabled", "false")
        plain = build()
        plain.collect()
        assert "ReusedExchange" in executed_plan(plain)
        spark.conf.set("spark.fullwindow.recovery.enabled", "true")

        plan = job.crash(build())
        assert "ReusedExchange" in plan, plan
        [crashed] = _shuffles(job.crashed)  # one exchange computed, not two
        fp = crashed["fingerprint"]
        done = _partly_kept(job, fp)
        assert len(_finished(job.crashed, fp)) == len(done)  # each kept map output once
        rows, plan, new = job.resume(build)
        sums = _sums()
        assert rows == sorted([(k, s) for k, s in sums.items()]
                              + [(k, s + 1) for k, s in sums.items()])
        # one exchange partly reusing the kept map outputs, reused on the union's other side
        assert "ReusedExchange" in plan, plan
        assert plan.count(f"committed as {fp} ({len(done)} map outputs kept)") == 2, plan
        _partly_reused(new, fp, done)


def test_reused_exchange_under_a_self_join(spark, tmp_path):
    """An aggregate joined with itself (ReusedExchange without recovery), the crash above the
    join: the crashed run computed and kept that shuffle once (as under the union above), and
    the resume reads it back on both sides and runs nothing under the join."""
    with _job(spark, tmp_path, "reuse-join", NO_BROADCAST) as job:
        def build():
            crash = job.crash_on(_sums()[1])
            agg = _facts(spark).groupBy("k").agg(F.sum("id").alias("s"))
            return agg.join(agg.select("k", F.col("s").alias("s2")), "k") \
                .select("k", "s", crash("s2").alias("s2"))

        spark.conf.set("spark.fullwindow.recovery.enabled", "false")
        plain = build()
        plain.collect()
        assert "ReusedExchange" in executed_plan(plain)
        spark.conf.set("spark.fullwindow.recovery.enabled", "true")

        assert "ReusedExchange" in job.crash(build())
        [(fp, maps)] = _kept_whole(job).items()
        assert _finished(job.crashed, fp) == list(range(maps))  # once
        rows, plan, new = job.resume(build)
        assert rows == sorted((k, s, s) for k, s in _sums().items())
        assert plan.count(f"FullWindowCommittedInput {fp} ({maps} map outputs") == 2, plan
        assert "Exchange" not in plan and new == [], (plan, new)


@pytest.mark.parametrize("crash", ["map", "after"])
def test_persisted_dataframe_used_twice(spark, tmp_path, crash):
    """An aggregate persisted and used twice: joined with itself (reading the cache as it is
    partitioned, no shuffle above it), then counted. The join builds the cache; ``map``: the
    crash is in the aggregate's map stage, ``after``: in the join's stage (the aggregate's
    shuffle kept whole). A new driver has no cache: it is dropped before the resume, and the
    resumed join builds it again over the aggregate's shuffle partly reused (``map``) or read
    back (``after``: nothing else runs). The count after the join reads the cache: the
    aggregate does not run again."""
    with _job(spark, tmp_path, f"persist-{crash}", NO_BROADCAST) as job:
        cached: list = []

        def build():
            bad = job.crash_on(ROWS - 1 if crash == "map" else 2 * _sums()[1])
            facts = _facts(spark)
            if crash == "map":
                facts = facts.select(bad("id").alias("id"), "k")
            cached.append(facts.groupBy("k").agg(F.sum("id").alias("s")).persist())
            c = cached[-1]
            out = c.join(c.select("k", (F.col("s") * 2).alias("s2")), "k")
            return out if crash == "map" else out.select("k", "s", bad("s2").alias("s2"))

        def cache_plan() -> str:
            return cached[-1]._jdf.queryExecution().executedPlan().toString()

        try:
            job.crash(build())
            # the aggregate's shuffle (the cache's plan prints it twice: initial and final)
            [fp] = set(re.findall(r"committed as (shuffle:[0-9a-f]+)", cache_plan()))
            if crash == "map":
                assert [v["fingerprint"] for v in _shuffles(job.crashed)] == [fp]
                done = _partly_kept(job, fp)
            else:
                # the join reads the cache as it is partitioned: no shuffle above it
                assert _kept_whole(job) == {fp: MAPS}
            cached.pop().unpersist(blocking=True)  # a new driver's session has no cache
            rows, plan, new = job.resume(build)
            assert rows == sorted((k, s, 2 * s) for k, s in _sums().items())
            if crash == "map":
                assert "InMemoryTableScan" in plan, plan
                _partly_reused(new, fp, done)
            else:  # the cache built again from the aggregate's shuffle read back
                assert new == [], new
                assert f"FullWindowCommittedInput {fp} ({MAPS} map outputs" in cache_plan()
            before = len(job.events())
            assert cached[-1].count() == 97
            assert [e for e in job.events()[before:] if e["fingerprint"] == fp] == []
        finally:
            for c in cached:
                c.unpersist()


@pytest.mark.parametrize("kind", ["checkpoint", "localCheckpoint"])
def test_checkpointed_input_is_never_kept(spark, tmp_path, kind):
    """An aggregation over a checkpointed DataFrame (a scan of an RDD recovery cannot
    fingerprint), the crash in its last stage: its shuffle is neither kept nor reused. The resume
    checkpoints again and computes the aggregation again, exactly; no run records anything."""
    sc = spark.sparkContext._jsc.sc()
    before = sc.getCheckpointDir()
    if kind == "checkpoint":
        spark.sparkContext.setCheckpointDir(str(tmp_path / "checkpoints"))
    try:
        with _job(spark, tmp_path, kind, {}) as job:
            def build():
                crash = job.crash_on(0)
                facts = getattr(_facts(spark), kind)()
                return facts.groupBy("k").agg(F.sum("id").alias("s")) \
                    .select("k", crash("k").alias("k2"), "s")

            plan = job.crash(build())
            assert "Scan ExistingRDD" in plan and "Exchange hashpartitioning" in plan, plan
            assert job.crashed == [], job.crashed
            rows, plan, new = job.resume(build)
            assert rows == sorted((k, k, s) for k, s in _sums().items())
            assert "Scan ExistingRDD" in plan and "committed as" not in plan, plan
            assert "FullWindowCommittedInput" not in plan and new == [], (plan, new)
    finally:
        getattr(sc, "checkpointDir_$eq")(before)


COALESCE = {"spark.sql.adaptive.coalescePartitions.parallelismFirst": "false",
            "spark.sql.adaptive.advisoryPartitionSizeInBytes": "12k",
            "spark.sql.adaptive.coalescePartitions.minPartitionSize": "1"}


@pytest.mark.parametrize("first,then", [
    ("coalesced", {"spark.sql.adaptive.coalescePartitions.enabled": "false"}),
    ("coalesced", {"spark.sql.adaptive.enabled": "false"}),
    ("uncoalesced", {"spark.sql.adaptive.coalescePartitions.enabled": "true"}),
], ids=["coalesced-then-not", "coalesced-then-no-aqe", "uncoalesced-then-coalescing"])
def test_shuffle_read_coalesced_in_one_run_only(spark, tmp_path, first, then):
    """A second aggregation (B) over a first (A), the crash in B's map stage, whose tasks are
    A's reduce partitions as B reads them. A is kept whole and read back on the resume, and a
    read-back shuffle is not coalesced: B has A's 4 partitions as map tasks. Crashed with A read
    coalesced (2 map tasks for B, one kept), B's layout changed: B is computed again whole, its
    kept map output unused. Crashed uncoalesced (4 map tasks, 3 kept), B's layout is the same:
    B is partly reused."""
    settings = dict(COALESCE)
    if first == "uncoalesced":
        settings["spark.sql.adaptive.coalescePartitions.enabled"] = "false"
    with _job(spark, tmp_path, "coalesce", settings, then) as job:
        def build():
            crash = job.crash_on(499)
            a = spark.range(0, ROWS, 1, MAPS).select((F.col("id") % 500).alias("k"), "id") \
                .groupBy("k").agg(F.sum("id").alias("s"))
            return a.select(crash("k").alias("k"), "s").groupBy((F.col("k") % 7).alias("g")) \
                .agg(F.sum("s").alias("t"), F.count("*").alias("n"))

        plan = job.crash(build())
        assert ("AQEShuffleRead coalesced" in plan) == (first == "coalesced"), plan
        a_fp, b_fp = [e["fingerprint"] for e in _shuffles(job.crashed)]
        assert set(_finished(job.crashed, a_fp)) == set(range(MAPS))
        b_maps = _shuffles(job.crashed, b_fp)[0]["numPartitions"]
        assert b_maps == (2 if first == "coalesced" else MAPS)
        done = _partly_kept(job, b_fp, b_maps)
        rows, plan, new = job.resume(build, then)
        expected: dict[int, list[int]] = {}
        for k in range(500):
            t_n = expected.setdefault(k % 7, [0, 0])
            t_n[0] += sum(range(k, ROWS, 500))
            t_n[1] += 1
        assert rows == sorted((g, t, n) for g, (t, n) in expected.items())
        assert f"FullWindowCommittedInput {a_fp} ({MAPS} map outputs" in plan, plan
        assert {e["fingerprint"] for e in new} == {b_fp}  # A: nothing ran
        if first == "coalesced":
            [v] = _shuffles(new, b_fp)
            assert (v["numPartitions"], v["recovered"], v["reused"]) == (MAPS, 0, 0), v
            assert v["layout"] != _shuffles(job.crashed, b_fp)[0]["layout"]
            assert _finished(new, b_fp) == list(range(MAPS))
        else:
            _partly_reused(new, b_fp, done)


def _other_file_system(tmp_path) -> str:
    """A folder on another local file system than ``tmp_path`` and Spark's shuffle files
    (/dev/shm's tmpfs), where a kept map output cannot be hard-linked."""
    shm = "/dev/shm"
    if not os.path.isdir(shm) or os.stat(shm).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("needs /dev/shm on a file system of its own")
    import tempfile

    return tempfile.mkdtemp(prefix="fw-shapes-", dir=shm)


@pytest.mark.parametrize("where", ["beside the shuffle files", "on another file system"])
def test_window_function(spark, tmp_path, where):
    """row_number over the facts by key, then an aggregation; the crash in the window's map
    stage: the resume partly reuses the window's shuffle, exactly. With the job directory on
    another local file system the map outputs cannot be hard-linked: each is copied there by
    an upload thread after its map task ended (its event says how long that took); beside the
    shuffle files each is a hard link, which takes no upload."""
    import shutil

    directory = tmp_path if where.startswith("beside") else _other_file_system(tmp_path)
    try:
        _window_function(spark, directory, where)
    finally:
        if directory is not tmp_path:
            shutil.rmtree(directory, ignore_errors=True)


def _window_function(spark, tmp_path, where):
    with _job(spark, tmp_path, "window", {}) as job:
        def build():
            crash = job.crash_on(ROWS - 1)
            w = Window.partitionBy("k").orderBy("id")
            return _facts(spark).select(crash("id").alias("id"), "k") \
                .withColumn("r", F.row_number().over(w)).groupBy("k") \
                .agg(F.max("r").alias("r"), F.sum("id").alias("s"))

        job.crash(build())
        [v] = _shuffles(job.crashed)
        fp = v["fingerprint"]
        done = _partly_kept(job, fp)
        rows, plan, new = job.resume(build)
        counts: dict[int, int] = {}
        for i in range(ROWS):
            counts[_key(i)] = counts.get(_key(i), 0) + 1
        assert rows == sorted((k, counts[k], s) for k, s in _sums().items())
        assert "Window [row_number()" in plan, plan
        _partly_reused(new, fp, done)
        kept = [e for e in job.crashed + new if e["type"] == "taskFinished"]
        uploaded = [isinstance(e.get("uploadMs"), int) for e in kept]
        assert kept and uploaded == [where == "on another file system"] * len(kept), kept


def test_scalar_subquery(spark, tmp_path):
    """A SQL query filtering on a scalar subquery (avg(id)), the crash in its aggregation's map
    stage: the resume reads the subquery's shuffle back and partly reuses the aggregation's."""
    with _job(spark, tmp_path, "subquery", {}) as job:
        spark.udf.register("shapes_crash", _crash_at(job.flag, ROWS - 1), LongType())
        _facts(spark).createOrReplaceTempView("shapes_facts")
        query = ("SELECT k, count(*) AS n FROM (SELECT shapes_crash(id) AS id, k "
                 "FROM shapes_facts) WHERE id > (SELECT avg(id) FROM shapes_facts) GROUP BY k")
        try:
            job.crash(spark.sql(query))
            # the subquery's shuffle (to one partition) and the aggregation's
            [sub, agg] = [e["fingerprint"] for e in sorted(
                _shuffles(job.crashed), key=lambda e: not e["layout"].startswith("n=1;"))]
            assert set(_finished(job.crashed, sub)) == set(range(MAPS))
            done = _partly_kept(job, agg)
            rows, plan, new = job.resume(lambda: spark.sql(query))
            counts: dict[int, int] = {}
            for i in range(ROWS // 2, ROWS):
                counts[_key(i)] = counts.get(_key(i), 0) + 1
            assert rows == sorted(counts.items())
            assert f"FullWindowCommittedInput {sub} ({MAPS} map outputs, 1 partitions)" in plan
            _partly_reused(new, agg, done)
        finally:
            spark.catalog.dropTempView("shapes_facts")
            spark.sql("DROP TEMPORARY FUNCTION IF EXISTS shapes_crash")


def test_an_rdd_action_keeps_the_shuffles_of_its_dataframe(spark, tmp_path):
    """An action of ``df.rdd`` (rows mapped to tuples in Python, collected) runs ``df``'s query
    as any action does: crashed in the aggregation's map stage, it kept part of that shuffle,
    and the resumed ``df.rdd`` action runs only the missing map tasks. (A shuffle of the RDD API
    itself, after ``.rdd``, is no query's: not kept, docs/recovery.md.)"""
    def action(df):
        return df.rdd.map(lambda r: (r.k, r.s)).collect()

    with _job(spark, tmp_path, "rdd", NO_BROADCAST) as job:
        def build():
            crash = job.crash_on(ROWS - 1)
            return (_facts(spark).select(crash("id").alias("id"), "k")
                    .groupBy("k").agg(F.sum("id").alias("s")))

        job.crash(build(), action)
        [agg] = [e["fingerprint"] for e in _shuffles(job.crashed)]
        done = _partly_kept(job, agg)
        rows, _, new = job.resume(build, action=action)
        assert rows == sorted(_sums().items())
        _partly_reused(new, agg, done)


def _exchange_fingerprint(spark, df) -> str:
    """The whole-job fingerprint of the shuffle at the top of ``df``'s plan (planned without
    adaptive execution)."""
    with kept_conf(spark, ["spark.sql.adaptive.enabled"]):
        spark.conf.set("spark.sql.adaptive.enabled", "false")
        plan = df._jdf.queryExecution().executedPlan()
    while plan.getClass().getSimpleName() != "ShuffleExchangeExec":
        plan = plan.children().head()
    jobs = spark.sparkContext._jvm.org.apache.spark.sql.fullwindow.recovery.JobShuffles
    return jobs.fingerprint(plan).get()._1()


def test_a_scans_partition_filters_count_whole_in_a_shuffles_fingerprint(spark, tmp_path,
                                                                          partitioned):
    """Two reads of the partitioned table whose partition filters differ only past the 100th
    character of the scan's text (where ``spark.sql.maxMetadataStringLength`` cuts what a plan
    prints of them; no Filter above a partition-only filter shows it whole): their shuffles'
    fingerprints differ, or a resume of a changed program could read back the other's
    shuffle. The same read twice has one fingerprint."""
    def fingerprint(p: int) -> str:  # partition p only, named past the 100th character
        pad = "x" * 120
        return _exchange_fingerprint(spark, spark.read.parquet(partitioned).where(
            f"concat('{pad}', cast(p AS string)) = '{pad}{p}'").repartition(4, "id"))

    assert fingerprint(9) == fingerprint(9)
    assert fingerprint(9) != fingerprint(8)
