"""What Hadoop's S3A connector does, exactly, for what the recovery code relies on: path
capabilities, Syncable, create-if-absent and ETag-conditional overwrite, setTimes, rename,
listings, directories and Abortable streams; against moto's S3 server (tests/s3.py), through
S3A in the running pyspark's JVM (py4j), once with ``fs.s3a.create.conditional.enabled`` true and
once false. Not a test: it prints facts (each call's result, or the Java exception chain, the S3
requests it made with the headers that matter, and S3A's warnings).

    .venv/bin/python tests/s3_facts.py                   # the default line (Hadoop 3.5.0)
    .venvs/spark-4.1/bin/python tests/s3_facts.py        # Spark 4.1 (Hadoop 3.4.2)

The S3A jars are the ones dev/s3/fetch brings for the Hadoop of the python running it.
"""
from __future__ import annotations

import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from s3 import MotoS3  # noqa: E402

BUCKET = "facts"
#: a multipart write: above fs.s3a.multipart.size, set to S3's smallest part (5 MB) here
BIG = 6 << 20


class Big:
    """BIG bytes of ``fill`` (a multipart upload)."""

    def __init__(self, fill: bytes) -> None:
        self.fill = fill

    def __len__(self) -> int:
        return BIG

CAPABILITIES = [
    "fs.option.create.conditional.overwrite",
    "fs.option.create.conditional.overwrite.etag",
    "fs.capability.outputstream.abortable",
    "fs.capability.etags.available",
    "fs.option.create.in.close",
    "fs.capability.paths.checksums",
    "fs.capability.lease.recoverable",
]
COND = "fs.option.create.conditional.overwrite"
COND_ETAG = "fs.option.create.conditional.overwrite.etag"
#: request headers worth showing (the SDK's request log names a request's headers)
HEADERS = {"if-none-match", "if-match", "content-md5", "x-amz-copy-source",
           "x-amz-sdk-checksum-algorithm"}

_SENDING = re.compile(r"Sending Request: DefaultSdkHttpFullRequest\(httpMethod=(\w+), .*?"
                      r"encodedPath=(\S*?), headers=\[(.*?)\], queryParameters=\[(.*?)\]\)")
_RECEIVED = re.compile(r"Received (?:successful|failed) response: (\d+)")


class JvmLog:
    """The driver JVM's stderr (this process's fd 2 while the JVM starts), read a step at a
    time: S3A's warnings, and the SDK's request log."""

    def __init__(self) -> None:
        self.file = tempfile.NamedTemporaryFile(prefix="s3-facts-", suffix=".log", delete=False)
        self.saved = os.dup(2)
        os.dup2(self.file.fileno(), 2)
        self.pos = 0

    def take(self) -> list[str]:
        sys.stderr.flush()
        with open(self.file.name, "rb") as f:
            f.seek(self.pos)
            data = f.read()
        self.pos += len(data)
        return data.decode("utf-8", "replace").splitlines()

    def restore(self) -> None:
        os.dup2(self.saved, 2)


def summarize(lines: list[str]) -> tuple[list[str], list[str]]:
    """(requests "PUT /b/k?uploadId [If-None-Match] -> 412", the WARN/ERROR lines). A status is
    put after the last request logged before it: for parts uploaded in parallel it may belong
    to another part."""
    reqs, warns = [], []
    for line in lines:
        m = _SENDING.search(line)
        if m:
            method, path, headers, query = m.groups()
            names = [h.strip() for h in headers.split(",")]
            shown = [h for h in names
                     if h.lower() in HEADERS or h.lower().startswith("x-amz-checksum")]
            q = "?" + "&".join(x.strip() for x in query.split(",")) if query.strip() else ""
            reqs.append(f"{method} {path}{q}" + (f" [{', '.join(shown)}]" if shown else ""))
            continue
        m = _RECEIVED.search(line)
        if m and reqs:
            reqs[-1] += f" -> {m.group(1)}"
            continue
        if re.search(r"\b(WARN|ERROR)\b", line) and "NativeCodeLoader" not in line:
            line = re.sub(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d ", "", line)
            warns.append(line if len(line) < 240 else line[:240] + " ...")
        elif line.startswith(("\tat ", "Caused by")):
            continue
    return reqs, warns


class Facts:
    def __init__(self, spark, log: JvmLog) -> None:
        self.spark = spark
        self.jvm = spark.sparkContext._jvm
        self.log = log
        self.P = self.jvm.org.apache.hadoop.fs.Path

    def chain(self, jexc) -> str:
        out, seen = [], 0
        while jexc is not None and seen < 8:
            msg = jexc.getMessage()
            msg = " ".join(str(msg).split()) if msg is not None else "null"
            out.append(f"{jexc.getClass().getName()}: {msg}")
            jexc, seen = jexc.getCause(), seen + 1
        return "\n        caused by ".join(out)

    def step(self, label: str, fn, show=repr):
        """Runs fn, prints its result or exception chain, the S3 requests and warnings; returns
        (ok, value or Java exception)."""
        self.log.take()
        try:
            value, ok = fn(), True
            text = "ok" + ("" if value is None else f": {show(value)}")
        except Exception as e:  # noqa: BLE001
            # pyspark's conversion of py4j's Py4JJavaError keeps the Java exception as _origin
            from py4j.protocol import Py4JJavaError

            if isinstance(e, Py4JJavaError):
                jexc = e.java_exception
            elif getattr(e, "_origin", None) is not None:
                jexc = e._origin
            else:
                raise
            value, ok = jexc, False
            text = "FAILS: " + self.chain(jexc)
        reqs, warns = summarize(self.log.take())
        print(f"    {label}: {text}")
        for r in reqs:
            print(f"        s3: {r}")
        for w in warns:
            print(f"        log: {w}")
        return ok, value

    def read(self, fs, p) -> str:
        if not fs.exists(p):
            return "<absent>"
        st = fs.getFileStatus(p)
        if st.isDirectory():
            return "<directory>"
        n = st.getLen()
        stream = fs.open(p)
        try:
            if n > 64:
                return f"<{n} bytes of {bytes([stream.read()])!r}>"
            data = bytes(self.jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
        finally:
            stream.close()
        return repr(data.decode("utf-8", "replace"))

    def write(self, out, data: bytes | Big) -> None:
        if isinstance(data, Big):
            chunk = bytearray(data.fill * (1 << 20))
            for _ in range(BIG >> 20):
                out.write(chunk)
        else:
            out.write(bytearray(data))

    def is_instance(self, cls: str, obj) -> bool:
        return bool(self.jvm.java.lang.Class.forName(cls).isInstance(obj))


def run(facts: Facts, conditional: bool) -> None:
    jvm = facts.jvm
    P = facts.P
    tag = f"cond-{str(conditional).lower()}"
    base = f"s3a://{BUCKET}/{tag}"
    conf = jvm.org.apache.hadoop.conf.Configuration(
        facts.spark.sparkContext._jsc.hadoopConfiguration())
    conf.set("fs.s3a.create.conditional.enabled", str(conditional).lower())
    conf.set("fs.s3a.multipart.size", "5M")
    fs = jvm.org.apache.hadoop.fs.FileSystem.newInstance(jvm.java.net.URI(f"s3a://{BUCKET}/"), conf)
    step = facts.step
    read = lambda p: facts.read(fs, p)  # noqa: E731
    print(f"\n=== fs.s3a.create.conditional.enabled={str(conditional).lower()} "
          f"(fs.s3a.multipart.size=5M; 'big' writes are {BIG >> 20} MB: multipart) ===")

    print("\na. hasPathCapability(s3a://%s/%s/a/file, X)" % (BUCKET, tag))
    for cap in CAPABILITIES:
        print(f"    {cap}: {fs.hasPathCapability(P(base + '/a/file'), cap)}")

    print("\nb. fs.create(p, false): Syncable")
    p = P(base + "/b/file")
    out = fs.create(p, False)
    print(f"    hasCapability(hsync)={out.hasCapability('hsync')} "
          f"hasCapability(hflush)={out.hasCapability('hflush')}")
    facts.write(out, b"synced?")
    step("hflush()", lambda: out.hflush())
    step("after hflush: exists(p)", lambda: fs.exists(p))
    step("hsync()", lambda: out.hsync())
    step("after hsync: exists(p)", lambda: fs.exists(p))
    step("close()", lambda: out.close())
    step("after close: exists(p), content", lambda: (fs.exists(p), read(p)))
    strict = jvm.org.apache.hadoop.conf.Configuration(conf)
    strict.set("fs.s3a.downgrade.syncable.exceptions", "false")
    sfs = jvm.org.apache.hadoop.fs.FileSystem.newInstance(
        jvm.java.net.URI(f"s3a://{BUCKET}/"), strict)
    out = sfs.create(P(base + "/b/strict"), False)
    facts.write(out, b"x")
    step("with fs.s3a.downgrade.syncable.exceptions=false: hflush()", lambda: out.hflush())
    step("with fs.s3a.downgrade.syncable.exceptions=false: hsync()", lambda: out.hsync())
    step("  close()", lambda: out.close())
    sfs.close()

    print("\nc. create-if-absent: createFile(p).overwrite(false)"
          f".must(\"{COND}\", true).build()")

    def cond_builder(path, how="must"):
        b = fs.createFile(path).overwrite(False)
        return getattr(b, how)(COND, True)

    def create_write_close(label, path, data, builder=cond_builder):
        ok, out = step(f"{label}: build()", lambda: builder(path).build(),
                       show=lambda s: s.getWrappedStream().getClass().getSimpleName())
        if not ok:
            return "build"
        ok, _ = step(f"{label}: write({len(data)} bytes)",
                     lambda: facts.write(out, data))
        if not ok:
            step(f"{label}: close() after the failed write", lambda: out.close())
            return "write"
        ok, _ = step(f"{label}: close()", lambda: out.close())
        return None if ok else "close"

    p = P(base + "/c/once")
    create_write_close("absent path", p, b"first")
    print(f"    content: {read(p)}")
    where = create_write_close("same path again (exists)", p, b"second")
    print(f"    -> second conditional create fails at: {where}; content: {read(p)}")
    where = create_write_close("same path again, big", p, Big(b"b"))
    print(f"    -> big conditional create over an existing object fails at: {where}; "
          f"content: {read(p)}")
    print("  two conditional streams open on one new path, A closed first:")
    for label, da, db in (("small", b"A", b"B"), ("big", Big(b"A"), Big(b"B"))):
        q = P(base + f"/c/race-{label}")
        ok_a, a = step(f"{label} A build()", lambda: cond_builder(q).build(),
                       show=lambda s: s.getWrappedStream().getClass().getSimpleName())
        ok_b, b = step(f"{label} B build()", lambda: cond_builder(q).build(),
                       show=lambda s: s.getWrappedStream().getClass().getSimpleName())
        if not (ok_a and ok_b):
            continue
        step(f"{label} A write", lambda: facts.write(a, da))
        step(f"{label} B write", lambda: facts.write(b, db))
        step(f"{label} A close()", lambda: a.close())
        step(f"{label} B close()", lambda: b.close())
        print(f"    {label} content: {read(q)}")
    print("  plain fs.create(p, false):")
    p = P(base + "/c/existing")
    out = fs.create(p, True)
    facts.write(out, b"old")
    out.close()
    step("on an existing path", lambda: fs.create(p, False),
         show=lambda s: s.getWrappedStream().getClass().getSimpleName())
    q = P(base + "/c/plain-race")
    _, a = step("A = fs.create(q, false) on a new path", lambda: fs.create(q, False))
    _, b = step("B = fs.create(q, false) while A is open (not closed)", lambda: fs.create(q, False))
    step("A write 'A', close()", lambda: (facts.write(a, b"A"), a.close()))
    step("B write 'B', close()", lambda: (facts.write(b, b"B"), b.close()))
    print(f"    content: {read(q)}")
    q = P(base + "/c/mixed-race")
    ok, a = step("A = conditional create of a new path", lambda: cond_builder(q).build())
    if ok:
        _, b = step("B = fs.create(q, false) while A is open", lambda: fs.create(q, False))
        step("B write 'B', close()", lambda: (facts.write(b, b"B"), b.close()))
        step("A write 'A', close()", lambda: (facts.write(a, b"A"), a.close()))
        print(f"    content: {read(q)}")
    q = P(base + "/c/opt")
    out = fs.create(q, True)
    facts.write(out, b"old")
    out.close()
    where = create_write_close("opt(...) instead of must(...), path exists", q, b"new",
                               lambda r: cond_builder(r, "opt"))
    print(f"    -> fails at: {where}; content: {read(q)}")

    print(f"\nd. conditional overwrite: createFile(p).overwrite(true).must(\"{COND_ETAG}\", etag)")
    p = P(base + "/d/file")
    out = fs.create(p, True)
    facts.write(out, b"v1")
    out.close()
    st = fs.getFileStatus(p)
    etag_source = facts.is_instance("org.apache.hadoop.fs.EtagSource", st)
    v1 = st.getEtag()
    print(f"    getFileStatus class: {st.getClass().getName()}; EtagSource: {etag_source}; "
          f"etag: {v1}")

    def etag_builder(path, etag, how="must"):
        return getattr(fs.createFile(path).overwrite(True), how)(COND_ETAG, etag)

    where = create_write_close("current etag", p, b"v2", lambda q: etag_builder(q, v1))
    v2 = fs.getFileStatus(p).getEtag()
    print(f"    -> fails at: {where}; content {read(p)}; etag now {v2} (changed: {v2 != v1})")
    where = create_write_close("stale etag (v1's)", p, b"v3", lambda q: etag_builder(q, v1))
    print(f"    -> fails at: {where}; content {read(p)}; etag {fs.getFileStatus(p).getEtag()}")
    where = create_write_close("stale etag (v1's), opt() instead of must()", p, b"v4",
                               lambda q: etag_builder(q, v1, "opt"))
    print(f"    -> fails at: {where}; content {read(p)}")
    cur = fs.getFileStatus(p).getEtag()
    where = create_write_close("current etag, unquoted", p, b"v5",
                               lambda q: etag_builder(q, cur.strip('"')))
    print(f"    -> fails at: {where}; content {read(p)}")
    where = create_write_close("etag on an absent path", P(base + "/d/absent"), b"x",
                               lambda q: etag_builder(q, cur))
    print(f"    -> fails at: {where}; exists: {fs.exists(P(base + '/d/absent'))}")
    cur = fs.getFileStatus(p).getEtag()
    where = create_write_close("big write, current etag", p, Big(b"1"),
                               lambda q: etag_builder(q, cur))
    big_etag = fs.getFileStatus(p).getEtag()
    print(f"    -> fails at: {where}; content {read(p)}; etag {big_etag}")
    where = create_write_close("big write, stale etag", p, Big(b"2"),
                               lambda q: etag_builder(q, cur))
    print(f"    -> fails at: {where}; content {read(p)}; etag {fs.getFileStatus(p).getEtag()} "
          f"(was {big_etag})")

    print("\ne. setTimes")
    p = P(base + "/e/file")
    fs.create(p, True).close()
    before = fs.getFileStatus(p).getModificationTime()
    step(f"setTimes(p, {before - 86_400_000}, -1) (a day earlier)",
         lambda: fs.setTimes(p, before - 86_400_000, -1))
    after = fs.getFileStatus(p).getModificationTime()
    print(f"    modification time before {before}, after {after}: "
          f"{'changed' if after != before else 'unchanged'}")

    print("\nf. rename")
    src, dst = P(base + "/f/src"), P(base + "/f/dst")
    out = fs.create(src, True)
    facts.write(out, b"src")
    out.close()
    step("rename(src, dst) (dst absent)", lambda: fs.rename(src, dst))
    print(f"    src exists: {fs.exists(src)}; dst: {read(dst)}")
    out = fs.create(src, True)
    facts.write(out, b"src2")
    out.close()
    step("rename(src, dst) (dst an existing file)", lambda: fs.rename(src, dst))
    print(f"    src: {read(src)}; dst: {read(dst)}")
    step("rename(absent, x)", lambda: fs.rename(P(base + "/f/absent"), P(base + "/f/x")))

    print("\ng. listings and directories")
    d = P(base + "/g/dir")
    for i in range(3):
        fs.create(P(base + f"/g/dir/f{i}"), False).close()
    step("listStatus(dir)", lambda: [(s.getPath().getName(), s.isDirectory())
                                     for s in fs.listStatus(d)])
    for i in range(3):
        step(f"delete(dir/f{i}, false)", lambda: fs.delete(P(base + f"/g/dir/f{i}"), False))
    step("after deleting the 3 files: exists(dir), isDirectory, listStatus",
         lambda: (fs.exists(d), fs.getFileStatus(d).isDirectory(),
                  [s.getPath().getName() for s in fs.listStatus(d)]))
    m = P(base + "/g/made")
    step("mkdirs(new)", lambda: fs.mkdirs(m))
    step("  then exists, isDirectory, listStatus(parent)",
         lambda: (fs.exists(m), fs.getFileStatus(m).isDirectory(),
                  [s.getPath().getName() for s in fs.listStatus(P(base + "/g"))]))
    step("mkdirs(existing dir)", lambda: fs.mkdirs(m))
    f = P(base + "/g/afile")
    fs.create(f, True).close()
    step("mkdirs(an existing file)", lambda: fs.mkdirs(f))
    step("mkdirs(under a file)", lambda: fs.mkdirs(P(base + "/g/afile/sub")))
    ok, out = step("create(p, false) under a file",
                   lambda: fs.create(P(base + "/g/afile/sub2"), False))
    if ok:
        step("  its close()", lambda: out.close())
        step("  then exists(afile/sub2), isFile(afile)",
             lambda: (fs.exists(P(base + "/g/afile/sub2")), fs.getFileStatus(f).isFile()))
    step("listStatus(absent)", lambda: fs.listStatus(P(base + "/g/absent")))
    step("delete(made, false) of the empty dir", lambda: fs.delete(m, False))

    print("\nh. output stream class, Abortable")
    for label, size in (("small", b"aborted"), ("big", Big(b"x"))):
        p = P(base + f"/h/{label}")
        out = fs.create(p, False)
        wrapped = out.getWrappedStream()
        print(f"    {label}: {out.getClass().getName()} wrapping {wrapped.getClass().getName()}; "
              f"Abortable: stream {facts.is_instance('org.apache.hadoop.fs.Abortable', out)}, "
              f"wrapped {facts.is_instance('org.apache.hadoop.fs.Abortable', wrapped)}; "
              f"hasCapability(fs.capability.outputstream.abortable)="
              f"{out.hasCapability('fs.capability.outputstream.abortable')}")
        step(f"{label} write", lambda: facts.write(out, size))
        step(f"{label} abort()", lambda: out.abort(),
             show=lambda r: f"alreadyClosed={r.alreadyClosed()} "
                            f"anyCleanupException={r.anyCleanupException()}")
        step(f"{label} close() after abort", lambda: out.close())
        step(f"{label} exists(p) after abort+close", lambda: fs.exists(p))
    fs.close()


def main() -> int:
    log = JvmLog()
    moto = None
    spark = None
    try:
        moto = MotoS3(python=sys.executable).start()
        moto.make_bucket(BUCKET)
        from pyspark.sql import SparkSession

        os.environ.update(moto.driver_env())  # the S3A jars, for the JVM launched below
        builder = SparkSession.builder.master("local[1]").appName("s3-facts")
        for k, v in moto.conf({"spark.ui.enabled": "false"}).items():
            builder = builder.config(k, v)
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("WARN")
        jvm = spark.sparkContext._jvm
        # the SDK's request log: method, path and header names of each S3 request
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
            "software.amazon.awssdk.request", jvm.org.apache.logging.log4j.Level.DEBUG)
        import pyspark

        sdk = jvm.software.amazon.awssdk.core.util.VersionInfo.SDK_VERSION
        hadoop = jvm.org.apache.hadoop.util.VersionInfo.getVersion()
        print(f"pyspark {pyspark.__version__}; Hadoop {hadoop}; AWS SDK {sdk}; "
              f"jars {moto.jar_dir}; moto {moto.endpoint}")
        facts = Facts(spark, log)
        for conditional in (True, False):
            run(facts, conditional)
        return 0
    finally:
        if spark is not None:
            spark.stop()
        if moto is not None:
            moto.stop()
        log.restore()
        tail = log.take()
        if any("Traceback" in line or "Error" in line for line in tail):
            print("\n".join(tail[-60:]), file=sys.stderr)
        os.unlink(log.file.name)


if __name__ == "__main__":
    sys.exit(main())
