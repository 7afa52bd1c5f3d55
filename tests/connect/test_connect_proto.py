"""The generated code of proto/fullwindow/connect.proto is checked in; it must be what
dev/gen-proto (a pinned protoc from Maven Central) makes of the .proto file now."""
from __future__ import annotations

import filecmp
import os
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Java per shaded protobuf-java major (4.x lines: protoc 4.29.3; 3.5: protoc 3.23.4), then Python
JAVA = {"jvm/src/connect/shims/spark-4.0-4.3/java/io/fullwindow/connect/proto": "GeneratedMessage",
        "jvm/src/connect/shims/spark-3.5/java/io/fullwindow/connect/proto": "GeneratedMessageV3"}
GENERATED = [*JAVA, "python/fullwindow/_connect/connect_pb2.py"]


def _files(path: str) -> dict[str, str]:
    if os.path.isfile(path):
        return {os.path.basename(path): path}
    return {n: os.path.join(path, n) for n in sorted(os.listdir(path))}


def test_checked_in_code_is_what_gen_proto_makes_now():
    with tempfile.TemporaryDirectory() as out:
        r = subprocess.run([os.path.join(ROOT, "dev", "gen-proto"), out], cwd=ROOT,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        for rel in GENERATED:
            fresh, kept = _files(os.path.join(out, rel)), _files(os.path.join(ROOT, rel))
            assert sorted(fresh) == sorted(kept), f"{rel}: run dev/gen-proto"
            for name in fresh:
                assert filecmp.cmp(fresh[name], kept[name], shallow=False), \
                    f"{rel}/{name} is stale: run dev/gen-proto and commit the result"


def test_java_code_uses_spark_connects_shaded_protobuf():
    for folder, base in JAVA.items():
        java = _files(os.path.join(ROOT, folder))
        for path in java.values():
            text = open(path).read()
            assert "com.google.protobuf" not in text, path
        assert f"org.sparkproject.connect.protobuf.{base} implements" in open(
            java["FullWindowRelation.java"]).read(), folder
