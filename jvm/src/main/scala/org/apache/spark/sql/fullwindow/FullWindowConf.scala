package org.apache.spark.sql.fullwindow

import java.util.Locale

import org.apache.spark.sql.internal.SQLConf

/** The `spark.fullwindow.*` configuration keys and how they are read. */
object FullWindowConf {
  val RuntimeModeKey = "spark.fullwindow.runtimeMode"
  val ProcessingTimeAllowKey = "spark.fullwindow.processingTime.allow"
  val ProcessingTimeEndOfInputKey = "spark.fullwindow.processingTime.endOfInput"

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
