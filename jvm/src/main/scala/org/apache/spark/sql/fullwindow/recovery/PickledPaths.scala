package org.apache.spark.sql.fullwindow.recovery

import java.io.ByteArrayOutputStream
import java.nio.charset.StandardCharsets

/**
 * A Python UDF's pickled command (cloudpickle) holds, for each function defined in the driver's
 * script, the script's path: the code objects' file name. A scheduler that runs the script
 * from a directory of its own each time (YARN's next attempt in cluster mode runs it from the
 * new attempt's container directory; Airflow and others from a temporary copy) would otherwise
 * give every shuffle over such a UDF a new fingerprint on the resume, and nothing would be read
 * back. Only the path is made independent of its directory: the file's name, the code and
 * everything it captures still count.
 *
 * The pickle is walked opcode by opcode (the pickle protocol's opcodes, 0 to 5), never
 * unpickled: a string equal to the path is given as its last component, and the framing
 * opcodes (whose lengths change with the path's) are left out. A pickle with an opcode not
 * known here is returned as it is (its path then counts: nothing is read back wrongly).
 */
private[recovery] object PickledPaths {
  private val NoArg = "(.012N\u0088\u0089}])t\u0085\u0086\u0087ldaesubR\u0081\u0092o\u0093\u0094" +
    "\u008f\u0090\u0091\u0097\u0098Q"
  private def fixed(op: Int): Int = op match {
    case 'K' | 'h' | 'q' | 0x82 | 0x80 => 1
    case 'M' | 0x83 => 2
    case 'J' | 'j' | 'r' | 0x84 => 4
    case 'G' | 0x95 => 8
    case _ => -1
  }
  /** Opcodes followed by a little-endian length of this many bytes, then that many bytes. */
  private def counted(op: Int): Int = op match {
    case 0x8c | 'C' | 'U' | 0x8a => 1
    case 'X' | 'B' | 'T' | 0x8b => 4
    case 0x8d | 0x8e | 0x96 => 8
    case _ => -1
  }
  private val Strings = Set(0x8c, 'X'.toInt, 0x8d)
  private val Frame = 0x95
  /** Opcodes whose argument is one line (protocol 0), or two (GLOBAL, INST). */
  private val OneLine = "ILFSVgpP"
  private val TwoLines = "ci"

  /** `pickle` with each pickled string equal to `path` given as its last component (as a
    * BINUNICODE, whichever string opcode held it) and its FRAME opcodes left out; `pickle`
    * itself when the path does not occur in it or an opcode is not known here. For hashing,
    * never for unpickling. */
  def withoutDirectory(pickle: Array[Byte], path: String): Array[Byte] = {
    val name = path.substring(path.lastIndexOf('/') + 1)
    if (name.isEmpty || name == path) return pickle
    val target = path.getBytes(StandardCharsets.UTF_8)
    val replacement = {
      val n = name.getBytes(StandardCharsets.UTF_8)
      Array[Byte]('X'.toByte, n.length.toByte, (n.length >>> 8).toByte, (n.length >>> 16).toByte,
        (n.length >>> 24).toByte) ++ n
    }
    val out = new ByteArrayOutputStream(pickle.length)
    var found = false
    var i = 0
    while (i < pickle.length) {
      val op = pickle(i) & 0xff
      val start = i
      i += 1
      if (NoArg.indexOf(op) >= 0) {
        out.write(op)
      } else if (fixed(op) > 0) {
        val n = fixed(op)
        if (i + n > pickle.length) return pickle
        if (op != Frame) out.write(pickle, start, 1 + n)
        i += n
      } else if (counted(op) > 0) {
        val w = counted(op)
        if (i + w > pickle.length) return pickle
        var len = 0L
        for (k <- 0 until w) len |= (pickle(i + k) & 0xffL) << (8 * k)
        if (len < 0 || i + w + len > pickle.length) return pickle
        val from = i + w
        val to = (from + len).toInt
        if (Strings.contains(op) && len == target.length &&
            java.util.Arrays.equals(pickle.slice(from, to), target)) {
          out.write(replacement)
          found = true
        } else out.write(pickle, start, to - start)
        i = to
      } else if (OneLine.indexOf(op) >= 0 || TwoLines.indexOf(op) >= 0) {
        for (_ <- 0 until (if (TwoLines.indexOf(op) >= 0) 2 else 1)) {
          while (i < pickle.length && pickle(i) != '\n') i += 1
          if (i >= pickle.length) return pickle
          i += 1
        }
        out.write(pickle, start, i - start)
      } else return pickle // not an opcode known here
    }
    if (found) out.toByteArray else pickle
  }
}
