package org.apache.spark.sql.fullwindow.connect

import scala.jdk.CollectionConverters._

import io.fullwindow.connect.proto.FullWindowRelation
import io.fullwindow.connect.proto.FullWindowRelation.OperationCase

import org.apache.spark.connect.proto
import org.apache.spark.sql.{Column, Row}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.connect.planner.SparkConnectPlanner
import org.apache.spark.sql.fullwindow.{FullWindowAnalysisException, FullWindowErrors, FullWindowPython}
import org.apache.spark.sql.fullwindow.shims.SparkShims
import org.apache.spark.sql.fullwindow.shims.SparkShims.{Dataset, SparkSession}

/**
 * What the Connect server's planner does for fullwindow, on any Spark line: turns the serialized
 * inputs and expressions of a [[FullWindowRelation]] into a classic Dataset and Columns (through
 * [[ConnectPlanning]]), calls the same [[FullWindowPython]] builder the py4j path calls, and
 * returns the result's logical plan. Only the RelationPlugin class, which calls this, differs
 * by line (jvm/src/connect/shims/spark-<lines>, with that line's generated protobuf code). So a
 * Connect query gets the very nodes, rules, strategy and execs a classic one gets.
 */
object FullWindowConnectPlanner {

  /** The three server settings a Connect server needs for fullwindow (said in setup errors). */
  val ServerSettings: String =
    "--jars <fullwindow jar> --conf spark.sql.extensions=fullwindow.sql.FullWindowExtensions " +
      "--conf spark.connect.extensions.relation.classes=" +
      "org.apache.spark.sql.fullwindow.connect.FullWindowRelationPlugin"

  def plan(rel: FullWindowRelation, p: ConnectPlanning): LogicalPlan = {
    if (!FullWindowPython.extensionEnabled(p.session)) {
      throw new FullWindowAnalysisException("SETUP",
        "the fullwindow Connect plugin is loaded but the extension is not registered with the " +
          "server's session (spark.sql.extensions does not include " +
          s"fullwindow.sql.FullWindowExtensions). Start the Connect server with $ServerSettings.")
    }
    if (rel.getOperationCase == OperationCase.SERVER_INFO) return ServerReport.relation()
    if (rel.getOperationCase == OperationCase.RECOVERY_CONTROL) {
      return FullWindowConnectRecovery.control(p, rel.getRecoveryControl)
    }
    val input = p.dataset(rel.getInput.toByteArray)
    def columns(bytes: java.util.List[org.sparkproject.connect.protobuf.ByteString]): Array[Column] =
      bytes.asScala.map(b => p.column(b.toByteArray)).toArray
    def strings(s: java.util.List[String]): Array[String] = s.asScala.toArray
    if (rel.getOperationCase == OperationCase.COMMIT) {
      return FullWindowConnectRecovery.commit(p, input, rel.getCommit)
    }
    val out: Dataset[Row] = rel.getOperationCase match {
      case OperationCase.SORT_PARTITION =>
        val m = rel.getSortPartition
        FullWindowPython.sortPartition(input, columns(m.getKeysList),
          m.getAscendingList.asScala.map(_.booleanValue).toArray)
      case OperationCase.AGGREGATE =>
        FullWindowPython.aggregate(input, columns(rel.getAggregate.getColumnsList))
      case OperationCase.PYTHON_PARTITION =>
        val m = rel.getPythonPartition
        FullWindowPython.pythonPartition(input, m.getOperation, p.column(m.getUdf.toByteArray),
          m.getPandas)
      case OperationCase.KEYED_REPARTITION =>
        FullWindowPython.keyedRepartition(input, strings(rel.getKeyedRepartition.getKeysList))
      case OperationCase.KEYED_AGGREGATE =>
        val m = rel.getKeyedAggregate
        FullWindowPython.keyedAggregate(input, strings(m.getKeysList), columns(m.getColumnsList))
      case OperationCase.KEYED_PYTHON_PARTITION =>
        val m = rel.getKeyedPythonPartition
        FullWindowPython.keyedPythonPartition(input, m.getOperation, strings(m.getKeysList),
          p.column(m.getUdf.toByteArray), m.getPandas)
      case OperationCase.KEYED_RUNNING =>
        val m = rel.getKeyedRunning
        FullWindowPython.keyedRunning(input, m.getOperation, strings(m.getKeysList),
          m.getSequence, p.column(m.getUdf.toByteArray))
      case OperationCase.CO_GROUP =>
        val m = rel.getCoGroup
        FullWindowPython.coGroup(input, p.dataset(m.getRight.toByteArray),
          strings(m.getLeftKeysList), strings(m.getRightKeysList), p.column(m.getUdf.toByteArray),
          m.getPandas)
      case other =>
        throw FullWindowErrors.invalidArgument("Spark Connect",
          s"unknown fullwindow operation $other: the client is newer than the server's jar")
    }
    out.logicalPlan
  }
}

/**
 * What a [[io.fullwindow.connect.proto.ServerInfo]] asks: one row of this jar's version and the
 * fullwindow version that the server's Python workers' interpreter imports (null: none). The
 * jar's version is its manifest's Implementation-Version (sbt writes the build's version
 * there). The interpreter is the one Spark Connect's planner gives Python UDFs (PYSPARK_PYTHON,
 * else PYSPARK_DRIVER_PYTHON, else python3); it is asked once per interpreter and server JVM, by
 * a short process that finds the package without importing it (about 30 ms).
 */
private[connect] object ServerReport {
  import java.nio.charset.StandardCharsets.UTF_8
  import java.util.concurrent.{ConcurrentHashMap, TimeUnit}

  import scala.util.control.NonFatal

  import org.apache.spark.sql.catalyst.expressions.AttributeReference
  import org.apache.spark.sql.catalyst.plans.logical.LocalRelation
  import org.apache.spark.sql.types.StringType

  lazy val jarVersion: String =
    Option(getClass.getPackage).flatMap(p => Option(p.getImplementationVersion))
      .getOrElse(FullWindowPython.Version)

  // the package keeps its version in fullwindow/_version.py (older ones in __init__.py)
  private val Probe =
    "import importlib.util, os, re\n" +
      "spec = importlib.util.find_spec('fullwindow')\n" +
      "if spec is not None and spec.origin:\n" +
      "    for name in ('_version.py', '__init__.py'):\n" +
      "        path = os.path.join(os.path.dirname(spec.origin), name)\n" +
      "        if os.path.exists(path):\n" +
      "            with open(path) as f:\n" +
      "                m = re.search(r'^__version__\\s*=\\s*[\"\\']([^\"\\']+)', f.read(), re.M)\n" +
      "            if m:\n" +
      "                print(m.group(1))\n" +
      "                break\n"

  private val probed = new ConcurrentHashMap[String, Option[String]]()

  def pythonExec: String =
    sys.env.getOrElse("PYSPARK_PYTHON", sys.env.getOrElse("PYSPARK_DRIVER_PYTHON", "python3"))

  def pythonVersion(): Option[String] =
    probed.computeIfAbsent(pythonExec, exec => probe(exec))

  private def probe(exec: String): Option[String] = try {
    val proc = new ProcessBuilder(exec, "-c", Probe)
      .redirectError(ProcessBuilder.Redirect.DISCARD).start()
    proc.getOutputStream.close()
    val out = new String(proc.getInputStream.readAllBytes(), UTF_8).trim
    if (proc.waitFor(60, TimeUnit.SECONDS) && proc.exitValue == 0 && out.nonEmpty) Some(out)
    else None
  } catch {
    case NonFatal(_) => None
  }

  def relation(): LogicalPlan = {
    val output = Seq(AttributeReference("jar_version", StringType, nullable = false)(),
      AttributeReference("python_version", StringType, nullable = true)())
    LocalRelation.fromExternalRows(output, Seq(Row(jarVersion, pythonVersion().orNull)))
  }
}

/** The planner services [[FullWindowConnectPlanner]] needs. */
trait ConnectPlanning {
  def session: SparkSession
  /** The Connect session's id and user (recovery keeps each session's job apart). */
  def sessionId: String
  def userId: String
  /** A serialized spark.connect.Relation, planned and wrapped as a classic Dataset. */
  def dataset(relation: Array[Byte]): Dataset[Row]
  /** A serialized spark.connect.Expression, planned and wrapped as a Column. */
  def column(expression: Array[Byte]): Column
}

/**
 * [[ConnectPlanning]] by a Connect server's planner: its transformRelation / transformExpression
 * (the same names and proto classes on every line) and the SQL shims' Dataset and Column. The
 * session is the planner's (how to reach it differs by line: the plugin class in jvm/src/connect/shims).
 */
private[connect] class PlannerServices(
    planner: SparkConnectPlanner, override val session: SparkSession,
    override val sessionId: String, override val userId: String)
    extends ConnectPlanning {
  override def dataset(relation: Array[Byte]): Dataset[Row] =
    SparkShims.ofRows(session, planner.transformRelation(proto.Relation.parseFrom(relation)))

  override def column(expression: Array[Byte]): Column =
    SparkShims.column(planner.transformExpression(proto.Expression.parseFrom(expression)))
}
