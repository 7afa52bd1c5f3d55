package org.apache.spark.sql.fullwindow.shims

import java.io.DataOutputStream

import org.apache.arrow.vector.VectorSchemaRoot
import org.apache.arrow.vector.ipc.ArrowStreamWriter

import org.apache.spark.PartitionEvaluatorFactory
import org.apache.spark.api.python.ChainedPythonFunctions
import org.apache.spark.api.python.PythonEvalType.SQL_MAP_ARROW_ITER_UDF
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.PythonUDF
import org.apache.spark.sql.execution.python.{ArrowPythonRunner, MapInBatchEvaluatorFactory}
import org.apache.spark.sql.fullwindow.execution.ArrowChunks
import org.apache.spark.sql.types.StructType

/**
 * Spark 4.2 and 4.3's mapInArrow evaluation ([[PythonShims.mapInArrowFactory]]): the output type
 * is given, then a profiler.
 */
private[fullwindow] object MapInArrowShim {
  private def funcs(udf: PythonUDF) = Seq((ChainedPythonFunctions(Seq(udf.func)), udf.resultId.id))

  def spark(a: MapInArrowArgs): PartitionEvaluatorFactory[InternalRow, InternalRow] =
    new MapInBatchEvaluatorFactory(a.output, funcs(a.udf), a.inputSchema, a.udf.dataType,
      a.batchRows, SQL_MAP_ARROW_ITER_UDF, a.timeZone, a.largeVarTypes, a.runnerConf,
      a.pythonMetrics, a.jobArtifactUUID, None)

  /**
   * The runner over input of `schema`: each batch it is given goes as one Arrow batch; a
   * partition given as ArrowChunks (a columnar sort's) is written by them batch by batch, in
   * place of this line's writeNextBatchToArrowStream.
   */
  def runner(a: MapInArrowArgs, schema: StructType): ArrowPythonRunner =
    new ArrowPythonRunner(funcs(a.udf), SQL_MAP_ARROW_ITER_UDF, Array(Array(0)), schema,
      a.timeZone, a.largeVarTypes, a.runnerConf, a.pythonMetrics, a.jobArtifactUUID, None) {
      override protected def writeNextBatchToArrowStream(root: VectorSchemaRoot,
          writer: ArrowStreamWriter, dataOut: DataOutputStream,
          input: Iterator[Iterator[InternalRow]]): Boolean =
        ArrowChunks.writeNext(input, root, dataOut)(ArrowChunks.serialize(unloader, dataOut)) ||
          super.writeNextBatchToArrowStream(root, writer, dataOut, input)
    }
}
