package org.apache.spark.sql.fullwindow.connect

import scala.jdk.CollectionConverters._

import io.fullwindow.connect.proto.FullWindowRelation
import io.fullwindow.connect.proto.FullWindowRelation.OperationCase

import org.apache.spark.sql.{Column, Row}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.classic.Dataset
import org.apache.spark.sql.fullwindow.{FullWindowAnalysisException, FullWindowErrors, FullWindowPython}

/**
 * What the Connect server's planner does for fullwindow, on any Spark line: turns the serialized
 * inputs and expressions of a [[FullWindowRelation]] into a classic Dataset and Columns (through
 * [[ConnectPlanning]], the version-dependent part in ConnectShims.scala), calls the same
 * [[FullWindowPython]] builder the py4j path calls, and returns the result's logical plan. So a
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
    val input = p.dataset(rel.getInput.toByteArray)
    def columns(bytes: java.util.List[org.sparkproject.connect.protobuf.ByteString]): Array[Column] =
      bytes.asScala.map(b => p.column(b.toByteArray)).toArray
    def strings(s: java.util.List[String]): Array[String] = s.asScala.toArray
    val out: Dataset[Row] = rel.getOperationCase match {
      case OperationCase.SORT_PARTITION =>
        val m = rel.getSortPartition
        FullWindowPython.sortPartition(input, columns(m.getKeysList),
          m.getAscendingList.asScala.map(_.booleanValue).toArray)
      case OperationCase.AGGREGATE =>
        FullWindowPython.aggregate(input, columns(rel.getAggregate.getColumnsList))
      case OperationCase.PYTHON_PARTITION =>
        val m = rel.getPythonPartition
        FullWindowPython.pythonPartition(input, m.getOperation, p.column(m.getUdf.toByteArray))
      case OperationCase.KEYED_REPARTITION =>
        FullWindowPython.keyedRepartition(input, strings(rel.getKeyedRepartition.getKeysList))
      case OperationCase.KEYED_AGGREGATE =>
        val m = rel.getKeyedAggregate
        FullWindowPython.keyedAggregate(input, strings(m.getKeysList), columns(m.getColumnsList))
      case OperationCase.KEYED_PYTHON_PARTITION =>
        val m = rel.getKeyedPythonPartition
        FullWindowPython.keyedPythonPartition(input, m.getOperation, strings(m.getKeysList),
          p.column(m.getUdf.toByteArray))
      case OperationCase.KEYED_RUNNING =>
        val m = rel.getKeyedRunning
        FullWindowPython.keyedRunning(input, m.getOperation, strings(m.getKeysList),
          m.getSequence, p.column(m.getUdf.toByteArray))
      case OperationCase.CO_GROUP =>
        val m = rel.getCoGroup
        FullWindowPython.coGroup(input, p.dataset(m.getRight.toByteArray),
          strings(m.getLeftKeysList), strings(m.getRightKeysList), p.column(m.getUdf.toByteArray))
      case other =>
        throw FullWindowErrors.invalidArgument("Spark Connect",
          s"unknown fullwindow operation $other: the client is newer than the server's jar")
    }
    out.logicalPlan
  }
}

/** The planner services [[FullWindowConnectPlanner]] needs; ConnectShims.scala implements them. */
trait ConnectPlanning {
  def session: org.apache.spark.sql.classic.SparkSession
  /** A serialized spark.connect.Relation, planned and wrapped as a classic Dataset. */
  def dataset(relation: Array[Byte]): Dataset[Row]
  /** A serialized spark.connect.Expression, planned and wrapped as a Column. */
  def column(expression: Array[Byte]): Column
}
