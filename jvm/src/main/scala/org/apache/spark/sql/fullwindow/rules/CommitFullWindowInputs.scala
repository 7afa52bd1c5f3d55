package org.apache.spark.sql.fullwindow.rules

import org.apache.spark.SparkEnv
import org.apache.spark.shuffle.sort.SortShuffleManager
import org.apache.spark.sql.catalyst.plans.physical.{CoalescedBoundary, CoalescedHashPartitioning, HashPartitioning, Partitioning}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.{AQEShuffleReadExec, QueryStageExec}
import org.apache.spark.sql.execution.exchange.{Exchange, ShuffleExchangeExec}
import org.apache.spark.sql.fullwindow.execution.{FullWindowCommitExec, FullWindowCommittedInputExec, FullWindowCommittingExchangeExec}
import org.apache.spark.sql.fullwindow.recovery.CommittedShuffleInput
import org.apache.spark.sql.fullwindow.shims.SparkShims
import org.apache.spark.sql.internal.SQLConf

/**
 * Recovery, for adaptive query plans (a query-stage preparation rule): the shuffles a committed
 * full-window operation's stage reads are its *inputs*. When an earlier run of the job committed
 * every input in full, they are read back from its files ([[FullWindowCommittedInputExec]]), so
 * a resumed run does not run the scan and shuffle upstream of an operation that was only partly
 * done; otherwise each input's map tasks commit their outputs for a later run
 * ([[FullWindowCommittingExchangeExec]]). All inputs of a stage are treated alike (read back, or
 * shuffled): a stage that mixes the two could see its inputs partitioned differently.
 * Left alone: operations whose stage reads something else than plain shuffles (broadcasts,
 * reused exchanges, pipelined shuffles), encrypted shuffles, another shuffle manager, or the switch
 * `spark.fullwindow.recovery.commitShuffleInput=false`.
 */
object CommitFullWindowInputs extends Rule[SparkPlan] {

  override def apply(plan: SparkPlan): SparkPlan = plan.transformDown {
    case c: FullWindowCommitExec if c.commitInputs && enabled => rewrite(c)
  }

  private def enabled: Boolean =
    SQLConf.get.getConfString(CommittedShuffleInput.EnabledKey, "true").trim.toBoolean &&
      SparkEnv.get != null &&
      SparkShims.blockingShuffleManager(SparkEnv.get).isInstanceOf[SortShuffleManager]

  private def rewrite(c: FullWindowCommitExec): FullWindowCommitExec = {
    val codec = CommittedShuffleInput.codecOf(SparkEnv.get.conf).getOrElse(return c)
    val inputs = stageInputs(c.child)
    val exchanges = inputs.collect { case e: ShuffleExchangeExec if !SparkShims.isPipelined(e) => e }
    if (inputs.isEmpty || exchanges.size != inputs.size) return c
    val readBack = exchanges.zipWithIndex.map { case (e, k) => committedInput(c, e, k, codec) }
    val replaced =
      if (readBack.forall(_.isDefined)) readBack.flatten
      else exchanges.zipWithIndex.map { case (e, k) =>
        FullWindowCommittingExchangeExec(e, CommittedShuffleInput.vertexOf(c.fingerprint, k),
          s"${c.operatorDir.stripSuffix("/")}/input$k", FullWindowCommitExec.jobDirOf(c.operatorDir),
          "shuffle input", codec)
      }
    c.withNewChildren(Seq(replaceInputs(c.child, replaced))).asInstanceOf[FullWindowCommitExec]
  }

  /** Input `k` as an earlier run committed it, when it did so in full and it still fits. */
  private def committedInput(
      c: FullWindowCommitExec,
      e: ShuffleExchangeExec,
      k: Int,
      codec: String): Option[SparkPlan] = {
    val n = e.outputPartitioning.numPartitions
    for {
      in <- c.inputs.find(_.input == k)
      if in.numPartitions == n && in.codec == codec && in.data.size == in.numMaps &&
        in.index.size == in.numMaps
      ranges <- CommittedShuffleInput.rangesOf(in.readPart, n)
      partitioning <- partitioningOf(e.outputPartitioning, ranges)
    } yield FullWindowCommittedInputExec(CommittedShuffleInput.vertexOf(c.fingerprint, k), n,
      in.data, in.index, if (in.readPart.isEmpty) s"stage($n)" else in.readPart, ranges,
      e.output, partitioning)
  }

  /** The partitioning of reading `ranges` of a shuffle partitioned as `p` (as AQE reports it). */
  private def partitioningOf(p: Partitioning, ranges: Seq[(Int, Int)]): Option[Partitioning] =
    if (ranges.size == p.numPartitions) Some(p)
    else p match {
      case h: HashPartitioning =>
        Some(CoalescedHashPartitioning(h, ranges.map { case (s, e) => CoalescedBoundary(s, e) }))
      case _ => None
    }

  /** The inputs of `plan`'s stage in plan order (as FullWindowCommitExec.layoutParts sees them). */
  private def stageInputs(plan: SparkPlan): Seq[SparkPlan] = plan match {
    case i @ (_: AQEShuffleReadExec | _: QueryStageExec | _: Exchange |
              _: FullWindowCommittedInputExec) => Seq(i)
    case other => other.children.flatMap(stageInputs)
  }

  private def replaceInputs(plan: SparkPlan, by: Seq[SparkPlan]): SparkPlan = {
    var next = 0
    def go(p: SparkPlan): SparkPlan = p match {
      case _: AQEShuffleReadExec | _: QueryStageExec | _: Exchange |
           _: FullWindowCommittedInputExec =>
        next += 1
        by(next - 1)
      case other if other.children.isEmpty => other
      case other => other.withNewChildren(other.children.map(go))
    }
    go(plan)
  }
}
