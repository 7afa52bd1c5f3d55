"""The durable job-event store: append-only segments, async buffered writes, length-prefixed and
checksummed records, and damage-tolerant reading."""
from __future__ import annotations

import os
import time
import warnings

import pytest
from helpers import record_offsets

from fullwindow.recovery.eventstore import (HEADER_SIZE, EventStore, EventStoreWarning,
                                            decode_records, encode_record)


def ev(i: int, pad: int = 0) -> dict:
    return {"type": "taskFinished", "fingerprint": "fp", "partition": i, "pad": "x" * pad}


def segment_files(d) -> list[str]:
    return EventStore.segments(str(d))


def read(d, expect_warning: bool = False) -> list[dict]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = EventStore.read_all(str(d))
    got = [w for w in caught if issubclass(w.category, EventStoreWarning)]
    assert bool(got) == expect_warning, [str(w.message) for w in got]
    return out


def test_round_trip_and_close_flushes(tmp_path):
    store = EventStore(str(tmp_path), write_buffer_size=1 << 20, flush_interval=3600)
    for i in range(100):
        store.append(ev(i))
    assert os.path.getsize(store.segment) == 0  # nothing due yet: large buffer, long interval
    store.close()
    assert [e["partition"] for e in read(tmp_path)] == list(range(100))


def test_flush_by_size(tmp_path):
    one = len(encode_record(ev(0, pad=100)))
    store = EventStore(str(tmp_path), write_buffer_size=one * 5, flush_interval=3600)
    for i in range(4):
        store.append(ev(i, pad=100))
    time.sleep(0.3)
    assert os.path.getsize(store.segment) == 0
    store.append(ev(4, pad=100))  # the buffer is full now
    deadline = time.time() + 5
    while os.path.getsize(store.segment) == 0 and time.time() < deadline:
        time.sleep(0.01)
    assert os.path.getsize(store.segment) == 5 * one
    assert len(read(tmp_path)) == 5
    store.close()


def test_flush_by_interval(tmp_path):
    store = EventStore(str(tmp_path), write_buffer_size=1 << 30, flush_interval=0.2)
    store.append(ev(0))
    t0 = time.time()
    while os.path.getsize(store.segment) == 0 and time.time() - t0 < 5:
        time.sleep(0.01)
    waited = time.time() - t0
    assert os.path.getsize(store.segment) > 0
    assert 0.1 <= waited < 2, waited
    store.close()


def test_explicit_flush_is_durable(tmp_path):
    store = EventStore(str(tmp_path), write_buffer_size=1 << 30, flush_interval=3600)
    store.append(ev(1))
    store.flush()
    assert [e["partition"] for e in read(tmp_path)] == [1]
    store.close()
    with pytest.raises(RuntimeError):
        store.append(ev(2))


def test_each_run_appends_a_new_segment_never_rewriting(tmp_path):
    sizes = []
    for run in range(5):
        with EventStore(str(tmp_path), flush_interval=0.01) as store:
            for i in range(10):
                store.append(ev(run * 10 + i))
        segs = segment_files(tmp_path)
        assert len(segs) == run + 1
        sizes.append([os.path.getsize(s) for s in segs])
    # earlier segments never change
    for run in range(1, 5):
        assert sizes[run][:run] == sizes[run - 1]
    assert [e["partition"] for e in read(tmp_path)] == list(range(50))


def test_many_segments(tmp_path):
    for run in range(40):
        with EventStore(str(tmp_path)) as store:
            store.append(ev(run))
    assert [e["partition"] for e in read(tmp_path)] == list(range(40))


def test_empty_segment_and_empty_dir(tmp_path):
    assert read(tmp_path / "missing") == []
    EventStore(str(tmp_path)).close()  # opened and closed without events: an empty segment
    assert len(segment_files(tmp_path)) == 1
    assert read(tmp_path) == []
    with EventStore(str(tmp_path)) as store:
        store.append(ev(7))
    assert [e["partition"] for e in read(tmp_path)] == [7]


def test_torn_tail_is_skipped_with_a_warning(tmp_path):
    with EventStore(str(tmp_path)) as store:
        for i in range(10):
            store.append(ev(i))
    seg = segment_files(tmp_path)[0]
    full = os.path.getsize(seg)
    for cut in (1, 5, HEADER_SIZE, HEADER_SIZE + 3):
        with open(seg, "r+b") as f:
            f.truncate(full - cut)
        assert [e["partition"] for e in read(tmp_path, expect_warning=True)] == list(range(9))
    # a tail torn inside the header of a record
    one = len(encode_record(ev(9)))
    with open(seg, "r+b") as f:
        f.truncate(full - one + 3)
    assert [e["partition"] for e in read(tmp_path, expect_warning=True)] == list(range(9))


@pytest.mark.parametrize("where", ["payload", "length", "magic", "checksum"])
def test_corrupt_record_in_the_middle_keeps_every_other_record(tmp_path, where):
    with EventStore(str(tmp_path)) as store:
        for i in range(10):
            store.append(ev(i, pad=i))
    seg = segment_files(tmp_path)[0]
    data = bytearray(open(seg, "rb").read())
    at = record_offsets(bytes(data))[4]
    index = {"magic": at + 1, "length": at + 7, "checksum": at + 9, "payload": at + HEADER_SIZE + 5}
    data[index[where]] ^= 0x5A
    open(seg, "wb").write(bytes(data))
    got = [e["partition"] for e in read(tmp_path, expect_warning=True)]
    assert got == [0, 1, 2, 3, 5, 6, 7, 8, 9]


def test_garbage_between_records_and_damage_in_one_of_several_segments(tmp_path):
    with EventStore(str(tmp_path)) as store:
        store.append(ev(0))
    with EventStore(str(tmp_path)) as store:
        store.append(ev(1))
        store.append(ev(2))
    with EventStore(str(tmp_path)) as store:
        store.append(ev(3))
    seg = segment_files(tmp_path)[1]
    data = open(seg, "rb").read()
    first = len(encode_record(ev(1)))
    open(seg, "wb").write(data[:first] + b"\x00garbage\xff" + data[first:])
    assert [e["partition"] for e in read(tmp_path, expect_warning=True)] == [0, 1, 2, 3]


def test_decode_records_reports_problems():
    good = encode_record({"a": 1})
    events, problems = decode_records(good + good[:-2], "seg")
    assert events == [{"a": 1}] and len(problems) == 1 and "torn tail" in problems[0]
    events, problems = decode_records(good + good)
    assert events == [{"a": 1}, {"a": 1}] and problems == []


def test_concurrent_appends_keep_every_record(tmp_path):
    import threading

    store = EventStore(str(tmp_path), write_buffer_size=512, flush_interval=0.01)

    def work(t):
        for i in range(200):
            store.append({"t": t, "i": i})

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    store.close()
    got = read(tmp_path)
    assert len(got) == 800
    for t in range(4):
        assert [e["i"] for e in got if e["t"] == t] == list(range(200))


def test_hadoop_file_system_uri(spark, tmp_path):
    """A file: URI goes through the JVM's Hadoop FileSystem, as hdfs:// or s3a:// would."""
    from fullwindow.recovery import _fs

    uri = "file://" + str(tmp_path / "events")
    fs = _fs.filesystem(uri, spark)
    assert isinstance(fs, _fs.HadoopFS)
    with EventStore(uri, flush_interval=0.01, fs=fs) as store:
        for i in range(5):
            store.append(ev(i))
    with EventStore(uri, fs=fs) as store:
        store.append(ev(5))
    assert [e["partition"] for e in EventStore.read_all(uri, fs)] == list(range(6))
    # the same bytes as the local store writes: readable without the JVM too
    assert [e["partition"] for e in read(tmp_path / "events")] == list(range(6))


# -- fencing: what a driver writes after a later driver took its lease over does not count ------

def fenced_runs(directory: str, fs=None, objects: bool = False) -> None:
    """Two runs on the store of ``directory`` as two drivers would make them: A writes, B starts
    (its first event names what it read of A's segment), A runs on and writes more, and a third
    run C starts after B. Every reader, B's successor included, sees A's events up to B's start
    and B's: A's later writes do not count. Shared by the local, HDFS and S3 tests."""
    from fullwindow.recovery.eventstore import RUN_STARTED

    def open_run(epoch: int) -> EventStore:
        read: dict = {}
        EventStore.read_segments(directory, fs, sizes=read)
        return EventStore(directory, flush_interval=0.01, fs=fs, objects=objects,
                          first={"type": RUN_STARTED, "epoch": epoch, "read": read})

    a = open_run(1)
    for i in range(3):
        a.append(ev(i))
    a.flush()
    b = open_run(2)
    for i in range(3, 6):
        a.append(ev(i))  # A runs on: stopped past its timeout, it has not noticed yet
    a.flush()
    b.append(ev(100))
    b.flush()
    assert [e["partition"] for e in EventStore.read_all(directory, fs)] == [0, 1, 2, 100]
    a.close()
    b.close()
    c = open_run(3)
    c.append(ev(200))
    c.close()
    assert [e["partition"] for e in EventStore.read_all(directory, fs)] == [0, 1, 2, 100, 200]
    # a driver with a lower epoch whose segment appears only after B's start (it took epoch 1,
    # stalled before opening its store, and B took epoch 2 meanwhile) counts not at all
    late = EventStore(directory, flush_interval=0.01, fs=fs, objects=objects,
                      first={"type": RUN_STARTED, "epoch": 1, "read": {}})
    late.append(ev(300))
    late.close()
    assert [e["partition"] for e in EventStore.read_all(directory, fs)] == [0, 1, 2, 100, 200]


@pytest.mark.parametrize("objects", [False, True], ids=["appended", "objects"])
def test_a_later_runs_fence_hides_what_an_earlier_driver_writes_after_it(tmp_path, objects):
    fenced_runs(str(tmp_path), objects=objects)


def test_object_segments_write_one_object_per_flush_and_read_in_order(tmp_path):
    """A store without append: each flush is an object of its own (``<segment>.<seq>.log``),
    created if absent; reading joins them in order, and a segment whose object is missing is
    read up to the gap, with a warning."""
    store = EventStore(str(tmp_path), flush_interval=0.01, objects=True)
    for i in range(30):
        store.append(ev(i))
        if i % 10 == 9:
            store.flush()
    store.close()
    names = sorted(os.listdir(tmp_path))
    assert len(names) == 3 and all(n.endswith(f".{k:09d}.log") for k, n in enumerate(names))
    assert [e["partition"] for e in read(tmp_path)] == list(range(30))
    os.remove(tmp_path / names[1])
    assert [e["partition"] for e in read(tmp_path, expect_warning=True)] == list(range(10))
