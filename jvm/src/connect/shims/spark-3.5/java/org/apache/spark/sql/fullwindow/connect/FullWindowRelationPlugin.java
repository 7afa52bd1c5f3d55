package org.apache.spark.sql.fullwindow.connect;

import io.fullwindow.connect.proto.FullWindowRelation;
import org.sparkproject.connect.protobuf.Any;
import org.sparkproject.connect.protobuf.InvalidProtocolBufferException;
import scala.Option;

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.connect.planner.SparkConnectPlanner;
import org.apache.spark.sql.connect.plugin.RelationPlugin;

// THE VERSION-DEPENDENT PART OF THE CONNECT PLUGIN, Spark 3.5: RelationPlugin.transform gets the
// extension as a shaded protobuf Any (protobuf-java 3.23.4 relocated to
// org.sparkproject.connect.protobuf in spark-connect_2.12 3.5.x) and answers a scala.Option.
// Written in Java on purpose: the shaded jar relocated the bytecode but not the Scala signatures,
// which still name com.google.protobuf.Any, so scalac cannot override transform; javac reads
// the relocated bytecode. The planner's session is private to Spark Connect in 3.5, its
// SessionHolder's is not. The Java generated from proto/ beside this file is protoc 3.23.4 code
// (protoc 4.x code does not run on a 3.x runtime). Everything else of the plugin is in
// jvm/src/connect/scala, common to every line.

/**
 * fullwindow's Spark Connect relation plugin: register it with
 * {@code spark.connect.extensions.relation.classes=org.apache.spark.sql.fullwindow.connect.FullWindowRelationPlugin}.
 * Declines (None) any extension that is not a fullwindow relation.
 */
public class FullWindowRelationPlugin implements RelationPlugin {
  @Override
  public Option<LogicalPlan> transform(Any relation, SparkConnectPlanner planner) {
    if (!relation.is(FullWindowRelation.class)) {
      return Option.empty();
    }
    try {
      return Option.apply(FullWindowConnectPlanner.plan(relation.unpack(FullWindowRelation.class),
          new PlannerServices(planner, planner.sessionHolder().session(),
          planner.sessionHolder().sessionId(), planner.sessionHolder().userId())));
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalArgumentException("a malformed fullwindow Connect relation", e);
    }
  }
}
