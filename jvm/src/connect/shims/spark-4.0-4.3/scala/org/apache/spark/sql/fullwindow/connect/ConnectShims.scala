package org.apache.spark.sql.fullwindow.connect

import java.util.Optional

import io.fullwindow.connect.proto.FullWindowRelation
import org.sparkproject.connect.protobuf.{Any => ProtoAny}

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.connect.planner.SparkConnectPlanner
import org.apache.spark.sql.connect.plugin.RelationPlugin

// THE VERSION-DEPENDENT PART OF THE CONNECT PLUGIN, Spark 4.x: RelationPlugin.transform gets the
// extension's serialized Any as Array[Byte] and answers a java.util.Optional (3.5: a shaded
// protobuf Any and a scala.Option, in jvm/src/connect/shims/spark-3.5, in Java); the planner's
// session is public. The Java generated from proto/ beside this file is protoc 4.x code for the
// protobuf-java 4.x these lines shade.
// Everything else of the plugin is in jvm/src/connect/scala, common to every line.

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
      new PlannerServices(planner, planner.session, planner.sessionHolder.sessionId,
        planner.sessionHolder.userId)))
  }
}
