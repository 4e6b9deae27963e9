"""A replay's rules on its grid: stretches of the clock evaluated in one sweep each.

A replay releases its events into the store as the clock passes them and evaluates the rules
at every time of its grid, so each evaluation sees the store as it was at that time. Between
two times where the store changes only by rows the rules read by time (stats lines of known
engines, kept events of known engines: ``Store.changes_structure``), the store at the later
time holds the earlier one's rows and more, later ones, which no evaluation at the earlier
time reads. Such a stretch is evaluated at once on the store at its end
(``RuleEngine.evaluate_series``), with the one thing the store learns anew at every time it
gets lines: each endpoint's stats interval (the median of its lines' spacing so far), given
per time. A seek replays the events from the start in a few sweeps; a long jump costs about
one report of that stretch, not one interpreter step per stats interval.

What stays step by step: a few remaining times (a playing replay moves a step or two a tick),
and the hunt for the next finding (it must stop at the step where one fires, with the store
holding the lines up to there).
"""

from __future__ import annotations

import heapq
import time
from typing import Callable

import numpy as np
import pandas as pd

from pdwatch.model.store import Store, interval_gaps
from pdwatch.parsers import Event
from pdwatch.rules import RuleEngine

from .clock import rule_times
from .replay_buffer import ReplayBuffer

MIN_SWEEP = 4  # fewer times than this are stepped (a sweep's set-up costs about a step)
MAX_SWEEP_WITH_BUDGET = 600  # with a tick budget, a stretch is cut so a tick stays short


class _RunningMedian:
    """The median of a growing multiset of floats, as ``np.median`` gives it (two heaps)."""

    def __init__(self) -> None:
        self.low: list[float] = []  # the smaller half, negated (a max-heap)
        self.high: list[float] = []

    def add(self, x: float) -> None:
        if self.low and x > -self.low[0]:
            heapq.heappush(self.high, x)
        else:
            heapq.heappush(self.low, -x)
        if len(self.low) > len(self.high) + 1:
            heapq.heappush(self.high, -heapq.heappop(self.low))
        elif len(self.high) > len(self.low):
            heapq.heappush(self.low, -heapq.heappop(self.high))

    def median(self) -> float:
        if len(self.low) > len(self.high):
            return -self.low[0]
        return (-self.low[0] + self.high[0]) / 2  # np.median of an even count: the mean of the middle two


class ReplayRules:
    """Evaluates a replay's grid; ``reset`` with a fresh store (a backward seek)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._medians: dict[str, tuple[_RunningMedian, int]] = {}  # endpoint -> median, fed up to (us)

    def run(self, store: Store, engine: RuleEngine, buffer: ReplayBuffer, add: Callable[[list[Event]], None],
            times: list[pd.Timestamp], deadline: float | None, started: bool) -> int:
        """Release the events up to each of ``times`` into the store (``add``) and evaluate the
        rules there, as stepping does; returns how many times were evaluated (fewer when the
        monotonic ``deadline`` passed between two stretches; ``started``: a time was evaluated
        before, so stopping at once is allowed)."""
        done = 0
        while done < len(times):
            if deadline is not None and time.monotonic() > deadline and (started or done):
                break
            if len(times) - done < MIN_SWEEP:
                add(buffer.release(times[done]))
                engine.evaluate(store.view(), times[done].floor("us").to_pydatetime())
                self._medians.clear()  # the next sweep feeds its medians afresh
                done += 1
                continue
            end = self._stretch(store, buffer, add, times, done, deadline is not None)
            view = store.view()
            stretch = times[done:end]
            engine.evaluate_series(view, rule_times(stretch),
                                   {"stats_interval_s": self._intervals(store, view, stretch)})
            done = end
        return done

    def _stretch(self, store: Store, buffer: ReplayBuffer, add: Callable[[list[Event]], None],
                 times: list[pd.Timestamp], first: int, budget: bool) -> int:
        """Release the events of ``times[first]`` (anything may change there), then of the next
        times while they change no structure; returns the end of the stretch."""
        add(buffer.release(times[first]))
        store.flush()  # what the structure is at the stretch's first time (its intervals learned)
        limit = min(len(times), first + MAX_SWEEP_WITH_BUDGET) if budget else len(times)
        end = first + 1
        while end < limit:
            upcoming = buffer.peek(times[end])
            if any(store.changes_structure(e) for e in upcoming):
                break
            add(buffer.release(times[end]))
            end += 1
        return end

    def _intervals(self, store: Store, view, stretch: list[pd.Timestamp]) -> dict[str, list[float]]:
        """Each endpoint's ``stats_interval_s`` at each time of the stretch: what the store's flush at
        that time learned, the median of its lines' spacing up to then."""
        stamps = [t.value // 1000 for t in stretch]
        out: dict[str, list[float]] = {}
        for ep in view.endpoints:
            if "stats_interval_s" not in ep.facts:
                continue
            frame = store.stats(ep.name)
            gaps, at = interval_gaps(frame) if len(frame) >= 2 else (np.empty(0), np.empty(0, dtype=np.int64))
            median, fed = self._medians.get(ep.name, (None, None))
            if median is None:
                median, fed = _RunningMedian(), -(1 << 62)
            order = np.argsort(at, kind="stable")
            gaps, at = gaps[order], at[order]
            k = int(np.searchsorted(at, fed, side="right"))  # the gaps fed already
            values = []
            for stamp in stamps:
                while k < len(at) and at[k] <= stamp:
                    median.add(float(gaps[k]))
                    k += 1
                values.append(median.median() if median.low else float(ep.facts["stats_interval_s"]))
            self._medians[ep.name] = (median, stamps[-1])
            out[ep.name] = values
        return out
