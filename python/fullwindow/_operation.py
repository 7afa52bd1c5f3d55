"""What every fullwindow operation runs inside: the session's operation settings, with failures
on the JVM (classic) or the Spark Connect server raised as fullwindow's own exceptions; and the
metrics of its operators. Above both fullwindow._backend and fullwindow._jvm."""
from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

from pyspark.sql import DataFrame

from fullwindow._backend import backend, operation_settings
from fullwindow._compat import classic_error_types
from fullwindow._jvm_errors import _is_connect_error, raise_from_java
from fullwindow.errors import FullWindowError

F = TypeVar("F", bound=Callable[..., Any])


def jvm_errors(operation: str) -> Callable[[F], F]:
    """Decorator: JVM failures inside the wrapped call become fullwindow exceptions."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> Any:
            try:
                with operation_settings():
                    return fn(*args, **kwargs)
            except FullWindowError:
                raise
            except Exception as err:  # noqa: BLE001 - filtered in raise_from_java
                if isinstance(err, classic_error_types()) or _is_connect_error(err):
                    raise_from_java(err, operation)
                raise

        return inner  # type: ignore[return-value]

    return wrap


def operator_metrics(df: DataFrame) -> dict[str, int]:
    """SQL metrics of the full-window operators in the plan ``df`` last executed, as
    ``{"FullWindowSortPartition.spillSize": 1234, ...}``. Run an action on ``df`` first.

    Examples:
        >>> out = df.fullWindowPartition().sortPartition("v")
        >>> _ = out.collect()
        >>> fullwindow.operator_metrics(out)["FullWindowSortPartition.numOutputRows"]
        6
    """
    return backend(df).operator_metrics(df)
