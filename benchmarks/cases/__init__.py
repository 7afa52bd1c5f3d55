"""Benchmark case modules. Each registers its cases on import; add new modules here."""
from benchmarks.cases import sort  # noqa: F401
from benchmarks.cases import partition  # noqa: F401
from benchmarks.cases import keyed  # noqa: F401
from benchmarks.cases import keyed_aggregate  # noqa: F401
from benchmarks.cases import keyed_combine  # noqa: F401
from benchmarks.registry import CASES, Case


def all_cases() -> dict[str, Case]:
    """Every registered case, by name (the case modules above registered them on import)."""
    return CASES
