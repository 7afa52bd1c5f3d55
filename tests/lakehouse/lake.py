"""What a Spark session needs for Delta Lake and Iceberg tables (tests/lakehouse, and the job
scripts it runs as driver processes): the jars dev/lakehouse/fetch put in
.tools/lakehouse-<line>-..., Delta's and Iceberg's session extensions beside fullwindow's,
Delta's catalog as the session catalog, and an Iceberg Hadoop catalog named ``ice`` whose
warehouse is a directory. The versions are dev/lines.sh's FW_LAKE_*."""
from __future__ import annotations

import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: the environment variable naming the jar folder (set by conftest for the jobs it starts)
JARS_ENV = "FULLWINDOW_LAKE_JARS"


def lines_value(name: str) -> str:
    """A FW_LAKE_* value of dev/lines.sh."""
    out = subprocess.run(["bash", "-c", f'. dev/lines.sh && printf %s "${name}"'], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    return out.stdout


def fetch() -> str:
    """dev/lakehouse/fetch (idempotent): the folder of the Delta and Iceberg jars."""
    done = subprocess.run([os.path.join(ROOT, "dev", "lakehouse", "fetch")], cwd=ROOT,
                          capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"dev/lakehouse/fetch failed:\n{done.stderr[-3000:]}")
    return done.stdout.strip().splitlines()[-1]


def conf(jars: str, warehouse: str) -> dict[str, str]:
    """Spark settings for a session with Delta and Iceberg (the jars in folder ``jars``) and an
    Iceberg Hadoop catalog ``ice`` over ``warehouse``; fullwindow.configure then adds its jar
    and extension to these."""
    files = sorted(os.path.join(jars, n) for n in os.listdir(jars) if n.endswith(".jar"))
    return {
        "spark.jars": ",".join(files),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension,"
                                "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.catalog.ice": "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.ice.type": "hadoop",
        "spark.sql.catalog.ice.warehouse": warehouse,
    }


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
