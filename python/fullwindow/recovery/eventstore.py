"""A durable, append-only store of job events (FLIP-383's JobEventStore).

Layout: one directory of segment files, ``segment-<ms>-<pid>-<random>.log``. A run appends to a
segment of its own, created when the store is opened; a segment is never rewritten, so a crash
can at worst leave a torn tail in the segment of the run that crashed.

Each record is ``MAGIC (4 bytes) | length (4, big-endian) | CRC32 of the payload (4) | payload``;
the payload is one event as compact UTF-8 JSON. Events are appended to an in-memory buffer and
written out by a background thread when the buffer holds ``write_buffer_size`` bytes or its
oldest event has waited ``flush_interval`` seconds; each write is followed by a sync.

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
from typing import Any, Dict, Iterator, List, Optional, Tuple

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


class EventStore:
    """Appends events durably to a new segment under ``directory``; see the module docstring.

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
                 on_error: Optional[Any] = None):
        self.directory = directory
        self.write_buffer_size = max(1, int(write_buffer_size))
        self.flush_interval = max(0.001, float(flush_interval))
        self._fs = fs or _fs.filesystem(directory)
        self._fs.makedirs(directory)
        # Segment names sort in creation order: a millisecond stamp, never below the newest
        # existing segment's (a clock set back cannot reorder runs).
        stamp = int(time.time() * 1000)
        for existing in self.segments(directory, self._fs):
            try:
                stamp = max(stamp, int(existing.rsplit("/", 1)[-1][len(SEGMENT_PREFIX):].split("-")[0]) + 1)
            except ValueError:
                pass
        name = f"{SEGMENT_PREFIX}{stamp:015d}-{os.getpid()}-{uuid.uuid4().hex[:8]}{SEGMENT_SUFFIX}"
        self.segment = _fs.join(directory, name)
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
            if data:
                try:
                    self._out.write(data)
                    self._out.sync()
                    self.flushes += 1
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
        fs = fs or _fs.filesystem(directory)
        return [_fs.join(directory, n) for n in fs.listdir(directory)
                if n.startswith(SEGMENT_PREFIX) and n.endswith(SEGMENT_SUFFIX)]

    @staticmethod
    def read_all(directory: str, fs: Any = None, warn: bool = True) -> List[Dict[str, Any]]:
        """Every intact event of every segment, oldest segment first, in append order. Damaged
        stretches are skipped with an ``EventStoreWarning`` (and a log warning)."""
        out: List[Dict[str, Any]] = []
        for _, events in EventStore.read_segments(directory, fs, warn):
            out.extend(events)
        return out

    @staticmethod
    def read_segments(directory: str, fs: Any = None,
                      warn: bool = True) -> List[Tuple[str, List[Dict[str, Any]]]]:
        """Per segment (one per run), oldest first: its path and its intact events."""
        fs = fs or _fs.filesystem(directory)
        out: List[Tuple[str, List[Dict[str, Any]]]] = []
        for path in EventStore.segments(directory, fs):
            events: List[Dict[str, Any]]
            try:
                data = fs.read(path)
            except Exception as err:  # noqa: BLE001 - an unreadable segment is skipped too
                problems, events = [f"{path}: unreadable ({err})"], []
            else:
                events, problems = decode_records(data, path)
            for p in problems:
                log.warning("fullwindow: %s", p)
                if warn:
                    warnings.warn(f"fullwindow event store: {p}", EventStoreWarning, stacklevel=3)
            out.append((path, events))
        return out

    @staticmethod
    def iter_events(directory: str, fs: Any = None) -> Iterator[Dict[str, Any]]:
        return iter(EventStore.read_all(directory, fs))
