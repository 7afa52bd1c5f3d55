"""Exceptions raised by fullwindow.

Every error of fullwindow's own derives from [`FullWindowError`][fullwindow.errors.FullWindowError]; errors about an argument
also derive from the built-in ``TypeError`` or ``ValueError`` so that ordinary ``except`` clauses
keep working.
"""
from __future__ import annotations


class FullWindowError(Exception):
    """Base class of every fullwindow error."""


class FullWindowTypeError(FullWindowError, TypeError):
    """An argument has the wrong type (e.g. ``None`` where a function is expected)."""


class FullWindowValueError(FullWindowError, ValueError):
    """An argument has the right type but a wrong value (e.g. an unknown column)."""


class KeyNotSortableError(FullWindowTypeError):
    """A sort key has a type without an order (a map, or a struct or array holding one)."""


class KeyTypeMismatchError(FullWindowTypeError):
    """The two sides of a ``coGroup`` are keyed by different numbers or types of keys."""


class StreamingNotSupportedError(FullWindowError):
    """A full-window operation was asked to run on a stream or in STREAMING runtime mode."""


class FullWindowAnalysisError(FullWindowError):
    """Spark could not analyze the query a full-window operation built (e.g. an unresolvable
    ``Column`` key). The message is Spark's, prefixed with the operation."""


class FullWindowSetupError(FullWindowError, RuntimeError):
    """The session cannot run fullwindow: no active classic session, the jar is not on the
    class path, or the extension is not registered. The message says how to fix it."""


class ConfigurationError(FullWindowValueError):
    """A ``spark.fullwindow.*`` setting is missing or has an invalid value."""


# JVM error kinds (FullWindowAnalysisException.kind) -> Python classes.
_KIND_TO_CLASS = {
    "STREAMING_NOT_SUPPORTED": StreamingNotSupportedError,
    "KEY_NOT_SORTABLE": KeyNotSortableError,
    "KEY_TYPE_MISMATCH": KeyTypeMismatchError,
    "INVALID_CONFIG": ConfigurationError,
    "INVALID_ARGUMENT": FullWindowValueError,
    "SETUP": FullWindowSetupError,  # the Connect plugin on a server without the extension
}


def register_kind(kind: str, cls: type[FullWindowError]) -> None:
    """Maps JVM error kind ``kind`` to ``cls``: for error classes defined in subpackages
    (fullwindow.recovery.errors registers its own when ``import fullwindow`` imports it)."""
    _KIND_TO_CLASS[kind] = cls


def class_for_kind(kind: str) -> type[FullWindowError]:
    return _KIND_TO_CLASS.get(kind, FullWindowAnalysisError)


def kind_of(cls: type[FullWindowError]) -> str:
    """The JVM error kind that :func:`class_for_kind` maps to ``cls`` (or to its nearest base
    class that has one): how a Spark Connect server's Python runtime raises ``cls`` through
    the JVM so that the client raises it again."""
    by_class = {c: k for k, c in _KIND_TO_CLASS.items()}
    for base in cls.__mro__:
        if base in by_class:
            return by_class[base]
    return "INVALID_ARGUMENT"


class SchemaMismatchError(FullWindowValueError):
    """What a user function returned does not fit the schema it was declared with. Raised in
    the Python worker, naming the operation, the partition and the offending value; it reaches
    the driver inside Spark's ``PythonException``."""
