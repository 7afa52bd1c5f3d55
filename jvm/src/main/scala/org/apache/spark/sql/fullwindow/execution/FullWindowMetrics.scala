package org.apache.spark.sql.fullwindow.execution

import org.apache.spark.SparkContext
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}

/** The SQL metrics full-window operators show in explain() and the Spark UI's SQL tab. */
object FullWindowMetrics {
  def rows(sc: SparkContext): Map[String, SQLMetric] = Map(
    "numInputRows" -> SQLMetrics.createMetric(sc, "number of input rows"),
    "numOutputRows" -> SQLMetrics.createMetric(sc, "number of output rows"))

  def sort(sc: SparkContext): Map[String, SQLMetric] = rows(sc) ++ Map(
    "sortTime" -> SQLMetrics.createTimingMetric(sc, "sort time"),
    "peakMemory" -> SQLMetrics.createSizeMetric(sc, "peak memory"),
    "spillSize" -> SQLMetrics.createSizeMetric(sc, "spill size"))
}
