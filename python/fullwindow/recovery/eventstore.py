"""A durable, append-only store of job events (FLIP-383's JobEventStore).

Layout: one directory of segments. A run writes a segment of its own, created when the store is
opened, named ``segment-<ms>-<pid>-<random>``; segments are never rewritten, so a crash can at
worst leave a torn tail in the segment of the run that crashed. On a file system whose streams
can sync (local, HDFS) a segment is one file, ``<name>.log``, appended to and synced at each
flush. On a store without append or sync (an object store) each flush writes an object of its
own, ``<name>.<seq>.log`` (``seq`` counting from 0), created if absent and visible only whole;
a segment is then its objects in ``seq`` order. Names sort in creation order.

Each record is ``MAGIC (4 bytes) | length (4, big-endian) | CRC32 of the payload (4) | payload``;
the payload is one event as compact UTF-8 JSON. Events are appended to an in-memory buffer and
written out by a background thread when the buffer holds ``write_buffer_size`` bytes or its
oldest event has waited ``flush_interval`` seconds; each write is followed by a sync.

Fencing: a run's first record (``runStarted``) names its lease epoch and every earlier segment
it read when it started, with the number of bytes it read of each. Reading starts from the run
with the highest epoch: of the segments before it only those bytes count (applied again to them
for the run before, and so on), so whatever a driver wrote after a later driver took its lease
over (a driver stopped past its lease timeout that then ran on) is ignored by every later run.

Reading tolerates damage: a torn tail (a crash mid-write) or a corrupt record (bad magic, length
or checksum) is skipped with a warning, and reading resumes at the next record boundary, so every
intact record is still returned.
"""
from __future__ import annotations

import json
import logging
import os
import struct
import threading
import time
import uuid
import warnings
import zlib
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from fullwindow.recovery import _fs

log = logging.getLogger("fullwindow.recovery")

MAGIC = b"FWe1"
_HEADER = struct.Struct(">4sII")  # magic, payload length, crc32(payload)
HEADER_SIZE = _HEADER.size
MAX_RECORD = 64 * 1024 * 1024
SEGMENT_PREFIX = "segment-"
SEGMENT_SUFFIX = ".log"


class EventStoreWarning(UserWarning):
    """A damaged part of an event segment was skipped."""


def encode_record(event: Dict[str, Any]) -> bytes:
    payload = json.dumps(event, separators=(",", ":"), sort_keys=True).encode("utf-8")
    return _HEADER.pack(MAGIC, len(payload), zlib.crc32(payload) & 0xFFFFFFFF) + payload


def decode_records(data: bytes, name: str = "segment") -> Tuple[List[Dict[str, Any]], List[str]]:
    """The intact events in ``data``, and a description of each damaged stretch skipped."""
    events: List[Dict[str, Any]] = []
    problems: List[str] = []
    pos, n = 0, len(data)
    bad_from: Optional[int] = None
    last_why: str  # why the stretch from bad_from is damaged (set with bad_from)

    def note_bad(end: int, why: str) -> None:
        problems.append(f"{name}: skipped bytes {bad_from}..{end} ({why})")

    while pos < n:
        ok = False
        why = ""
        if n - pos < HEADER_SIZE:
            why = "torn tail: incomplete record header"
        else:
            magic, length, crc = _HEADER.unpack_from(data, pos)
            if magic != MAGIC:
                why = "bad record marker"
            elif length > MAX_RECORD:
                why = "implausible record length"
            elif pos + HEADER_SIZE + length > n:
                why = "torn tail: incomplete record"
            else:
                payload = data[pos + HEADER_SIZE:pos + HEADER_SIZE + length]
                if zlib.crc32(payload) & 0xFFFFFFFF != crc:
                    why = "checksum mismatch"
                else:
                    try:
                        event = json.loads(payload.decode("utf-8"))
                    except ValueError:
                        why = "undecodable payload"
                    else:
                        if bad_from is not None:
                            note_bad(pos, last_why)
                            bad_from = None
                        events.append(event)
                        pos += HEADER_SIZE + length
                        ok = True
        if ok:
            continue
        if bad_from is None:
            bad_from, last_why = pos, why
        # resynchronise at the next record marker
        nxt = data.find(MAGIC, pos + 1)
        if nxt < 0:
            note_bad(n, last_why)
            bad_from = None
            break
        pos = nxt
    if bad_from is not None:
        note_bad(n, last_why)
    return events, problems


def _parse_size(value: Any, key: str) -> int:
    from fullwindow.errors import ConfigurationError

    if isinstance(value, int):
        return value
    text = str(value).strip().lower()
    units = {"b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "g": 1 << 30,
             "gb": 1 << 30}
    for suffix in sorted(units, key=len, reverse=True):
        if text.endswith(suffix) and text[:-len(suffix)].strip().replace(".", "", 1).isdigit():
            return int(float(text[:-len(suffix)]) * units[suffix])
    if text.isdigit():
        return int(text)
    raise ConfigurationError(f"{key} is '{value}'; expected a size such as 1m, 512k or 1048576.")


def _parse_duration(value: Any, key: str) -> float:
    from fullwindow.errors import ConfigurationError

    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip().lower()
    for suffix, scale in (("ms", 0.001), ("s", 1.0), ("min", 60.0), ("m", 60.0)):
        if text.endswith(suffix):
            num = text[:-len(suffix)].strip()
            try:
                return float(num) * scale
            except ValueError:
                break
    try:
        return float(text)
    except ValueError:
        raise ConfigurationError(
            f"{key} is '{value}'; expected a duration such as 1s, 200ms or 0.5.") from None


#: the first record of a run's segment: its lease epoch and what it read of earlier segments
RUN_STARTED = "runStarted"


def _parse_name(name: str) -> Optional[Tuple[str, Optional[int]]]:
    """``(segment, seq)`` of an event file's name: ``seq`` is None for an appended segment's
    single file, the object's number for one of an object segment's objects; None for a name
    that is no event file."""
    if not (name.startswith(SEGMENT_PREFIX) and name.endswith(SEGMENT_SUFFIX)):
        return None
    stem = name[:-len(SEGMENT_SUFFIX)]
    head, dot, tail = stem.rpartition(".")
    if dot and tail.isdigit() and head:
        return head, int(tail)
    return stem, None


def _stamp(segment: str) -> Optional[int]:
    try:
        return int(segment[len(SEGMENT_PREFIX):].split("-")[0])
    except ValueError:
        return None


def _first_event(data: bytes) -> Optional[Dict[str, Any]]:
    """The first record of ``data`` when it is intact (None otherwise)."""
    if len(data) < HEADER_SIZE:
        return None
    magic, length, crc = _HEADER.unpack_from(data, 0)
    if magic != MAGIC or HEADER_SIZE + length > len(data):
        return None
    payload = data[HEADER_SIZE:HEADER_SIZE + length]
    if zlib.crc32(payload) & 0xFFFFFFFF != crc:
        return None
    try:
        event = json.loads(payload.decode("utf-8"))
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def _fence(data: bytes) -> Optional[Tuple[int, Dict[str, int]]]:
    """The lease epoch and the segments read (name -> bytes) that a run's segment starts with."""
    first = _first_event(data)
    if first is None or first.get("type") != RUN_STARTED:
        return None
    epoch, read = first.get("epoch"), first.get("read")
    if not isinstance(epoch, int) or not isinstance(read, dict):
        return None
    return epoch, {str(k): int(v) for k, v in read.items() if isinstance(v, int) and v >= 0}


def fenced(segments: List[Tuple[str, bytes]]) -> List[Tuple[str, bytes]]:
    """The parts of ``segments`` (name and bytes, in name order) that count: from the run with
    the highest lease epoch that starts with a fence, the bytes it read of the segments before
    it (fenced the same way in turn), then its own segment and any later segment that has no
    fence (one written without a lease: forged by a test, or by an earlier version)."""
    head: List[Tuple[str, bytes]] = list(segments)
    tail: List[Tuple[str, bytes]] = []
    while True:
        best = None
        for i, (_, data) in enumerate(head):
            f = _fence(data)
            if f is not None and (best is None or f[0] >= best[1]):
                best = (i, f[0], f[1])
        if best is None:
            return head + tail
        i, _, read = best
        after = [(n, d) for n, d in head[i + 1:] if _fence(d) is None]
        tail = [head[i]] + after + tail
        head = [(n, d[:read[n]]) for n, d in head[:i] if n in read]


class EventStore:
    """Appends events durably to a new segment under ``directory``; see the module docstring.

    ``objects``: write each flush as an object of its own (a store without append or sync);
    ``first``: an event written and made durable before the constructor returns (the run's
    fence); ``gate``: called before each write, returns ``"ok"`` (write now), ``"wait"`` (hold
    the buffer: the lease is being renewed) or ``"lost"`` (drop it: another driver holds the
    job now).

    Examples:
        >>> import tempfile
        >>> events = tempfile.mkdtemp()
        >>> store = EventStore(events, write_buffer_size=1 << 20, flush_interval=1.0)
        >>> store.append({"type": "vertexInitialized", "fingerprint": "f1"})
        >>> store.close()
        >>> EventStore.read_all(events)
        [{'fingerprint': 'f1', 'type': 'vertexInitialized'}]
    """

    def __init__(self, directory: str, write_buffer_size: int = 1 << 20,
                 flush_interval: float = 1.0, fs: Any = None,
                 on_error: Optional[Any] = None, objects: bool = False,
                 first: Optional[Dict[str, Any]] = None,
                 gate: Optional[Callable[[], str]] = None):
        self.directory = directory
        self.write_buffer_size = max(1, int(write_buffer_size))
        self.flush_interval = max(0.001, float(flush_interval))
        self._fs = fs or _fs.filesystem(directory)
        self._fs.makedirs(directory)
        self.objects = bool(objects)
        self._gate = gate
        # Segment names sort in creation order: a millisecond stamp, never below the newest
        # existing segment's (a clock set back cannot reorder runs).
        stamp = int(time.time() * 1000)
        for name in self._fs.listdir(directory):
            parsed = _parse_name(name)
            existing = _stamp(parsed[0]) if parsed else None
            if existing is not None:
                stamp = max(stamp, existing + 1)
        self.name = f"{SEGMENT_PREFIX}{stamp:015d}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._seq = 0
        if self.objects:
            self.segment = _fs.join(directory, self.name)
            self._out: Any = None
        else:
            self.segment = _fs.join(directory, self.name + SEGMENT_SUFFIX)
            self._out = self._fs.create(self.segment)
        self._cond = threading.Condition()
        self._buffer: List[bytes] = []
        self._buffered = 0
        self._oldest: Optional[float] = None
        self._closed = False
        self._error: Optional[BaseException] = None
        self._writing = False
        self._on_error = on_error
        self.flushes = 0
        if first is not None:
            self._write(encode_record(first))
        self._thread = threading.Thread(target=self._run, name="fullwindow-event-store",
                                        daemon=True)
        self._thread.start()

    # -- writing ----------------------------------------------------------------------------------

    def append(self, event: Dict[str, Any]) -> None:
        """Buffers one event; it is written within ``flush_interval`` (or sooner, when the buffer
        fills)."""
        record = encode_record(event)
        with self._cond:
            if self._closed:
                raise RuntimeError("the event store is closed")
            self._buffer.append(record)
            self._buffered += len(record)
            if self._oldest is None:
                self._oldest = time.monotonic()
            self._cond.notify_all()

    def _take(self) -> bytes:
        data = b"".join(self._buffer)
        self._buffer, self._buffered, self._oldest = [], 0, None
        return data

    def _write(self, data: bytes) -> None:
        """Writes ``data`` durably: appended and synced, or as the segment's next object."""
        if self.objects:
            path = _fs.join(self.directory, f"{self.name}.{self._seq:09d}{SEGMENT_SUFFIX}")
            if not self._fs.create_with(path, data):
                raise RuntimeError(f"{path} exists already: another writer uses this segment")
            self._seq += 1
        else:
            assert self._out is not None  # an appended segment's open file
            self._out.write(data)
            self._out.sync()
        self.flushes += 1

    def _wait_for_gate(self) -> bool:
        """Whether buffered events may be written (False: drop them); waits while the lease
        is being confirmed."""
        while self._gate is not None:
            state = self._gate()
            if state == "ok":
                return True
            if state == "lost":
                return False
            time.sleep(0.05)
        return True

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._closed:
                        data = self._take()
                        break
                    if self._buffered >= self.write_buffer_size:
                        data = self._take()
                        break
                    if self._oldest is not None:
                        left = self._oldest + self.flush_interval - time.monotonic()
                        if left <= 0:
                            data = self._take()
                            break
                        self._cond.wait(left)
                    else:
                        self._cond.wait()
                closing = self._closed
                self._writing = bool(data)
            if data and self._wait_for_gate():
                try:
                    self._write(data)
                except BaseException as err:  # noqa: BLE001 - reported by flush()/close()
                    self._error = err
                    log.warning("fullwindow: writing job events to %s failed: %s", self.segment, err)
                    if self._on_error is not None:
                        self._on_error(err)
            with self._cond:
                self._writing = False
                self._cond.notify_all()
            if closing:
                return

    def flush(self, timeout: float = 30.0) -> None:
        """Writes everything appended so far and waits until it is durable."""
        deadline = time.monotonic() + timeout
        with self._cond:
            if self._oldest is not None:
                self._oldest = -1e18  # due now
                self._cond.notify_all()
            while (self._buffer or self._writing) and time.monotonic() < deadline:
                self._cond.wait(0.05)
        if self._error is not None:
            raise RuntimeError(f"writing job events failed: {self._error}")

    def close(self) -> None:
        """Flushes what is buffered and closes the segment."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
        self._thread.join(60)
        if self._out is not None:
            try:
                self._out.close()
            except Exception:  # noqa: BLE001
                pass

    def __enter__(self) -> "EventStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- reading ----------------------------------------------------------------------------------

    @staticmethod
    def segments(directory: str, fs: Any = None) -> List[str]:
        """The event files under ``directory`` (an object segment's objects each), in name
        order."""
        fs = fs or _fs.filesystem(directory)
        return [_fs.join(directory, n) for n in fs.listdir(directory) if _parse_name(n)]

    @staticmethod
    def read_raw(directory: str, fs: Any = None,
                 problems: Optional[List[str]] = None) -> List[Tuple[str, bytes]]:
        """Every segment under ``directory`` as ``(name, bytes)`` in name order, before fencing:
        an appended segment's file, or an object segment's objects joined in ``seq`` order (up
        to the first one missing). One listing, then the files read several at a time."""
        fs = fs or _fs.filesystem(directory)
        files: Dict[str, List[Tuple[Optional[int], str]]] = {}
        for name in fs.listdir(directory):
            parsed = _parse_name(name)
            if parsed is not None:
                files.setdefault(parsed[0], []).append((parsed[1], name))
        order = sorted(files)
        paths = [_fs.join(directory, n) for seg in order for _, n in sorted(
            files[seg], key=lambda x: -1 if x[0] is None else x[0])]
        contents = dict(zip(paths, fs.read_many(paths)))
        out: List[Tuple[str, bytes]] = []
        for seg in order:
            parts = sorted(files[seg], key=lambda x: -1 if x[0] is None else x[0])
            chunks: List[bytes] = []
            for i, (seq, name) in enumerate(parts):
                data = contents.get(_fs.join(directory, name))
                if data is None or (seq is not None and seq != i):
                    if problems is not None:
                        problems.append(f"{_fs.join(directory, name)}: "
                                        + ("unreadable" if data is None else
                                           f"object {i} of the segment is missing")
                                        + "; the rest of that segment is skipped")
                    break
                chunks.append(data)
            out.append((seg, b"".join(chunks)))
        return out

    @staticmethod
    def read_all(directory: str, fs: Any = None, warn: bool = True) -> List[Dict[str, Any]]:
        """Every intact event of every segment that counts (see the module docstring's
        fencing), oldest segment first, in append order. Damaged stretches are skipped with an
        ``EventStoreWarning`` (and a log warning)."""
        out: List[Dict[str, Any]] = []
        for _, events in EventStore.read_segments(directory, fs, warn):
            out.extend(events)
        return out

    @staticmethod
    def read_segments(directory: str, fs: Any = None, warn: bool = True,
                      sizes: Optional[Dict[str, int]] = None,
                      runs: Optional[List[Dict[str, Any]]] = None
                      ) -> List[Tuple[str, List[Dict[str, Any]]]]:
        """Per segment that counts (one per run), oldest first: its path and its intact events
        (fenced). ``sizes``, when given, receives how many bytes of each segment were read: a new
        run's fence; ``runs``, each counted segment's ``runStarted`` record, oldest first."""
        fs = fs or _fs.filesystem(directory)
        problems: List[str] = []
        raw = EventStore.read_raw(directory, fs, problems)
        if sizes is not None:
            sizes.update((name, len(data)) for name, data in raw)
        out: List[Tuple[str, List[Dict[str, Any]]]] = []
        for name, data in fenced(raw):
            path = _fs.join(directory, name)
            events, bad = decode_records(data, path)
            problems.extend(bad)
            if runs is not None:
                runs.extend(e for e in events[:1] if e.get("type") == RUN_STARTED)
            out.append((path, [e for e in events if e.get("type") != RUN_STARTED]))
        for p in problems:
            log.warning("fullwindow: %s", p)
            if warn:
                warnings.warn(f"fullwindow event store: {p}", EventStoreWarning, stacklevel=3)
        return out

    @staticmethod
    def iter_events(directory: str, fs: Any = None) -> Iterator[Dict[str, Any]]:
        return iter(EventStore.read_all(directory, fs))
