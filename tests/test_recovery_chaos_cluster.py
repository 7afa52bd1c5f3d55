"""Chaos on a real Spark standalone cluster (a master and two one-core workers on 127.0.0.1): the
driver of tests/recovery_cluster_job.py is SIGKILLed once about half of its partitions are
committed; the same program started again reads those partitions back from their committed files
on the executors, and while a task of the resumed run is reading one of them, the executor JVM
running it is SIGKILLed. Spark runs that task again on the other executor, which reads the
committed file again: the output equals the expected result, the recovered partitions' user
function never runs in the resumed run, and every partition is committed exactly once.

How the kill is made to land inside a read, every time: the resumed run pauses (in the JVM, row by
row, see PAUSE_PARTS in the job) while the write pulls the recovered partitions' rows, and a
committed file is read lazily as the rows are pulled; the test watches the executors' open files
(``/proc/<pid>/fd``) and kills the JVM that has a committed file open, with its read offset
(``/proc/<pid>/fdinfo``) past the start and short of the end. No REST polling decides the kill."""
from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter

from cluster import StandaloneCluster
from test_recovery_cluster import Driver, is_gone, log_tail, wait_for
from test_recovery_cluster import cluster  # noqa: F401 - the module's cluster fixture

N, ROWS = 10, 20_000
PAUSES, PAUSE = 4, 1.0  # each recovered partition's read-back takes >= 4 s in the resumed run


def expected_rows() -> list[tuple]:
    out = []
    for p in range(N):
        lo = p * ROWS
        n, total = ROWS, sum(range(lo, lo + ROWS))
        out += [(lo + pos, p, n, total, pos) for pos in range(ROWS)]
    return out


class ChaosDriver(Driver):
    def start(self, run: str, slow: float, parts: int = N, rows: int = ROWS, **extra: str):
        return super().start(run, slow, parts, rows, **extra)


def reading(pids: list[int], files: dict[str, int]) -> dict | None:
    """The first executor JVM among ``pids`` that has one of ``files`` (path -> partition) open
    with its read offset inside the file (past the 4-byte header, before the end): the pid, the
    partition, the offset and the file's size."""
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target not in files:
                continue
            try:
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    pos = int(next(line for line in f if line.startswith("pos:")).split()[1])
            except (OSError, StopIteration, ValueError):
                continue
            size = os.path.getsize(target)
            if 4 < pos < size:
                return {"pid": pid, "partition": files[target], "pos": pos, "size": size}
    return None


def test_executor_killed_while_a_resumed_run_reads_committed_partitions(tmp_path, cluster):
    d = ChaosDriver(tmp_path, cluster, "chaos-cluster")
    report = os.path.join(str(tmp_path), "r2-report.json")
    t0 = time.time()
    try:
        p1 = d.start("r1", slow=1.0)
        wait_for(p1, "half the partitions committed",
                 lambda: len({e["partition"] for e in d.finished()}) >= N // 2, 300,
                 d.log_path("r1"))
        d.kill(p1)
        committed = {local(e["path"]): e["partition"] for e in d.finished()}
        done = set(committed.values())
        assert N // 2 <= len(done) < N, sorted(done)
        assert all(os.path.isfile(p) for p in committed), committed

        p2 = d.start("r2", slow=1.0, PAUSE_PARTS=",".join(map(str, sorted(done))),
                     PAUSE=str(PAUSE), PAUSES=str(PAUSES), REPORT=report)
        t_r2 = time.time()
        hit = wait_for(p2, "an executor reading a committed file",
                       lambda: reading(cluster.executor_pids(), committed), 300,
                       d.log_path("r2"))
        lost_exec = StandaloneCluster.executor_id(hit["pid"])
        os.kill(hit["pid"], signal.SIGKILL)
        t_kill = time.time() - t_r2
        assert lost_exec is not None
        deadline = time.time() + 10
        while not is_gone(hit["pid"]) and time.time() < deadline:
            time.sleep(0.1)
        assert is_gone(hit["pid"])
        rc = p2.wait(timeout=300)
        assert rc == 0 and "JOB DONE" in d.log("r2"), log_tail(d.log_path("r2"))
    finally:
        d.kill_all()
    lost = hit["partition"]

    # Spark saw the attempt fail with its executor and ran the partition again elsewhere
    with open(report) as f:
        rep = json.load(f)
    failed = [t for t in rep["tasks"] if t["index"] == lost and t["status"] == "FAILED"]
    assert [t["executor"] for t in failed] == [lost_exec], rep["tasks"]
    stage = [t for t in rep["tasks"] if t["stage"] == failed[0]["stage"]]  # the write's
    attempts = [t for t in stage if t["index"] == lost]
    assert "ExecutorLostFailure" in failed[0]["error"], attempts
    retried = [t for t in attempts if t["status"] == "SUCCESS"]
    assert len(retried) == 1 and retried[0]["attempt"] > failed[0]["attempt"], attempts
    assert retried[0]["executor"] != lost_exec, attempts
    # every other task of the write succeeded at its first attempt
    others = [t for t in stage if t["index"] != lost]
    assert sorted((t["index"], t["status"]) for t in others) == \
        [(i, "SUCCESS") for i in range(N) if i != lost], stage

    # nothing lost or duplicated
    assert d.output() == expected_rows()
    # nothing committed was recomputed: the resumed run's commit node read back every partition
    # committed before the driver kill (the lost one's retry counts once: a failed attempt's
    # metrics are dropped) and committed only the others ...
    assert rep["commitMetrics"] == {"recovered partitions": str(len(done)),
                                    "committed partitions": str(N - len(done))}, rep
    # ... the recovered partitions' user function never ran in it ...
    assert sorted(m["partition"] for m in d.markers("S", "r2")) == sorted(set(range(N)) - done)
    # ... it initialized the operation with those partitions recovered, and every partition has
    # exactly one task-finished event over both runs
    events = d.events()
    inits = [e for e in events if e["type"] == "vertexInitialized"]
    assert [e["recovered"] for e in inits] == [0, len(done)], inits
    finished = [e for e in events if e["type"] == "taskFinished"]
    assert Counter(e["partition"] for e in finished) == Counter(range(N)), finished
    assert {local(e["path"]): e["partition"] for e in finished if e["partition"] in done} == \
        committed
    # the cost of the driver kill: partitions whose function had ended in the killed run without
    # a durable commit, run again by the resumed one
    ended_r1 = {m["partition"] for m in d.markers("E", "r1")}
    redone = sorted(ended_r1 - done)
    figures = {"committed_at_driver_kill": len(done), "partitions": N, "lost_partition": lost,
               "kill_after_s": round(t_kill, 1), "offset": hit["pos"], "size": hit["size"],
               "retry_attempt": retried[0]["attempt"], "retry_executor": retried[0]["executor"],
               "redone_after_driver_kill": redone, "recomputed_after_executor_kill": sorted(
                   {m["partition"] for m in d.markers("S", "r2")} & done),
               "seconds": round(time.time() - t0)}
    print(f"\nCHAOS cluster: {json.dumps(figures)}")
    if os.environ.get("FULLWINDOW_CHAOS_REPORT"):
        with open(os.environ["FULLWINDOW_CHAOS_REPORT"], "a") as f:
            f.write(json.dumps({"test": "cluster", **figures}) + "\n")


def local(path: str) -> str:
    """A committed file's path as the kernel shows it in /proc/<pid>/fd."""
    return os.path.realpath(path.removeprefix("file:"))
