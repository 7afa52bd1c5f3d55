"""The registry of benchmark cases.

A case is one comparison of a fullwindow operation ("ours") against the native Spark way of
doing the same thing ("native"). A case module under ``benchmarks/cases/`` builds ``Case``
objects and passes them to ``register``; ``benchmarks/cases/__init__.py`` imports every case
module (its ``all_cases()`` is the full set), so adding a case is adding a module (or a function
to an existing one) and one import.

Each case runs in its own child Python process (its own Spark JVM), started with the case's
``spark_conf``, so cases that need JVM-start settings (driver memory, memory fraction) get them.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping, Sequence


@dataclasses.dataclass(frozen=True)
class Scale:
    """How big one run of a case is. ``rows`` and ``partitions`` are the input's; ``quick`` is
    the smoke-test mode (tiny data, no spill expected); ``out_dir`` is where inputs are kept."""
    rows: int
    partitions: int
    quick: bool
    out_dir: str
    seed: int = 42


@dataclasses.dataclass(frozen=True)
class Native:
    """One more native form of a case's shape (``groupBy().applyInArrow``, a UDTF over
    ``df.asTable().partitionBy(...)``, ...), or one of its floors: ``run(data)`` is timed like
    ``Case.native``; ``node`` is the plan node that shows it ran (``"A|B"``: either)."""
    name: str
    run: Callable[[Any], Any]
    node: str | None = None


@dataclasses.dataclass(frozen=True)
class Check:
    """One more condition of a case's bar, where DESIGN holds ours to more than its ratio to the
    fastest native form (the case PASSes only if the ratio and every check hold):

    - ``"ratio"``: the median of the per-round ratios to the fastest timed native form named in
      ``against`` (native names, e.g. ``"rdd.aggregateByKey"``) is at least ``limit``;
    - ``"floor"``: the median of ours ÷ the floor named ``against[0]`` (per round, both timed in
      the same rounds) is at most ``limit``;
    - ``"record floor"``: ours' median Python workers CPU per run ÷ the per-record Python floor
      (``Case.record_floor``, measured in the same child on the case's own input) is at most
      ``limit``.
    """
    kind: str
    limit: float
    against: tuple[str, ...] = ()

    def label(self) -> str:
        if self.kind == "ratio":
            return f"≥ {self.limit:.2f}× {' / '.join(self.against)}"
        if self.kind == "floor":
            return f"ours ≤ {self.limit:.2f}× the floor '{self.against[0]}'"
        return f"ours' Python CPU ≤ {self.limit:.2f}× the per-record floor"

    def brief(self) -> str:
        """What the result column calls the check's value."""
        return {"ratio": f"to {' / '.join(self.against)}", "floor": "ours ÷ that floor",
                "record floor": "Python CPU ÷ per-record floor"}[self.kind]


@dataclasses.dataclass(frozen=True)
class Case:
    """One benchmark case.

    ``setup(spark, scale)`` builds and materializes the input once (not timed) and returns any
    object; ``ours(data)`` and ``native(data)`` each run one full execution on it (timed).
    ``bar`` is the minimum ratio native_time / ours_time for PASS (> 1 means ours is faster),
    native_time being the fastest of ``native`` and the line's ``natives``.
    """
    name: str
    group: str                       # RESULTS.md section, e.g. "sort"
    description: str
    setup: Callable[[Any, Scale], Any]
    ours: Callable[[Any], Any]
    native: Callable[[Any], Any]
    bar: float
    rows: int                        # default input rows for a real run
    partitions: int                  # input partitions (the same for both variants)
    quick_rows: int = 200_000        # input rows for --quick
    master: str = "local[2]"
    spark_conf: Mapping[str, str] = dataclasses.field(default_factory=dict)
    # Names of the physical plan nodes doing the work, used to check that the work really ran
    # (found in the executed SQL plan) and to read that node's metrics (sort time, spill size).
    ours_node: str | None = None
    native_node: str | None = None
    require_spill: bool = False      # both variants must show spilled bytes (not in --quick)
    bar_note: str = ""               # what the bar says beyond the ratio, e.g. "completes"
    settings: Mapping[str, str] = dataclasses.field(default_factory=dict)  # shown in RESULTS.md
    # ``native``'s name in the tables; it stays a column of its own (the baseline ratio)
    native_name: str = "native"
    # The other native forms of the same shape that the running Spark line has, asked for in
    # the child (on its line): every one is timed in the same rounds, interleaved, and the
    # headline ratio is against the fastest native form (``native`` included).
    natives: Callable[[], Sequence[Native]] | None = None
    # False: the headline is against ``natives`` only (``native`` is then a baseline of another
    # shape, e.g. vectorized applyInPandas beside a row-at-a-time case), when the line has any
    baseline_in_headline: bool = True
    # with ``baseline_in_headline`` False, on a line that has none of ``natives``: True, the
    # baseline is the headline then (DESIGN names applyInPandas for 3.5's keyed rows); False,
    # the case has no bar on that line (3.5 has no Arrow form to hold the keyed Arrow cases to)
    baseline_stands_in: bool = True
    # The native forms (by name) the bar is judged against when DESIGN's row names fewer forms
    # than the headline counts (keyed mapPartitionInPandas: the iterator applyInPandas on 4.1+,
    # while the headline is against the fastest pandas form, whole-group applyInPandas
    # included): the fastest of these the line has, the baseline ``native`` on a line with none
    # of them. Empty: the bar is judged on the headline ratio.
    bar_natives: tuple[str, ...] = ()
    # The floors: the same input and sink without the work measured (a sort case: the scan to
    # the sink, no sort; a keyed case: the same exchange by key, without and with the sort, no
    # Python). Timed in the same rounds as the others, interleaved, never ranked or judged: the
    # tables give each floor's median and ours and the fastest native form as multiples of it.
    floors: Sequence[Native] = ()
    # DESIGN's further conditions of the bar (``Check``): judged with the ratio, shown with it
    checks: tuple[Check, ...] = ()
    # ``record_floor(data)``: the CPU seconds a per-record Python function's least work takes on
    # the case's input in one Python process (benchmarks/record_floor.py), measured once in the
    # child after ``setup``, for a ``"record floor"`` check
    record_floor: Callable[[Any], float] | None = None

    def scale(self, rows: int | None, quick: bool, out_dir: str) -> Scale:
        n = rows if rows is not None else (self.quick_rows if quick else self.rows)
        return Scale(rows=int(n), partitions=self.partitions, quick=quick, out_dir=out_dir)


CASES: dict[str, Case] = {}


def register(case: Case) -> Case:
    if case.name in CASES:
        raise ValueError(f"benchmark case {case.name!r} is registered twice")
    CASES[case.name] = case
    return case
