"""What the benchmark scripts share: where things are, the settings every session gets, a
session, logging, the command and date a record carries, the round-robin order of variants,
a child process's JSON result, and the machine's and processes' CPU (from /proc).

Used by the harness (``python -m benchmarks``) and the benchmarks run on their own
(``benchmarks.heavy_key``, ``benchmarks.recovery``, ``benchmarks.connect``); it imports none of
them.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import platform
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from typing import Any, Callable, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_OUT = os.path.join(HERE, "out")
QUIET_BUSY = 0.25     # "mostly idle": other processes use under a quarter of all CPU time

# Settings every benchmark session gets (a case's spark_conf wins over these).
BASE_CONF = {
    "spark.ui.enabled": "true",                 # the REST API the metrics are read from
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.ui.retainedExecutions": "10000",
    "spark.ui.retainedStages": "10000",
    "spark.ui.retainedJobs": "10000",
}


def logger(prefix: str) -> Callable[[str], None]:
    """A function printing ``[prefix] message`` to stderr at once."""
    def log(msg: str) -> None:
        print(f"[{prefix}] {msg}", file=sys.stderr, flush=True)
    return log


def invocation(module: str, argv: Sequence[str] | None) -> str:
    """The command a record says produced it: ``.venv/bin/python -m MODULE ARGS`` (the running
    interpreter, relative, when it is under the current directory)."""
    python = (os.path.relpath(sys.executable) if sys.executable.startswith(os.getcwd())
              else ".venv/bin/python")
    rest = sys.argv[1:] if argv is None else list(argv)
    return " ".join([python, "-m", module, shlex.join(rest)]).strip()


def utc_date() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def rotation(names: Sequence[str], r: int) -> list[str]:
    """The order of round ``r``: every variant goes first in turn (two variants: they
    alternate). With three or more, the cycle runs backwards every other ``len(names)`` rounds:
    a plain rotation keeps each variant's successor fixed (with ours, native and a floor,
    ours would always run right after the floor's shuffle, whose files are still being
    cleaned up and written back), so each variant follows each other one as often."""
    if not names:
        return []
    n = len(names)
    base = list(names) if n < 3 or (r // n) % 2 == 0 else list(reversed(names))
    shift = r % n
    return base[shift:] + base[:shift]


def session(out_dir: str, app_name: str, conf: dict[str, str], master: str = "local[2]",
            log_level: str = "ERROR"):
    """A fullwindow SparkSession for a benchmark: Spark's scratch space under ``out_dir``
    (``spark-local``, unless ``conf`` names another), ``conf`` as given."""
    import fullwindow
    conf = {"spark.local.dir": os.path.join(os.path.abspath(out_dir), "spark-local"), **conf}
    os.makedirs(conf["spark.local.dir"], exist_ok=True)
    spark = fullwindow.session(master=master, conf=conf, app_name=app_name)
    spark.sparkContext.setLogLevel(log_level)
    return spark


def run_watched(cmd: list[str], timeout: float,
                watch: Callable[[subprocess.Popen, float], dict[str, Any] | None] | None = None,
                interval: float = 0.2) -> tuple[int, float, dict[str, Any] | None]:
    """Runs ``cmd`` from the repository root in a process group of its own, calling
    ``watch(proc, elapsed)`` every ``interval`` s while it runs: when that returns a dict, or
    after ``timeout`` s (``{"timeout": True}``), the whole group (the child, its JVM and Python
    workers) is SIGKILLed. Returns the exit code, the seconds it ran and why it was killed
    (None: it ended by itself)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True)
    killed = None
    while proc.poll() is None:
        elapsed = time.perf_counter() - start
        killed = watch(proc, elapsed) if watch is not None else None
        if killed is None and elapsed > timeout:
            killed = {"timeout": True}
        if killed is not None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            break
        time.sleep(interval)
    return proc.returncode, time.perf_counter() - start, killed


def child_json_path(out_dir: str, prefix: str) -> str:
    """A new empty file under ``out_dir`` for a child process to write its result to."""
    os.makedirs(out_dir, exist_ok=True)
    fd, path = tempfile.mkstemp(prefix=prefix, suffix=".json", dir=out_dir)
    os.close(fd)
    return path


def read_child_json(path: str) -> dict[str, Any]:
    """A child's result (``{}`` when it wrote none or not JSON); the file is removed."""
    try:
        with open(path) as f:
            text = f.read()
        return json.loads(text) if text.strip() else {}
    except (OSError, ValueError):
        return {}
    finally:
        try:
            os.remove(path)
        except OSError:
            pass


def _cpu_busy(seconds: float = 0.5) -> float | None:
    """Fraction of all CPU time spent busy over ``seconds`` (from /proc/stat). Measured between
    rounds, when this benchmark itself is idle, it is the load other processes put on the
    machine."""
    def sample():
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
        return sum(fields[:8]), idle
    try:
        t0, i0 = sample()
        time.sleep(seconds)
        t1, i1 = sample()
    except (OSError, ValueError, IndexError):
        return None
    return 1.0 - (i1 - i0) / (t1 - t0) if t1 > t0 else None


def _wait_for_quiet(max_wait: float) -> tuple[float | None, float]:
    """Waits (up to ``max_wait`` s) until other processes leave the CPUs mostly idle; returns
    the last background busy fraction and the time waited."""
    start = time.monotonic()
    busy = _cpu_busy()
    while busy is not None and busy > QUIET_BUSY and time.monotonic() - start < max_wait:
        busy = _cpu_busy()
    return busy, time.monotonic() - start


def _proc_tree_cpu(root: int) -> tuple[float, float] | None:
    """CPU seconds (user + system) used so far by process ``root`` itself and by all its
    descendants (with the children they have reaped), from /proc. With ``root`` the Spark JVM,
    the second figure is the Python workers (the pyspark daemon and the workers it forks), whose
    CPU time Spark's task metrics do not count."""
    tick = os.sysconf("SC_CLK_TCK")
    parent: dict[int, int] = {}
    own: dict[int, float] = {}
    with_children: dict[int, float] = {}
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return None
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        rest = stat[stat.rfind(")") + 2:].split()
        parent[pid] = int(rest[1])
        utime, stime, cutime, cstime = (int(x) for x in rest[11:15])
        own[pid] = (utime + stime) / tick
        with_children[pid] = (utime + stime + cutime + cstime) / tick
    if root not in own:
        return None

    def under_root(pid: int) -> bool:
        seen = 0
        while pid in parent and seen < 64:
            pid = parent[pid]
            if pid == root:
                return True
            seen += 1
        return False
    return own[root], sum(t for pid, t in with_children.items() if under_root(pid))


@contextlib.contextmanager
def child_result(path: str, res: dict[str, Any], log=None):
    """The body of a stand-alone benchmark's child process (heavy_key.py, recovery.py): yields a
    dict to put the child's SparkSession in (``["spark"]``); an exception in the body is recorded
    in ``res`` (status "failed" and the traceback's end, also passed to ``log``), and whatever
    happens ``res`` is written to ``path`` as JSON and the session is stopped."""
    child: dict[str, Any] = {}
    try:
        yield child
    except Exception:  # noqa: BLE001  (the outcome is what is recorded)
        res["status"] = "failed"
        res["error"] = traceback.format_exc()[-4000:]
        if log is not None:
            log(res["error"])
    finally:
        with open(path, "w") as f:
            json.dump(res, f, indent=1)
        if child.get("spark") is not None:
            try:
                child["spark"].stop()
            except Exception:  # noqa: BLE001
                pass


def _machine(spark) -> dict[str, Any]:
    mem_kib = None
    cpu = platform.processor() or ""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem_kib = int(line.split()[1])
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    jvm = spark.sparkContext._jvm
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    import hashlib

    import fullwindow
    jar = fullwindow.jar_path()
    try:
        with open(jar, "rb") as f:
            jar_sha = hashlib.sha256(f.read()).hexdigest()[:12]
    except OSError:
        jar_sha = "missing"
    try:
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "jvm", "python", "build.sbt"],
                               cwd=ROOT, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        dirty = ""
    return {
        "cores": os.cpu_count(),
        "memory_gib": round(mem_kib / 2**20, 1) if mem_kib else None,
        "cpu": cpu,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "java": jvm.System.getProperty("java.version"),
        "spark": spark.version,
        "fullwindow": fullwindow.__version__,
        "commit": commit,
        "worktree_dirty": bool(dirty),   # uncommitted operator changes may be in the jar
        "jar_sha256": jar_sha,
    }


def full_heap(conf: dict[str, str]) -> dict[str, str]:
    """``conf`` with the driver JVM's heap committed at its full size from the start (``-Xms`` =
    ``spark.driver.memory``, 1g when unset) unless the case sets ``-Xms`` itself. The GC before
    each run shrinks a heap that may shrink, and every following run then paid to grow it again:
    about 0.3 s a run on every form of the keyed cases at 2M rows (floor, ours and natives alike,
    benchmarks/notes/keyed.md), a constant that pulled every ratio towards 1."""
    memory = conf.get("spark.driver.memory", "1g")
    options = conf.get("spark.driver.extraJavaOptions", "")
    if "-Xms" in options:
        return conf
    return {**conf, "spark.driver.extraJavaOptions": f"{options} -Xms{memory}".strip()}
