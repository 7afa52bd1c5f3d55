"""What a Spark session needs for Delta Lake and Iceberg tables (tests/lakehouse, and the job
scripts it runs as driver processes): the jars dev/lakehouse/fetch put in
.tools/lakehouse-<line>-..., Delta's and Iceberg's session extensions beside fullwindow's,
Delta's catalog as the session catalog, and an Iceberg Hadoop catalog named ``ice`` whose
warehouse is a directory. The versions of each Spark line are dev/lines.sh's FW_LAKE_VERSIONS; a
line may have only one of the two formats (Spark 4.2: Delta), and the session then has only
that one."""
from __future__ import annotations

import functools
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: the environment variable naming the jar folder (set by conftest for the jobs it starts)
JARS_ENV = "FULLWINDOW_LAKE_JARS"


#: the formats, as dev/lines.sh names them, and how a message names each
FORMATS = {"delta": "Delta Lake (delta-spark)", "iceberg": "Iceberg Spark runtime"}


def _sh(script: str) -> str:
    out = subprocess.run(["bash", "-c", f". dev/lines.sh && {script}"], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def spark_line() -> str:
    """The Spark line of the pyspark this process runs (``4.1``)."""
    import pyspark

    return ".".join(pyspark.__version__.split(".")[:2])


@functools.lru_cache(maxsize=None)
def versions(line: str) -> dict[str, str | None]:
    """The Delta and Iceberg versions dev/lines.sh gives Spark ``line`` (None: no release)."""
    got = {fmt: _sh(f"fw_lake {line} {fmt}") for fmt in FORMATS}
    return {fmt: (None if v == "-" else v) for fmt, v in got.items()}


def full_line() -> str:
    """The line the whole suite runs on (dev/lines.sh FW_LAKE_LINE); the others run the tests
    marked ``every_line``."""
    return _sh('printf %s "$FW_LAKE_LINE"')


def missing(fmt: str, line: str) -> str | None:
    """Why ``fmt`` cannot be tested on Spark ``line``, or None when it can."""
    if versions(line)[fmt]:
        return None
    return (f"no {FORMATS[fmt]} release is built for Spark {line} (dev/lines.sh "
            f"FW_LAKE_VERSIONS): the {fmt} tests run on Spark "
            + ", ".join(l for l in _sh("fw_lake_lines").split() if versions(l)[fmt]))


def require(*formats: str) -> None:
    """Skips the calling test (or fixture) unless this Spark line has a release of each of
    ``formats``."""
    import pytest

    line = spark_line()
    for fmt in formats:
        why = missing(fmt, line)
        if why:
            pytest.skip(why)


def fetch(line: str) -> str:
    """dev/lakehouse/fetch LINE (idempotent): the folder of that line's Delta and Iceberg jars."""
    done = subprocess.run([os.path.join(ROOT, "dev", "lakehouse", "fetch"), line], cwd=ROOT,
                          capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"dev/lakehouse/fetch failed:\n{done.stderr[-3000:]}")
    return done.stdout.strip().splitlines()[-1]


def formats_in(jars: str) -> set[str]:
    """The formats whose jars folder ``jars`` holds (``delta``, ``iceberg``)."""
    names = os.listdir(jars)
    return {fmt for fmt, prefix in (("delta", "delta-spark_"), ("iceberg", "iceberg-spark-runtime-"))
            if any(n.startswith(prefix) for n in names)}


def conf(jars: str, warehouse: str) -> dict[str, str]:
    """Spark settings for a session with Delta and Iceberg (the jars in folder ``jars``; only
    the one of them it holds) and an Iceberg Hadoop catalog ``ice`` over ``warehouse``;
    fullwindow.configure then adds its jar and extension to these."""
    files = sorted(os.path.join(jars, n) for n in os.listdir(jars) if n.endswith(".jar"))
    formats = formats_in(jars)
    out = {"spark.jars": ",".join(files)}
    extensions = []
    if "delta" in formats:
        extensions.append("io.delta.sql.DeltaSparkSessionExtension")
        out["spark.sql.catalog.spark_catalog"] = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
    if "iceberg" in formats:
        extensions.append("org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        out.update({"spark.sql.catalog.ice": "org.apache.iceberg.spark.SparkCatalog",
                    "spark.sql.catalog.ice.type": "hadoop",
                    "spark.sql.catalog.ice.warehouse": warehouse})
    out["spark.sql.extensions"] = ",".join(extensions)
    return out


#: what the suite's sessions and jobs set besides (small and quiet, as tests/conftest.py's)
LOCAL = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "2",
    "spark.driver.memory": "1g",
    "spark.sql.session.timeZone": "UTC",
    # Delta rebuilds a table's state from its log in this many tasks (default 50): tiny tables
    "spark.databricks.delta.snapshotPartitions": "2",
}


def session(jars: str, warehouse: str, extra: dict | None = None, app_name: str = "lakehouse"):
    """A local[2] fullwindow session with Delta and Iceberg (see ``conf``), LOCAL and
    ``extra``."""
    import sys

    from pyspark.sql import SparkSession

    import fullwindow

    # pyspark's Python workers run PYSPARK_PYTHON (not spark.pyspark.python): this interpreter,
    # as fullwindow.session() sets it
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.master("local[2]").appName(app_name)
    for k, v in conf(jars, warehouse).items():
        builder.config(k, v)
    return fullwindow.configure(builder, {**LOCAL, **(extra or {})}).getOrCreate()
