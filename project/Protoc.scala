// The Java messages of proto/, generated at build time for one Spark line (build.sbt adds
// Protoc.settings(version) to every line's project): sbt resolves protoc <version> from Maven
// Central (com.google.protobuf:protoc:<version>:exe, the classifier of this machine) like any other
// dependency, runs it on proto/**/*.proto, and writes the Java into the line's managed sources with
// com.google.protobuf renamed to Spark Connect's shaded runtime, org.sparkproject.connect.protobuf.
// Nothing generated is kept in git; the .proto file is the source.
import java.util.Locale

import scala.sys.process._

import sbt._
import sbt.Keys._

object Protoc {
  /** The Ivy configuration that holds only the protoc executable (not on any classpath). */
  val ProtocConfig: Configuration = config("protoc").hide

  val Shaded = "org.sparkproject.connect.protobuf."

  /** protoc's Maven classifier for this machine, e.g. linux-x86_64 or osx-aarch_64. */
  def classifier: String = {
    val osName = sys.props("os.name").toLowerCase(Locale.ROOT)
    val os = if (osName.startsWith("mac") || osName.startsWith("darwin")) "osx"
      else if (osName.startsWith("windows")) "windows" else "linux"
    val arch = sys.props("os.arch") match {
      case "amd64" | "x86_64" => "x86_64"
      case "aarch64" | "arm64" => "aarch_64"
      case other => other
    }
    s"$os-$arch"
  }

  def settings(version: String): Seq[Setting[_]] = Seq(
    ivyConfigurations += ProtocConfig,
    libraryDependencies += ("com.google.protobuf" % "protoc" % version % ProtocConfig)
      .artifacts(Artifact("protoc", "exe", "exe", classifier)),
    Compile / sourceGenerators += Def.task {
      val log = streams.value.log
      val protoDir = (LocalRootProject / baseDirectory).value / "proto"
      val protos = (protoDir ** "*.proto").get.sorted
      val out = (Compile / sourceManaged).value / "protobuf"
      val exe = update.value.select(configurationFilter(ProtocConfig.name), moduleFilter(),
        artifactFilter(`type` = "exe")).headOption.getOrElse(
        sys.error(s"protoc $version ($classifier) did not resolve from Maven Central"))
      // the cached artifact is not executable: run a copy of it
      val protoc = streams.value.cacheDirectory / s"protoc-$version-$classifier.exe"
      if (!protoc.canExecute || protoc.length != exe.length) {
        IO.copyFile(exe, protoc)
        protoc.setExecutable(true)
      }
      // regenerate when a .proto file (or the protoc version) changed; else keep what is there
      val cached = FileFunction.cached(streams.value.cacheDirectory / s"java-$version",
        FilesInfo.hash) { _ =>
        IO.delete(out)
        IO.withTemporaryDirectory { tmp =>
          val cmd = Seq(protoc.getPath, s"-I${protoDir.getPath}", s"--java_out=${tmp.getPath}") ++
            protos.map(_.getPath)
          log.info(s"protoc $version: ${protos.map(_.getName).mkString(" ")} -> $out")
          val rc = Process(cmd).!(ProcessLogger(l => log.info(l), l => log.error(l)))
          if (rc != 0) sys.error(s"protoc $version failed ($rc): ${cmd.mkString(" ")}")
          (tmp ** "*.java").get.map { f =>
            val target = out / IO.relativize(tmp, f).get
            IO.write(target, IO.read(f).replace("com.google.protobuf.", Shaded))
            target
          }.toSet
        }
      }
      cached(protos.toSet).toSeq.sorted
    }.taskValue,
  )
}
