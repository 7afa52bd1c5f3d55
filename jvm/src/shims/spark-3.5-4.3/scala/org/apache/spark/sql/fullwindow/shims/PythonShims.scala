package org.apache.spark.sql.fullwindow.shims

import scala.jdk.CollectionConverters._

import org.apache.spark.{ContextAwareIterator, PartitionEvaluator, PartitionEvaluatorFactory}
import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, GenericInternalRow, PythonUDF}
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.execution.python.{ArrowPythonRunner, BatchIterator}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{StructField, StructType}
import org.apache.spark.sql.vectorized.{ArrowColumnVector, ColumnarBatch, ColumnVector}

/** Python calls, every line; how each line builds Spark's evaluation is [[MapInArrowShim]]. */
trait PythonShims {
  /**
   * mapInArrow's evaluation of `udf` (SQL_MAP_ARROW_ITER_UDF) over rows of `inputSchema`. With
   * `fixedBatchRows` (the caller knows no byte limit can end a batch early) input batches of
   * exactly that many rows, the rows wrapped without a copy ([[MapInArrowRows]]); without it
   * Spark's own evaluation (MapInBatchEvaluatorFactory), batches cut by the session's limits.
   */
  def mapInArrowFactory(
      output: Seq[Attribute],
      udf: PythonUDF,
      inputSchema: StructType,
      conf: SQLConf,
      pythonMetrics: Map[String, SQLMetric],
      jobArtifactUUID: Option[String],
      fixedBatchRows: Option[Int]): PartitionEvaluatorFactory[InternalRow, InternalRow] = {
    val args = MapInArrowArgs(output, udf, inputSchema,
      fixedBatchRows.getOrElse(conf.arrowMaxRecordsPerBatch), conf.sessionLocalTimeZone,
      conf.arrowUseLargeVarTypes, ArrowPythonRunner.getPythonRunnerConfMap(conf), pythonMetrics,
      jobArtifactUUID)
    if (fixedBatchRows.isDefined) new MapInArrowRows(args) else MapInArrowShim.spark(args)
  }
}

/** What a mapInArrow evaluation is built from: the session's settings, read on the driver. */
private[fullwindow] final case class MapInArrowArgs(
    output: Seq[Attribute],
    udf: PythonUDF,
    inputSchema: StructType,
    batchRows: Int,
    timeZone: String,
    largeVarTypes: Boolean,
    runnerConf: Map[String, String],
    pythonMetrics: Map[String, SQLMetric],
    jobArtifactUUID: Option[String])

/**
 * mapInArrow's evaluation as Spark's MapInBatchEvaluatorFactory does it (the line's Arrow Python
 * runner, the input rows as one struct column, the output struct's fields as rows), for input
 * batches of exactly `batchRows` rows, with one difference: each input row is put into the struct
 * column by refilling one wrapper row, where Spark builds a new one-field row per input row
 * through a generic varargs array copy, about 8% of the task CPU of a keyed mapPartitionInPandas
 * with a few large keys (JFR, benchmarks/notes/keyed.md). Reusing the wrapper is safe: the Arrow
 * writer has copied a row's values before the next row is read. The output batches' type is
 * checked on the Python side (SchemaMismatchError), before they are sent.
 */
private[fullwindow] class MapInArrowRows(args: MapInArrowArgs)
  extends PartitionEvaluatorFactory[InternalRow, InternalRow] {

  override def createEvaluator(): PartitionEvaluator[InternalRow, InternalRow] =
    new PartitionEvaluator[InternalRow, InternalRow] {
      override def eval(partitionIndex: Int, inputs: Iterator[InternalRow]*): Iterator[InternalRow] = {
        val context = TaskContext.get()
        val wrapper = new GenericInternalRow(1)
        // stops reading once the task is completed or killed (3.5's runner writes the input
        // from a thread of its own)
        val rows = new ContextAwareIterator(context, inputs.head).map { row =>
          wrapper.update(0, row)
          wrapper: InternalRow
        }
        val runner = MapInArrowShim.runner(args,
          StructType(Array(StructField("struct", args.inputSchema))))
        val output = args.output
        val project = UnsafeProjection.create(output, output)
        val batches = new BatchIterator(rows, args.batchRows)
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
