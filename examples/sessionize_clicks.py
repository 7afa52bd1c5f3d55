"""Sessionize click events per user: keyed ``process`` with event-time timers.

A user's clicks belong to one session while the gaps between them stay under 30 minutes.
Each user is one full window (``keyBy("user").window(EndOfStreamWindows.get())``): the function
gets all of that user's clicks at end of input, sorts them by time, and registers an event-time
timer at the end of each session (last click + gap). The timers fire at end of input, in time
order, and each emits its session: user, start, end, clicks, pages.

    .venv/bin/python examples/sessionize_clicks.py
"""
from __future__ import annotations

import datetime as dt

from pyspark.sql import DataFrame, SparkSession

import fullwindow
from fullwindow import EndOfStreamWindows, ProcessWindowFunction

GAP_MS = 30 * 60 * 1000
SESSIONS = ("user string, session_start timestamp, session_end timestamp, clicks int, "
            "pages array<string>")


class Sessionize(ProcessWindowFunction):
    """Cuts one user's clicks into sessions; a session is emitted when its timer fires."""

    def process(self, key, ctx, rows):
        clicks = sorted((r.ts, r.page) for r in rows)  # one user's clicks: small enough to sort
        self.pending = {}
        start, pages, last = None, [], None
        for ts, page in clicks:
            ms = _millis(ts)
            if last is not None and ms - last > GAP_MS:
                self._close(ctx, key, start, last, pages)
                start, pages = None, []
            start = ms if start is None else start
            pages.append(page)
            last = ms
        if start is not None:
            self._close(ctx, key, start, last, pages)
        return []  # the sessions come out of on_timer

    def _close(self, ctx, user, start, last, pages):
        end = last + GAP_MS  # the session times out GAP after its last click
        self.pending[end] = (user, _ts(start), _ts(last), len(pages), pages)
        ctx.register_event_time_timer(end)

    def on_timer(self, timestamp, ctx):
        yield self.pending.pop(timestamp)


def _millis(ts: dt.datetime) -> int:
    return int(ts.replace(tzinfo=dt.timezone.utc).timestamp() * 1000)


def _ts(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).replace(tzinfo=None)


def sessions(clicks: DataFrame) -> DataFrame:
    """``clicks(user, ts, page)`` -> one row per session."""
    return (clicks.keyBy("user").window(EndOfStreamWindows.get())
            .process(Sessionize(), SESSIONS))


def sample_clicks(spark: SparkSession) -> DataFrame:
    t0 = dt.datetime(2024, 6, 1, 9, 0)
    minutes = {"ana": [0, 5, 12, 95, 100], "bo": [3, 40, 41], "cy": [7]}
    rows = [(user, t0 + dt.timedelta(minutes=m), f"/p{i}")
            for user, ms in minutes.items() for i, m in enumerate(ms)]
    return spark.createDataFrame(rows, "user string, ts timestamp, page string")


def main(spark: SparkSession) -> list:
    out = sessions(sample_clicks(spark)).orderBy("user", "session_start")
    out.show(truncate=False)
    return out.collect()


if __name__ == "__main__":
    session = fullwindow.session(conf={"spark.sql.session.timeZone": "UTC",
                                       "spark.ui.showConsoleProgress": "false"})
    session.sparkContext.setLogLevel("ERROR")
    main(session)
    session.stop()
