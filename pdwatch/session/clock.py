"""The two clocks of a live session, and the times at which the rules are evaluated.

Watch: the clock is the newest log timestamp plus the wall time elapsed since it arrived
(the wall clock itself for logs written now; logs of another time zone or a past run still
get a clock that moves while they are silent). It never goes back.

Replay: the clock is driven by the logs' own timestamps, ``speed`` x wall time (or ``max``),
can pause, seek and hunt for the next finding; the rules are evaluated on a fixed grid (the
stats interval, from the first timestamp) like the post-mortem analysis, so a finding has the
same start whatever the speed.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone, tzinfo
from typing import Callable

import pandas as pd

from pdwatch.parsers import Event

DEFAULT_INTERVAL_S = 10.0
WATCH_IDLE_EVAL_S = 2.0  # watch: with no new lines, the rules are evaluated at most this often
RECENT_PAST_S = 600.0  # watch: the log time before the newest line judged at start (logs already there)
WATCH_MAX_STEPS = 600  # watch: a catch-up is evaluated on a coarser grid beyond this many steps


def rule_times(times: list[pd.Timestamp]) -> list[datetime]:
    """Evaluation times as the rule engine takes them: floored to the microsecond, as datetimes.
    Converted as one index: one Timestamp at a time took ~30 ms for an 8 h run's 2,894 steps."""
    return list(pd.DatetimeIndex(times).floor("us").to_pydatetime())


class WatchClock:
    def __init__(self, wall_utc: Callable[[], datetime]) -> None:
        self._wall_utc = wall_utc
        self.newest: pd.Timestamp | None = None  # the newest timestamp seen, and when (wall) it came
        self._newest_wall: float | None = None
        self.now: pd.Timestamp | None = None
        self.display: pd.Timestamp | None = None  # the wall clock until the logs bring a time
        self.last_eval: pd.Timestamp | None = None

    def advance(self, incoming: list[Event], wall: float) -> pd.Timestamp | None:
        """Move the clock by what came in and the wall time; None while nothing had a time
        (logs of the past may still come: the rules' clock never goes back)."""
        newest = max((e.ts for e in incoming if e.ts is not None), default=None)
        if newest is not None and (self.newest is None or pd.Timestamp(newest) > self.newest):
            self.newest, self._newest_wall = pd.Timestamp(newest).tz_convert("UTC"), wall
        if self.newest is None:
            self.display = pd.Timestamp(self._wall_utc())
            return None
        since = wall if self._newest_wall is None else self._newest_wall
        clock = self.newest + pd.Timedelta(seconds=max(0.0, wall - since))
        if self.now is not None and clock < self.now:
            clock = self.now
        self.now = self.display = clock
        return clock

    def due(self, clock: pd.Timestamp, something_new: bool) -> bool:
        """Nothing new: evaluating again only lets time-based rules (silence, holds) see the
        clock move, which a few seconds' resolution serves; evaluating every refresh kept an
        idle dashboard busy."""
        return self.last_eval is None or (clock > self.last_eval and (
            something_new or clock - self.last_eval >= pd.Timedelta(seconds=WATCH_IDLE_EVAL_S)))

    def steps(self, clock: pd.Timestamp, first_ts: Callable[[], pd.Timestamp | None],
              interval_s: float | None) -> list[pd.Timestamp]:
        """The times to evaluate at, up to ``clock``: the rule clock steps through what came in
        since the last evaluation at the stats interval, as a replay does, so a ``for:`` hold
        can be met by lines that arrived at once. On the first evaluation that is the recent
        past of logs that were already there (at most RECENT_PAST_S of log time): watching
        a job in trouble shows the trouble at once."""
        start = self.last_eval
        if start is None:
            first = first_ts()
            if first is None:
                return [clock]
            start = max(first, clock - pd.Timedelta(seconds=RECENT_PAST_S))
        step = pd.Timedelta(seconds=interval_s or DEFAULT_INTERVAL_S)
        if clock - start <= step:
            return [clock]
        step = max(step, (clock - start) / WATCH_MAX_STEPS)
        times = list(pd.date_range(start + step, clock, freq=step)) if self.last_eval is not None else \
            list(pd.date_range(start, clock, freq=step))
        return times if times and times[-1] == clock else times + [clock]


class ReplayClock:
    def __init__(self, speed: float, start: pd.Timestamp | pd.Timedelta | str | None, tz: tzinfo | None) -> None:
        self.speed = speed
        self.paused = False
        self.start_arg = start
        self.tz = tz
        self.now: pd.Timestamp | None = None
        self.last_eval: pd.Timestamp | None = None
        self._last_wall: float | None = None
        self.seek_to: pd.Timestamp | None = None  # a seek (or a forward jump) still being played
        self.hunt: tuple | None = None  # "next finding": the findings of the clock; run until a new one

    # -- controls --------------------------------------------------------------------------------
    def toggle_pause(self) -> bool:
        self.paused = not self.paused
        return self.paused

    def faster(self) -> float:
        if not math.isinf(self.speed):
            self.speed = min(self.speed * 2, 1e6)
        return self.speed

    def slower(self) -> float:
        self.speed = 1e6 / 2 if math.isinf(self.speed) else max(self.speed / 2, 0.125)
        return self.speed

    # -- moving ----------------------------------------------------------------------------------
    def target(self, wall: float, start: pd.Timestamp, end: pd.Timestamp) -> pd.Timestamp:
        """Where this tick takes the clock: the start on the first tick, then as far as the
        speed, a seek or a hunt says (never past the end)."""
        if self.now is None:
            self.now = self._initial(start, end)
            self._last_wall = wall
            return self.now
        elapsed = 0.0 if self._last_wall is None else max(0.0, wall - self._last_wall)
        self._last_wall = wall
        target = self.now
        if self.hunt is not None:
            target = end
        elif self.seek_to is not None:
            target = self.seek_to
        elif self.paused:
            pass
        elif math.isinf(self.speed):
            target = end
        else:
            target = self.now + pd.Timedelta(seconds=elapsed * self.speed)
        return min(target, end)

    def grid(self, target: pd.Timestamp, start: pd.Timestamp, end: pd.Timestamp,
             step: pd.Timedelta) -> list[pd.Timestamp]:
        """The evaluation times after the last one up to ``target``, on the grid anchored at the
        logs' first timestamp, and the logs' end once the target reaches it."""
        times: list[pd.Timestamp] = []
        nxt = start
        if self.last_eval is not None:  # back on the grid anchored at the first timestamp
            n = math.ceil((self.last_eval - start) / step + 1e-9)
            nxt = start + n * step
        while nxt <= target:
            times.append(nxt)
            nxt = nxt + step
        if target >= end and (not times or times[-1] < end) and (self.last_eval is None or self.last_eval < end):
            times.append(end)
        return times

    def resolve(self, spec: pd.Timestamp | pd.Timedelta | str, anchor: pd.Timestamp | None,
                start: pd.Timestamp, end: pd.Timestamp) -> pd.Timestamp:
        """A parsed time in the logs' range: an offset from ``anchor`` (None: +N from the first
        timestamp, -N from the last), HH:MM[:SS] on the day of the logs it falls in."""
        if isinstance(spec, pd.Timedelta):
            base = anchor if anchor is not None else start if spec >= pd.Timedelta(0) else end
            return base + spec
        if isinstance(spec, str):
            parts = [float(p) for p in spec.split(":")] + [0.0]
            tz = self.tz or timezone.utc
            first_day = start.tz_convert(tz).normalize()
            days = (end.tz_convert(tz).normalize() - first_day).days
            candidates = [(first_day + pd.Timedelta(days=d, hours=parts[0], minutes=parts[1], seconds=parts[2]))
                          .tz_convert("UTC") for d in range(days + 1)]
            # the first day on which that time is not before the minute the logs start
            return next((c for c in candidates if c + pd.Timedelta(minutes=1) > start), candidates[0])
        return spec

    def _initial(self, start: pd.Timestamp, end: pd.Timestamp) -> pd.Timestamp:
        first = None if self.start_arg is None else self.resolve(self.start_arg, None, start, end)
        if first is None or first < start:
            return start
        return min(first, end)
