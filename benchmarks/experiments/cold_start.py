"""A batch query usually runs once, in a fresh driver: how long each keyed form's first runs take
when every form gets its own new process (new driver JVM, new Python workers), one form per
process, the forms interleaved round by round (benchmarks/notes/keyed.md, "Cold start").

In the harness every form shares one session and the forms run in turn during its warm-up, so the
form that runs first pays the JVM's and the workers' warm-up for all of them. Here each process
builds its session with the harness's settings (its base settings, the keyed cases' own, -Xms =
spark.driver.memory), runs one plain Spark query over the input (``groupBy('k').count()``:
Spark's own first-query cost, the same for every form), then the form three times: run 1 is the
cold figure, runs 2-3 show how fast it settles.

Usage: python benchmarks/experiments/cold_start.py [ROUNDS] [KEYS]   (default 3 8)
"""
import os
import statistics
import subprocess
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, "..", ".."))
sys.path.insert(0, os.path.join(_HERE, "..", "..", "python"))

RUNS = 3


def _forms(data):
    from benchmarks.cases import keyed
    from benchmarks.natives import keyed_arrow_natives, keyed_pandas_natives
    forms = {"ours mapPartitionInPandas": lambda: keyed._ours_map_pandas(data),
             "ours mapPartitionInArrow": lambda: keyed._ours_map_arrow(data),
             "applyInPandas": lambda: keyed._native_map(data)}
    for n in keyed_pandas_natives() + keyed_arrow_natives():
        if n.name != "transformWithStateInPandas":  # minutes a run at these sizes; not a rival
            forms[n.name] = (lambda run: lambda: run(data))(n.run)
    return forms


def _one(form: str, keys: int) -> None:
    """In a fresh process: session, input, Spark's first query, then the form RUNS times."""
    import fullwindow
    from benchmarks.cases import keyed
    from benchmarks.data import parquet_input
    from benchmarks.harness import BASE_CONF, full_heap
    from benchmarks.registry import Scale
    py = sys.executable
    spark = fullwindow.session(master="local[2]", conf=full_heap({
        **BASE_CONF, **keyed._CONF, "spark.pyspark.python": py,
        "spark.pyspark.driver.python": py}))
    scale = Scale(rows=2_000_000, partitions=4, quick=False,
                  out_dir=os.path.join(_HERE, "..", "out"), seed=42)
    data = parquet_input(spark, scale, f"keyed-k{keys}", keyed._columns(keys))
    data.groupBy("k").count().collect()
    run = _forms(data)[form]
    times = []
    for _ in range(RUNS):
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    print("RUNS " + " ".join(f"{x:.3f}" for x in times), flush=True)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        _one(sys.argv[2], int(sys.argv[3]))
        return
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    keys = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    names = list(_forms(None))
    runs: dict = {n: [] for n in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", name,
                                  str(keys)], capture_output=True, text=True, check=True).stdout
            line = next(x for x in out.splitlines() if x.startswith("RUNS "))
            runs[name].append([float(x) for x in line.split()[1:]])
    for name in names:
        cols = "  ".join(f"run {i + 1} {statistics.median(t[i] for t in runs[name]):.2f} s"
                         for i in range(RUNS))
        firsts = [t[0] for t in runs[name]]
        print(f"{name:40s} {cols}  (run 1 [{min(firsts):.2f}-{max(firsts):.2f}])")


if __name__ == "__main__":
    main()
