package org.apache.spark.sql.fullwindow.recovery

import java.nio.charset.StandardCharsets
import java.security.MessageDigest
import java.util.concurrent.ConcurrentHashMap

import scala.jdk.CollectionConverters._

import org.apache.hadoop.fs.FileStatus

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.datasources.{CatalogFileIndex, FileIndex, HadoopFsRelation, LogicalRelation, PartitioningAwareFileIndex}
import org.apache.spark.sql.execution.datasources.v2.{DataSourceV2Relation, FileTable}
import org.apache.spark.sql.fullwindow.shims.TableVersionShim

/**
 * What a full-window operation reads from outside the program: the listings of its file-based
 * inputs and the versions of its versioned tables, folded into its recovery fingerprint, so that a
 * resumed run over changed inputs never reuses partitions computed from the old ones.
 *
 * Each input is named by its root (the path its read was given, a glob as a glob; else the
 * directories or files the index lists; or the table) and summarized by a digest of what the
 * query will read there:
 *
 *  - a V1 file relation (`LogicalRelation` over a `HadoopFsRelation`) whose location is a
 *    `PartitioningAwareFileIndex` (`InMemoryFileIndex`, what `spark.read.parquet(dir)` and
 *    non-partitioned catalog tables make): the listing the index cached when the DataFrame was
 *    created, which is exactly what the query reads: every file's path, length, modification
 *    time and, where the file system gives one (`org.apache.hadoop.fs.EtagSource`: S3A), ETag.
 *    No listing call is made;
 *  - a `CatalogFileIndex` (a partitioned catalog table): every partition's files, listed through
 *    the index (its listings go to the session's file status cache, where the query's own
 *    listing finds them);
 *  - any other file index: Delta's (`TahoeFileIndex`, a Delta `SnapshotDescriptor`) by the
 *    table version it reads (the time-travelled one for `versionAsOf`), found by reflection (no
 *    dependency on Delta); else the names of its input files and its size;
 *  - a V2 relation over a `FileTable`: its file index's listing, as above; over another table:
 *    the version the table says it is read at (`Table.version()`, Spark 4.1 on: Iceberg's
 *    branch and snapshot, the time-travelled one for `VERSION AS OF`), else, for Iceberg's
 *    `SparkTable`, the snapshot it reads and its branch by reflection (Spark 3.5 and 4.0), else
 *    the entries of its `properties()` whose key names a snapshot or a version
 *    (`current-snapshot-id`); with the read's options whose key names one, and an Iceberg
 *    read's `branch` or `tag` option with the snapshot that ref points at. A table exposing none of these is not covered.
 *
 * A versioned input's digest is readable (`version 7`), so that a changed one is described by
 * its versions then and now.
 *
 * One pass over each cached listing (sorted by path, then hashed): cheap at 100,000 files.
 */
object InputFingerprint {

  /** One input: its root, the digest of its listing (or version), and how many files and bytes
   * it had (-1 when not known). */
  final case class Input(root: String, digest: String, files: Long, bytes: Long) {
    /** One line for Python and the event store: tab-separated, the root without tabs or breaks. */
    def line: String = s"$root\t$digest\t$files\t$bytes"
  }

  object Input {
    def parse(line: String): Input = {
      val f = line.split("\t", -1)
      Input(f(0), f(1), f(2).toLong, f(3).toLong)
    }
  }

  /** What a fingerprinted operation was computed from: its structural fingerprint (the same
   * fingerprint without input listings) and its inputs, its upstream operations' included. */
  final case class Known(structure: String, inputs: Seq[Input])

  // fingerprint -> Known, for the operations fingerprinted in this driver: a downstream plan
  // names a committed or recovered upstream operation by its fingerprint only
  private val known = new ConcurrentHashMap[String, Known]()

  def record(fingerprint: String, structure: String, inputs: Seq[Input]): Unit =
    known.put(fingerprint, Known(structure, inputs))

  /** The structural fingerprint of operation `fingerprint` (itself when not known here). */
  def structureOf(fingerprint: String): String =
    Option(known.get(fingerprint)).map(_.structure).getOrElse(fingerprint)

  def inputsOf(fingerprint: String): Seq[Input] =
    Option(known.get(fingerprint)).map(_.inputs).getOrElse(Nil)

  /** The inputs `plan` reads itself (not through the committed operations in it), one per root,
   * sorted by root. */
  def direct(plan: LogicalPlan): Seq[Input] = {
    // a file index read several times (a self-join) is digested once
    val seen = new java.util.IdentityHashMap[FileIndex, Option[Input]]()
    def once(index: FileIndex, readPath: Option[String]): Option[Input] = {
      if (!seen.containsKey(index)) seen.put(index, ofIndex(index, readPath))
      seen.get(index)
    }
    merge(plan.collectWithSubqueries {
      case l: LogicalRelation => l.relation match {
        case fs: HadoopFsRelation => once(fs.location, fs.options.get("path"))
        case _ => None
      }
      case r: DataSourceV2Relation => r.table match {
        case t: FileTable => once(t.fileIndex, Option(r.options.get("path")))
        case _ => ofTable(r)
      }
    }.flatten)
  }

  /** `inputs` with one entry per root: a root read twice with different listings gets a digest of
   * both. */
  def merge(inputs: Seq[Input]): Seq[Input] =
    inputs.groupBy(_.root).toSeq.sortBy(_._1).map { case (root, same) =>
      val distinct = same.distinct
      if (distinct.size == 1) distinct.head
      else Input(root, sha(distinct.map(_.digest).sorted.mkString("\n")),
        distinct.map(_.files).max, distinct.map(_.bytes).max)
    }

  /** The input of a physical scan's file index (see [[ofIndex]]): for shuffle fingerprints. */
  def ofRelationIndex(index: FileIndex, readPath: Option[String]): Option[Input] =
    ofIndex(index, readPath)

  /** The input of a file index; its root is the path the read was given (`readPath`: a glob
   * stays a glob, so that files matching it anew change the input, not its name), else the
   * index's root paths. */
  private def ofIndex(index: FileIndex, readPath: Option[String]): Option[Input] = index match {
    case p: PartitioningAwareFileIndex =>
      Some(ofFiles(readPath.map(clean).getOrElse(rootOf(p.rootPaths.map(_.toString))), p.allFiles()))
    case c: CatalogFileIndex =>
      val files = c.filterPartitions(Nil).allFiles()
      Some(ofFiles(clean(c.table.identifier.unquotedString +
        c.table.storage.locationUri.map(u => s" at ${new org.apache.hadoop.fs.Path(u)}").getOrElse("")),
        files))
    case other =>
      val root = readPath.map(clean).getOrElse(rootOf(other.rootPaths.map(_.toString)))
      deltaVersion(other) match {
        case Some(v) => Some(Input(root, versioned(v, Nil), -1, -1))
        case None =>
          val names = other.inputFiles.sorted
          Some(Input(root, sha(names.mkString("\n") + "\nsize=" + other.sizeInBytes),
            names.length.toLong, other.sizeInBytes))
      }
  }

  /** The table version a Delta file index reads, with the table's id (a table deleted and made
   * anew at the same path starts again at version 0): Delta's file indexes (`TahoeFileIndex`) are
   * `org.apache.spark.sql.delta.SnapshotDescriptor`s, whose `version` is the snapshot scanned
   * (the time-travelled one, or the table's latest at analysis) and whose `metadata.id` is the
   * table's; Delta before 2.0 named the version `tableVersion`. By reflection: the jar does not
   * depend on Delta. */
  private def deltaVersion(index: FileIndex): Option[String] = {
    val descriptor = "org.apache.spark.sql.delta.SnapshotDescriptor"
    val method = if (Reflect.implements(index.getClass, descriptor)) "version" else "tableVersion"
    Reflect.call(index, method).collect { case v: java.lang.Long =>
      v.toString + Reflect.call(index, "metadata").flatMap(Reflect.call(_, "id"))
        .map(id => s" of table $id").getOrElse("")
    }
  }

  private val VersionKey = "(?i).*(snapshot|version|timestamp-?as-?of|as-of-timestamp).*".r

  private val TimeTravelOption = "option (?i)(versionAsOf|timestampAsOf)=.*".r

  /** The version a V2 table is read at (see the class comment), or None. */
  private def tableVersion(table: org.apache.spark.sql.connector.catalog.Table): Option[String] =
    TableVersionShim.version(table).orElse(icebergSnapshot(table))

  private val IcebergTable = "org.apache.iceberg.spark.source.SparkTable"

  /** The snapshot an Iceberg `SparkTable` reads, where the table does not say it itself
   * (`Table.version()`, Spark 4.1 on): `snapshot <id>` (` of branch <name>` on a branch). Its
   * `snapshotId()` is the time-travelled snapshot, null for a read of the latest one: then the
   * branch's latest (`table().snapshot(branch)`), else the table's current snapshot
   * (`table().currentSnapshot()`), of the table as loaded for this query (what its scan reads).
   * A table with no snapshot yet: `snapshot none`. */
  private def icebergSnapshot(table: org.apache.spark.sql.connector.catalog.Table): Option[String] =
    if (!Reflect.implements(table.getClass, IcebergTable)) None
    else {
      val branch = Reflect.call(table, "branch").map(_.toString)
      val id = Reflect.call(table, "snapshotId").orElse {
        Reflect.call(table, "table").flatMap { t =>
          branch.map(Reflect.call(t, "snapshot", _)).getOrElse(Reflect.call(t, "currentSnapshot"))
        }.flatMap(Reflect.call(_, "snapshotId"))
      }
      Some(s"snapshot ${id.getOrElse("none")}" + branch.map(b => s" of branch $b").getOrElse(""))
    }

  /** The refs an Iceberg read names by option (`branch`, `tag`: its scan reads that ref's
   * latest snapshot, which neither the table's version nor its snapshot id says): each with the
   * snapshot it points at now, so that a commit to the branch changes the input. */
  private def icebergRefs(table: org.apache.spark.sql.connector.catalog.Table,
      options: java.util.Map[String, String]): Seq[String] =
    if (options == null || !Reflect.implements(table.getClass, IcebergTable)) Nil
    else Seq("branch", "tag").flatMap { key =>
      options.asScala.collectFirst { case (k, ref) if k.equalsIgnoreCase(key) => ref }.map { ref =>
        val id = Reflect.call(table, "table").flatMap(Reflect.call(_, "snapshot", ref))
          .flatMap(Reflect.call(_, "snapshotId"))
        s"option $key=$ref at snapshot ${id.getOrElse("none")}"
      }
    }

  private def ofTable(r: DataSourceV2Relation): Option[Input] = {
    def named(entries: Seq[(String, String)], kind: String) = entries.collect {
      case (k, v) if VersionKey.pattern.matcher(k).matches() => s"$kind $k=$v"
    }.sorted
    val opts = named(Option(r.options).map(_.asScala.toSeq).getOrElse(Nil), "option") ++
      icebergRefs(r.table, r.options)
    val digest = tableVersion(r.table) match {
      // Spark's time travel options are what the version says already
      case Some(v) =>
        Some(versioned(v, opts.filterNot(TimeTravelOption.pattern.matcher(_).matches())))
      case None =>
        // the properties name the table's current snapshot, also when another one is read:
        // only where the table says nothing else
        val props = named(Option(r.table.properties()).map(_.asScala.toSeq).getOrElse(Nil),
          "property")
        if (props.isEmpty && opts.isEmpty) None else Some(sha((props ++ opts).mkString("\n")))
    }
    digest.map { d =>
      val name = (r.catalog.map(_.name()).toSeq ++ r.identifier.map(_.toString).toSeq) match {
        case Seq() => r.table.name()
        case parts => parts.mkString(".")
      }
      Input(clean(name), d, -1, -1)
    }
  }

  private val Plain = "[A-Za-z0-9_.:=/ -]{1,300}".r

  /** The digest of a versioned input: readable (`version 7`, `version branch_x_snapshot_5 with
   * option versionAsOf=5`) when its text is plain, else `version ` and a hash. */
  private def versioned(version: String, options: Seq[String]): String = {
    val text = version + (if (options.isEmpty) "" else options.mkString(" with ", ", ", ""))
    "version " + (if (Plain.pattern.matcher(text).matches()) text else sha(text))
  }

  /** A root for display and as a key: the paths (a few shown; many: the first, how many more and
   * a hash of all, so that the key stays unique). */
  private def rootOf(paths: Seq[String]): String = {
    val sorted = paths.sorted
    clean(if (sorted.size <= 3) sorted.mkString(", ")
    else s"${sorted.head} and ${sorted.size - 1} more paths (${sha(sorted.mkString("\n")).take(8)})")
  }

  private def clean(s: String): String = s.map(c => if (c == '\t' || c == '\n' || c == '\r') ' ' else c)

  private val etagSource: Option[(Class[_], java.lang.reflect.Method)] =
    try {
      val c = Class.forName("org.apache.hadoop.fs.EtagSource")
      Some((c, c.getMethod("getEtag")))
    } catch {
      case _: ClassNotFoundException | _: NoSuchMethodException | _: LinkageError => None
    }

  private def etag(f: FileStatus): String = etagSource match {
    case Some((c, m)) if c.isInstance(f) =>
      try Option(m.invoke(f)).map(_.toString).getOrElse("") catch { case _: Exception => "" }
    case _ => ""
  }

  /** The digest of a listing: each file's path, length, modification time and ETag, sorted by
   * path. */
  def ofFiles(root: String, files: Seq[FileStatus]): Input = {
    val entries = files.map(f => (f.getPath.toString, f)).sortBy(_._1)
    val md = MessageDigest.getInstance("SHA-256")
    var bytes = 0L
    entries.foreach { case (path, f) =>
      md.update(s"$path\t${f.getLen}\t${f.getModificationTime}\t${etag(f)}\n"
        .getBytes(StandardCharsets.UTF_8))
      bytes += f.getLen
    }
    Input(root, hex(md.digest()).take(32), entries.size.toLong, bytes)
  }

  def sha(text: String): String =
    hex(MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8))).take(32)

  private def hex(bytes: Array[Byte]): String = bytes.map(b => f"${b & 0xff}%02x").mkString

  // ---- changed inputs (what earlier runs recorded, put here by the Python runtime) ------------

  /** One earlier record of an operation: its fingerprint and inputs, under its structure. */
  final case class Recorded(fingerprint: String, inputs: Seq[Input])

  // job dir -> structural fingerprint -> records, oldest first
  private val recorded = new ConcurrentHashMap[String, ConcurrentHashMap[String, Vector[Recorded]]]()

  def putRecorded(jobDir: String, structure: String, rec: Recorded): Unit = {
    val m = recorded.computeIfAbsent(jobDir, _ => new ConcurrentHashMap[String, Vector[Recorded]]())
    m.merge(structure, Vector(rec), (a: Vector[Recorded], b: Vector[Recorded]) => a ++ b)
  }

  def forget(jobDir: String): Unit = recorded.remove(jobDir)

  /** Whether operation `fingerprint` (structure `structure`, `inputs`) was already recorded. */
  def isRecorded(jobDir: String, structure: String, fingerprint: String): Boolean =
    Option(recorded.get(jobDir)).flatMap(m => Option(m.get(structure)))
      .exists(_.exists(_.fingerprint == fingerprint))

  /** The inputs of an operation that changed since an earlier run recorded it under the same
   * structure with another fingerprint: (root, then, now), either side None when the root was
   * not read then or is not now. Empty when nothing was recorded or the same fingerprint was. */
  def changes(jobDir: String, structure: String, fingerprint: String,
      inputs: Seq[Input]): Seq[(String, Option[Input], Option[Input])] = {
    val recs = Option(recorded.get(jobDir)).flatMap(m => Option(m.get(structure))).getOrElse(Vector.empty)
    if (recs.isEmpty || recs.exists(_.fingerprint == fingerprint)) return Nil
    val before = recs.last.inputs.map(i => i.root -> i).toMap
    val now = inputs.map(i => i.root -> i).toMap
    (before.keySet ++ now.keySet).toSeq.sorted.flatMap { root =>
      val (b, n) = (before.get(root), now.get(root))
      if (b.map(_.digest) == n.map(_.digest)) None else Some((root, b, n))
    }
  }

  /** How a changed input is described: its root and its files and bytes then and now. */
  def describe(change: (String, Option[Input], Option[Input])): String = {
    def counted(i: Input): String = s"${i.files} file${if (i.files == 1) "" else "s"}, ${i.bytes} bytes"
    change match {
      case (root, None, Some(_)) => s"$root (not read then)"
      case (root, Some(_), None) => s"$root (not read now)"
      case (root, Some(b), Some(n)) if b.files >= 0 && b.files == n.files && b.bytes == n.bytes =>
        s"$root (${counted(n)} then and now; a file was replaced or modified)"
      case (root, Some(b), Some(n)) if b.files >= 0 && n.files >= 0 =>
        s"$root (then ${counted(b)}; now ${counted(n)})"
      case (root, Some(b), Some(n)) if b.digest.startsWith("version ") &&
          n.digest.startsWith("version ") =>
        s"$root (${b.digest} then, ${n.digest} now)"
      case (root, _, _) => s"$root (another version)"
    }
  }

  // ---- per operation: detection, record, event --------------------------------------------

  val OnInputChange = "spark.fullwindow.recovery.onInputChange"
  val Modes = Seq("recompute", "fail")

  /** The mode `spark.fullwindow.recovery.onInputChange` names (checked; default recompute). */
  def mode(raw: String): String = {
    val m = Option(raw).map(_.trim.toLowerCase(java.util.Locale.ROOT)).filter(_.nonEmpty)
      .getOrElse("recompute")
    if (!Modes.contains(m)) {
      throw org.apache.spark.sql.fullwindow.FullWindowErrors.badConf(OnInputChange, raw,
        Modes.mkString(", "))
    }
    m
  }

  /**
   * Operation `fingerprint` (structure `structure`, reading `inputs`) of job `jobDir`, defined
   * now: remembered for the operations downstream of it, compared with what earlier runs
   * recorded under its structure, and recorded (a `vertexInputs` job event) unless its inputs
   * changed and `fail` is set (so that a failed run leaves nothing behind that would let the next
   * one pass). Returns nothing when the inputs did not change, else the error's text and the
   * warning's.
   */
  def operation(jobDir: String, operation: String, fingerprint: String, structure: String,
      inputs: Seq[Input], fail: Boolean): Seq[String] = {
    record(fingerprint, structure, inputs)
    val changed = changes(jobDir, structure, fingerprint, inputs)
    if (changed.isEmpty || !fail) post(jobDir, operation, fingerprint, structure, inputs)
    if (changed.isEmpty) Nil
    else {
      val what = changed.map(describe).mkString("; ")
      val job = jobDir.split('/').last
      Seq(
        s"$operation: its input changed since an earlier run of recovery job '$job' ($jobDir) " +
          s"recorded it: $what. The partitions committed then were computed from the old input " +
          s"and must not be mixed with the new one, and $OnInputChange is fail. Either run " +
          s"again with $OnInputChange=recompute (this operation and every one depending on it " +
          "are computed again from the new input; operations over unchanged inputs are still " +
          "recovered), or start the job afresh under a new spark.fullwindow.recovery.jobId.",
        s"fullwindow: $operation $fingerprint: its input changed since an earlier run of job " +
          s"$jobDir recorded it: $what. It is computed again from the new input: nothing " +
          s"committed from the old input is reused ($OnInputChange=recompute).")
    }
  }

  /** Records operation `fingerprint`'s inputs in job `jobDir` (here, and as a `vertexInputs` job
   * event the Python runtime appends to the event store), once. An operation reading no input
   * is not recorded: its fingerprint is its structure. */
  private def post(jobDir: String, operation: String, fingerprint: String, structure: String,
      inputs: Seq[Input]): Unit = {
    if (inputs.isEmpty || isRecorded(jobDir, structure, fingerprint)) return
    putRecorded(jobDir, structure, Recorded(fingerprint, inputs))
    val esc = FullWindowRecoveryListener.escape _
    def obj(f: Input => String) = inputs.map(i => "\"" + esc(i.root) + "\":" + f(i)).mkString("{", ",", "}")
    val digests = obj(i => "\"" + esc(i.digest) + "\"")
    val counts = obj(i => "[" + i.files + "," + i.bytes + "]")
    FullWindowRecoveryListener.post(
      s"""{"type":"vertexInputs","fingerprint":"${esc(fingerprint)}",""" +
        s""""structure":"${esc(structure)}","operator":"${esc(operation)}",""" +
        s""""job":"${esc(jobDir)}","inputs":$digests,"files":$counts,""" +
        s""""time":${System.currentTimeMillis()}}""")
  }
}
