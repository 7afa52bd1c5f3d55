package org.apache.spark.sql.fullwindow.execution

import org.apache.spark.JobArtifactSet
import org.apache.spark.api.python.{ChainedPythonFunctions, PythonEvalType}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet, Expression, PythonUDF}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.execution.python.{ArrowPythonRunner, MapInBatchEvaluatorFactory, PythonSQLMetrics}

/**
 * Runs a Python function over each whole partition through Spark's own Arrow Python runner (the
 * one mapInArrow uses): records go to the Python worker as Arrow batches while the partition is
 * still being read, and the worker's socket is the bounded queue between the two. No exchange;
 * the partitioning is kept.
 */
case class FullWindowPythonPartitionExec(
    operationName: String,
    func: Expression,
    output: Seq[Attribute],
    child: SparkPlan) extends UnaryExecNode with PythonSQLMetrics {

  override def nodeName: String = "FullWindow" + operationName.capitalize
  override def producedAttributes: AttributeSet = AttributeSet(output)
  override def outputPartitioning: Partitioning = child.outputPartitioning

  override lazy val metrics: Map[String, SQLMetric] =
    pythonMetrics ++ FullWindowMetrics.rows(sparkContext)

  private val jobArtifactUUID = JobArtifactSet.getCurrentJobArtifactState.map(_.uuid)

  override protected def doExecute(): RDD[InternalRow] = {
    val factory = PythonArrowIter.evaluatorFactory(func, output, child.schema, conf,
      pythonMetrics, jobArtifactUUID)
    val rowsIn = longMetric("numInputRows")
    val rowsOut = longMetric("numOutputRows")
    child.execute().mapPartitionsWithIndexInternal { (index, rows) =>
      val counted = rows.map { r => rowsIn += 1; r }
      factory.createEvaluator().eval(index, counted).map { r => rowsOut += 1; r }
    }
  }

  override protected def withNewChildInternal(newChild: SparkPlan): FullWindowPythonPartitionExec =
    copy(child = newChild)
}

/** Builds Spark's Arrow Python evaluation for fullwindow's Python execs. */
object PythonArrowIter {
  /** Spark's mapInArrow evaluator for one SQL_MAP_ARROW_ITER_UDF over rows of `inputSchema`. */
  def evaluatorFactory(
      func: Expression,
      output: Seq[Attribute],
      inputSchema: StructType,
      conf: SQLConf,
      pythonMetrics: Map[String, SQLMetric],
      jobArtifactUUID: Option[String]): MapInBatchEvaluatorFactory = {
    val udf = func.asInstanceOf[PythonUDF]
    new MapInBatchEvaluatorFactory(
      output,
      Seq((ChainedPythonFunctions(Seq(udf.func)), udf.resultId.id)),
      inputSchema,
      udf.dataType,
      conf.arrowMaxRecordsPerBatch,
      PythonEvalType.SQL_MAP_ARROW_ITER_UDF,
      conf.sessionLocalTimeZone,
      conf.arrowUseLargeVarTypes,
      ArrowPythonRunner.getPythonRunnerConfMap(conf),
      pythonMetrics,
      jobArtifactUUID,
      None)
  }
}
