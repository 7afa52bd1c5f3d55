package org.apache.spark.sql.fullwindow

import java.util.Locale

import org.apache.spark.sql.internal.SQLConf

/** The `spark.fullwindow.*` configuration keys and how they are read. */
object FullWindowConf {
  val RuntimeModeKey = "spark.fullwindow.runtimeMode"
  val ProcessingTimeAllowKey = "spark.fullwindow.processingTime.allow"
  val ProcessingTimeEndOfInputKey = "spark.fullwindow.processingTime.endOfInput"
  /** Switch (default true) for the columnar sort of sortPartition over columnar input. */
  val ColumnarSortKey = "spark.fullwindow.sort.columnar.enabled"

  /**
   * Switch (default true): keyed aggregates and reduces combine before the exchange (partial
   * results cross the shuffle); false: every record crosses it.
   */
  val CombineKey = "spark.fullwindow.combine.enabled"

  def combineEnabled(conf: SQLConf): Boolean = booleanConf(conf, CombineKey)

  private def booleanConf(conf: SQLConf, key: String): Boolean =
    conf.getConfString(key, "true").trim.toLowerCase(Locale.ROOT) match {
      case "true" => true
      case "false" => false
      case other => throw FullWindowErrors.badConf(key, other, "true, false")
    }

  /** Whether sortPartition over columnar input with primitive keys sorts columns (default). */
  def columnarSortEnabled(conf: SQLConf): Boolean = booleanConf(conf, ColumnarSortKey)

  object RuntimeMode extends Enumeration {
    val BATCH, STREAMING, AUTOMATIC = Value
  }

  /** The configured runtime mode (AUTOMATIC when unset). */
  def runtimeMode(conf: SQLConf): RuntimeMode.Value = {
    val raw = conf.getConfString(RuntimeModeKey, "AUTOMATIC").trim.toUpperCase(Locale.ROOT)
    RuntimeMode.values.find(_.toString == raw).getOrElse(throw FullWindowErrors.badConf(
      RuntimeModeKey, raw, RuntimeMode.values.mkString(", ")))
  }

  /** The mode a plan runs in: AUTOMATIC is BATCH unless some source is a stream. */
  def effectiveMode(conf: SQLConf, isStreaming: Boolean): RuntimeMode.Value =
    runtimeMode(conf) match {
      case RuntimeMode.AUTOMATIC => if (isStreaming) RuntimeMode.STREAMING else RuntimeMode.BATCH
      case m => m
    }
}
