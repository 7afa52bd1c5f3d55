package org.apache.spark.sql.fullwindow.shims

/**
 * The calls that differ between Spark lines, one object for the core to call. Each group of
 * calls is a trait whose body is in the shim folder of the lines it fits (spark-<first>-<last>):
 * the build compiles, for a line, exactly one folder holding each trait.
 */
object SparkShims extends ShuffleShims with PythonShims with AggregationShims with SqlShims
