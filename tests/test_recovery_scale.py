"""Recovery at scale, with real drivers (each run its own process and JVM): committed partitions
are compressed with Spark's codec (``spark.io.compression.codec``), recorded in the file and its
task-finished event, and read back by a run with another codec setting; a file of the earlier,
uncompressed format (and an event without a codec) is still read; a job of 10,000 small
partitions (10,000 with FULLWINDOW_SCALE=1) resumes with nothing recomputed; on a standalone cluster the resumed driver reads far
fewer bytes than were committed (the files' CRC32 are checked by the executors) and a file damaged
mid-file (size unchanged) still has its partition computed again, the output exact."""
from __future__ import annotations

import json
import os
import struct
import zlib

from helpers import run_python
from test_recovery_cluster import cluster  # noqa: F401 - the two-worker standalone cluster fixture

DRIVER = """
import json, os, sys, time
import fullwindow, fullwindow.recovery as rec
ARGS = json.loads(os.environ["SCALE_ARGS"])
conf = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "2", "spark.fullwindow.recovery.enabled": "true",
        "spark.fullwindow.recovery.dir": ARGS["dir"], "spark.fullwindow.recovery.jobId": ARGS["job"],
        # the full-window operation's committed partitions are what these tests count
        "spark.fullwindow.recovery.scope": "fullWindow"}
conf.update(ARGS.get("conf", {}))
spark = fullwindow.session(master=ARGS.get("master", "local[2]"), conf=conf)
def pid_read(pid):
    return int(next(l for l in open(f"/proc/{pid}/io") if l.startswith("rchar:")).split()[1])
jvm = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
n, rows = ARGS["partitions"], ARGS["rows"]
if ARGS.get("shape") == "random":
    df = spark.range(0, rows, 1, n).selectExpr("id", *[f"rand({i}) as d{i}" for i in range(30)])
    key = [("d0", fullwindow.Order.ASCENDING), ("id", fullwindow.Order.ASCENDING)]
else:
    df = spark.range(0, rows, 1, n).selectExpr(
        "id", "id % 7 as k", "concat('x', cast(id % 13 as string)) as s")
    key = [("k", fullwindow.Order.ASCENDING), ("id", fullwindow.Order.ASCENDING)]
read0 = pid_read(jvm)
out = df.fullWindowPartition().sortPartition(key)
if ARGS.get("collect"):
    result = [list(r) for r in out.collect()]
else:
    cols = ", ".join(out.columns)
    result = out.selectExpr("spark_partition_id() as p", "*").selectExpr(
        f"bit_xor(xxhash64(p, {cols})) as h", "count(1) as c").collect()[0].asDict()
read = pid_read(jvm) - read0
rec.flush(spark)
print("RESULT " + json.dumps({"result": result, "driver_read": read}), flush=True)
"""


def _run(directory: str, job: str, partitions: int, rows: int, timeout: int = 600, **more) -> dict:
    args = dict(dir=directory, job=job, partitions=partitions, rows=rows, **more)
    r = run_python(DRIVER, timeout=timeout, env={"SCALE_ARGS": json.dumps(args)})
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert r.returncode == 0 and lines, (r.stdout[-3000:], r.stderr[-5000:])
    return json.loads(lines[0][len("RESULT "):])


def _events(directory: str, job: str) -> list[dict]:
    from fullwindow.recovery import job_events

    return [e for e in job_events(directory, job) if e.get("type") == "taskFinished"]


def _expected(partitions: int, rows: int) -> list[list]:
    """What ``sortPartition("k", "id")`` of the small shape gives, partition by partition."""
    out = []
    step = rows // partitions
    for p in range(partitions):
        ids = range(p * step, (p + 1) * step)
        out += sorted(([i, i % 7, f"x{i % 13}"] for i in ids), key=lambda r: (r[1], r[0]))
    return out


def test_commits_compressed_with_the_codec_set_and_read_back_under_another(tmp_path):
    d = str(tmp_path / "rec")
    first = _run(d, "zstd", 4, 20_000, collect=True, conf={"spark.io.compression.codec": "zstd"})
    assert first["result"] == _expected(4, 20_000)
    events = _events(d, "zstd")
    assert sorted(e["partition"] for e in events) == [0, 1, 2, 3]
    for e in events:
        assert e["codec"] == "zstd"
        data = open(e["path"][len("file:"):] if e["path"].startswith("file:") else e["path"],
                    "rb").read()
        assert data[:4] == b"FWR2" and data[4:6] == struct.pack(">H", 4) and data[6:10] == b"zstd"
        assert len(data) == e["bytes"] and zlib.crc32(data) == e["checksum"]
        # compressed: UnsafeRow alone takes 40 bytes a row of this shape
        assert e["bytes"] < e["rows"] * 40 / 4, e
    # the default codec (lz4) now: the zstd files are read with the codec they name
    again = _run(d, "zstd", 4, 20_000, collect=True)
    assert again["result"] == first["result"]
    assert len(_events(d, "zstd")) == 4  # nothing ran again


def _unsafe_row(i: int) -> bytes:
    """The UnsafeRow bytes of (id, id % 7, 'x<id % 13>'): null bits, three 8-byte slots (the
    string's as offset << 32 | size), the string's bytes padded to 8."""
    s = f"x{i % 13}".encode()
    padded = s + b"\0" * (-len(s) % 8)
    return struct.pack("<qqqq", 0, i, i % 7, (32 << 32) | len(s)) + padded


def test_an_uncompressed_file_of_the_earlier_format_is_still_read(tmp_path):
    from fullwindow.recovery import EventStore
    from fullwindow.recovery._jobdir import events_dir

    d = str(tmp_path / "rec")
    first = _run(d, "old", 2, 2_000, collect=True)
    e = next(e for e in _events(d, "old") if e["partition"] == 0)
    # partition 0 written as before compression: "FWR1", then length-prefixed rows, then -1
    rows = _expected(2, 2_000)[:1_000]
    body = b"".join(struct.pack(">i", len(r)) + r for r in (_unsafe_row(x[0]) for x in rows))
    data = b"FWR1" + body + struct.pack(">i", -1)
    path = os.path.join(os.path.dirname(e["path"].removeprefix("file:")), "part-00000-old.rows")
    open(path, "wb").write(data)
    store = EventStore(events_dir(os.path.join(d, "old")))
    older = {k: v for k, v in e.items() if k != "codec"}
    older.update(path=path, bytes=len(data), checksum=zlib.crc32(data))
    store.append(older)
    store.close()
    again = _run(d, "old", 2, 2_000, collect=True)
    assert again["result"] == first["result"]
    assert len(_events(d, "old")) == 3  # read back, not run again


#: partitions of the many-small-partitions test: 2,000 in the suite, 10,000 as a scale run
#: (``FULLWINDOW_SCALE=1``: about 15 minutes on the 2-core machines, two drivers of 10,000 tasks
#: each; benchmarks/notes/recovery.md has its figures)
MANY = 10_000 if os.environ.get("FULLWINDOW_SCALE") == "1" else 2_000


def test_many_small_partitions_resume_with_nothing_recomputed(tmp_path):
    d = str(tmp_path / "rec")
    n, rows = MANY, 2 * MANY
    first = _run(d, "wide", n, rows, timeout=900)
    assert first["result"]["c"] == rows
    events = _events(d, "wide")
    assert len(events) == n and {e["partition"] for e in events} == set(range(n))
    again = _run(d, "wide", n, rows, timeout=900)
    assert again["result"] == first["result"]
    assert len(_events(d, "wide")) == n  # every partition read back


def test_on_a_cluster_the_driver_reads_no_committed_bytes_and_damage_is_caught(tmp_path, cluster):
    d = str(tmp_path / "rec")
    conf = {"spark.executor.memory": "900m", "spark.executor.cores": "1"}
    n, rows = 8, 300_000  # about 80 MB committed: random doubles do not compress
    first = _run(d, "wide", n, rows, master=cluster.url, shape="random", conf=conf)
    events = _events(d, "wide")
    committed = sum(e["bytes"] for e in events)
    assert len(events) == n and committed > 64 << 20
    again = _run(d, "wide", n, rows, master=cluster.url, shape="random", conf=conf)
    assert again["result"] == first["result"] and len(_events(d, "wide")) == n
    # the resumed driver read its events and listed the files; the executors read the files
    assert again["driver_read"] < committed / 4, (again["driver_read"], committed)

    victim = next(e for e in events if e["partition"] == 3)
    path = victim["path"].removeprefix("file:")
    data = bytearray(open(path, "rb").read())
    data[len(data) // 2] ^= 0xFF
    open(path, "wb").write(bytes(data))  # same size: only the CRC32 tells
    third = _run(d, "wide", n, rows, master=cluster.url, shape="random", conf=conf)
    assert third["result"] == first["result"]
    after = _events(d, "wide")
    assert [e["partition"] for e in after[n:]] == [3]  # only the damaged partition ran again
