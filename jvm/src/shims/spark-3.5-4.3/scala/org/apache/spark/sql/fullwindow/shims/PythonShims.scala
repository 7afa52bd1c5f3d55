package org.apache.spark.sql.fullwindow.shims

import scala.jdk.CollectionConverters._

import org.apache.spark.{PartitionEvaluator, PartitionEvaluatorFactory}
import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, GenericInternalRow, PythonUDF}
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.execution.python.ArrowPythonRunner
import org.apache.spark.sql.fullwindow.execution.ColumnarArrowInput
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
   * With `columnarSort` (and `fixedBatchRows`, then the most rows of a batch) the input is sorted
   * by it (or comes sorted by columns), and the batches are filled from the sorted columns
   * ([[ArrowChunks]], which end a batch at the session's byte limit too), not row by row.
   */
  def mapInArrowFactory(
      output: Seq[Attribute],
      udf: PythonUDF,
      inputSchema: StructType,
      conf: SQLConf,
      pythonMetrics: Map[String, SQLMetric],
      jobArtifactUUID: Option[String],
      fixedBatchRows: Option[Int],
      columnarSort: Option[ColumnarArrowInput] = None): PartitionEvaluatorFactory[InternalRow, InternalRow] = {
    val args = MapInArrowArgs(output, udf, inputSchema,
      fixedBatchRows.getOrElse(conf.arrowMaxRecordsPerBatch), conf.sessionLocalTimeZone,
      conf.arrowUseLargeVarTypes, ArrowPythonRunner.getPythonRunnerConfMap(conf), pythonMetrics,
      jobArtifactUUID)
    if (fixedBatchRows.isDefined) new MapInArrowRows(args, columnarSort) else MapInArrowShim.spark(args)
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
private[fullwindow] class MapInArrowRows(args: MapInArrowArgs, columnarSort: Option[ColumnarArrowInput])
  extends PartitionEvaluatorFactory[InternalRow, InternalRow] {

  override def createEvaluator(): PartitionEvaluator[InternalRow, InternalRow] =
    new PartitionEvaluator[InternalRow, InternalRow] {
      override def eval(partitionIndex: Int, inputs: Iterator[InternalRow]*): Iterator[InternalRow] = {
        val context = TaskContext.get()
        val runner = MapInArrowShim.runner(args,
          StructType(Array(StructField("struct", args.inputSchema))))
        val output = args.output
        val project = UnsafeProjection.create(output, output)
        val batches = columnarSort match {
          case Some(sort) =>
            sort.chunks(context, inputs.head, args.batchRows, args.pythonMetrics("pythonDataSent"))
          case None => new WrappedRowBatches(context, inputs.head, args.batchRows)
        }
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

/**
 * The rows of `input` in batches of `batchRows` rows (one batch when not positive), each row
 * put into one refilled one-field wrapper row, as the Arrow runner writes the input: a struct
 * column. Reading stops once the task is completed or killed (3.5's runner writes the input from
 * a thread of its own, which must not read a sorter the task has freed). This is what Spark's
 * ContextAwareIterator, a map and BatchIterator do, in one class: each of those is a virtual
 * call per row through a call site that sees every iterator class of the JVM, about 10% of
 * the JVM CPU of a keyed mapPartitionInPandas's Python stage at a few large keys (async-profiler,
 * benchmarks/notes/keyed.md).
 */
private[fullwindow] final class WrappedRowBatches(
    context: TaskContext,
    input: Iterator[InternalRow],
    batchRows: Int) extends Iterator[Iterator[InternalRow]] {

  private val wrapper = new GenericInternalRow(1)

  private def more: Boolean = !context.isCompleted() && !context.isInterrupted() && input.hasNext

  override def hasNext: Boolean = more

  override def next(): Iterator[InternalRow] = new Iterator[InternalRow] {
    private var left = if (batchRows > 0) batchRows.toLong else Long.MaxValue

    override def hasNext: Boolean = left > 0 && more

    override def next(): InternalRow = {
      left -= 1
      wrapper.update(0, input.next())
      wrapper
    }
  }
}
