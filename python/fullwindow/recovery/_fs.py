"""The few file-system operations recovery needs, on a local directory (plain ``os``) or on any
Hadoop file system URI (the driver JVM's ``org.apache.hadoop.fs.FileSystem`` through py4j)."""
from __future__ import annotations

import os
import re
from typing import Any, Dict, List, Optional, Tuple

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def is_local(path: str) -> bool:
    """True for a plain path; ``file:`` URIs and other schemes go through Hadoop."""
    return not _SCHEME.match(path)


def join(base: str, *parts: str) -> str:
    out = base.rstrip("/")
    for p in parts:
        out = f"{out}/{p.strip('/')}"
    return out


#: what a plain local directory gives recovery (see :meth:`HadoopFS.storage`)
LOCAL_STORAGE = {"events": "append", "create": "link", "lease": "mtime", "commit": "rename",
                 "scheme": "local", "filesystem": "os"}


class LocalFS:
    """A local directory tree."""

    def storage(self, path: str) -> Dict[str, str]:
        """What this file system gives recovery: everything, the POSIX way."""
        return dict(LOCAL_STORAGE)

    def read_many(self, paths: List[str]) -> List[Optional[bytes]]:
        out: List[Optional[bytes]] = []
        for p in paths:
            try:
                out.append(self.read(p))
            except OSError:
                out.append(None)
        return out

    def list_sizes(self, path: str) -> List[Tuple[str, int]]:
        out = []
        for name in self.listdir(path):
            size = self.size(os.path.join(path, name))
            if size is not None:
                out.append((name, size))
        return out

    def makedirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def listdir(self, path: str) -> List[str]:
        try:
            return sorted(os.listdir(path))
        except FileNotFoundError:
            return []

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def size(self, path: str) -> Optional[int]:
        try:
            return os.path.getsize(path)
        except OSError:
            return None

    def read(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def crc32(self, path: str) -> int:
        import zlib

        crc = 0
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                crc = zlib.crc32(chunk, crc)
        return crc & 0xFFFFFFFF

    def create(self, path: str) -> "LocalStream":
        """A new file, opened exclusively (an existing file is never rewritten)."""
        return LocalStream(open(path, "xb"))

    def create_with(self, path: str, data: bytes) -> bool:
        """Creates ``path`` holding ``data`` if no file is there (False if one is), atomically:
        written and synced under a temporary name, then hard-linked to ``path`` (a link never
        replaces an existing name), so a reader sees the whole content or no file."""
        tmp = f"{path}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        with open(tmp, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        finally:
            os.remove(tmp)
        self.sync_dir(os.path.dirname(path))
        return True

    def sync_dir(self, path: str) -> None:
        fd = os.open(path or ".", os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def mtime_ms(self, path: str) -> Optional[int]:
        try:
            return os.stat(path).st_mtime_ns // 1_000_000
        except FileNotFoundError:
            return None

    def touch(self, path: str, ms: int) -> bool:
        """Sets ``path``'s modification time (False if it is gone)."""
        try:
            os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000))
            return True
        except FileNotFoundError:
            return False

    def delete(self, path: str) -> None:
        import shutil

        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.exists(path):
            os.remove(path)


class LocalStream:
    def __init__(self, f: Any):
        self._f = f

    def write(self, data: bytes) -> None:
        self._f.write(data)

    def sync(self) -> None:
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self) -> None:
        self._f.close()


class HadoopFS:
    """A Hadoop file system URI, used through the driver JVM's FileSystem API."""

    def __init__(self, jvm: Any, hadoop_conf: Any):
        self._jvm = jvm
        self._conf = hadoop_conf

    def _path(self, path: str) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path(path)

    @property
    def _store(self) -> Any:
        return self._jvm.org.apache.spark.sql.fullwindow.recovery.RecoveryStorage

    def storage(self, path: str) -> Dict[str, str]:
        """What the file system of directory ``path`` gives recovery, decided by the JVM from
        what the file system reports and does (``RecoveryStorage.describe``): ``events``
        (``append``: a segment appended and synced; ``objects``: each flush an object of its
        own, created if absent; ``none``), ``create`` (``conditional``, ``exclusive``,
        ``none``), ``lease`` (``mtime``: renewed with setTimes; ``etag``: a conditional
        overwrite; ``none``), ``commit`` (``rename`` or ``direct``), and ``scheme``,
        ``filesystem``, ``hadoop`` for messages."""
        text = str(self._store.describe(path, self._conf))
        return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)

    def read_many(self, paths: List[str]) -> List[Optional[bytes]]:
        """The content of each file (None for a missing one), read several at a time."""
        if not paths:
            return []
        arr = self._jvm.org.apache.spark.sql.fullwindow.FullWindowPython.lines("\n".join(paths))
        return [None if b is None else bytes(b) for b in self._store.readAll(arr, self._conf)]

    def list_sizes(self, path: str) -> List[Tuple[str, int]]:
        """The names and lengths of ``path``'s entries, in one listing."""
        text = str(self._store.list(path, self._conf))
        out = []
        for line in text.splitlines():
            name, _, size = line.rpartition("\t")
            out.append((name, int(size)))
        return out

    def etag(self, path: str) -> Optional[str]:
        value = self._store.etag(path, self._conf)
        return None if value is None else str(value)

    def overwrite_if_match(self, path: str, data: bytes, etag: str) -> Optional[str]:
        """Replaces ``path``'s content if its ETag is still ``etag``; the new ETag, or None when
        another writer changed or removed it since."""
        value = self._store.overwriteIfMatch(path, bytearray(data), etag, self._conf)
        return None if value is None else str(value)

    def _fs(self, path: str) -> Any:
        p = self._path(path)
        return p.getFileSystem(self._conf), p

    def makedirs(self, path: str) -> None:
        fs, p = self._fs(path)
        fs.mkdirs(p)

    def listdir(self, path: str) -> List[str]:
        fs, p = self._fs(path)
        if not fs.exists(p):
            return []
        return sorted(str(s.getPath().getName()) for s in fs.listStatus(p))

    def exists(self, path: str) -> bool:
        fs, p = self._fs(path)
        return bool(fs.exists(p))

    def is_dir(self, path: str) -> bool:
        fs, p = self._fs(path)
        try:
            return bool(fs.getFileStatus(p).isDirectory())
        except Exception:  # noqa: BLE001 - FileNotFoundException, through py4j
            return False

    def size(self, path: str) -> Optional[int]:
        fs, p = self._fs(path)
        if not fs.exists(p):
            return None
        return int(fs.getFileStatus(p).getLen())

    def read(self, path: str) -> bytes:
        fs, p = self._fs(path)
        stream = fs.open(p)
        try:
            out = self._jvm.java.io.ByteArrayOutputStream()
            self._jvm.org.apache.hadoop.io.IOUtils.copyBytes(stream, out, 65536, False)
            return bytes(out.toByteArray())
        finally:
            stream.close()

    def crc32(self, path: str) -> int:
        fs, p = self._fs(path)
        jvm = self._jvm
        crc = jvm.java.util.zip.CRC32()
        stream = jvm.java.util.zip.CheckedInputStream(fs.open(p), crc)
        try:
            jvm.org.apache.hadoop.io.IOUtils.copyBytes(
                stream, jvm.java.io.OutputStream.nullOutputStream(), 1 << 20, False)
        finally:
            stream.close()
        return int(crc.getValue())

    def create(self, path: str) -> "HadoopStream":
        fs, p = self._fs(path)
        return HadoopStream(fs.create(p, False))

    def create_with(self, path: str, data: bytes) -> bool:
        """Creates ``path`` holding ``data`` if no file is there (False if one is), so that of
        two racing writers exactly one wins: the store's conditional create where it reports one
        (S3A: ``If-None-Match: *``, the object visible only whole), else Hadoop's create without
        overwrite, atomic on a file system with a name node (HDFS; the content follows the
        name, so a reader may briefly see a shorter file: lease.py treats it as being
        written). ``data`` should be unique to the writer (an outcome left open by a failed
        request is settled by reading it back)."""
        return bool(self._store.createIfAbsent(path, bytearray(data), self._conf))

    def sync_dir(self, path: str) -> None:
        """Nothing to do: a Hadoop file system's name operations are durable when they return
        (HDFS logs them in the name node's edit log first)."""

    def mtime_ms(self, path: str) -> Optional[int]:
        fs, p = self._fs(path)
        try:
            return int(fs.getFileStatus(p).getModificationTime())
        except Exception:  # noqa: BLE001 - FileNotFoundException, through py4j
            return None

    def touch(self, path: str, ms: int) -> bool:
        fs, p = self._fs(path)
        try:
            fs.setTimes(p, ms, -1)
            return True
        except Exception:  # noqa: BLE001 - FileNotFoundException, through py4j
            return False

    def delete(self, path: str) -> None:
        fs, p = self._fs(path)
        if fs.exists(p):
            fs.delete(p, True)


class HadoopStream:
    def __init__(self, out: Any):
        self._out = out

    def write(self, data: bytes) -> None:
        self._out.write(bytearray(data))

    def sync(self) -> None:
        """Makes what was written durable: ``hsync`` (used only where the stream reports it:
        recovery refuses a directory whose streams cannot sync before it appends there)."""
        self._out.hsync()

    def close(self) -> None:
        self._out.close()


def filesystem(path: str, spark: Any = None) -> Any:
    """The file system of ``path``: local for a plain path, else Hadoop (needs ``spark``)."""
    if is_local(path):
        return LocalFS()
    if spark is None:
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession()
    if spark is None:
        raise RuntimeError(f"{path} is a Hadoop file system URI: it needs an active SparkSession")
    sc = spark.sparkContext
    return HadoopFS(sc._jvm, sc._jsc.hadoopConfiguration())
