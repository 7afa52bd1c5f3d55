package org.apache.spark.sql.fullwindow.connect

import java.util.Optional

import io.fullwindow.connect.proto.FullWindowRelation
import org.sparkproject.connect.protobuf.{Any => ProtoAny}

import org.apache.spark.connect.proto
import org.apache.spark.sql.{Column, Row}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.classic.{Dataset, ExpressionUtils, SparkSession}
import org.apache.spark.sql.connect.planner.SparkConnectPlanner
import org.apache.spark.sql.connect.plugin.RelationPlugin

// THE VERSION-DEPENDENT PART OF THE CONNECT PLUGIN (this file only; Spark 4.x shape).
// What differs between Spark lines:
//   - RelationPlugin.transform: 4.x gets the extension's serialized Any as Array[Byte]
//     (3.5: a shaded protobuf Any);
//   - SparkConnectPlanner.transformRelation / transformExpression / session (their names and
//     the session's class: classic.SparkSession in 4.x, sql.SparkSession in 3.5);
//   - building a classic Dataset (classic.Dataset.ofRows in 4.x; sql.Dataset.ofRows in 3.5) and
//     a Column from an Expression (classic.ExpressionUtils.column in 4.x; new Column(expr) in 3.5).
// Everything else of the plugin is in FullWindowConnectPlanner.scala, common to every line.

/**
 * fullwindow's Spark Connect relation plugin: register it with
 * `spark.connect.extensions.relation.classes=org.apache.spark.sql.fullwindow.connect.FullWindowRelationPlugin`.
 * Declines (empty) any extension that is not a fullwindow relation.
 */
class FullWindowRelationPlugin extends RelationPlugin {
  override def transform(relation: Array[Byte], planner: SparkConnectPlanner): Optional[LogicalPlan] = {
    val any = ProtoAny.parseFrom(relation)
    if (!any.is(classOf[FullWindowRelation])) Optional.empty()
    else Optional.of(FullWindowConnectPlanner.plan(any.unpack(classOf[FullWindowRelation]),
      new PlannerServices(planner)))
  }
}

private class PlannerServices(planner: SparkConnectPlanner) extends ConnectPlanning {
  override def session: SparkSession = planner.session

  override def dataset(relation: Array[Byte]): Dataset[Row] =
    Dataset.ofRows(planner.session, planner.transformRelation(proto.Relation.parseFrom(relation)))

  override def column(expression: Array[Byte]): Column =
    ExpressionUtils.column(planner.transformExpression(proto.Expression.parseFrom(expression)))
}
