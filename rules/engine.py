"""The rule engine: rules x scope instances -> Prometheus-style alert states.

``RuleEngine.evaluate(view, now)`` is the one loop live, replay and tests share: the clock
is an argument and only data with ``ts <= now`` is read. Per rule and instance the state
moves inactive -> pending (condition true) -> firing (true for ``for:``) -> resolved
(false, after ``keep_firing_for:``), as in Prometheus' ``rules/alerting.go``; the states and
every firing period are the ``AlertBook``'s (``rules.alerts``), which the step (``rules.step``)
and the whole-clock sweep (``rules.sweep``, ``evaluate_series``) drive alike. Same rules, same
views, same clock sequence: same results (no wall clock, no randomness, stable orderings).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .alerts import AlertBook
from .context import Evaluation
from .findings import Finding, FindingState
from .layout import EventArrays, FrameArrays, Layouts, build_layouts
from .model import DeploymentView
from .spec import Rule
from .step import step
from .sweep import run


def _to_us(now: datetime) -> int:
    ts = pd.Timestamp(now)
    if ts.tzinfo is None:
        raise ValueError("now must be timezone-aware (UTC)")
    return int(ts.tz_convert("UTC").value) // 1000  # .value is always nanoseconds


def _dt(us: int | None) -> datetime | None:
    return None if us is None else datetime.fromtimestamp(us / 1e6, tz=timezone.utc)


class RuleEngine:
    """Evaluates rules against deployment views; keeps alert states and firing periods."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = [r for r in rules if r.enabled]
        ids = [r.finding for r in self.rules]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"duplicate finding ids: {', '.join(dup)}")
        self._patterns = [p for r in self.rules for p in r.patterns()]
        self.notices: list[str] = []  # every notice so far: a user pattern that timed out
        self._unread: list[str] = []
        self.reset()

    def reset(self) -> None:
        self.book = AlertBook(len(self.rules))
        self._last_now: int | None = None
        self._cache: tuple[Any, DeploymentView, Layouts] | None = None
        self._frames: dict[int, FrameArrays] = {}
        self._event_frames: dict[int, EventArrays] = {}

    # -- evaluation --------------------------------------------------------------------
    def evaluate(self, view: DeploymentView, now: datetime) -> list[FindingState]:
        """Evaluate every rule at ``now``; return pending, firing and just-resolved states.

        Raises:
            ValueError: ``now`` is naive, or earlier than the previous evaluation's.
        """
        now_us = _to_us(now)
        if self._last_now is not None and now_us < self._last_now:
            raise ValueError(f"the clock went backwards: {now} is before the previous evaluation")
        self._last_now = now_us
        evaluation = Evaluation(self._layouts(view), now_us, view)
        out: list[FindingState] = []
        with np.errstate(all="ignore"):  # overflow/NaN are values here (unknown), not warnings
            for ri, rule in enumerate(self.rules):
                out += step(self.book, ri, rule, evaluation.ctx(rule.scope), now_us)
        self._take_pattern_notices()
        return out

    def evaluate_series(self, view: DeploymentView, times: Sequence[datetime],
                        facts_at: Mapping[str, Mapping[str, Sequence[float]]] | None = None) -> None:
        """``evaluate(view, t)`` for each of ``times`` in order, all at once (``rules.sweep``):
        the same alerts, firing periods, findings and notices afterwards (the states each
        evaluation would return are not made). For a report, a replay and its seeks, where the
        whole clock is known; live ticks call ``evaluate``. Both may be mixed in any order.

        ``facts_at``: numeric endpoint facts whose value changes along the clock (a replay's
        store learns ``stats_interval_s`` anew as lines arrive): fact -> endpoint -> its value
        at each of ``times``; the view's value is each endpoint's at the last time.

        Raises:
            ValueError: a naive time, or one earlier than the one before it.
        """
        stamps = [_to_us(t) for t in times]
        previous = self._last_now
        for us in stamps:
            if previous is not None and us < previous:
                raise ValueError(f"the clock went backwards at {_dt(us)}")
            previous = us
        if not stamps:
            return
        run(self.book, self.rules, self._layouts(view), view, np.asarray(stamps, dtype=np.int64),
            {k: dict(v) for k, v in (facts_at or {}).items()}, self._take_pattern_notices)
        self._last_now = stamps[-1]

    def _take_pattern_notices(self) -> None:
        for pattern in self._patterns:
            if pattern.notices:
                new = pattern.take_notices()
                self.notices += new
                self._unread += new

    def take_notices(self) -> list[str]:
        """Notices (one line each, ``file:line: ...``) since the previous call."""
        out, self._unread = self._unread, []
        return out

    def _layouts(self, view: DeploymentView) -> Layouts:
        # Reuse the arrays while the view's frames are the same objects (replay steps the
        # clock over one view); the store hands new frames when data arrives.
        # Facts are not in the arrays (they are read from the view being evaluated), so a
        # store that rebuilds its facts mappings does not cost a rebuild.
        sig = tuple((e.name, e.role, tuple(e.engines), id(e.stats), len(e.stats) if e.stats is not None else -1,
                     id(e.events), len(e.events) if e.events is not None else -1) for e in view.endpoints)
        if self._cache is not None and self._cache[0] == sig:
            return self._cache[2]
        layouts = build_layouts(view, self._frames, self._event_frames)
        self._cache = (sig, view, layouts)  # holding the view keeps the ids above valid
        return layouts

    # -- history -----------------------------------------------------------------------
    def findings(self) -> list[Finding]:
        """Every firing period so far; engine-scope periods of one endpoint that overlap
        are merged into one finding with the union of their engines."""
        return self.book.findings(self.rules)
