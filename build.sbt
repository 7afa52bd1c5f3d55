// fullwindow: the JVM side (a Spark SQL extension), one jar per supported Spark line.
//
// Every line in dev/spark-lines gets a project `spark<major><minor>` (spark35 ... spark43) whose
// sources are the common ones (jvm/src/main/scala) plus the shim folders whose range holds the
// line (jvm/src/shims/spark-<line> or spark-<first>-<last>), plus the Spark Connect plugin:
// jvm/src/connect/scala and the jvm/src/connect/shims folders that hold the line.
// `sbt jars` builds every line's jar in one invocation; `sbt spark43/package` only one.
//
// Spark is not a managed dependency: each line is compiled against the jars of that line's own
// pyspark wheel (the exact version dev/spark-lines names, installed by dev/setup in .venv for the
// default line and by dev/venvs in .venvs/spark-<line> for the others; FULLWINDOW_SPARK_JARS_<3_5>
// overrides the folder), with the Scala version that pyspark ships (checked).

import java.io.File

import SparkLines._

// the one version of the Python package and the jars (its manifest's Implementation-Version, which
// a Spark Connect client compares with its own)
lazy val fullwindowVersion: String = {
  val text = IO.read(file("python/fullwindow/_version.py"))
  """__version__ = "([^"]+)"""".r.findFirstMatchIn(text).map(_.group(1))
    .getOrElse(sys.error("python/fullwindow/_version.py names no __version__"))
}

def lineProject(line: SparkLine): Project =
  Project(line.id, file("jvm") / "lines" / line.id)
    .settings(
      name := s"fullwindow-spark${line.name}",
      organization := "io.fullwindow",
      version := fullwindowVersion,
      scalaVersion := line.scala,
      Compile / unmanagedSourceDirectories := {
        val root = (LocalRootProject / baseDirectory).value
        // the Spark Connect plugin: common Scala, plus per line its RelationPlugin adapter (the
        // Java messages of proto/ are generated into managed sources: Protoc.settings below)
        val src = root / "jvm" / "src"
        Seq(src / "main" / "scala") ++ shimDirs(src / "shims", line) ++
          Seq(src / "connect" / "scala") ++ shimDirs(src / "connect" / "shims", line)
      },
      // pyspark 3.5 ships no Spark Connect server jar: compile against the Maven artifact
      libraryDependencies ++= ConnectServerArtifact.get(line.name).toSeq.map(v =>
        ("org.apache.spark" % s"spark-connect_${line.scalaBinary}" % v % Provided).intransitive()),
      // ... and say which in the jar (fullwindow/connect-server): fullwindow.session(remote=
      // "local[N]") loads that artifact on the local server with spark.jars.packages
      Compile / resourceGenerators += Def.task {
        val out = (Compile / resourceManaged).value / "fullwindow" / "connect-server"
        ConnectServerArtifact.get(line.name).toSeq.map { v =>
          IO.write(out, s"org.apache.spark:spark-connect_${line.scalaBinary}:$v\n")
          out
        }
      }.taskValue,
      Compile / unmanagedResourceDirectories := Seq(
        (LocalRootProject / baseDirectory).value / "jvm" / "src" / "main" / "resources"),
      // the JVM tests (jvm/src/test/scala: the columnar sorter's parts, no Spark job): the default
      // line's project only, ScalaTest from Maven Central (the Scala library and XML are pyspark's),
      // run in a forked JVM with the module options Spark's launcher gives
      Test / unmanagedSourceDirectories := (if (line.name == DefaultLine)
        Seq((LocalRootProject / baseDirectory).value / "jvm" / "src" / "test" / "scala") else Nil),
      libraryDependencies ++= (if (line.name == DefaultLine) Seq(("org.scalatest" %%
        "scalatest-funsuite" % "3.2.19" % Test).excludeAll(
          ExclusionRule("org.scala-lang"), ExclusionRule("org.scala-lang.modules"))) else Nil),
      Test / unmanagedResourceDirectories := (if (line.name == DefaultLine)
        Seq((LocalRootProject / baseDirectory).value / "jvm" / "src" / "test" / "resources") else Nil),
      Test / fork := true,
      Test / testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-oD"), // each test's time
      Test / javaOptions ++= Seq("-Xmx1g", "-XX:+IgnoreUnrecognizedVMOptions") ++ Seq(
        "java.lang", "java.lang.invoke", "java.lang.reflect", "java.io", "java.net", "java.nio",
        "java.util", "java.util.concurrent", "java.util.concurrent.atomic", "sun.nio.ch",
        "sun.nio.cs", "sun.security.action", "sun.util.calendar").map(p => s"--add-opens=java.base/$p=ALL-UNNAMED"),
      Compile / unmanagedJars ++=
        (sparkJarsDir((LocalRootProject / baseDirectory).value, line) * "*.jar").classpath,
      autoScalaLibrary := false,
      scalacOptions ++= Seq("-deprecation", "-feature", "-unchecked", "-release:17"),
      javacOptions ++= Seq("--release", "17"),
      Compile / packageBin / artifactPath :=
        (LocalRootProject / baseDirectory).value / "target" / "jars" / line.jarName,
    )
    // proto/'s Java messages, by the protoc that this line's shaded protobuf-java needs
    .settings(Protoc.settings(protocVersion(line)))

def line(name: String): Project = lineProject(sparkLines.find(_.name == name).getOrElse(
  sys.error(s"dev/spark-lines has no Spark $name")))

// One project per row of dev/spark-lines (sbt only sees projects bound to vals).
lazy val spark35 = line("3.5")
lazy val spark40 = line("4.0")
lazy val spark41 = line("4.1")
lazy val spark42 = line("4.2")
lazy val spark43 = line("4.3")

lazy val root = (project in file("."))
  .aggregate(spark35, spark40, spark41, spark42, spark43)
  .settings(publish / skip := true)

// `sbt jars`: every line's jar, in one invocation, into target/jars/.
addCommandAlias("jars", sparkLines.map(l => s"${l.id}/package").mkString("; "))
