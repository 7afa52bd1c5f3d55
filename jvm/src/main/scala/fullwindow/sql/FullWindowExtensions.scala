package fullwindow.sql

import org.apache.spark.sql.SparkSessionExtensions
import org.apache.spark.sql.fullwindow.FullWindowStrategy
import org.apache.spark.sql.fullwindow.recovery.writes.WrapRecoveredWrites
import org.apache.spark.sql.fullwindow.shims.SparkShims
import org.apache.spark.sql.fullwindow.rules.{ApplyFullWindowHint, FullWindowColumnarRule, CheckFullWindowRuntimeMode, CommitFullWindowInputs, DropUnusedFullWindowHint, KeepJobShuffles, KeepJobShufflesColumnar, ResolveFullWindowHint}

/**
 * Registers fullwindow with a SparkSession:
 * `spark.sql.extensions=fullwindow.sql.FullWindowExtensions`.
 *
 * It only wires the pieces together; each lives in its own file.
 */
class FullWindowExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(ext: SparkSessionExtensions): Unit = {
    SparkShims.injectHintRule(ext, ResolveFullWindowHint)
    ext.injectResolutionRule(_ => ApplyFullWindowHint)
    ext.injectPostHocResolutionRule(_ => DropUnusedFullWindowHint)
    ext.injectPostHocResolutionRule(_ => WrapRecoveredWrites)
    ext.injectCheckRule(session => new CheckFullWindowRuntimeMode(session))
    ext.injectPlannerStrategy(_ => FullWindowStrategy)
    ext.injectQueryStagePrepRule(_ => CommitFullWindowInputs)
    ext.injectQueryStagePrepRule(_ => KeepJobShuffles)
    ext.injectColumnar(_ => FullWindowColumnarRule)
    ext.injectColumnar(_ => KeepJobShufflesColumnar)
  }
}
