"""One evaluation: a clock over a set of layouts, with the caches rules share.

``Ctx`` is what an expression node evaluates against: a layout (the instances), the clock,
and, inside a window function, the selected rows. Instance-level results are cached per
node text, so ``avg(waiting, 1m)`` used by five rules is computed once per evaluation;
window row selections are cached per window width.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .layout import MISSING, Layout, Layouts
from .model import DEFAULT_STATS_INTERVAL_S, DeploymentView
from .reduce import RowSel
from .span import Span
from .values import NAN, broadcast

DEFAULT_INTERVAL_US = int(DEFAULT_STATS_INTERVAL_S * 1e6)


class Evaluation:
    """The clock (``now``, relative us) and per-layout caches for one ``evaluate`` call."""

    def __init__(self, layouts: Layouts, now_abs_us: int, view: DeploymentView | None = None) -> None:
        self.layouts = layouts
        self.view = view if view is not None else layouts.endpoint.view  # facts are read from it
        self.now = now_abs_us - layouts.t0
        self._ctx: dict[str, Ctx] = {}

    def ctx(self, kind: str) -> "Ctx":
        got = self._ctx.get(kind)
        if got is None:
            got = Ctx(self, self.layouts.get(kind))
            self._ctx[kind] = got
        return got


class Ctx:
    # A ``rules.sweep.SweepCtx`` evaluates many clock times at once; a plain Ctx has none.
    sweep: Any = None

    def __init__(self, ev: Evaluation, lay: Layout, sel: RowSel | None = None,
                 base: "Ctx | None" = None) -> None:
        self.ev = ev
        self.lay = lay
        self.n = lay.n
        self.sel = sel
        self.base = base or self  # the instance-level context of a row context
        self.cache: dict[str, Any] = {} if base is None else base.cache
        self._sels: dict[Any, RowSel] = {}
        self._iv: np.ndarray | None = None

    @property
    def now(self) -> int:
        return self.ev.now

    def rows(self, sel: RowSel) -> "Ctx":
        return Ctx(self.ev, self.lay, sel, self.base)

    # -- windows -----------------------------------------------------------------------
    def select(self, width_us: Any, cache_key: Any = None) -> RowSel:
        """Rows with now - width < ts <= now, for every instance."""
        if cache_key is not None and cache_key in self._sels:
            return self._sels[cache_key]
        width = np.nan_to_num(np.asarray(width_us, dtype=np.float64), nan=0.0)
        lo = np.maximum(self.now - width, -1.0)
        sel = self.select_between(lo, self.now)
        if cache_key is not None:
            self._sels[cache_key] = sel
        return sel

    def select_between(self, lo: Any, hi: Any) -> RowSel:
        """Rows with lo < ts <= hi (relative us, scalars or per instance)."""
        return rows_between(self.lay, self.instances(), lo, hi, self.now)

    def instances(self) -> np.ndarray:
        """The layout's instance each of this context's places stands for (here: all, in order)."""
        return np.arange(self.n, dtype=np.int64)

    def column(self, name: str) -> np.ndarray:
        sel = self.sel
        col = sel.cache.get(name)
        if col is None:
            col = self.lay.gather(name, sel.idx)
            sel.cache[name] = col
        return col

    def extent(self) -> tuple[np.ndarray, np.ndarray]:
        """Per instance, [start, end) of its rows with ts <= now (no rows gathered)."""
        key = ("extent",)
        got = self.cache.get(key)
        if got is None:
            got = self.cache[key] = rows_up_to(self.lay, self.instances(), self.now)
        return got

    # -- per-instance facts ------------------------------------------------------------
    def fact(self, name: str) -> np.ndarray:
        """Fact per instance: float64 (NaN unknown) when all are numbers/bools, else objects."""
        key = ("fact", name)
        got = self.cache.get(key)
        if got is None:
            raw = self.raw_fact(name)
            if all(v is MISSING or v is None or isinstance(v, (bool, int, float)) for v in raw):
                got = np.array([NAN if v is MISSING or v is None else float(v) for v in raw],
                               dtype=np.float64)
            else:
                got = np.empty(self.n, dtype=object)
                got[:] = [None if v is MISSING else v for v in raw]
            self.cache[key] = got
        return got

    def has_fact(self, name: str) -> np.ndarray:
        return np.array([v is not MISSING for v in self.raw_fact(name)], dtype=np.float64)

    def raw_fact(self, name: str) -> list[Any]:
        return self.lay.raw_fact(name, self.ev.view)

    def strings(self, values: list[Any]) -> np.ndarray:
        out = np.empty(self.n, dtype=object)
        out[:] = values
        return out

    # -- stats interval ----------------------------------------------------------------
    def interval_us(self) -> np.ndarray:
        """Stats interval per instance: the ``stats_interval_s`` fact, else measured, else 10 s."""
        if self._iv is None:
            key = ("interval",)
            got = self.cache.get(key)
            if got is None:
                got = self._interval()
                self.cache[key] = got
            self._iv = got
        return self._iv

    def _interval(self) -> np.ndarray:
        if self.lay.kind == "deployment":
            return self._deployment_interval()
        fact = self.fact("stats_interval_s")
        if fact.dtype == object:
            fact = np.array([v if isinstance(v, (int, float)) else NAN for v in fact], dtype=np.float64)
        out = fact * 1e6
        bad = ~(out > 0)
        if bad.any():
            out = np.where(bad, self._measured_interval_us(bad), out)
        return out

    def _deployment_interval(self) -> np.ndarray:
        # The finest serving endpoint's: a frontend's rows come per scrape or per second of
        # requests, not per vLLM stats interval.
        ep = self.ev.ctx("endpoint").interval_us()
        serving = serving_endpoints(self.lay)
        if len(ep) and serving.any():
            ep = ep[serving]
        return np.array([ep.min() if len(ep) else DEFAULT_INTERVAL_US], dtype=np.float64)

    def span_us(self, span: Span, hold: bool) -> np.ndarray | None:
        """Per instance, in us: ``span`` as a ``for:`` hold (``hold``) or as a ``keep_firing_for:``
        grace; None for a zero grace (none: the alert resolves at once)."""
        if span.is_zero:
            return None if not hold else np.zeros(self.n)
        if span.samples is None:
            return np.full(self.n, float(span.window_us(0)))
        iv = self.interval_us()
        return span.hold_us(iv) if hold else span.window_us(iv)

    def _measured_interval_us(self, needed: np.ndarray) -> np.ndarray:
        # Median spacing of each engine's lines up to now; an endpoint takes the median of
        # its engines (its merged rows interleave engines, so their spacing means nothing).
        # Only the instances ``needed`` (no interval fact) are measured: on every step of a
        # report's clock, measuring all 72 engines of a big run cost more than the rules.
        eng = self.ev.ctx("engine") if self.lay.kind != "engine" else self
        elay = eng.lay
        start, end = eng.extent()
        start = np.maximum(start, end - 64)  # the latest lines say the current interval
        engines_needed = needed if self.lay.kind == "engine" else np.isin(elay.ep, np.flatnonzero(needed))
        per_engine = np.full(elay.n, float(DEFAULT_INTERVAL_US))
        for i in np.flatnonzero((end - start >= 2) & engines_needed):
            d = np.diff(elay.ts[start[i]:end[i]])
            d = d[d > 0]
            if len(d):
                per_engine[i] = float(np.median(d))
        if self.lay.kind == "engine":
            return per_engine
        out = np.full(self.n, float(DEFAULT_INTERVAL_US))
        for i in np.flatnonzero(needed):
            mine = per_engine[elay.ep == i]
            if len(mine):
                out[i] = float(np.median(mine))
        return out

    def full(self, v: Any) -> np.ndarray:
        return broadcast(v, self.n)


# -- window bounds: shared by a step's context and a sweep's (rules.sweep) --------------------------------

def rows_between(lay: Layout, inst: np.ndarray, lo: Any, hi: Any, now: Any) -> RowSel:
    """The rows of instances ``inst`` with lo < ts <= hi (relative us, scalars or one per place), their
    times relative to ``now`` (in s)."""
    span = lay.span
    lo = np.clip(np.asarray(lo, dtype=np.float64), -1, span - 1).astype(np.int64)
    hi = np.clip(np.asarray(hi, dtype=np.float64), -1, span - 1).astype(np.int64)
    base = inst * span
    start = np.searchsorted(lay.key, base + lo, side="right")
    end = np.searchsorted(lay.key, base + hi, side="right")
    cnt = np.maximum(end - start, 0)
    off = np.cumsum(cnt) - cnt
    tot = int(cnt.sum())
    rows_inst = np.repeat(np.arange(len(inst), dtype=np.int64), cnt)
    idx = np.arange(tot, dtype=np.int64) + np.repeat(start - off, cnt)
    ts = (lay.ts[idx] - (now[rows_inst] if isinstance(now, np.ndarray) else now)) / 1e6
    return RowSel(idx, rows_inst, off, cnt, ts)


def rows_up_to(lay: Layout, inst: np.ndarray, now: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per place, [start, end) of instance ``inst``'s rows with ts <= now (no rows gathered)."""
    base = inst * lay.span
    hi = np.clip(now, -1, lay.span - 1)
    return (np.searchsorted(lay.key, base - 1, side="right"),
            np.searchsorted(lay.key, base + hi, side="right"))


def serving_endpoints(lay: Layout) -> np.ndarray:
    """Which of the view's endpoints serve (a frontend does not)."""
    return np.array([e.role != "frontend" for e in lay.view.endpoints], dtype=bool)
