package org.apache.spark.sql.fullwindow

import org.apache.spark.sql.catalyst.expressions.{Expression, PythonUDF}
import org.apache.spark.sql.catalyst.util.truncatedString

/**
 * How fullwindow's plan nodes print in `explain()` and the Spark UI: the node's name, then its
 * arguments as `name=value` pairs (keys, order, function, output), lists shortened to
 * `maxFields` the way Spark's own nodes shorten theirs. Logical and physical nodes of one
 * operation print the same arguments.
 */
object FullWindowExplain {

  def line(nodeName: String, maxFields: Int, args: (String, Any)*): String =
    args.map { case (name, value) => s"$name=${show(value, maxFields)}" }
      .mkString(s"$nodeName ", ", ", "")

  private def show(value: Any, maxFields: Int): String = value match {
    case items: Seq[_] => truncatedString(items.map(show(_, maxFields)), "[", ", ", "]", maxFields)
    case f: PythonUDF => f.name
    case e: Expression => e.toString
    case other => String.valueOf(other)
  }
}
