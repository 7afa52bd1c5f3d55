package org.apache.spark.sql.fullwindow.execution

import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, SortOrder}
import org.apache.spark.sql.catalyst.optimizer.NormalizeFloatingNumbers
import org.apache.spark.sql.catalyst.plans.physical.{ClusteredDistribution, Distribution, Partitioning, UnknownPartitioning}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.fullwindow.{FullWindowConf, FullWindowExplain}
import org.apache.spark.sql.fullwindow.shims.SparkShims
import org.apache.spark.sql.internal.SQLConf

/**
 * Runs a Python function over each key's records. The node asks for its input clustered by the
 * keys and sorted by `order` (the keys first) within each partition: Spark's EnsureRequirements
 * adds the hash exchange (unless the input is already clustered so) and its spilling SortExec.
 * The sorted partition then streams to the Python worker through Spark's Arrow runner (the one
 * mapInArrow uses), where consecutive records of equal key are handed to the user function as
 * one lazy iterator. No key is ever held whole, on either side.
 *
 * With `columnar` (KeyedPython.columnarSort) the node asks for no order: it sorts each
 * partition itself by columns and fills the Arrow batches from them (KeyedColumnarSort), so
 * there is no SortExec and no row-by-row Arrow writer; the batches are the same.
 */
case class FullWindowKeyedPythonExec(
    override val nodeName: String,
    keys: Seq[Attribute],
    order: Seq[SortOrder],
    func: Expression,
    pandas: Boolean,
    output: Seq[Attribute],
    child: SparkPlan,
    columnar: Boolean = false) extends FullWindowUnaryPythonExec {

  override def requiredChildDistribution: Seq[Distribution] =
    ClusteredDistribution(KeyedPython.distributionKeys(keys)) :: Nil
  override def requiredChildOrdering: Seq[Seq[SortOrder]] = (if (columnar) Nil else order) :: Nil
  override def outputPartitioning: Partitioning =
    UnknownPartitioning(child.outputPartitioning.numPartitions)

  override lazy val metrics: Map[String, SQLMetric] = pythonMetrics ++
    (if (columnar) {
      FullWindowMetrics.sort(sparkContext) ++ ColumnarSort.metrics(sparkContext) ++
        ArrowChunks.metrics(sparkContext)
    } else FullWindowMetrics.rows(sparkContext))

  override protected def columnarSort: Option[ColumnarArrowInput] =
    if (!columnar) None
    else Some(KeyedColumnarSort(order, child.output, conf.enableRadixSort,
      PackedSortPrefix.applies(order, conf), SparkShims.arrowMaxBytesPerBatch(conf),
      metrics.filter { case (k, _) => k != "numInputRows" && k != "numOutputRows" }))

  // the running reduce also shows its order (the keys, then the input position)
  override def simpleString(maxFields: Int): String = FullWindowExplain.line(nodeName, maxFields,
    Seq[(String, Any)]("keys" -> keys) ++
      (if (order.size > keys.size) Seq("order" -> order) else Nil) ++
      Seq("function" -> func, "output" -> output) ++
      (if (columnar) Seq("columnar" -> true) else Nil): _*)

  override protected def withNewChildInternal(newChild: SparkPlan): FullWindowKeyedPythonExec =
    copy(child = newChild)
}

object KeyedPython {
  /**
   * Whether a keyed Python node sorts by columns: `spark.fullwindow.sort.columnar.enabled`, every
   * column of `input` and key of `order` qualify (ColumnarSort.keyColumns: fixed-width, binary or
   * byte-ordered string keys, any of these types beside them), and the Arrow batches are bounded in rows
   * (PythonArrowEval.batchRows).
   */
  def columnarSort(order: Seq[SortOrder], input: Seq[Attribute], pandas: Boolean,
      conf: SQLConf): Boolean =
    FullWindowConf.columnarSortEnabled(conf) &&
      ColumnarSort.keyColumns(order, input).isDefined &&
      PythonArrowEval.batchRows(conf, pandas, ColumnarSort.schemaOf(input)) > 0

  /**
   * The expressions to hash-partition by: the keys, with floating-point ones normalized
   * (-0.0 = 0.0, one NaN), as Spark does for grouping, so equal keys meet in one partition.
   */
  def distributionKeys(keys: Seq[Expression]): Seq[Expression] = keys.map { k =>
    NormalizeFloatingNumbers.normalize(k)   // returns a key needing none as it is
  }
}
