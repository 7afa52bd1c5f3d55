package org.apache.spark.sql.fullwindow

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{Column, Row}
import org.apache.spark.sql.catalyst.expressions.{Ascending, Descending, PythonUDF, SortOrder}
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, Project}
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.classic.{Dataset, ExpressionUtils, SparkSession}
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.apache.spark.sql.fullwindow.logical.{FullWindowPartitionKey, FullWindowPythonPartition, FullWindowSortPartition}

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
   * Aggregates each partition with built-in aggregate columns, evaluated in the JVM: one row per
   * non-empty partition, no exchange. Each column must be an aggregate (F.sum, F.count, ...).
   */
  def aggregate(df: Dataset[Row], columns: Array[Column]): Dataset[Row] = {
    if (columns.isEmpty) {
      throw FullWindowErrors.invalidArgument("aggregate", "give at least one aggregate column")
    }
    columns.foreach { c =>
      // Alone in a select, an aggregate makes an Aggregate node; anything else a Project.
      df.select(c).queryExecution.analyzed match {
        case _: Aggregate =>
        case _ => throw FullWindowErrors.invalidArgument("aggregate",
          s"column `${c.toString}` is not an aggregate; expected built-in aggregate columns " +
            "such as F.sum(...), F.count(...), F.max(...), F.collect_list(...)")
      }
    }
    val key = ExpressionUtils.column(FullWindowPartitionKey())
    val grouped = df.groupBy(key).agg(columns.head, columns.tail.toIndexedSeq: _*)
    val agg = grouped.queryExecution.analyzed
    // Drop the partition key from the output: the window is the partition.
    Dataset.ofRows(df.sparkSession, Project(agg.output.tail, agg))
  }

  /**
   * A Python function over each whole partition, given as a PythonUDF column of eval type
   * SQL_MAP_ARROW_ITER_UDF over every input column (what mapInArrow takes); `operation` names
   * the user-facing operation for plans and errors.
   */
  def pythonPartition(df: Dataset[Row], operation: String, udf: Column): Dataset[Row] = {
    df.sparkSession.expression(udf) match {
      case f: PythonUDF =>
        val output = DataTypeUtils.toAttributes(f.dataType.asInstanceOf[StructType])
        Dataset.ofRows(df.sparkSession, FullWindowPythonPartition(operation, f, output, df.logicalPlan))
      case other => throw FullWindowErrors.invalidArgument(operation,
        s"expected a Python function, got ${other.sql}")
    }
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
