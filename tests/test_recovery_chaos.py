"""Chaos: the driver of tests/recovery_job.py (Python, its JVM and Python workers: the whole
process group) is SIGKILLed at seeded random moments of its life (a fifth of them during JVM start
and session set-up, the others spread over the work from the session being ready to the final
write, scaled by an uninterrupted run's phases) and restarted after each kill until the job
completes (a new job id, a new life, once all its full-window work is durable); then at three forced points: inside
a commit rename (renames held 1.5 s by strace fault injection, killed while a complete temporary
file waits for its rename), inside an event flush (fsyncs held the same way, killed while
written event bytes wait for their fsync), and during the final write. After every restart:

- the final output equals an uninterrupted run's;
- a partition made durable before a run started (a task-finished event in the store) did not run
  again in that run (the markers the user functions leave say which partitions ran).

The figures (kills tried and landed, partitions redone per kill) are printed, and written to
``$FULLWINDOW_CHAOS_REPORT`` when set (benchmarks/notes/recovery.md quotes them).
``FULLWINDOW_CHAOS_SEED`` / ``FULLWINDOW_CHAOS_KILLS`` change the seed (12) and the number of
random kills (10)."""
from __future__ import annotations

import json
import os
import random
import shutil
import time

import pytest

from helpers import ROOT, RecoveryJob, _descendants, kill_group

SEED = int(os.environ.get("FULLWINDOW_CHAOS_SEED", "12"))
KILLS = int(os.environ.get("FULLWINDOW_CHAOS_KILLS", "10"))
SLOW = 1.0  # seconds per partition of A and B (4 partitions on 2 cores): a few seconds of work
STARTUP_SHARE = 0.2  # of the random kills, the share aimed at JVM start (before the session)
PARTS = {0, 1, 2, 3}
STAGES = ("A", "B")


class Job(RecoveryJob):
    script = os.path.join(ROOT, "tests", "recovery_job.py")

    def durable(self) -> dict[str, set[int]]:
        """Per stage (A, B): the partitions with a task-finished event in the store now."""
        if not os.path.isdir(self.dir):
            return {s: set() for s in STAGES}
        events = self.events()
        fps = {}
        for e in events:
            if e["type"] == "vertexInitialized" and e["operator"] != "shuffle input":
                fps["B" if e["inputs"] else "A"] = e["fingerprint"]
        return {s: {e["partition"] for e in events if e["type"] == "taskFinished"
                    and e["fingerprint"] == fps.get(s)} for s in STAGES}

    def ran(self, stage: str, run: str) -> set[int]:  # type: ignore[override]
        return set(super().ran(stage, run))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """An uninterrupted run's output, and how long its phases took: process start to session
    ready (the lease taken: JVM start) and session ready to exit (the job's work)."""
    job = Job(tmp_path_factory.mktemp("reference"), "reference")
    t0 = time.time()
    job.run("r1", slow=SLOW)
    total = time.time() - t0
    ready = _ready_at(job)
    assert ready is not None
    return job.output(), ready - t0, total - (ready - t0)


def _ready_at(job: Job, pid: int | None = None) -> float | None:
    """When the run ``pid`` (any, if None) took the job's lease (its session was ready)."""
    from fullwindow.recovery import _fs, lease

    held = lease.read(_fs.LocalFS(), os.path.join(job.dir, job.name))
    if held is None or (pid is not None and held["pid"] != pid):
        return None
    return held["started"] / 1000


def _kill(p) -> None:
    kill_group(p)  # until the JVM and the workers are reaped


def _wait(p, until: float, condition=lambda: False, poll: float = 0.05) -> bool:
    """Waits until ``until`` (time.time()) or ``condition()``; False if ``p`` ended first."""
    while time.time() < until:
        if p.poll() is not None:
            return False
        if condition():
            return True
        time.sleep(poll)
    return p.poll() is None


class Life:
    """One job id run again after each kill until a run completes."""

    def __init__(self, base, name: str, reference_rows):
        self.job = Job(base, name)
        self.reference = reference_rows
        self.runs = 0
        self.kills: list[dict] = []
        self.last_kill: dict | None = None

    def next_run(self) -> tuple[str, dict]:
        self.runs += 1
        return f"r{self.runs}", self.job.durable()

    def check_resumed(self, run: str, before: dict) -> None:
        """After ``run`` ended (killed or complete): durable partitions did not run in it, and
        what the previous kill lost (had run, not durable) and ``run`` ran again is recorded."""
        if self.last_kill is not None:
            k, self.last_kill = self.last_kill, None
            k["redone"] = {s: sorted(set(k["ran_not_durable"][s]) & self.job.ran(s, run))
                           for s in STAGES}
        for s in STAGES:
            redone = self.job.ran(s, run) & before[s]
            assert not redone, f"{self.job.name} {run}: durable {s} partitions {redone} ran again"

    def killed(self, run: str, before: dict, at: float, where: str) -> None:
        self.check_resumed(run, before)
        after = self.job.durable()
        ran = {s: self.job.ran(s, run) for s in STAGES}
        self.last_kill = {"life": self.job.name, "run": run, "where": where, "at_s": round(at, 2),
                          "durable_after": {s: len(after[s]) for s in STAGES},
                          "ran_not_durable": {s: sorted(ran[s] - after[s]) for s in STAGES}}
        self.kills.append(self.last_kill)

    def finish(self) -> None:
        run, before = self.next_run()
        self.job.run(run)
        self.completed(run, before)

    def completed(self, run: str, before: dict) -> None:
        self.check_resumed(run, before)
        assert self.job.output() == self.reference, f"{self.job.name} {run}: output differs"


def _report(section: str, data) -> None:
    print(f"\nCHAOS {section}: {json.dumps(data, sort_keys=True)}")
    path = os.environ.get("FULLWINDOW_CHAOS_REPORT")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"section": section, "seed": SEED, "data": data}) + "\n")


def test_random_kills_over_a_jobs_life(tmp_path, reference):
    rows, t_start, t_work = reference
    rng = random.Random(SEED)
    lives: list[Life] = []
    tried = landed = 0
    t0 = time.time()
    while landed < KILLS:
        life = Life(tmp_path, f"life{len(lives) + 1}", rows)
        lives.append(life)
        while True:
            run, before = life.next_run()
            p = life.job.start(run, slow=SLOW)
            started = time.time()
            tried += 1
            u = rng.random()
            if u < STARTUP_SHARE:  # during JVM start and session set-up
                phase, at = "start", u / STARTUP_SHARE * t_start
                alive = _wait(p, started + at)
            else:  # while the job works: from its session being ready to the final write
                phase, at = "work", (u - STARTUP_SHARE) / (1 - STARTUP_SHARE) * t_work * 1.1
                alive = _wait(p, started + 600, lambda: _ready_at(life.job, p.pid) is not None)
                alive = alive and _wait(p, time.time() + at)
            if not alive:
                assert p.wait(30) == 0 and "JOB DONE" in life.job.log(run), \
                    life.job.log(run)[-3000:]
                life.completed(run, before)
                break
            _kill(p)
            landed += 1
            life.killed(run, before, at, phase)
            # a life whose full-window work is all durable has only its final write left: it
            # finishes, and the next kills go to a new life (its whole life open to them)
            if landed >= KILLS or all(v == PARTS for v in life.job.durable().values()):
                life.finish()
                break
    kills = [k for life in lives for k in life.kills]
    _report("random", {"tried": tried, "landed": landed, "lives": len(lives),
                       "seconds": round(time.time() - t0, 1),
                       "reference_start_s": round(t_start, 1),
                       "reference_work_s": round(t_work, 1), "kills": kills})
    assert landed >= KILLS and all("redone" in k for k in kills)
    # the kills reached the work too, not only JVM start
    assert any(sum(k["durable_after"].values()) for k in kills)


def _complete_tmp(job: Job, p) -> set[str]:
    """The committed files written in full and waiting for their rename: temporaries (``.tmp``)
    under the job's operators that no process of the run ``p`` has open any more. A part file's
    temporary is written, synced and closed before its rename (CommittedRows.finish), so one that
    exists and is closed waits for its rename; so does a map output's temporary, a copy or hard
    link of a finished file (``.map-*.tmp``: where a kept output cannot be linked at its name)."""
    root = os.path.join(job.dir, job.name, "operators")
    temps = {os.path.realpath(os.path.join(d, n))
             for d, _, files in os.walk(root) for n in files if n.endswith(".tmp")}
    if not temps:
        return set()
    open_now = set()
    for pid in [p.pid, *_descendants(p.pid)]:
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                open_now.add(os.readlink(os.path.join(fd_dir, fd)))
            except OSError:
                continue
    return {t for t in temps if t not in open_now and os.path.exists(t)}


def _segment_grew(job: Job, sizes: dict) -> bool:
    d = os.path.join(job.dir, job.name, "events")
    grew = False
    for n in os.listdir(d) if os.path.isdir(d) else []:
        size = os.path.getsize(os.path.join(d, n))
        if n in sizes and size > sizes[n]:
            grew = True
        sizes[n] = size
    return grew


STRACE = shutil.which("strace")


def _held(calls: str) -> tuple:
    """strace holding every call of ``calls`` 1.5 s before it runs."""
    return (STRACE, "-f", "--seccomp-bpf", "-qq", "-o", os.devnull, "-e", f"trace={calls}",
            "-e", f"inject={calls}:delay_enter=1500000")


@pytest.mark.skipif(STRACE is None, reason="needs strace (apt-get install strace)")
@pytest.mark.parametrize("where", ["commit rename", "event flush", "final write"])
def test_forced_kill(tmp_path, reference, where):
    rows = reference[0]
    life = Life(tmp_path, where.replace(" ", "-"), rows)
    run, before = life.next_run()
    job = life.job
    if where == "commit rename":
        p = job.start(run, slow=SLOW, prefix=_held("rename,renameat,renameat2"))
        waiting: set[str] = set()
        hit = _wait(p, time.time() + 240, lambda: waiting.update(_complete_tmp(job, p)) or waiting)
    elif where == "event flush":
        sizes: dict = {}
        p = job.start(run, slow=SLOW, prefix=_held("fsync,fdatasync"))
        # events written to the segment, their fsync held: the run is inside a flush
        hit = _wait(p, time.time() + 240, lambda: _segment_grew(job, sizes))
    else:
        p = job.start(run, slow=SLOW * 2)
        hit = _wait(p, time.time() + 240,
                    lambda: bool(job.ran("W", run)) and job.durable()["B"] == PARTS)
    assert hit, f"the {where} point was not reached: " + job.log(run)[-3000:]
    _kill(p)
    if where == "commit rename":
        # the kill left a complete file that was never renamed
        assert any(os.path.exists(t) for t in waiting), waiting
    life.killed(run, before, 0.0, where)
    life.finish()
    if where == "final write":
        assert job.ran("A", f"r{life.runs}") == set() and job.ran("B", f"r{life.runs}") == set()
    _report(where, life.kills)
