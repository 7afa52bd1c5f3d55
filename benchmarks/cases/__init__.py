"""Benchmark case modules. Each registers its cases on import; add new modules here."""
from benchmarks.cases import sort  # noqa: F401
from benchmarks.cases import partition  # noqa: F401
from benchmarks.cases import keyed  # noqa: F401
