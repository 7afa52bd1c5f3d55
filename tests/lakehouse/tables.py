"""A Delta table (by path) and an Iceberg table (in the Hadoop catalog ``ice``) behind one small
interface, for tests that do the same to both: append rows, read it (now, or at a version), its
versions and its history."""
from __future__ import annotations


class Table:
    fmt = ""

    def __init__(self, spark, where: str):
        self.spark = spark
        self.where = where

    # what a reader names the table by in messages and fingerprints
    root = ""

    def append(self, lo: int, hi: int) -> None:
        """Commits ids lo..hi-1 (one column ``id``)."""
        raise NotImplementedError

    def read(self):
        raise NotImplementedError

    def read_at(self, version):
        """The table as of ``version`` (time travel by the DataFrame reader's ``versionAsOf``)."""
        raise NotImplementedError

    def sql_at(self, version) -> str:
        """A SQL query of the table as of ``version`` (``VERSION AS OF``)."""
        raise NotImplementedError

    def version(self):
        """The table's current version (Delta) or snapshot id (Iceberg)."""
        raise NotImplementedError

    def sql_at_time(self, version) -> str:
        """A SQL query of the table as of the time ``version`` was committed
        (``TIMESTAMP AS OF``)."""
        ts = next(c["time"] for c in self.commits() if c["version"] == version)
        return f"SELECT * FROM {self.sql_name} TIMESTAMP AS OF '{ts}'"

    def commits(self) -> list[dict]:
        """The table's history, oldest first: per commit its version and operation."""
        raise NotImplementedError


class DeltaTable(Table):
    fmt = "delta"

    def __init__(self, spark, path: str):
        super().__init__(spark, path)
        self.root = "file:" + path

    def _ids(self, lo, hi):
        return self.spark.range(lo, hi, 1, 2)

    def append(self, lo, hi):
        self._ids(lo, hi).write.format("delta").mode("append").save(self.where)

    def read(self):
        return self.spark.read.format("delta").load(self.where)

    def read_at(self, version):
        return self.spark.read.format("delta").option("versionAsOf", version).load(self.where)

    def sql_at(self, version):
        return f"SELECT * FROM {self.sql_name} VERSION AS OF {version}"

    @property
    def sql_name(self):
        return f"delta.`{self.where}`"

    def version(self):
        return self.commits()[-1]["version"]

    def commits(self):
        from delta.tables import DeltaTable as Delta  # the delta-spark package

        rows = Delta.forPath(self.spark, self.where).history() \
            .selectExpr("*", "CAST(timestamp AS STRING) AS time").collect()
        return sorted(({"version": r.version, "operation": r.operation, "time": r.time,
                        "parameters": dict(r.operationParameters or {})}
                       for r in rows),
                      key=lambda c: c["version"])


class IcebergTable(Table):
    fmt = "iceberg"

    def __init__(self, spark, name: str):
        super().__init__(spark, f"ice.db.{name}")
        self.root = self.where

    def append(self, lo, hi):
        df = self.spark.range(lo, hi, 1, 2)
        if self.spark.catalog.tableExists(self.where):
            df.writeTo(self.where).append()
        else:
            df.writeTo(self.where).using("iceberg").create()

    def read(self):
        return self.spark.table(self.where)

    def read_at(self, version):
        import pyspark

        if pyspark.__version__.startswith("3."):
            # Spark 3.5's DataFrameReader.table() drops the time travel options of a V2 table
            # (it reads the latest snapshot); its load() applies them
            return self.spark.read.format("iceberg").option("versionAsOf", version) \
                .load(self.where)
        return self.spark.read.option("versionAsOf", version).table(self.where)

    def sql_at(self, version):
        return f"SELECT * FROM {self.sql_name} VERSION AS OF {version}"

    @property
    def sql_name(self):
        return self.where

    def version(self):
        return self.commits()[-1]["version"]

    def commits(self):
        rows = self.spark.sql(f"SELECT snapshot_id, parent_id, operation, summary, "
                              f"CAST(committed_at AS STRING) AS time "
                              f"FROM {self.where}.snapshots").collect()
        # oldest first along the parent links (commits in one millisecond tie on committed_at)
        child = {r.parent_id: r for r in rows}
        out, at = [], child.get(None)
        while at is not None:
            out.append({"version": at.snapshot_id, "operation": at.operation,
                        "time": at.time,
                        "summary": dict(at.summary)})
            at = child.get(at.snapshot_id)
        return out


def make(spark, fmt: str, base: str, name: str) -> Table:
    """An empty handle on a new table of format ``fmt`` named ``name`` (under ``base`` for
    Delta); the first ``append`` creates it."""
    import os

    return DeltaTable(spark, os.path.join(base, name)) if fmt == "delta" else \
        IcebergTable(spark, name)
