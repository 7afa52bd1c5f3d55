package org.apache.spark.sql.fullwindow.shims

import scala.jdk.CollectionConverters._

import org.apache.spark.{ContextAwareIterator, PartitionEvaluator, PartitionEvaluatorFactory, TaskContext}
import org.apache.spark.api.python.{ChainedPythonFunctions, PythonEvalType}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, GenericInternalRow, PythonUDF, UnsafeProjection}
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.execution.python.{ArrowPythonRunner, BatchIterator, MapInBatchEvaluatorFactory}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{StructField, StructType}
import org.apache.spark.sql.vectorized.{ArrowColumnVector, ColumnarBatch, ColumnVector}

/** Python calls, Spark 4.2 and 4.3: the output type is given, then a profiler. */
trait PythonShims {
  /**
   * Spark's mapInArrow evaluation of `udf` (SQL_MAP_ARROW_ITER_UDF) over rows of `inputSchema`;
   * with `fixedBatchRows` (the caller knows no byte limit can end a batch) the same evaluation
   * with input batches of exactly that many rows, wrapping rows without a copy ([[MapInArrowRows]]).
   */
  def mapInArrowFactory(
      output: Seq[Attribute],
      udf: PythonUDF,
      inputSchema: StructType,
      conf: SQLConf,
      pythonMetrics: Map[String, SQLMetric],
      jobArtifactUUID: Option[String],
      fixedBatchRows: Option[Int]): PartitionEvaluatorFactory[InternalRow, InternalRow] = {
    val funcs = Seq((ChainedPythonFunctions(Seq(udf.func)), udf.resultId.id))
    val runnerConf = ArrowPythonRunner.getPythonRunnerConfMap(conf)
    fixedBatchRows match {
      case Some(rows) => new MapInArrowRows(output, funcs, inputSchema, rows,
        conf.sessionLocalTimeZone, conf.arrowUseLargeVarTypes, runnerConf, pythonMetrics,
        jobArtifactUUID)
      case None => new MapInBatchEvaluatorFactory(
        output, funcs, inputSchema, udf.dataType,
        conf.arrowMaxRecordsPerBatch, PythonEvalType.SQL_MAP_ARROW_ITER_UDF,
        conf.sessionLocalTimeZone, conf.arrowUseLargeVarTypes,
        runnerConf, pythonMetrics, jobArtifactUUID, None)
    }
  }
}

/**
 * mapInArrow's evaluation as Spark's MapInBatchEvaluatorFactory does it (the same Arrow Python
 * runner, the input rows as one struct column, the output struct's fields as rows), for input
 * batches of exactly `batchRows` rows, with one difference: each input row is put into the struct
 * column by refilling one wrapper row, where Spark builds a new one-field row per input row
 * through a generic varargs array copy, about 8% of the task CPU of a keyed mapPartitionInPandas
 * with a few large keys (JFR, benchmarks/notes/keyed.md). Reusing the wrapper is safe: the Arrow
 * writer has copied a row's values before the next row is read. The output batches' type is
 * checked on the Python side (SchemaMismatchError), before they are sent.
 */
private[fullwindow] class MapInArrowRows(
    output: Seq[Attribute],
    funcs: Seq[(ChainedPythonFunctions, Long)],
    inputSchema: StructType,
    batchRows: Int,
    timeZone: String,
    largeVarTypes: Boolean,
    runnerConf: Map[String, String],
    pythonMetrics: Map[String, SQLMetric],
    jobArtifactUUID: Option[String]) extends PartitionEvaluatorFactory[InternalRow, InternalRow] {

  override def createEvaluator(): PartitionEvaluator[InternalRow, InternalRow] =
    new PartitionEvaluator[InternalRow, InternalRow] {
      override def eval(partitionIndex: Int, inputs: Iterator[InternalRow]*): Iterator[InternalRow] = {
        val context = TaskContext.get()
        val wrapper = new GenericInternalRow(1)
        // stops reading once the task is completed or killed, as Spark's evaluation does
        val rows = new ContextAwareIterator(context, inputs.head).map { row =>
          wrapper.update(0, row)
          wrapper: InternalRow
        }
        val runner = new ArrowPythonRunner(funcs, PythonEvalType.SQL_MAP_ARROW_ITER_UDF,
          Array(Array(0)), StructType(Array(StructField("struct", inputSchema))), timeZone,
          largeVarTypes, runnerConf, pythonMetrics, jobArtifactUUID, None)
        val project = UnsafeProjection.create(output, output)
        val batches = new BatchIterator(rows, batchRows)
        runner.compute(batches, context.partitionId(), context).flatMap { batch =>
          val struct = batch.column(0).asInstanceOf[ArrowColumnVector]
          val flat = new ColumnarBatch(
            output.indices.map(i => struct.getChild(i): ColumnVector).toArray)
          flat.setNumRows(batch.numRows())
          flat.rowIterator.asScala
        }.map(project)
      }
    }
}
