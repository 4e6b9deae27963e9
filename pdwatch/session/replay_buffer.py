"""A replay's events, all read before the clock starts, ordered by time and released up to it.

Lines without a timestamp go with the previous line of their file (before the first stamped
line of a file: at the very start). ``load`` sorts the events once the sources are done and
finds the logs' time range and the rules' evaluation grid; ``release(upto)`` hands out the
events up to a time, once each; ``rewind`` starts handing them out again (a backwards seek).
"""

from __future__ import annotations

import bisect
from typing import Callable
from datetime import datetime, timedelta, timezone
from statistics import median

import pandas as pd

from pdwatch.parsers import Event

DEFAULT_INTERVAL_S = 10.0
MAX_STEPS = 3000  # as analysis: a days-long replay at max speed is evaluated on a coarser grid
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_US = timedelta(microseconds=1)
_NO_TS = -(1 << 62)  # lines with no timestamp before the first one of their file


class ReplayBuffer:
    def __init__(self) -> None:
        self._events: list[Event] = []
        self._keys: list[int] = []  # microseconds since the epoch, once loaded
        self._released = 0
        self.loaded = False
        self.start: pd.Timestamp | None = None  # the logs' first and last timestamps
        self.end: pd.Timestamp | None = None
        self.step = pd.Timedelta(seconds=DEFAULT_INTERVAL_S)  # the rules' evaluation grid
        self.grid_start: pd.Timestamp | None = None  # where the grid is anchored (default: start)

    def extend(self, events: list[Event]) -> None:
        self._events.extend(events)  # stats lines without their text (``Ingest``: ``without_text``)

    def events_as_read(self) -> list[Event]:
        """Before ``load``: the events in the order the sources gave them (``report``'s order)."""
        assert not self.loaded
        return list(self._events)

    def load(self) -> None:
        """All sources read: order the events by time, find the time range and the grid."""
        last: dict[str, int] = {}
        keys: list[int] = []
        for e in self._events:
            if e.ts is not None:
                key = (e.ts - _EPOCH) // _US
                last[e.source] = key
            else:
                key = last.get(e.source, _NO_TS)
            keys.append(key)
        order = sorted(range(len(self._events)), key=keys.__getitem__)
        self._events = [self._events[i] for i in order]
        self._keys = [keys[i] for i in order]
        stamped = [k for k in self._keys if k != _NO_TS]
        if stamped:
            self.start = pd.Timestamp(stamped[0], unit="us", tz="UTC")
            self.end = pd.Timestamp(stamped[-1], unit="us", tz="UTC")
            self.step = self._grid_step()
            self.grid_start = self.start
        self.loaded = True

    def merge(self, events: list[Event], patch: Callable[[Event], Event] | None = None) -> None:
        """Before anything is released: ``events`` (timestamped: recorded scrapes) go in at their
        times, and every buffered event is passed through ``patch``."""
        assert self.loaded and self._released == 0
        if patch is not None:
            self._events = [patch(e) for e in self._events]
        extra = sorted((((e.ts - _EPOCH) // _US, e) for e in events if e.ts is not None), key=lambda p: p[0])
        if not extra:
            return
        keys, merged = list(self._keys), list(self._events)
        for key, event in extra:
            at = bisect.bisect_right(keys, key)
            keys.insert(at, key)
            merged.insert(at, event)
        self._keys, self._events = keys, merged

    def align_grid(self, start: pd.Timestamp, step: pd.Timedelta) -> None:
        """Evaluate on another grid (``report``'s, once the run history knows it), so that the
        replay's findings start and end where the report's do."""
        self.grid_start, self.step = start, step

    def has_kind_but(self, kinds: frozenset[str]) -> bool:
        """Whether any event read is of a kind other than ``kinds``."""
        return any(e.kind not in kinds for e in self._events)

    def release(self, upto: pd.Timestamp) -> list[Event]:
        """The events up to ``upto`` not released yet."""
        end = bisect.bisect_right(self._keys, upto.value // 1000, lo=self._released)
        out = self._events[self._released:end]
        self._released = max(self._released, end)
        return out

    def peek(self, upto: pd.Timestamp) -> list[Event]:
        """What ``release(upto)`` would hand out, without handing it out."""
        end = bisect.bisect_right(self._keys, upto.value // 1000, lo=self._released)
        return self._events[self._released:end]

    def release_all(self) -> list[Event]:
        """Every event not released yet (logs without any timestamp: shown at once)."""
        out = self._events[self._released:]
        self._released = len(self._events)
        return out

    def rewind(self) -> None:
        self._released = 0

    def _grid_step(self) -> pd.Timedelta:
        """The smallest engine's median stats interval, coarser when the logs are very long."""
        gaps: dict[tuple[str, int | None], list[float]] = {}
        prev: dict[tuple[str, int | None], float] = {}
        for e, key in zip(self._events, self._keys):
            if e.kind != "stats" or e.ts is None:
                continue
            k = (e.source, e.engine)
            if k in prev and key > prev[k]:
                gaps.setdefault(k, []).append((key - prev[k]) / 1e6)
            prev[k] = key
        step = min((median(g) for g in gaps.values() if g), default=DEFAULT_INTERVAL_S)
        assert self.start is not None and self.end is not None
        span = (self.end - self.start).total_seconds()
        return pd.Timedelta(seconds=max(step, span / MAX_STEPS, 0.5))
