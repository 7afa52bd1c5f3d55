package org.apache.spark.sql.fullwindow.shims

import org.apache.spark.QueryContext
import org.apache.spark.sql.AnalysisException

/**
 * An AnalysisException that stays of its own class when the analyzer copies it to attach a
 * position: every `copy` overload of this line's AnalysisException returns [[recreate]].
 */
abstract class KeepsClassOnCopy(condition: String, parameters: Map[String, String])
  extends AnalysisException(condition, parameters) {

  protected def recreate(): AnalysisException

  override def copy(
      message: String, line: Option[Int], startPosition: Option[Int], cause: Option[Throwable],
      errorClass: Option[String], messageParameters: Map[String, String],
      context: Array[QueryContext]): AnalysisException = recreate()

  override def copy(
      message: String, line: Option[Int], startPosition: Option[Int], cause: Option[Throwable],
      errorClass: Option[String], messageParameters: Map[String, String],
      context: Array[QueryContext], sqlState: Option[String],
      messageTemplate: Option[String]): AnalysisException = recreate()
}
