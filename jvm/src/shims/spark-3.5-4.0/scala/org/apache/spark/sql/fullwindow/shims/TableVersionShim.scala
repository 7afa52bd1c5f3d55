package org.apache.spark.sql.fullwindow.shims

import org.apache.spark.sql.connector.catalog.Table

/** The version a DataSource V2 table says it is read at: `Table.version()` comes with Spark 4.1;
 * before it, a table has no such API (recovery/InputFingerprint.scala asks the table itself). */
object TableVersionShim {
  def version(table: Table): Option[String] = None
}
