"""The S3 test infrastructure (tests/s3.py): moto's S3 server as its own process, and a new
pyspark driver that reaches it through Hadoop's S3A connector with MotoS3.conf(): parquet written
and read back, a multipart upload, a rename (copy), a directory's bulk delete and a
create-if-absent that loses (If-None-Match). Fails when the fetched jars, moto or the settings
stop working together."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import urllib.request

import pytest

from s3 import MotoS3, S3AUnsupported

BUCKET = "fw-s3-tests"

DRIVER = textwrap.dedent('''
    import json, sys
    from pyspark.sql import SparkSession

    conf, bucket = json.loads(sys.argv[1]), sys.argv[2]
    builder = SparkSession.builder.master("local[1]").appName("s3-server-test")
    for k, v in conf.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    try:
        spark.range(0, 100, 1, 2).selectExpr("id", "id * 7 % 13 AS v") \\
            .write.parquet(f"s3a://{bucket}/x")
        back = sorted(tuple(r) for r in spark.read.parquet(f"s3a://{bucket}/x").collect())
        assert back == [(i, i * 7 % 13) for i in range(100)], back[:5]

        jvm = spark.sparkContext._jvm
        P = jvm.org.apache.hadoop.fs.Path
        fs = P(f"s3a://{bucket}/").getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        big, moved = P(f"s3a://{bucket}/big"), P(f"s3a://{bucket}/moved/big")
        out = fs.create(big, False)
        chunk = bytearray(b"z" * (1 << 20))
        for _ in range(6):      # 6 MB at 5 MB parts: a multipart upload
            out.write(chunk)
        out.close()
        assert fs.getFileStatus(big).getLen() == 6 << 20
        assert fs.rename(big, moved) and not fs.exists(big) and fs.exists(moved)
        assert fs.delete(P(f"s3a://{bucket}/x"), True) and not fs.exists(P(f"s3a://{bucket}/x"))

        once = P(f"s3a://{bucket}/once")
        lost = None
        for data in (b"first", b"second"):
            out = fs.createFile(once).overwrite(False) \\
                .must("fs.option.create.conditional.overwrite", True).build()
            out.write(bytearray(data))
            try:
                out.close()
            except Exception as e:  # the second create loses at close (HTTP 412)
                # py4j's Py4JJavaError, or pyspark's conversion of it (keeping it as _origin)
                jexc = getattr(e, "java_exception", None) or getattr(e, "_origin", None)
                lost = jexc.getClass().getName() if jexc is not None else repr(e)
        stream = fs.open(once)
        content = bytes(jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
        stream.close()
        print(json.dumps({"lost": lost, "content": content.decode()}))
    finally:
        spark.stop()
''')


@pytest.fixture(scope="module")
def moto():
    server = MotoS3()
    try:
        server.start()
    except S3AUnsupported as e:
        pytest.skip(str(e))
    try:
        yield server
    finally:
        server.stop()


def test_moto_answers_and_logs_requests(moto):
    assert moto.make_bucket(BUCKET) == f"s3a://{BUCKET}"
    with urllib.request.urlopen(f"{moto.endpoint}/{BUCKET}?list-type=2", timeout=10) as resp:
        assert resp.status == 200 and b"<ListBucketResult" in resp.read()
    assert ("PUT", f"/{BUCKET}", 200) in moto.requests()


def test_fetched_jars(moto):
    names = [os.path.basename(j) for j in moto.jars()]
    assert any(n.startswith("hadoop-aws-") for n in names)
    for module in ("s3", "s3-transfer-manager", "sts"):
        assert any(n.startswith(module + "-2.") for n in names), module
    # not the SDK's 600 MB bundle, nor a second copy of what pyspark's jars hold
    for clash in ("bundle-", "netty-common-", "netty-handler-", "slf4j-api-", "httpclient-",
                  "httpcore-", "commons-logging-", "commons-codec-"):
        assert not any(n.startswith(clash) for n in names), clash
    again = subprocess.run([os.path.join(os.path.dirname(os.path.dirname(__file__)),
                                         "dev", "s3", "fetch")],
                           env={**os.environ, "PYTHON": sys.executable},
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and again.stdout.strip().splitlines()[-1] == moto.jar_dir


def test_spark_driver_uses_s3a_against_moto(moto, tmp_path):
    moto.make_bucket(BUCKET)
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    conf = moto.conf({"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
                      "spark.sql.shuffle.partitions": "2",
                      "spark.hadoop.fs.s3a.multipart.size": "5M"})
    moto.reset_counters()
    run = subprocess.run([sys.executable, str(script), json.dumps(conf), BUCKET],
                         env={**os.environ, **moto.driver_env()},  # the S3A jars
                         capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-4000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result == {"lost": "org.apache.hadoop.fs.s3a.RemoteFileChangedException",
                      "content": "first"}, result
    requests = moto.requests()
    queries = [path.partition("?")[2] for _, path, _ in requests]
    assert any(q.startswith("uploads") for q in queries), "no multipart upload"
    assert any(q.startswith("delete") for q in queries), "no bulk delete"
    assert any(status == 412 for _, _, status in requests), "no failed precondition"
    assert all(status < 500 for _, _, status in requests), requests
