package org.apache.spark.sql.fullwindow.shims

import org.apache.spark.PartitionEvaluatorFactory
import org.apache.spark.api.python.{ChainedPythonFunctions, PythonEvalType}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, PythonUDF}
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.execution.python.{ArrowPythonRunner, MapInBatchEvaluatorFactory}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.StructType

/** Python calls, Spark 3.5: functions without result ids, no output type (taken from `output`). */
trait PythonShims {
  /** Spark's mapInArrow evaluation of `udf` (SQL_MAP_ARROW_ITER_UDF) over rows of `inputSchema`,
    * in batches of `fixedBatchRows` rows when given (the pandas forms' frame size), else of the
    * session's `arrowMaxRecordsPerBatch`. */
  def mapInArrowFactory(
      output: Seq[Attribute],
      udf: PythonUDF,
      inputSchema: StructType,
      conf: SQLConf,
      pythonMetrics: Map[String, SQLMetric],
      jobArtifactUUID: Option[String],
      fixedBatchRows: Option[Int]): PartitionEvaluatorFactory[InternalRow, InternalRow] =
    new MapInBatchEvaluatorFactory(
      output, Seq(ChainedPythonFunctions(Seq(udf.func))), inputSchema,
      fixedBatchRows.getOrElse(conf.arrowMaxRecordsPerBatch),
      PythonEvalType.SQL_MAP_ARROW_ITER_UDF,
      conf.sessionLocalTimeZone, conf.arrowUseLargeVarTypes,
      ArrowPythonRunner.getPythonRunnerConfMap(conf), pythonMetrics, jobArtifactUUID)
}
