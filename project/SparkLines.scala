// The Spark lines of dev/spark-lines, for build.sbt: which jars and which shim folders each uses.
import java.io.File

import sbt._
import sbt.io.IO

object SparkLines {
  case class SparkLine(name: String, pyspark: String, scala: String) {
    val major: Int = name.split('.')(0).toInt
    val minor: Int = name.split('.')(1).toInt
    def id: String = s"spark$major$minor"
    def scalaBinary: String = scala.split('.').take(2).mkString(".")
    def jarName: String = s"fullwindow-spark${name}_$scalaBinary.jar"
    def in(from: (Int, Int), to: (Int, Int)): Boolean = {
      val v = (major, minor)
      Ordering[(Int, Int)].lteq(from, v) && Ordering[(Int, Int)].lteq(v, to)
    }
  }

  val DefaultLine = "4.3"

  lazy val sparkLines: Seq[SparkLine] =
    IO.readLines(new File("dev/spark-lines")).map(_.trim).filter(l => l.nonEmpty && !l.startsWith("#"))
      .map(_.split("\\s+")).map(f => SparkLine(f(0), f(1), f(2)))

  /** pyspark's jars/ folder for a line: the env override, else the line's venv. */
  def sparkJarsDir(root: File, line: SparkLine): File = {
    val env = s"FULLWINDOW_SPARK_JARS_${line.name.replace('.', '_')}"
    val venv = if (line.name == DefaultLine) root / ".venv" else root / ".venvs" / s"spark-${line.name}"
    val dir = sys.env.get(env).map(file).orElse(
      (venv / "lib" * "python*" / "site-packages" / "pyspark" / "jars").get.headOption
    ).getOrElse(sys.error(
      s"no pyspark ${line.pyspark} jars for Spark ${line.name}: run dev/venvs ${line.name} " +
        s"(dev/setup for $DefaultLine), or set $env"))
    val lib = (dir * "scala-library-*.jar").get.map(_.getName)
    require(lib.contains(s"scala-library-${line.scala}.jar"),
      s"$dir ships ${lib.mkString}, dev/spark-lines says Scala ${line.scala} for Spark ${line.name}")
    dir
  }

  /**
   * Lines whose pyspark wheel ships no Spark Connect server jar (3.5): the spark-connect_<scala>
   * Maven artifact the Connect plugin is compiled against (provided: pyspark 3.5 loads it on the
   * server with spark.jars.packages). Its RelationPlugin and planner API is the same in every 3.5
   * release; 3.5.7 is the newest 3.5 spark-connect_2.12 the build's Maven Central resolves.
   */
  val ConnectServerArtifact: Map[String, String] = Map("3.5" -> "3.5.7")

  /**
   * The protoc that generates a line's Java messages (project/Protoc.scala). Gencode runs on a
   * protobuf-java runtime of the same major version that is as new or newer, so each line gets the
   * protoc of the oldest runtime it must run on: Spark 3.5's spark-connect_2.12 shades
   * protobuf-java 3.23.4 (and 4.x gencode does not run on a 3.x runtime); on 4.x, Spark 4.0's
   * spark-connect jar shades 4.29.3 (4.1 has 4.33.0, 4.2 and 4.3 have 4.33.5).
   */
  val ProtocVersion: Map[String, String] =
    Map("3.5" -> "3.23.4", "4.0" -> "4.29.3", "4.1" -> "4.29.3", "4.2" -> "4.29.3", "4.3" -> "4.29.3")

  def protocVersion(line: SparkLine): String = ProtocVersion.getOrElse(line.name,
    sys.error(s"project/SparkLines.scala names no protoc for Spark ${line.name} (ProtocVersion)"))

  /**
   * The source folders of `shims` (jvm/src/shims or jvm/src/connect/shims) that hold a line:
   * spark-<line>/{scala,java} or spark-<first>-<last>/{scala,java}.
   */
  def shimDirs(shims: File, line: SparkLine): Seq[File] = {
    val Range = """spark-(\d+)\.(\d+)(?:-(\d+)\.(\d+))?""".r
    (shims * DirectoryFilter).get.sortBy(_.getName).flatMap { d =>
      d.getName match {
        case Range(a, b, c, e) =>
          val from = (a.toInt, b.toInt)
          val to = if (c == null) from else (c.toInt, e.toInt)
          if (line.in(from, to)) Seq(d / "scala", d / "java").filter(_.isDirectory) else Nil
        case _ => Nil
      }
    }
  }
}
