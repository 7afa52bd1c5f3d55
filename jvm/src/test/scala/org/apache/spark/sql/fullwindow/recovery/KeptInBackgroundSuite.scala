package org.apache.spark.sql.fullwindow.recovery

import org.scalatest.funsuite.AnyFunSuite

/**
 * The driver's pairing of a map output kept in the background (KeptInBackground): its event is
 * recorded once both its task's successful end and its upload's end are known, in either order;
 * never for a failed upload, a task not seen to end, or a vertex reset in between; and a flush
 * waits for the uploads of ended tasks.
 */
class KeptInBackgroundSuite extends AnyFunSuite {
  private val L = FullWindowRecoveryListener

  private def event(p: Int) = s"""{"type":"taskFinished","fingerprint":"v","partition":$p"""

  private def drained(): Seq[String] = { L.awaitSynced(); L.drain().toSeq }

  test("the task report round-trips, and a JSON entry is not taken for one") {
    assert(L.inBackground(L.keptInBackground("17", "shuffle:ab/c")) == Some(("17", "shuffle:ab/c")))
    assert(L.inBackground(event(0)).isEmpty)
    val msg = KeptInBackground.message("17", "shuffle:ab", Some(event(3)))
    assert(msg == "17\tshuffle:ab\t" + event(3))
  }

  test("recorded once both ends are known, in either order, with the driver's part") {
    drained()
    L.taskEnded("1", "v", ""","attempt":0}""")
    assert(drained().isEmpty)  // the upload has not ended
    assert(!L.awaitUploads(50))
    L.uploaded("1", "v", Some(event(1)))
    assert(L.awaitUploads(50))
    assert(drained() == Seq(event(1) + ""","attempt":0}"""))

    L.uploaded("2", "v", Some(event(2)))
    assert(drained().isEmpty)  // the task's end has not been seen
    L.taskEnded("2", "v", ""","attempt":1}""")
    assert(drained() == Seq(event(2) + ""","attempt":1}"""))
  }

  test("a failed upload, a reset vertex or a task never seen to end records nothing") {
    drained()
    L.taskEnded("3", "v", "}")
    L.uploaded("3", "v", None)
    L.uploaded("4", "w", Some(event(4)))  // its task failed: never ends successfully
    L.taskEnded("5", "v", "}")
    L.forgetInBackground("v")
    assert(L.awaitUploads(50))  // nothing left to wait for
    L.uploaded("5", "v", Some(event(5)))
    L.taskEnded("6", "v", "}")
    L.uploaded("6", "v", Some(event(6)))
    assert(drained() == Seq(event(6) + "}"))
    L.forgetInBackground("w")
  }

  test("a lost executor's unfinished uploads are not waited for") {
    drained()
    L.taskEnded("7", "v", "}", "exec-1")
    L.taskEnded("8", "v", "}", "exec-2")
    assert(!L.awaitUploads(50))
    L.executorLost("exec-1")
    assert(!L.awaitUploads(50))  // exec-2's upload still runs
    L.uploaded("8", "v", Some(event(8)))
    assert(L.awaitUploads(50))
    L.uploaded("7", "v", Some(event(7)))  // sent before its executor died: not recorded
    assert(drained() == Seq(event(8) + "}"))
  }
}
