// fullwindow: the JVM side (a Spark SQL extension), one jar per supported Spark line.
//
// Every line in dev/spark-lines gets a project `spark<major><minor>` (spark35 ... spark43) whose
// sources are the common ones (jvm/src/main/scala) plus the shim folders whose range holds the
// line (jvm/src/shims/spark-<line> or spark-<first>-<last>), plus jvm/src/connect/scala on 4.x
// lines when that folder exists. `sbt jars` builds every line's jar in one invocation;
// `sbt spark43/package` only one.
//
// Spark is not a managed dependency: each line is compiled against the jars of that line's own
// pyspark wheel (the exact version dev/spark-lines names, installed by dev/setup in .venv for the
// default line and by dev/venvs in .venvs/spark-<line> for the others; FULLWINDOW_SPARK_JARS_<3_5>
// overrides the folder), with the Scala version that pyspark ships (checked).

import java.io.File

import SparkLines._

def lineProject(line: SparkLine): Project =
  Project(line.id, file("jvm") / "lines" / line.id)
    .settings(
      name := s"fullwindow-spark${line.name}",
      organization := "io.fullwindow",
      version := "0.1.0",
      scalaVersion := line.scala,
      Compile / unmanagedSourceDirectories := {
        val root = (LocalRootProject / baseDirectory).value
        // the Spark Connect plugin (Scala, and the Java generated from proto/ by dev/gen-proto
        // for the oldest shaded protobuf runtime, 4.0's): every 4.x line
        val connect = Seq("scala", "java").map(root / "jvm" / "src" / "connect" / _)
        Seq(root / "jvm" / "src" / "main" / "scala") ++ shimDirs(root, line) ++
          (if (line.major >= 4) connect.filter(_.isDirectory) else Nil)
      },
      Compile / unmanagedResourceDirectories := Seq(
        (LocalRootProject / baseDirectory).value / "jvm" / "src" / "main" / "resources"),
      Test / unmanagedSourceDirectories := Nil,
      Compile / unmanagedJars ++=
        (sparkJarsDir((LocalRootProject / baseDirectory).value, line) * "*.jar").classpath,
      autoScalaLibrary := false,
      scalacOptions ++= Seq("-deprecation", "-feature", "-unchecked", "-release:17"),
      javacOptions ++= Seq("--release", "17"),
      Compile / packageBin / artifactPath :=
        (LocalRootProject / baseDirectory).value / "target" / "jars" / line.jarName,
    )

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
