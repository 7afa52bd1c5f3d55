"""User-facing function protocols and the window-function context (FLIP-2, FLIP-331)."""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Generic, Iterable, Optional, TypeVar

ACC = TypeVar("ACC")

#: Java's Long.MIN_VALUE / Long.MAX_VALUE: the bounds of an end-of-input window.
MIN_TIMESTAMP = -(2 ** 63)
MAX_TIMESTAMP = 2 ** 63 - 1


class AggregateFunction(Generic[ACC]):
    """An aggregate over a full window, as Flink's ``AggregateFunction``.

    ``add`` returns the accumulator to use from then on, so immutable accumulators (numbers,
    tuples) work; Flink's non-keyed aggregate ignores that value, ours does not.

    ``merge(a, b)`` combines two partial accumulators into one. A keyed aggregate whose function
    overrides it combines before the exchange, as Flink's DataSet combiners and Spark's
    ``reduceByKey`` do: each input partition's records are added into one accumulator per key
    inside the Python worker, the partial accumulators (pickled) cross the shuffle, and
    ``merge`` combines them per key before ``get_result``. ``add`` and ``merge`` must then be
    associative, and must not depend on the order of records: records and partial
    accumulators reach them in no set order across input partitions. Accumulators must be
    picklable. Without ``merge`` (or with ``spark.fullwindow.combine.enabled=false``) every
    record crosses the exchange and one accumulator per key takes them all; a non-keyed
    aggregate never merges (its window is the partition).

    Examples:
        >>> class Mean(AggregateFunction):
        ...     def create_accumulator(self): return (0, 0)
        ...     def add(self, row, acc): return (acc[0] + row.v, acc[1] + 1)
        ...     def get_result(self, acc): return (acc[0] / acc[1],)
        ...     def merge(self, a, b): return (a[0] + b[0], a[1] + b[1])
        >>> sorted(df.fullWindowPartition().aggregate(Mean(), "mean double").collect())
        [Row(mean=2.0), Row(mean=5.0)]
    """

    def create_accumulator(self) -> ACC:
        raise NotImplementedError("AggregateFunction.create_accumulator")

    def add(self, value: Any, accumulator: ACC) -> ACC:
        raise NotImplementedError("AggregateFunction.add")

    def get_result(self, accumulator: ACC) -> Any:
        raise NotImplementedError("AggregateFunction.get_result")

    def merge(self, a: ACC, b: ACC) -> ACC:
        raise NotImplementedError("AggregateFunction.merge")


class FiringInfo(enum.Enum):
    """Why a window fires (FLIP-2). The one end-of-input firing of a full window is ON_TIME."""

    EARLY = "EARLY"
    ON_TIME = "ON_TIME"
    LATE = "LATE"


@dataclass(frozen=True)
class TimeWindow:
    """A window ``[start, end)``; ``max_timestamp`` is the largest timestamp it holds."""

    start: int
    end: int

    @property
    def max_timestamp(self) -> int:
        return self.end - 1


#: The window of every full-window firing: all of time, since it closes at end of input.
END_OF_STREAM_WINDOW = TimeWindow(MIN_TIMESTAMP, MAX_TIMESTAMP)


class EndOfStreamWindows:
    """The window assigner that puts all records of a key (or partition) in one window that
    fires at end of input (FLIP-331). Use ``EndOfStreamWindows.get()``.

    Examples:
        >>> window = df.keyBy("k").window(EndOfStreamWindows.get())
        >>> sorted(window.aggregate(F.max("v").alias("top")).collect())
        [Row(k=0, top=3), Row(k=1, top=5), Row(k=2, top=6)]
    """

    _instance: Optional["EndOfStreamWindows"] = None

    @classmethod
    def get(cls) -> "EndOfStreamWindows":
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def __repr__(self) -> str:
        return "EndOfStreamWindows"


class ProcessWindowFunction:
    """A function over a whole window with a rich context (FLIP-2).

    ``open(ctx)`` is called before the first window of a task and ``close()`` after the last;
    ``process(key, ctx, rows)`` once per non-empty window, returning an iterable of output rows
    (tuples, Rows or dicts). ``key`` is ``None`` for non-keyed windows. Timers registered
    through ``ctx`` call ``on_timer(timestamp, ctx)``, which may return rows too.

    Examples:
        >>> class Summary(ProcessWindowFunction):
        ...     def process(self, key, ctx, rows):
        ...         n = sum(1 for _ in rows)
        ...         ctx.register_event_time_timer(ctx.window().max_timestamp)
        ...         yield (ctx.partition_id, n, ctx.firing_info.value)
        ...     def on_timer(self, timestamp, ctx):
        ...         return [(ctx.partition_id, 0, "timer")]
        >>> out = df.fullWindowPartition().process(Summary(), "pid int, n long, why string")
        >>> sorted(out.collect())
        [Row(pid=0, n=0, why='timer'), Row(pid=0, n=3, why='ON_TIME'),
         Row(pid=1, n=0, why='timer'), Row(pid=1, n=3, why='ON_TIME')]
    """

    def open(self, ctx: "Context") -> None:  # noqa: B027 - optional hook
        pass

    def process(self, key: Any, ctx: "Context", rows: Iterable[Any]) -> Iterable[Any]:
        raise NotImplementedError("ProcessWindowFunction.process")

    def on_timer(self, timestamp: int, ctx: "Context") -> Optional[Iterable[Any]]:
        return None

    def close(self) -> None:  # noqa: B027 - optional hook
        pass


class ProcessingTimeNotAllowedError(RuntimeError):
    """Processing time was used by a function while
    ``spark.fullwindow.processingTime.allow=FAIL`` (the default in BATCH mode)."""


class Context:
    """What a ``ProcessWindowFunction`` sees of its window and the job (FLIP-2, with the firing
    counter and reason Flink never shipped)."""

    def __init__(self, partition_id: int, key: Any, policy: "TimePolicy"):
        self.partition_id = partition_id
        self.key = key
        self.firing_id = 0
        self.firing_info = FiringInfo.ON_TIME
        self._policy = policy
        self._processing_timers: set[int] = set()
        self._event_timers: set[int] = set()
        self._quiesced = False

    def window(self) -> TimeWindow:
        """The window that fires: end of input closes all of time."""
        return END_OF_STREAM_WINDOW

    def current_watermark(self) -> int:
        """Batch inputs have perfect watermarks: when a full window fires, the watermark is at
        its maximum."""
        return MAX_TIMESTAMP

    def current_processing_time(self) -> int:
        """Wall-clock milliseconds, unless the processing-time policy is FAIL."""
        self._policy.check("current_processing_time()")
        import time

        return int(time.time() * 1000)

    def register_processing_time_timer(self, timestamp: int) -> None:
        """Registers a processing-time timer. Under ALLOW it is kept until end of input, where
        ``spark.fullwindow.processingTime.endOfInput`` decides: FIRE_AND_QUIESCE fires it (and
        ignores registrations made while firing), IGNORE drops it. Under IGNORE it is dropped
        at once; under FAIL this raises."""
        self._policy.check("register_processing_time_timer()")
        if self._policy.allow == "ALLOW" and not self._quiesced:
            self._processing_timers.add(int(timestamp))

    def delete_processing_time_timer(self, timestamp: int) -> None:
        self._processing_timers.discard(int(timestamp))

    def register_event_time_timer(self, timestamp: int) -> None:
        """Registers an event-time timer; it fires at end of input, when the watermark reaches
        its maximum (before processing-time timers)."""
        if not self._quiesced:
            self._event_timers.add(int(timestamp))

    def delete_event_time_timer(self, timestamp: int) -> None:
        self._event_timers.discard(int(timestamp))

    def __repr__(self) -> str:
        return (f"Context(partition_id={self.partition_id}, key={self.key!r}, "
                f"firing_id={self.firing_id}, firing_info={self.firing_info.name})")


@dataclass(frozen=True)
class TimePolicy:
    """The processing-time policy read from the session when the operation was defined."""

    allow: str          # ALLOW / IGNORE / FAIL
    end_of_input: str   # FIRE_AND_QUIESCE / IGNORE

    def check(self, what: str) -> None:
        if self.allow == "FAIL":
            raise ProcessingTimeNotAllowedError(
                f"{what} uses processing time, which spark.fullwindow.processingTime.allow=FAIL "
                "forbids (the default in BATCH runtime mode, where results must not depend on "
                "the wall clock). Set it to ALLOW or IGNORE to permit it.")
