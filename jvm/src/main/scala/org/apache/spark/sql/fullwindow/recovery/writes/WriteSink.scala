package org.apache.spark.sql.fullwindow.recovery.writes

import java.nio.charset.StandardCharsets
import java.security.MessageDigest

import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, V2CreateTableAsSelectPlan, V2WriteCommand}
import org.apache.spark.sql.execution.command.{CreateDataSourceTableAsSelectCommand, DataWritingCommand}
import org.apache.spark.sql.execution.datasources.{InsertIntoDataSourceCommand, SaveIntoDataSourceCommand}
import org.apache.spark.sql.fullwindow.shims.SparkShims.SparkSession

/**
 * One write of a recovered job, identified by its fingerprint (`fingerprint`: its sink, target,
 * mode and plan) and its occurrence among the job's writes with that fingerprint
 * (`occurrence`: the 1st, 2nd, ... write of the run with that fingerprint), not by the order the
 * run starts its writes in: writes started from several threads, in another order on a resume,
 * keep their identities. `number` is the write's place in the order this run started its writes
 * (1, 2, ...): for logs, records and status only.
 *
 * [[id]] names the write in what a sink keeps of its commits (a marker, a Delta transaction id,
 * an Iceberg snapshot property): the same write of another run has the same id; another write,
 * or the same one with another fingerprint (a changed program or input), has another.
 *
 * `legacyNumber`: in a job directory an earlier version of fullwindow wrote (writes numbered in
 * start order, ids `<job>.<number>.<fingerprint>`), the number that version gave this write
 * (its `n`-th recorded write of this fingerprint is occurrence `n`); [[legacyId]] is the id its
 * sinks hold for it.
 */
final case class WriteCall(jobDir: String, jobId: String, number: Int, fingerprint: String,
    occurrence: Int, legacyNumber: Option[Int] = None) {
  def id: String = s"${jobPrefix}$fingerprint.$occurrence"

  /** The id an earlier version of fullwindow gave this write (see `legacyNumber`). */
  def legacyId: Option[String] = legacyNumber.map(n => s"$jobPrefix$n.$fingerprint")

  /** Every id the sinks may hold for this write: [[id]], and [[legacyId]] where there is one. */
  def ids: Seq[String] = id +: legacyId.toSeq

  /** What every id of this job's writes starts with, whatever the write (and whether the id is
    * of this version's form or of the legacy one). */
  def jobPrefix: String = WriteCall.jobPrefix(jobId)

  /** The write in messages: `write 3 of job nightly` and its identity. */
  def identity: String = s"fingerprint $fingerprint, occurrence $occurrence"
}

object WriteCall {
  /** What every sink id of job `jobId`'s writes starts with. */
  def jobPrefix(jobId: String): String = safe(jobId) + "."

  /** `text` as a name part: letters, digits, `-` and `_` kept, the rest `_`, then a short hash
    * of the whole (two job ids that differ only in other characters stay apart). */
  def safe(text: String): String = {
    val kept = text.map(c => if (c.isLetterOrDigit || c == '-' || c == '_') c else '_').take(60)
    kept + "-" + sha(text).take(8)
  }

  def sha(text: String): String =
    MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8))
      .map(b => f"${b & 0xff}%02x").mkString
}

/**
 * A sink a recovered job writes to, seen from recovery: where the write goes, whether the sink's
 * own committed state already holds a write (so that a resumed run skips it, decided from the
 * sink even when the driver died between the sink's commit and the job's record of it), how the
 * write's id is attached to what the sink commits, and how what a dead run left half-written is
 * undone before the write runs again.
 *
 * Sinks are found by [[WriteSinks.of]]; a write command no sink claims is [[UncheckedSink]]:
 * at least once on a resume (`spark.fullwindow.recovery.onUncheckedWrite`).
 */
trait WriteSink {
  /** `files`, `delta`, `iceberg`, `unchecked`, ...: named in logs, records and status. */
  def kind: String

  /** Where the write goes (a path, a table name). */
  def target: String

  /** The save mode or kind of write (`Append`, `Overwrite`, `overwriteDynamic`, ...). */
  def mode: String

  /** The query whose rows are written. */
  def query: LogicalPlan

  /** Whether the sink keeps a record of the writes it committed ([[committed]] can say yes). */
  def checked: Boolean = true

  /** Whether the sink's committed state holds write `w`. */
  def committed(session: SparkSession, w: WriteCall): Boolean

  /** Undoes what an earlier run left half-written in the sink (of this write, or of any other
    * write of the job into the same target that never committed: a dead run's write, whatever
    * its identity); called before the write runs. */
  def rollback(session: SparkSession, w: WriteCall): Unit

  /** The write command to run for `w` (with its id attached), and session settings to hold
    * while it runs. */
  def prepare(session: SparkSession, w: WriteCall): (LogicalPlan, Map[String, String])

  /** Runs `body` (the write, prepared) as write `w` of this sink: for a sink that finds its
    * write's id in a registry of its own while the write runs (files). */
  def running[T](session: SparkSession, w: WriteCall)(body: => T): T = body

  /** After the write command returned: what the sink records of its commit, if anything. */
  def finish(session: SparkSession, w: WriteCall): Unit = ()

  /** What the fingerprint covers of the sink, besides the query: its kind, target and mode (a
    * sink whose writes of two forms are the same write names them alike). */
  def identity: Seq[String] = Seq(kind, target, mode)

  /** More text the fingerprint covers (empty: none), such as the digest of an action's code. */
  def extra: String = ""
}

object WriteSinks {
  /** Whether `plan` (an analyzed plan's root) is a command that writes a query's rows out. */
  def isWrite(plan: LogicalPlan): Boolean = plan match {
    case _: DataWritingCommand | _: SaveIntoDataSourceCommand | _: InsertIntoDataSourceCommand |
         _: V2WriteCommand | _: V2CreateTableAsSelectPlan |
         _: CreateDataSourceTableAsSelectCommand => true
    case _ => false
  }

  /** The query whose rows write command `plan` writes (the command itself when unknown). */
  def queryOf(plan: LogicalPlan): LogicalPlan = plan match {
    case s: SaveIntoDataSourceCommand => s.query
    case i: InsertIntoDataSourceCommand => i.query
    case v: V2WriteCommand => v.query
    case c: V2CreateTableAsSelectPlan => c.query
    case c: CreateDataSourceTableAsSelectCommand => c.query
    case d: DataWritingCommand => d.query
    case p => p
  }

  /** The sink of write command `plan`: the first of the table formats' ([[TableSinks]]), the
    * file sources' ([[FileSink]]), or [[UncheckedSink]]. */
  def of(session: SparkSession, plan: LogicalPlan): WriteSink =
    TableSinks.of(session, plan)
      .orElse(FileSink.of(session, plan))
      .getOrElse(UncheckedSink(plan))
}

/** A sink that keeps no record of what it committed (JDBC, a V1 relation provider, a DataSource
  * V2 writer of its own, a Hive SerDe table): a resumed run that reaches a write an earlier run
  * started but did not record as finished runs it again (at least once), or fails with
  * `spark.fullwindow.recovery.onUncheckedWrite=fail`. */
final case class UncheckedSink(plan: LogicalPlan) extends WriteSink {
  override def kind: String = "unchecked"
  override def checked: Boolean = false

  override def target: String = plan match {
    case s: SaveIntoDataSourceCommand =>
      s.dataSource.getClass.getName + s.options.get("dbtable").orElse(s.options.get("path"))
        .map(t => s" $t").getOrElse("")
    case i: InsertIntoDataSourceCommand => i.logicalRelation.relation.toString
    case v: V2WriteCommand => v.table.name
    case c: V2CreateTableAsSelectPlan => c.name.toString
    case c: CreateDataSourceTableAsSelectCommand => c.table.identifier.unquotedString
    case p => p.nodeName
  }

  override def mode: String = plan match {
    case s: SaveIntoDataSourceCommand => s.mode.toString
    case i: InsertIntoDataSourceCommand => if (i.overwrite) "Overwrite" else "Append"
    case c: CreateDataSourceTableAsSelectCommand => c.mode.toString
    case p => p.nodeName
  }

  override def query: LogicalPlan = WriteSinks.queryOf(plan)

  override def committed(session: SparkSession, w: WriteCall): Boolean = false
  override def rollback(session: SparkSession, w: WriteCall): Unit = ()
  override def prepare(session: SparkSession, w: WriteCall): (LogicalPlan, Map[String, String]) =
    (plan, Map.empty)
}

/**
 * A DataFrame action that writes out by the user's own code, `foreach` / `foreachPartition`
 * (from Python: [[RecoveredWrites.beginAction]]): numbered in the job's writes as an unchecked
 * write (its code keeps no record of what it did). `kind` is the action, `target` names its
 * function, `code` is the digest of the function's code (a changed function is another write),
 * `query` the DataFrame's analyzed plan.
 */
final case class ActionSink(kind: String, target: String, code: String, query: LogicalPlan)
    extends WriteSink {
  override def mode: String = "action"
  override def checked: Boolean = false
  override def extra: String = code
  override def committed(session: SparkSession, w: WriteCall): Boolean = false
  override def rollback(session: SparkSession, w: WriteCall): Unit = ()
  override def prepare(session: SparkSession, w: WriteCall): (LogicalPlan, Map[String, String]) =
    (query, Map.empty)
}
