package org.apache.spark.sql.fullwindow.recovery.writes

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.fullwindow.shims.SparkShims.SparkSession

/**
 * The table formats whose commits record a write's id: Delta Lake (idempotent writes:
 * `txnAppId` / `txnVersion`) and Apache Iceberg (a snapshot summary property), reached by
 * reflection (the jar depends on neither).
 */
object TableSinks {
  /** The table format sink of write command `plan`, if it writes to one. */
  def of(session: SparkSession, plan: LogicalPlan): Option[WriteSink] =
    LakehouseSinks.of(session, plan)  // LakehouseSinks.scala
}
