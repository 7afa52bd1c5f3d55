package org.apache.spark.sql.fullwindow

import org.apache.spark.sql.AnalysisException
import org.apache.spark.sql.fullwindow.shims.KeepsClassOnCopy

/**
 * An error of fullwindow's own, raised while a query is analyzed. `kind` is a stable code that the
 * Python package maps to its exception classes; being an AnalysisException, it also reaches SQL
 * users (and pyspark's own error conversion) as an ordinary analysis error. It uses Spark's
 * generic one-parameter message condition, since Spark's condition list is closed to extensions,
 * and keeps its class when the analyzer copies it to attach a position.
 */
class FullWindowAnalysisException(val kind: String, val detail: String)
  extends KeepsClassOnCopy(FullWindowAnalysisException.Condition,
    Map("errorMessage" -> s"[FULLWINDOW.$kind] $detail")) {

  override protected def recreate(): AnalysisException = new FullWindowAnalysisException(kind, detail)
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

  def streamingRunning(operation: String): FullWindowAnalysisException =
    new FullWindowAnalysisException("STREAMING_NOT_SUPPORTED",
      s"$operation cannot run on a streaming DataFrame: its running (upsert) result of STREAMING " +
        "runtime mode is computed over a bounded input, by sorting each key's records by their " +
        "input position, which an unbounded stream cannot be. For an unbounded stream use " +
        "Structured Streaming's stateful operators (e.g. groupBy(...).applyInPandasWithState).")

  def keyTypeMismatch(operation: String, left: String, right: String): FullWindowAnalysisException =
    new FullWindowAnalysisException("KEY_TYPE_MISMATCH",
      s"$operation: the two sides must be keyed by the same number of keys of the same types " +
        s"(equal keys must hash to the same partition); the left side is keyed by ($left) and " +
        s"the right side by ($right). Cast the keys of one side to the other's types first.")

  def badConf(key: String, value: String, expected: String): FullWindowAnalysisException =
    new FullWindowAnalysisException("INVALID_CONFIG",
      s"$key is '$value'; expected one of: $expected.")

  def invalidArgument(operation: String, message: String): FullWindowAnalysisException =
    new FullWindowAnalysisException("INVALID_ARGUMENT", s"$operation: $message")
}
