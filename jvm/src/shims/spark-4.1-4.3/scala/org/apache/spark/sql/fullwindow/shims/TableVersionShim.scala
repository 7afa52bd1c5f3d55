package org.apache.spark.sql.fullwindow.shims

import scala.util.control.NonFatal

import org.apache.spark.sql.connector.catalog.Table

/** The version a DataSource V2 table says it is read at: `Table.version()` (Spark 4.1 on; null
 * for a table that does not implement it). Iceberg's is its branch and the snapshot read
 * (`branch_<name>_snapshot_<id>`), the time-travelled one for `VERSION AS OF`. */
object TableVersionShim {
  def version(table: Table): Option[String] =
    try Option(table.version()).filter(_.nonEmpty) catch { case NonFatal(_) => None }
}
