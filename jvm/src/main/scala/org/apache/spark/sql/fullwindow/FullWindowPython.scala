package org.apache.spark.sql.fullwindow

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{Column, Row}
import org.apache.spark.sql.catalyst.expressions.{Ascending, Descending, SortOrder}
import org.apache.spark.sql.classic.{Dataset, SparkSession}
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.apache.spark.sql.fullwindow.logical.FullWindowSortPartition

/**
 * The one door from Python into the extension: Java-friendly arguments (arrays, strings,
 * booleans), DataFrames back. Every method builds a logical plan and lets Spark analyze it, so
 * argument errors surface as analysis errors before any task runs.
 */
object FullWindowPython extends AdaptiveSparkPlanHelper {
  val Version: String = "0.1.0"

  def version(): String = Version

  /** True when `fullwindow.sql.FullWindowExtensions` is registered with this session. */
  def extensionEnabled(spark: SparkSession): Boolean =
    spark.conf.getOption("spark.sql.extensions").exists(
      _.split(",").map(_.trim).contains("fullwindow.sql.FullWindowExtensions"))

  /**
   * Sorts each partition by `keys`. A key that is already a sort order (`col.desc()`) keeps its
   * direction and null ordering; otherwise `ascending(i)` picks it, with Spark's default nulls
   * placement (first when ascending, last when descending).
   */
  def sortPartition(df: Dataset[Row], keys: Array[Column], ascending: Array[Boolean]): Dataset[Row] = {
    if (keys.isEmpty) throw FullWindowErrors.invalidArgument("sortPartition", "at least one key is required")
    if (keys.length != ascending.length) {
      throw FullWindowErrors.invalidArgument("sortPartition", "one order is needed for each key")
    }
    val order = keys.zip(ascending).map { case (key, asc) =>
      df.sparkSession.expression(key) match {
        case s: SortOrder => s
        case e => SortOrder(e, if (asc) Ascending else Descending)
      }
    }.toSeq
    Dataset.ofRows(df.sparkSession, FullWindowSortPartition(order, df.logicalPlan))
  }

  /**
   * The SQL metrics of the full-window operators in the plan `df` last executed, as
   * `"<node name>.<metric name>" -> value`, summed over nodes of the same name. Reads the final
   * adaptive plan, so call it after an action on the same DataFrame.
   */
  def operatorMetrics(df: Dataset[Row]): java.util.Map[String, java.lang.Long] = {
    val out = scala.collection.mutable.LinkedHashMap.empty[String, java.lang.Long]
    foreach(df.queryExecution.executedPlan) { plan =>
      if (plan.nodeName.startsWith("FullWindow")) {
        plan.metrics.foreach { case (name, metric) =>
          val key = s"${plan.nodeName}.$name"
          out(key) = out.getOrElse(key, java.lang.Long.valueOf(0L)) + metric.value
        }
      }
    }
    out.asJava
  }
}
