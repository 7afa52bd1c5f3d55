package org.apache.spark.sql.fullwindow.logical

import org.apache.spark.sql.catalyst.analysis.MultiInstanceRelation
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet}
import org.apache.spark.sql.catalyst.plans.logical.{LeafNode, LogicalPlan, Statistics, UnaryNode}
import org.apache.spark.sql.fullwindow.recovery.CommittedInput

/**
 * Recovery (FLIP-383): commits each partition of `child` (a full-window operation) durably under
 * `operatorDir` while passing its rows through. Partitions in `recovered` (partition index ->
 * committed file, already verified by the driver) are read back instead of computed, provided the
 * child still has `recordedPartitions` partitions laid out as `recordedLayout` says (the hash of
 * which shuffle partitions each partition reads: adaptive execution may coalesce a shuffle's
 * partitions differently from one run to the next, and then partition i holds other keys).
 * With `commitInputs`, the shuffles its stage reads are committed too (map task by map task), and
 * `inputs` are the ones an earlier run committed in full: read back instead of shuffled again
 * (see [[org.apache.spark.sql.fullwindow.rules.CommitFullWindowInputs]]).
 *
 * Its string form shows only the fingerprint, so that plans above it fingerprint the same whether
 * this run computes or recovers the operation.
 */
case class FullWindowCommit(
    fingerprint: String,
    operationName: String,
    operatorDir: String,
    recordedPartitions: Int,
    recordedLayout: String,
    recovered: Map[Int, String],
    child: LogicalPlan,
    commitInputs: Boolean = false,
    inputs: Seq[CommittedInput] = Nil) extends UnaryNode {

  override def output: Seq[Attribute] = child.output

  // It writes every column of every row, whatever its parent reads: without this, column pruning
  // (Spark's rule for nodes that pass their child's output through) would put a Project under
  // it for a parent that reads fewer columns (a count), and commit rows of the wrong shape.
  override lazy val references: AttributeSet = child.outputSet

  override def simpleString(maxFields: Int): String = s"FullWindowCommit $operationName $fingerprint"

  override protected def withNewChildInternal(newChild: LogicalPlan): FullWindowCommit =
    copy(child = newChild)
}

/**
 * Recovery: the committed outputs of an operation all of whose partitions finished in an earlier
 * run, one partition per file, in partition order. Nothing upstream of the operation runs.
 */
case class FullWindowRecoveredScan(
    fingerprint: String,
    operationName: String,
    paths: Seq[String],
    totalBytes: Long,
    output: Seq[Attribute]) extends LeafNode with MultiInstanceRelation {

  override def simpleString(maxFields: Int): String =
    s"FullWindowRecoveredScan $operationName $fingerprint (${paths.size} partitions)"

  override def computeStats(): Statistics = Statistics(sizeInBytes = BigInt(math.max(1L, totalBytes)))

  override def newInstance(): FullWindowRecoveredScan = copy(output = output.map(_.newInstance()))
}
