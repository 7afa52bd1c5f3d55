package org.apache.spark.sql.fullwindow.execution

import org.apache.spark.{JobArtifactSet, PartitionEvaluatorFactory}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet, Expression, PythonUDF}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.execution.python.PythonSQLMetrics
import org.apache.spark.sql.fullwindow.shims.SparkShims
import org.apache.spark.sql.fullwindow.FullWindowExplain

/**
 * Runs a Python function over each whole partition through Spark's own Arrow Python runner (the
 * one mapInArrow uses): records go to the Python worker as Arrow batches while the partition is
 * still being read, and the worker's socket is the bounded queue between the two. No exchange;
 * the partitioning is kept.
 *
 * With `columnarInput` (FullWindowColumnarRule sets it over sortPartition's columnar sort) the
 * Arrow batches are filled from the sort's columns (SortedArrowInput): the sorted rows are never
 * written as rows, nor put into the batches one by one; the batches are the same.
 */
case class FullWindowPythonPartitionExec(
    operationName: String,
    func: Expression,
    pandas: Boolean,
    output: Seq[Attribute],
    child: SparkPlan,
    columnarInput: Boolean = false) extends FullWindowUnaryPythonExec {

  override def nodeName: String = "FullWindow" + operationName.capitalize
  override def simpleString(maxFields: Int): String =
    FullWindowExplain.line(nodeName, maxFields, Seq[(String, Any)]("function" -> func,
      "output" -> output) ++ (if (columnarInput) Seq("columnar" -> true) else Nil): _*)
  override def outputPartitioning: Partitioning = child.outputPartitioning

  // the columnar sort below, when the batches are filled from it
  private def sortedBy: Option[FullWindowColumnarSortExec] = child match {
    case s: FullWindowColumnarSortExec if columnarInput => Some(s)
    case _ => None
  }

  override protected def columnarSort: Option[ColumnarArrowInput] = sortedBy.map(sort =>
    SortedArrowInput(child.output, SparkShims.arrowMaxBytesPerBatch(conf), longMetric("numInputRows"),
      sort.longMetric(ArrowChunks.BatchesMetric)))

  override protected def input: RDD[InternalRow] =
    sortedBy.fold(super.input)(_.executeSorted())

  override protected def withNewChildInternal(newChild: SparkPlan): FullWindowPythonPartitionExec =
    copy(child = newChild)
}

/**
 * What fullwindow's one-input Python execs share: `func` (a PythonUDF of eval type
 * SQL_MAP_ARROW_ITER_UDF) over each partition of the child's rows, as they come, through
 * [[PythonArrowEval]], with Spark's Python metrics and fullwindow's row counts.
 */
trait FullWindowUnaryPythonExec extends UnaryExecNode with PythonSQLMetrics {
  def func: Expression
  /** The function takes pandas frames (a pandas form): see [[PythonArrowEval.pandasFrameRows]]. */
  def pandas: Boolean

  override def producedAttributes: AttributeSet = AttributeSet(output)

  override lazy val metrics: Map[String, SQLMetric] =
    pythonMetrics ++ FullWindowMetrics.rows(sparkContext)

  // the artifacts (Python files, archives) of the job that planned this node, read on the driver
  private val jobArtifactUUID = JobArtifactSet.getCurrentJobArtifactState.map(_.uuid)

  /**
   * The Arrow batches filled from a columnar sort's columns (the keyed forms' own sort, or
   * sortPartition's below), not from rows; it then counts the input rows if it says so.
   */
  protected def columnarSort: Option[ColumnarArrowInput] = None

  /** Each partition's input, for the runner or columnarSort. */
  protected def input: RDD[InternalRow] = ChildRows(child)

  override protected def doExecute(): RDD[InternalRow] = {
    val arrowInput = columnarSort
    val python = PythonArrowEval(func, output, child.schema, conf, pythonMetrics, jobArtifactUUID,
      pandas, arrowInput)
    val rowsIn = longMetric("numInputRows")
    val rowsOut = longMetric("numOutputRows")
    // input rows that columnarSort counts as it sends them are not counted here
    val rowsInHere = if (arrowInput.exists(_.countsRows)) None else Some(rowsIn)
    input.mapPartitionsWithIndexInternal { (index, rows) =>
      python.evalCounting(index, rows, rowsInHere, rowsOut)
    }
  }
}

/**
 * Spark's Arrow Python evaluation (the mapInArrow runner: input rows wrapped in one struct
 * column) for one SQL_MAP_ARROW_ITER_UDF over rows of `inputSchema`, shared by fullwindow's
 * Python execs. Create it on the driver; call [[eval]] in each task.
 *
 * Spark's Arrow input writer measures the batch being built after every row whenever
 * `spark.sql.execution.arrow.maxBytesPerBatch` is below Int.MaxValue, and on a struct column
 * that measurement walks the struct's child vectors each time: a quarter of the task CPU of a
 * keyed mapPartitionInArrow over three long/double columns (JFR, benchmarks/notes/keyed.md).
 * When every input column has a fixed width, a batch of `maxRecordsPerBatch` rows has a known
 * upper size; when that is under the byte limit, the measurement can never end a batch, so the
 * runner is built with it off. Batches are then exactly what they would have been.
 */
final class PythonArrowEval private (
    factory: PartitionEvaluatorFactory[InternalRow, InternalRow],
    val byteCheckSkipped: Boolean,
    val batchRows: Option[Int]) extends Serializable {

  def eval(partitionIndex: Int, rows: Iterator[InternalRow]): Iterator[InternalRow] = {
    val evaluator = factory.createEvaluator()
    if (!byteCheckSkipped && batchRows.isEmpty) {
      evaluator.eval(partitionIndex, rows)
    } else {
      // Spark's Arrow input reads both limits from SQLConf.get when its runner is constructed,
      // inside eval, whatever the factory was given.
      val taskConf = new SQLConf
      SQLConf.get.getAllConfs.foreach { case (k, v) => taskConf.setConfString(k, v) }
      if (byteCheckSkipped) {
        taskConf.setConfString(SparkShims.ArrowMaxBytesPerBatchKey, Int.MaxValue.toString)
      }
      batchRows.foreach { n =>
        taskConf.setConfString(SQLConf.ARROW_EXECUTION_MAX_RECORDS_PER_BATCH.key, n.toString)
      }
      SQLConf.withExistingConf(taskConf)(evaluator.eval(partitionIndex, rows))
    }
  }

  /** [[eval]], counting in an exec's metrics the rows that go in (`rowsIn`, if given) and come out. */
  def evalCounting(
      partitionIndex: Int,
      rows: Iterator[InternalRow],
      rowsIn: Option[SQLMetric],
      rowsOut: SQLMetric): Iterator[InternalRow] =
    eval(partitionIndex, rowsIn.fold(rows)(n => rows.map { r => n += 1; r }))
      .map { r => rowsOut += 1; r }
}

object PythonArrowEval {
  def apply(
      func: Expression,
      output: Seq[Attribute],
      inputSchema: StructType,
      conf: SQLConf,
      pythonMetrics: Map[String, SQLMetric],
      jobArtifactUUID: Option[String],
      pandasFrames: Boolean = false,
      columnarSort: Option[ColumnarArrowInput] = None): PythonArrowEval = {
    val udf = func.asInstanceOf[PythonUDF]
    val batches = BatchShape(conf, pandasFrames, inputSchema)
    // a columnar sort cuts the batches itself: at most `rows` rows, ended early by the byte limit
    val ownBatches = if (columnarSort.isEmpty) batches.fixedRows else {
      if (batches.rows <= 0) {
        throw new IllegalStateException("a columnar sort feeds batches of a bounded number of rows")
      }
      Some(batches.rows)
    }
    val factory = SparkShims.mapInArrowFactory(output, udf, inputSchema, conf, pythonMetrics,
      jobArtifactUUID, ownBatches, columnarSort)
    new PythonArrowEval(factory, batches.skipByteCheck, batches.frameRows)
  }

  /**
   * The input batches' rows: `frameRows`, the pandas forms' own (pandasFrameRows), else the
   * session's maxRecordsPerBatch; `skipByteCheck` when no byte limit can end a batch of that
   * many rows earlier; `fixedRows`, the rows of every batch (the last one shorter) when none
   * can, else None; `rows`, the most rows of a batch (not positive: unbounded).
   */
  private final case class BatchShape(frameRows: Option[Int], skipByteCheck: Boolean,
      fixedRows: Option[Int], rows: Int)

  private object BatchShape {
    def apply(conf: SQLConf, pandasFrames: Boolean, inputSchema: StructType): BatchShape = {
      val frameRows = pandasFrameRows(conf, pandasFrames, inputSchema)
      val batchRows = frameRows.getOrElse(conf.arrowMaxRecordsPerBatch)
      val maxBytes = SparkShims.arrowMaxBytesPerBatch(conf)
      val skip = byteLimitUnreachable(inputSchema, batchRows, maxBytes)
      BatchShape(frameRows, skip,
        Some(batchRows).filter(_ > 0 && (skip || maxBytes >= Int.MaxValue)), batchRows)
    }
  }

  /** The most rows an input batch holds (not positive: unbounded), before any byte limit. */
  def batchRows(conf: SQLConf, pandasFrames: Boolean, inputSchema: StructType): Int =
    BatchShape(conf, pandasFrames, inputSchema).rows

  /**
   * Rows per input Arrow batch of the pandas forms when the session does not set
   * `spark.sql.execution.arrow.maxRecordsPerBatch` and the rows are narrow. Each batch becomes at
   * most one pandas frame, and a frame has a fixed cost (conversion, the function's own
   * per-frame work): at Spark's default of 10,000 rows that cost was the whole difference to
   * `applyInPandas` with a few large keys (benchmarks/notes/keyed.md); at 50,000 it falls to a
   * third, and a frame is still a bounded slice of a key, never the whole key.
   */
  val PandasFrameRows: Int = 50000

  /**
   * The most Arrow data a batch of [[PandasFrameRows]] rows may hold. Wider rows, and rows of
   * variable width (strings, binary, nested types, whose size is not known ahead), keep Spark's
   * default batch size: a pandas frame takes a multiple of its Arrow size in a Python worker
   * (string values become Python objects), and 50,000 rows of 640-byte strings did not fit a
   * 1 GiB Python worker limit where 10,000 did (benchmarks/notes/keyed.md, wide heavy key).
   */
  val PandasFrameBytes: Long = 8L << 20

  /** The rows per input batch when it is not the session's: an explicit setting always wins. */
  def pandasFrameRows(conf: SQLConf, pandasFrames: Boolean, schema: StructType): Option[Int] =
    if (pandasFrames && !conf.contains(SQLConf.ARROW_EXECUTION_MAX_RECORDS_PER_BATCH.key) &&
        fixedRowBytes(schema).exists(_ * PandasFrameRows <= PandasFrameBytes)) {
      Some(PandasFrameRows)
    } else {
      None
    }

  /**
   * Arrow bytes a row of `schema` takes in one struct column when every field is fixed-width:
   * the values plus one validity byte per field and the struct's; None otherwise.
   */
  private def fixedRowBytes(schema: StructType): Option[Long] = {
    val widths = schema.fields.map(f => fixedWidth(f.dataType))
    if (widths.exists(_.isEmpty)) None else Some(widths.map(_.get).sum + schema.length + 1)
  }

  /** Arrow bytes per value of a fixed-width type (data buffer only), None if not fixed. */
  private[execution] def fixedWidth(dt: DataType): Option[Long] = dt match {
    case BooleanType | ByteType | NullType => Some(1L)
    case ShortType => Some(2L)
    case IntegerType | FloatType | DateType | _: YearMonthIntervalType => Some(4L)
    case LongType | DoubleType | TimestampType | TimestampNTZType | _: DayTimeIntervalType =>
      Some(8L)
    case _: DecimalType => Some(16L)   // Arrow's decimal128, whatever the precision
    case _ => None
  }

  /**
   * Whether a batch of `maxRecords` rows of `schema`, wrapped in one struct column, is always
   * smaller than `maxBytes`: every field fixed-width, counting one validity byte per field per
   * row plus the struct's, and 128 bytes of buffer padding per vector.
   */
  def byteLimitUnreachable(schema: StructType, maxRecords: Int, maxBytes: Long): Boolean = {
    if (maxBytes >= Int.MaxValue) return false      // no measurement to skip
    if (maxRecords <= 0) return false               // batches unbounded in rows
    val padding = 128L * 2 * (schema.length + 1)
    fixedRowBytes(schema).exists(perRow => BigInt(maxRecords) * perRow + padding < BigInt(maxBytes))
  }
}
