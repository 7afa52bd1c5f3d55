package org.apache.spark.sql.fullwindow.recovery.writes

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path

import org.apache.spark.internal.Logging
import org.apache.spark.sql.catalyst.analysis.NamedRelation
import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute}
import org.apache.spark.sql.catalyst.plans.logical.{AppendData, CreateTableAsSelect, LogicalPlan, OverwriteByExpression, OverwritePartitionsDynamic, Project, ReplaceTableAsSelect, V2WriteCommand}
import org.apache.spark.sql.connector.catalog.{Identifier, Table, TableCatalog}
import org.apache.spark.sql.execution.datasources.SaveIntoDataSourceCommand
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation
import org.apache.spark.sql.fullwindow.recovery.Reflect
import org.apache.spark.sql.fullwindow.shims.SparkShims.SparkSession
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/**
 * The writes of a recovered job into Delta Lake and Apache Iceberg tables ([[TableSinks]]): both
 * formats commit atomically and keep, in the table's own committed state, a record of the write
 * that made a commit, so whether write `w` committed is read from the table itself, also when
 * the driver died between the table's commit and the job's record of it. A dead run's
 * uncommitted data files are never part of the table (they are orphans, which Delta's `VACUUM`
 * and Iceberg's `remove_orphan_files` delete): nothing to roll back.
 *
 * Everything Delta or Iceberg is reached by reflection: the jar depends on neither.
 */
object LakehouseSinks {
  /** The Delta or Iceberg sink of write command `plan`, if it writes to such a table. */
  def of(session: SparkSession, plan: LogicalPlan): Option[WriteSink] =
    DeltaSink.of(session, plan).orElse(IcebergSink.of(session, plan))

  /** The save mode of a V2 write command, as the file sinks name them. */
  private[writes] def modeOf(plan: LogicalPlan): String = plan match {
    case _: AppendData => "Append"
    case _: OverwriteByExpression => "Overwrite"
    case _: OverwritePartitionsDynamic => "overwriteDynamic"
    case c: CreateTableAsSelect => if (c.ignoreIfExists) "createIfNotExists" else "create"
    case _: ReplaceTableAsSelect => "replace"
    case p => p.nodeName
  }

  /**
   * The catalog table `plan` appends to (`AppendData` of a table of a catalog) or creates
   * (`CreateTableAsSelect`), named `catalog.identifier`: `saveAsTable(mode="append")` creates a
   * table that does not exist yet and appends to it once it does, so a run that created it and
   * a resumed run that appends to it make the same write. Such writes are fingerprinted by
   * [[sameWrite]].
   */
  private[writes] def appendedTable(plan: LogicalPlan): Option[String] = plan match {
    case a: AppendData => a.table match {
      case r: DataSourceV2Relation =>
        for (c <- r.catalog; i <- r.identifier) yield s"${c.name()}.${quoted(i)}"
      case _ => None
    }
    case c: CreateTableAsSelect => ctasTarget(c.name, None).map { case (cat, i, _) =>
      s"${cat.name()}.${quoted(i)}" }
    case _ => None
  }

  private def quoted(i: Identifier): String = (i.namespace().toSeq :+ i.name()).mkString(".")

  /** The fingerprint's sink, target and mode of a write into `table` ([[appendedTable]]). */
  private[writes] def sameWrite(kind: String, table: String): Seq[String] =
    Seq(kind, table, "append or create")

  /** `query` without the projections at its top that only pick columns by name (what an append
    * by name adds, and a create does not): a create and an append of one query compare equal. */
  private[writes] def byName(query: LogicalPlan): LogicalPlan = query match {
    case Project(list, child) if list.forall {
        case _: Attribute => true
        case Alias(a: Attribute, name) => a.name.equalsIgnoreCase(name)
        case _ => false
      } => byName(child)
    case q => q
  }

  /** The query of write `plan`, by name where it appends to or creates a catalog table. */
  private[writes] def queryOf(plan: LogicalPlan): LogicalPlan = {
    val q = WriteSinks.queryOf(plan)
    if (appendedTable(plan).isDefined) byName(q) else q
  }

  /** The table a V2 write command writes, when it is a relation over a table. */
  private[writes] def v2Table(plan: LogicalPlan): Option[(DataSourceV2Relation, Table)] =
    plan match {
      case v: V2WriteCommand => v.table match {
        case r: DataSourceV2Relation => Some((r, r.table))
        case _ => None
      }
      case _ => None
    }

  /** The catalog and identifier a CTAS or RTAS creates, and the provider it names. */
  private[writes] def created(
      plan: LogicalPlan): Option[(TableCatalog, Identifier, Option[String])] = plan match {
    case c: CreateTableAsSelect => ctasTarget(c.name, c.tableSpec.provider)
    case r: ReplaceTableAsSelect => ctasTarget(r.name, r.tableSpec.provider)
    case _ => None
  }

  private def ctasTarget(name: LogicalPlan, provider: Option[String]) = name match {
    case org.apache.spark.sql.catalyst.analysis.ResolvedIdentifier(c: TableCatalog, ident) =>
      Some((c, ident, provider))
    case _ => None
  }

  /** The table `ident` of `catalog` now, or None where there is none. */
  private[writes] def load(catalog: TableCatalog, ident: Identifier): Option[Table] =
    try Some(catalog.loadTable(ident)) catch { case NonFatal(_) => None }

  /** `plan` with `options` added to its write options (V2 writes, CTAS, RTAS). A V2 write
   * carries its options in the command (`writeTo`), in the relation it writes (SQL), or the same
   * ones in both (`DataFrameWriter`), and Spark requires that to stay so (`V2Writes`): they go
   * where the write has options already (both when it has none). */
  private[writes] def withWriteOptions(plan: LogicalPlan,
      options: Map[String, String]): LogicalPlan =
    plan match {
      case a: AppendData =>
        val (o, t) = both(a.writeOptions, a.table, options)
        a.copy(writeOptions = o, table = t)
      case w: OverwriteByExpression =>
        val (o, t) = both(w.writeOptions, w.table, options)
        w.copy(writeOptions = o, table = t)
      case w: OverwritePartitionsDynamic =>
        val (o, t) = both(w.writeOptions, w.table, options)
        w.copy(writeOptions = o, table = t)
      case c: CreateTableAsSelect => c.copy(writeOptions = c.writeOptions ++ options)
      case r: ReplaceTableAsSelect => r.copy(writeOptions = r.writeOptions ++ options)
      case p => p
    }

  private def both(command: Map[String, String], table: NamedRelation,
      options: Map[String, String]): (Map[String, String], NamedRelation) = table match {
    case r: DataSourceV2Relation =>
      val relation = r.options.asCaseSensitiveMap().asScala.toMap
      val withOptions = r.copy(options = new CaseInsensitiveStringMap((relation ++ options).asJava))
      if (relation.isEmpty) (command ++ options, r)
      else if (command.isEmpty) (command, withOptions)
      else (command ++ options, withOptions)
    case other => (command ++ options, other)
  }
}

/**
 * A write into a Delta table: `DataFrameWriter.save(path)` / `saveAsTable` with format `delta`,
 * `writeTo(...)`, SQL `INSERT` into a Delta table, `CREATE` / `REPLACE TABLE ... AS SELECT`.
 *
 * Delta's idempotent writes carry it: the write runs with the session settings
 * `spark.databricks.delta.write.txnAppId` = `fullwindow/<write id>` and
 * `spark.databricks.delta.write.txnVersion` = its occurrence, so the commit records that
 * transaction in the table's log (a `txn` action) and Delta itself refuses to commit the same
 * write twice. The write id holds the write's whole identity (job, fingerprint, occurrence), so
 * each app id commits one version only: Delta's rule that an app id's versions increase (a
 * version at or below the one recorded is skipped) holds whatever order the job's writes commit
 * in. (One app id per fingerprint with the occurrence as its version would not: two writes of
 * one fingerprint started from two threads may commit 2 before 1, and Delta would then skip 1.)
 * Committed: the table's latest snapshot holds a transaction of that app id
 * (`Snapshot.transactions`), or, in a job directory of the earlier numbering, of the app id and
 * version that numbering gave the write ([[WriteCall.legacyId]]). A write that passes `txnAppId` / `txnVersion` options of its own
 * keeps them (Delta reads the options first): then only the job's record tells.
 */
final case class DeltaSink(plan: LogicalPlan, target: String, mode: String, query: LogicalPlan,
    location: SparkSession => Option[Path]) extends WriteSink with Logging {
  override def kind: String = "delta"

  private val table = LakehouseSinks.appendedTable(plan)
  override def identity: Seq[String] =
    table.map(LakehouseSinks.sameWrite(kind, _)).getOrElse(super.identity)

  private def appId(id: String): String = s"fullwindow/$id"

  override def committed(session: SparkSession, w: WriteCall): Boolean =
    location(session).exists { path =>
      try {
        val txns = DeltaSink.transactions(session, path)
        // this identity's transaction, or the one the earlier numbering gave the write
        txns.get(appId(w.id)).exists(_ >= w.occurrence) ||
          w.legacyNumber.exists(n => txns.get(appId(w.legacyId.get)).exists(_ >= n))
      } catch {
        case NonFatal(e) =>
          // the write runs with its transaction id all the same: Delta skips it if committed
          logWarning(s"fullwindow recovery: cannot read the transactions of Delta table $path " +
            s"($e); write ${w.number} runs, and Delta itself skips it if it committed", e)
          false
      }
    }

  override def rollback(session: SparkSession, w: WriteCall): Unit = ()

  override def prepare(session: SparkSession, w: WriteCall): (LogicalPlan, Map[String, String]) =
    (plan, Map(DeltaSink.TxnAppId -> appId(w.id), DeltaSink.TxnVersion -> w.occurrence.toString))
}

object DeltaSink {
  val TxnAppId = "spark.databricks.delta.write.txnAppId"
  val TxnVersion = "spark.databricks.delta.write.txnVersion"
  private val DataSource = "org.apache.spark.sql.delta.sources.DeltaDataSource"
  private val TableV2 = "org.apache.spark.sql.delta.catalog.DeltaTableV2"
  private val Log = "org.apache.spark.sql.delta.DeltaLog"

  def of(session: SparkSession, plan: LogicalPlan): Option[WriteSink] = plan match {
    case s: SaveIntoDataSourceCommand if s.dataSource.getClass.getName == DataSource =>
      s.options.get("path").map { p =>
        val path = qualify(session, new Path(p))
        DeltaSink(plan, path.toString, s.mode.toString, s.query, _ => Some(path))
      }
    case _ => LakehouseSinks.v2Table(plan) match {
      case Some((r, t)) if t.getClass.getName == TableV2 =>
        val path = Reflect.call(t, "path").collect { case p: Path => p }
        Some(DeltaSink(plan, path.map(_.toString).getOrElse(r.name), LakehouseSinks.modeOf(plan),
          LakehouseSinks.queryOf(plan), _ => path))
      case _ => LakehouseSinks.created(plan) match {
        case Some((catalog, ident, provider))
            if provider.exists(_.equalsIgnoreCase("delta")) &&
              catalog.getClass.getName.startsWith("org.apache.spark.sql.delta.") =>
          Some(DeltaSink(plan, s"${catalog.name()}.$ident", LakehouseSinks.modeOf(plan),
            LakehouseSinks.queryOf(plan), _ => LakehouseSinks.load(catalog, ident)
              .flatMap(Reflect.call(_, "path")).collect { case p: Path => p }))
        case _ => None
      }
    }
  }

  private def qualify(session: SparkSession, p: Path): Path = {
    val fs = p.getFileSystem(session.sessionState.newHadoopConf())
    p.makeQualified(fs.getUri, fs.getWorkingDirectory)
  }

  /** The transactions (app id -> version) the Delta table at `path` has recorded as of its
   * latest commit: `DeltaLog.forTable(session, path).update().transactions`. Empty where there
   * is no table yet. */
  def transactions(session: SparkSession, path: Path): Map[String, Long] = {
    val log = Reflect.callStatic(Log, "forTable", session, path)
      .getOrElse(throw new IllegalStateException(s"cannot open the Delta log of $path"))
    // update(stalenessAcceptable = false, ...): every other parameter at its default (None)
    val snapshot = Reflect.callFilling(log, "update", false)
      .orElse(Reflect.call(log, "unsafeVolatileSnapshot"))
      .getOrElse(throw new IllegalStateException(s"cannot read the Delta log of $path"))
    Reflect.call(snapshot, "transactions") match {
      case Some(m: scala.collection.Map[_, _]) => m.iterator.collect {
        case (k: String, v: java.lang.Long) => k -> v.longValue
        case (k: String, v: Long) => k -> v
      }.toMap
      case _ => Map.empty
    }
  }
}

/**
 * A write into an Iceberg table: `writeTo(...).append()` / `overwrite(...)` /
 * `overwritePartitions()`, `DataFrameWriter.save` / `saveAsTable` with format `iceberg`, SQL
 * `INSERT` into an Iceberg table, `CREATE` / `REPLACE TABLE ... AS SELECT`.
 *
 * The write runs with the write option `snapshot-property.fullwindow.write-id` = the write's id
 * (its job, fingerprint and occurrence), so the snapshot it commits records it in its summary (as Flink's Iceberg committer records its
 * job and checkpoint). Committed: a snapshot of the table's current history (the current one
 * and its ancestors) has it.
 */
final case class IcebergSink(plan: LogicalPlan, target: String, mode: String, query: LogicalPlan,
    table: SparkSession => Option[Table]) extends WriteSink {
  override def kind: String = "iceberg"

  private val appended = LakehouseSinks.appendedTable(plan)
  override def identity: Seq[String] =
    appended.map(LakehouseSinks.sameWrite(kind, _)).getOrElse(super.identity)

  override def committed(session: SparkSession, w: WriteCall): Boolean =
    table(session).flatMap(Reflect.call(_, "table")).exists(IcebergSink.holds(_, w.ids.toSet))

  override def rollback(session: SparkSession, w: WriteCall): Unit = ()

  override def prepare(session: SparkSession, w: WriteCall): (LogicalPlan, Map[String, String]) =
    (LakehouseSinks.withWriteOptions(plan, Map(s"snapshot-property.${IcebergSink.Key}" -> w.id)),
      Map.empty)
}

object IcebergSink {
  /** The snapshot summary property naming the write that committed a snapshot. */
  val Key = "fullwindow.write-id"
  private val SparkTable = "org.apache.iceberg.spark.source.SparkTable"

  def of(session: SparkSession, plan: LogicalPlan): Option[WriteSink] =
    LakehouseSinks.v2Table(plan) match {
      case Some((r, t)) if isIceberg(t) =>
        val name = (r.catalog.map(_.name()).toSeq ++ r.identifier.map(_.toString).toSeq) match {
          case Seq() => t.name()
          case parts => parts.mkString(".")
        }
        Some(IcebergSink(plan, name, LakehouseSinks.modeOf(plan), LakehouseSinks.queryOf(plan),
          _ => Some(t)))
      case _ => LakehouseSinks.created(plan) match {
        case Some((catalog, ident, provider))
            if catalog.getClass.getName.startsWith("org.apache.iceberg.") &&
              provider.forall(_.equalsIgnoreCase("iceberg")) =>
          Some(IcebergSink(plan, s"${catalog.name()}.$ident", LakehouseSinks.modeOf(plan),
            LakehouseSinks.queryOf(plan), _ => LakehouseSinks.load(catalog, ident).filter(isIceberg)))
        case _ => None
      }
    }

  private def isIceberg(t: Table): Boolean = {
    var c: Class[_] = t.getClass
    while (c != null && c.getName != SparkTable) c = c.getSuperclass
    c != null
  }

  /** Whether a snapshot of Iceberg table `table` (an `org.apache.iceberg.Table`), the current
   * one or one of its ancestors, has summary property [[Key]] = one of `ids` (the write's id,
   * and the one the earlier numbering gave it: [[WriteCall.ids]]). */
  def holds(table: AnyRef, ids: Set[String]): Boolean = {
    Reflect.call(table, "refresh")
    var snapshot = Reflect.call(table, "currentSnapshot")
    var found = false
    while (!found && snapshot.isDefined) {
      val s = snapshot.get
      found = Reflect.call(s, "summary").exists {
        case m: java.util.Map[_, _] => m.get(Key) match {
          case v: String => ids(v)
          case _ => false
        }
        case _ => false
      }
      snapshot = Reflect.call(s, "parentId").flatMap(p => Reflect.call(table, "snapshot", p))
    }
    found
  }
}
