"""A committed file and its directory entry are durable before the event naming it: a real driver
(local mode, so tasks run in its JVM) is traced with strace for fsync and rename calls, and for
every committed file its events name (operator outputs, committed map outputs, and the map
outputs of each shuffle the default scope keeps) the trace must show, in this order: an fsync of
the temporary file, the rename to the final name, an fsync of the directory holding it, and only
then the fsync of the event segment that records it. A kept map output is a hard link to Spark's
shuffle file made at its final name (no temporary name) that the driver syncs, file then
directory, before it records the event: there the trace must show the fsync of the final name
instead of the first two."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from helpers import ROOT

pytestmark = pytest.mark.skipif(shutil.which("strace") is None,
                                reason="needs strace (apt-get install strace)")

CODE = """
import json, os, warnings
import fullwindow
from fullwindow.recovery import job_events
spark = fullwindow.session(master="local[1]", conf={
    "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2",
    "spark.sql.adaptive.enabled": "true", "spark.sql.adaptive.coalescePartitions.enabled": "false",
    "spark.fullwindow.recovery.enabled": "true", "spark.fullwindow.recovery.dir": DIR,
    "spark.fullwindow.recovery.jobId": "durable"})
src = spark.range(0, 1000, numPartitions=2)
out = src.repartition(2, "id").fullWindowPartition().sortPartition("id")
assert out.count() == 1000
fullwindow.recovery.flush(spark)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    events = job_events(DIR, "durable")
paths = [e[k] for e in events if e["type"] == "taskFinished" for k in ("path", "indexPath")
         if k in e]
print("PATHS " + json.dumps(paths), flush=True)
# the driver's sync thread (a thread's name as the kernel keeps it: its first 15 characters)
jvm = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
for tid in os.listdir(f"/proc/{jvm}/task"):
    with open(f"/proc/{jvm}/task/{tid}/comm") as f:
        if f.read().strip() == "fullwindow-reco":
            print("SYNCER " + tid, flush=True)
"""

# strace -y prints an fd with its path: fsync(37</tmp/x/.part-1.tmp>) = 0
CALL = re.compile(r'^(\d+)\s+(?:\d+:\d+:\d+\.\d+\s+)?(\w+)\((.*)\)\s+=\s+(-?\d+)')
# a call another traced thread interrupted is printed in two lines (-f): its start, then its end
UNFINISHED = re.compile(r'^(\d+)\s+(?:\d+:\d+:\d+\.\d+\s+)?(\w+\(.*) <unfinished \.\.\.>$')
RESUMED = re.compile(r'^(\d+)\s+(?:\d+:\d+:\d+\.\d+\s+)?<\.\.\. \w+ resumed>(.*)$')


def _calls(trace: str) -> list[tuple[str, str, str]]:
    """The successful calls of an strace -f output, in the order they ended: (name, arguments,
    thread id), a call printed in two lines (interrupted by another thread's) joined again."""
    started: dict[str, str] = {}
    calls = []
    with open(trace) as f:
        for line in f:
            line = line.rstrip("\n")
            m = UNFINISHED.match(line)
            if m:
                started[m.group(1)] = m.group(2)
                continue
            m = RESUMED.match(line)
            if m and m.group(1) in started:
                line = f"{m.group(1)} {started.pop(m.group(1))}{m.group(2)}"
            m = CALL.match(line)
            if m and m.group(4) == "0":
                calls.append((m.group(2), m.group(3), m.group(1)))
    return calls


def _local(path: str) -> str:
    return path[len("file:"):] if path.startswith("file:") else path


def test_committed_files_are_synced_before_their_events(tmp_path):
    rec = str(tmp_path / "recovery")
    trace = str(tmp_path / "trace.txt")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "python"), env.get("PYTHONPATH", "")])
    code = textwrap.dedent(CODE).replace("DIR", repr(rec))
    r = subprocess.run(["strace", "-f", "--seccomp-bpf", "-y", "-o", trace, "-e",
                        "trace=fsync,fdatasync,rename,renameat,renameat2",
                        sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0 and "PATHS" in r.stdout, r.stderr[-3000:]
    import json

    paths = [_local(p) for p in json.loads(r.stdout.split("PATHS ", 1)[1].splitlines()[0])]
    syncer = r.stdout.split("SYNCER ", 1)[1].split()[0] if "SYNCER " in r.stdout else None
    # outputs of both partitions (.data and .index of each map output, and each part file),
    # and the map outputs of the count's shuffle, which the default scope (the whole job) keeps
    assert len([p for p in paths if "/operators/" in p]) == 6, paths
    assert any("/shuffles/" in p for p in paths), paths
    calls = _calls(trace)

    def first(pred, after=-1):
        return next((i for i, c in enumerate(calls) if i > after and pred(c)), None)

    linked = []
    for path in paths:
        d, name = os.path.split(path)
        tmp = os.path.join(d, f".{name}.tmp")
        synced = first(lambda c: c[0] in ("fsync", "fdatasync") and f"<{tmp}>" in c[1])
        if synced is not None:  # written under a temporary name, then renamed
            renamed = first(lambda c: c[0].startswith("rename") and f'"{tmp}"' in c[1]
                            and f'"{path}"' in c[1], synced)
            assert renamed is not None, f"{path}: no rename after the temporary file's fsync"
        else:  # a map output hard-linked at its final name: the driver syncs it by that name
            renamed = first(lambda c: c[0] in ("fsync", "fdatasync") and f"<{path}>" in c[1])
            assert renamed is not None, f"{path} was never synced"
            # by the driver's sync thread: no task waited on the disk
            assert calls[renamed][2] == syncer, (path, calls[renamed], syncer)
            linked.append(path)
        dir_synced = first(lambda c: c[0] == "fsync" and c[1].endswith(f"<{d}>"), renamed)
        assert dir_synced is not None, f"{path}: its directory was not synced after its file"
        recorded = first(lambda c: c[0] == "fsync" and "/events/segment-" in c[1], dir_synced)
        assert recorded is not None, f"{path}: no event-segment fsync after it was made durable"
    # every kept map output (a hard link to Spark's shuffle file) took the driver's sync, the
    # operators' part files the temporary name
    assert all(p.endswith((".data", ".index")) for p in linked), linked
    assert [p for p in paths if "/shuffles/" in p and p not in linked] == [], (linked, paths)
    assert [p for p in paths if p not in linked], f"no file took a temporary name: {paths}"
