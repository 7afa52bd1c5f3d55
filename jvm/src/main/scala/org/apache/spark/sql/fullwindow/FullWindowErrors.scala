package org.apache.spark.sql.fullwindow

import org.apache.spark.QueryContext
import org.apache.spark.sql.AnalysisException

/**
 * An error of fullwindow's own, raised while a query is analyzed. `kind` is a stable code that the
 * Python package maps to its exception classes; being an AnalysisException, it also reaches SQL
 * users (and pyspark's own error conversion) as an ordinary analysis error. It uses Spark's
 * generic one-parameter message condition, since Spark's condition list is closed to extensions,
 * and keeps its class when the analyzer copies it to attach a position.
 */
class FullWindowAnalysisException(val kind: String, val detail: String)
  extends AnalysisException(FullWindowAnalysisException.Condition,
    Map("errorMessage" -> s"[FULLWINDOW.$kind] $detail")) {

  override def copy(
      message: String, line: Option[Int], startPosition: Option[Int], cause: Option[Throwable],
      errorClass: Option[String], messageParameters: Map[String, String],
      context: Array[QueryContext]): AnalysisException =
    new FullWindowAnalysisException(kind, detail)

  override def copy(
      message: String, line: Option[Int], startPosition: Option[Int], cause: Option[Throwable],
      errorClass: Option[String], messageParameters: Map[String, String],
      context: Array[QueryContext], sqlState: Option[String],
      messageTemplate: Option[String]): AnalysisException =
    new FullWindowAnalysisException(kind, detail)
}

object FullWindowAnalysisException {
  val Condition = "_LEGACY_ERROR_TEMP_1332"
}

object FullWindowErrors {
  def streaming(operation: String, mode: String, reason: String): FullWindowAnalysisException =
    new FullWindowAnalysisException("STREAMING_NOT_SUPPORTED",
      s"$operation is a full-window operation and cannot run in $mode runtime mode ($reason). " +
        "Full windows fire at end of input, which a stream does not have: run the query on a " +
        "bounded (batch) DataFrame with spark.fullwindow.runtimeMode=BATCH or AUTOMATIC.")

  def notSortable(operation: String, key: String, dataType: String): FullWindowAnalysisException =
    new FullWindowAnalysisException("KEY_NOT_SORTABLE",
      s"$operation: key `$key` has type $dataType, which cannot be sorted " +
        "(maps, and structs or arrays holding maps, have no order).")

  def badConf(key: String, value: String, expected: String): FullWindowAnalysisException =
    new FullWindowAnalysisException("INVALID_CONFIG",
      s"$key is '$value'; expected one of: $expected.")

  def invalidArgument(operation: String, message: String): FullWindowAnalysisException =
    new FullWindowAnalysisException("INVALID_ARGUMENT", s"$operation: $message")
}
