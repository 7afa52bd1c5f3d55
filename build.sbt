// fullwindow: the JVM side (a Spark SQL extension).
//
// Spark is not a managed dependency: the extension is compiled against the jars of the pyspark
// wheel it will run inside (SPARK_JARS_DIR, set by dev/setup), so the jar and the runtime match
// exactly. The Scala version is the one pyspark ships (checked below).

import java.io.File

val sparkJarsDir = settingKey[File]("the jars/ folder of the installed pyspark")

lazy val jvm = (project in file("jvm"))
  .settings(
    name := "fullwindow",
    organization := "io.fullwindow",
    version := "0.1.0",
    scalaVersion := "2.13.18",
    sparkJarsDir := {
      val dir = sys.env.get("SPARK_JARS_DIR").map(file).getOrElse(
        sys.error("SPARK_JARS_DIR is not set: run dev/setup, which points it at pyspark's jars/"))
      val lib = (dir * "scala-library-*.jar").get
      require(lib.exists(_.getName == s"scala-library-${scalaVersion.value}.jar"),
        s"pyspark ships ${lib.map(_.getName).mkString}, build.sbt says Scala ${scalaVersion.value}")
      dir
    },
    Compile / unmanagedJars ++= (sparkJarsDir.value * "*.jar").classpath,
    // the Spark Connect plugin (jvm/src/connect: Scala, and the Java generated from proto/)
    Compile / unmanagedSourceDirectories ++= Seq(
      baseDirectory.value / "src" / "connect" / "scala",
      baseDirectory.value / "src" / "connect" / "java"),
    Test / unmanagedJars ++= (sparkJarsDir.value * "*.jar").classpath,
    autoScalaLibrary := false,
    scalacOptions ++= Seq("-deprecation", "-feature", "-unchecked", "-release:17"),
    javacOptions ++= Seq("--release", "17"),
    Compile / packageBin / artifactPath := (LocalRootProject / baseDirectory).value / "target" / "fullwindow.jar",
    Test / fork := true,
    Test / parallelExecution := false,
  )

lazy val root = (project in file(".")).aggregate(jvm).settings(publish / skip := true)
