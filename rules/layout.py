"""A deployment view flattened into numpy arrays, one layout per scope.

Every rule is evaluated for all instances of its scope at once (all endpoints, all
(endpoint, engine) pairs, or the single deployment). A layout lists those instances and
keeps the stats rows of all of them in one array, grouped by instance and sorted by time
within it. Rows are found with a composite key ``instance * span + time``, so one
``searchsorted`` call finds every instance's window; that is what keeps 25 endpoints x 8
engines x 20 rules in a few milliseconds. Only the rows of a window are ever gathered.

Times are integer microseconds relative to ``t0`` (the earliest time in the view).
Each endpoint's stats frame is converted once (``FrameArrays``) and reused while the
store hands the same frame object; a layout is rebuilt from those when any frame changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .model import DeploymentView

MISSING = object()  # a fact that the view does not have
NAT = np.iinfo(np.int64).min


def to_us(values: Any) -> np.ndarray:
    """Datetimes (Series, Index, array) -> int64 microseconds since the epoch, NaT -> min int."""
    idx = pd.DatetimeIndex(values)
    if idx.tz is None:
        idx = idx.tz_localize("UTC")
    return idx.as_unit("us").asi8.copy()


class FrameArrays:
    """One endpoint's stats frame as time-sorted numpy arrays (columns converted lazily)."""

    def __init__(self, df: pd.DataFrame | None) -> None:
        if df is None or len(df) == 0 or "ts" not in df.columns:
            df = pd.DataFrame({"ts": pd.to_datetime([], utc=True)})
        self.df = df  # held so that id(df) stays valid as a cache key
        t = to_us(df["ts"])
        if len(t) and (t == NAT).any() or (len(t) > 1 and (np.diff(t) < 0).any()):
            good = np.flatnonzero(t != NAT)  # a stats line without a time cannot be windowed
            self.order: np.ndarray | None = good[np.argsort(t[good], kind="stable")]
            t = t[self.order]
        else:
            self.order = None
        self.ts = t
        eng = (pd.to_numeric(df["engine"], errors="coerce").fillna(0).to_numpy(dtype=np.int64)
               if "engine" in df.columns else np.zeros(len(df), dtype=np.int64))
        self.engine = eng if self.order is None else eng[self.order]
        self._cols: dict[str, np.ndarray] = {}
        self._meta: tuple[np.ndarray, np.ndarray] | None = None
        self._eorder: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.ts)

    def column(self, name: str) -> np.ndarray:
        col = self._cols.get(name)
        if col is None:
            df = self.df
            if name not in df.columns:
                col = np.full(len(self.ts), np.nan)
            else:
                s = df[name]
                if s.dtype == np.float64:
                    col = s.to_numpy(copy=False)  # NaN already means "not printed"
                else:
                    col = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
                if self.order is not None:
                    col = col[self.order]
            self._cols[name] = col
        return col

    def meta(self, pos: int) -> tuple[str, int]:
        """source and line_no of the line at sorted position ``pos`` (for evidence)."""
        if self._meta is None:
            df = self.df
            n = len(df)
            src = df["source"].to_numpy(dtype=object) if "source" in df.columns else np.full(n, "", dtype=object)
            line = (pd.to_numeric(df["line_no"], errors="coerce").fillna(0).to_numpy(dtype=np.int64)
                    if "line_no" in df.columns else np.zeros(n, dtype=np.int64))
            self._meta = (src, line)
        row = int(pos if self.order is None else self.order[pos])
        src = self._meta[0][row]
        return (src if isinstance(src, str) else ""), int(self._meta[1][row])

    def engine_order(self) -> np.ndarray:
        """Row order grouping lines by engine, time-sorted within (cached per frame)."""
        if self._eorder is None:
            eng = self.engine
            small = eng.astype(np.int16) if len(eng) and 0 <= eng.min() and eng.max() < 32_000 else eng
            self._eorder = np.argsort(small, kind="stable")  # int16: numpy's radix sort
        return self._eorder


@dataclass
class StatsTable:
    """All endpoints' stats rows, concatenated in endpoint order, time-sorted within."""

    frames: list[FrameArrays]
    starts: np.ndarray  # first row of each endpoint
    ts: np.ndarray  # absolute us
    ep: np.ndarray
    engine: np.ndarray
    _cols: dict[str, np.ndarray] = field(default_factory=dict)

    def column(self, name: str) -> np.ndarray:
        col = self._cols.get(name)
        if col is None:
            parts = [f.column(name) for f in self.frames]
            col = np.concatenate(parts) if parts else np.empty(0)
            self._cols[name] = col
        return col

    def meta(self, row: int) -> tuple[str, int]:
        e = int(self.ep[row])
        return self.frames[e].meta(row - int(self.starts[e]))


@dataclass
class EventIndex:
    """Events of one kind in a layout: sorted composite keys, and undated counts."""

    keys: np.ndarray
    rows: np.ndarray  # positions in the event table, in key order
    undated: np.ndarray  # events without a timestamp, per instance


@dataclass
class EventTable:
    ts: np.ndarray  # relative us, NAT when unknown
    ep: np.ndarray
    engine: np.ndarray  # float, NaN = no engine
    kind: np.ndarray
    source: np.ndarray
    line_no: np.ndarray
    text: np.ndarray
    reason: np.ndarray  # the events' ``reason`` column: what the line says beyond its kind (or None)


@dataclass
class Layout:
    kind: str  # "endpoint" | "engine" | "deployment"
    view: DeploymentView
    ep: np.ndarray  # endpoint index per instance (-1: the deployment)
    engine: np.ndarray  # engine per instance, NaN outside engine scope
    keys: list[tuple[str | None, int | None]]
    ts: np.ndarray  # row times (relative us), grouped by instance, sorted within
    key: np.ndarray  # composite row keys, ascending
    row_src: np.ndarray | None  # layout row -> stats table row (None: the same)
    span: int
    t0: int
    stats: StatsTable
    events: EventTable
    _events: dict[str, EventIndex] = field(default_factory=dict)
    index: dict[tuple[str | None, int | None], int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.index = {k: i for i, k in enumerate(self.keys)}

    @property
    def n(self) -> int:
        return len(self.keys)

    def gather(self, name: str, rows: np.ndarray) -> np.ndarray:
        """Values of a stats field at layout rows."""
        src = rows if self.row_src is None else self.row_src[rows]
        return self.stats.column(name)[src]

    def row_meta(self, row: int) -> tuple[str, int, int, int]:
        """source, line_no, engine, absolute us of one layout row (for evidence)."""
        src = row if self.row_src is None else int(self.row_src[row])
        source, line = self.stats.meta(src)
        return source, line, int(self.stats.engine[src]), int(self.ts[row]) + self.t0

    def raw_fact(self, name: str, view: DeploymentView) -> list[Any]:
        """The fact per instance as logged (MISSING when unknown); endpoint facts win.
        Read from the evaluated ``view``: facts are not part of the cached arrays."""
        dep = view.facts.get(name, MISSING)
        eps = view.endpoints
        return [dep if e < 0 else eps[e].facts.get(name, dep) for e in self.ep]

    def event_index(self, kind: str) -> EventIndex:
        got = self._events.get(kind)
        if got is None:
            got = self._build_event_index(kind)
            self._events[kind] = got
        return got

    def _build_event_index(self, kind: str) -> EventIndex:
        ev = self.events
        pos = np.flatnonzero(ev.kind == kind)
        inst = self._event_instances(ev.ep[pos], ev.engine[pos])
        keep = inst >= 0
        pos, inst = pos[keep], inst[keep]
        ts = ev.ts[pos]
        dated = ts != NAT
        undated = np.bincount(inst[~dated], minlength=self.n)
        keys = inst[dated] * self.span + ts[dated]
        order = np.argsort(keys, kind="stable")
        return EventIndex(keys[order], pos[dated][order], undated)

    def _event_instances(self, ep: np.ndarray, engine: np.ndarray) -> np.ndarray:
        if self.kind == "deployment":
            return np.zeros(len(ep), dtype=np.int64)
        if self.kind == "endpoint":
            return ep.astype(np.int64)
        # Engine scope: an event without an engine belongs to the endpoint's only engine.
        names = [e.name for e in self.view.endpoints]
        single: dict[str | None, int] = {}
        for i, (name, _g) in enumerate(self.keys):
            single[name] = i if name not in single else -1
        out = np.full(len(ep), -1, dtype=np.int64)
        for j, (e, g) in enumerate(zip(ep, engine)):
            name = names[e]
            out[j] = single.get(name, -1) if g != g else self.index.get((name, int(g)), -1)
        return out


@dataclass
class Layouts:
    endpoint: Layout
    engine: Layout
    deployment: Layout
    t0: int

    def get(self, kind: str) -> Layout:
        return getattr(self, kind)


def _stats_table(view: DeploymentView, cache: dict[int, FrameArrays]) -> StatsTable:
    frames = []
    for e in view.endpoints:
        fa = cache.get(id(e.stats))
        if fa is None or fa.df is not e.stats or len(fa.df) != len(e.stats if e.stats is not None else ()):
            fa = FrameArrays(e.stats)
        frames.append(fa)
    cache.clear()
    cache.update({id(f.df): f for f in frames})
    sizes = np.array([len(f) for f in frames], dtype=np.int64)
    starts = np.cumsum(sizes) - sizes
    cat = (lambda xs, dt: np.concatenate(xs) if xs else np.empty(0, dtype=dt))
    return StatsTable(frames, starts, cat([f.ts for f in frames], np.int64),
                      np.repeat(np.arange(len(frames), dtype=np.int64), sizes),
                      cat([f.engine for f in frames], np.int64))


class EventArrays:
    """One endpoint's events frame as numpy arrays, in its row order (times absolute)."""

    def __init__(self, df: pd.DataFrame) -> None:
        self.df = df  # held so that id(df) stays valid as a cache key
        n = len(df)
        self.ts = to_us(df["ts"]) if n and "ts" in df.columns else None
        if self.ts is None or "kind" not in df.columns:
            return
        g = pd.to_numeric(df["engine"], errors="coerce") if "engine" in df.columns else None
        self.engine = np.full(n, np.nan) if g is None else g.to_numpy(dtype=np.float64, na_value=np.nan)
        self.kind = df["kind"].astype(object).to_numpy()
        self.source = df["source"].astype(object).to_numpy() if "source" in df.columns else np.full(n, "", dtype=object)
        self.line = (pd.to_numeric(df["line_no"], errors="coerce").fillna(0).to_numpy(dtype=np.int64)
                     if "line_no" in df.columns else np.zeros(n, dtype=np.int64))
        self.text = df["text"].astype(object).to_numpy() if "text" in df.columns else np.full(n, "", dtype=object)
        self.reason = (df["reason"].astype(object).to_numpy() if "reason" in df.columns
                       else np.full(n, None, dtype=object))

    @property
    def usable(self) -> bool:
        return self.ts is not None and "kind" in self.df.columns


def _event_arrays(view: DeploymentView, cache: dict[int, EventArrays]) -> list[EventArrays | None]:
    """Each endpoint's event arrays, converted once per frame (a live store hands a new frame only
    to an endpoint that logged: on a big job one of 72 at a time)."""
    out: list[EventArrays | None] = []
    for e in view.endpoints:
        if e.events is None:
            out.append(None)
            continue
        ea = cache.get(id(e.events))
        if ea is None or ea.df is not e.events or len(ea.df) != len(e.events):
            ea = EventArrays(e.events)
        out.append(ea)
    cache.clear()
    cache.update({id(ea.df): ea for ea in out if ea is not None})
    return out


def _event_table(t0: int, arrays: list[EventArrays | None]) -> EventTable:
    ts, ep, eng, kind, src, line, text, reason = [], [], [], [], [], [], [], []
    for i, ea in enumerate(arrays):
        if ea is None or not ea.usable:
            continue
        t = ea.ts
        ts.append(np.where(t == NAT, NAT, t - t0))
        ep.append(np.full(len(t), i, dtype=np.int64))
        eng.append(ea.engine)
        kind.append(ea.kind)
        src.append(ea.source)
        line.append(ea.line)
        text.append(ea.text)
        reason.append(ea.reason)
    if not ts:
        e64, eo = np.empty(0, dtype=np.int64), np.empty(0, dtype=object)
        return EventTable(e64, e64, np.empty(0), eo, eo, e64, eo, eo)
    return EventTable(*(np.concatenate(x) for x in (ts, ep, eng, kind, src, line, text, reason)))


def build_layouts(view: DeploymentView, cache: dict[int, FrameArrays] | None = None,
                  event_cache: dict[int, EventArrays] | None = None) -> Layouts:
    """Layouts of all three scopes. ``cache`` and ``event_cache`` keep converted stats and events
    frames between calls."""
    stats = _stats_table(view, {} if cache is None else cache)
    event_arrays = _event_arrays(view, {} if event_cache is None else event_cache)
    ev_ts = [None if ea is None else ea.ts for ea in event_arrays]
    # Each frame is time-sorted: its first and last lines bound it.
    dated = [f.ts[[0, -1]] for f in stats.frames if len(f)]
    dated += [x[x != NAT] for x in ev_ts if x is not None]
    lo = min((int(x.min()) for x in dated if len(x)), default=0)
    hi = max((int(x.max()) for x in dated if len(x)), default=0)
    t0, span = lo, hi - lo + 2
    events = _event_table(t0, event_arrays)
    rel = stats.ts - t0

    # Endpoint scope: instance i = endpoint i; rows are already grouped that way.
    names = [e.name for e in view.endpoints]
    ep_layout = Layout("endpoint", view, np.arange(len(names), dtype=np.int64),
                       np.full(len(names), np.nan), [(name, None) for name in names], rel,
                       stats.ep * span + rel, None, span, t0, stats, events)

    # Engine scope: (endpoint, engine) pairs, declared engines and engines seen in stats.
    # An endpoint's engines are consecutive instances, so grouping its rows by engine
    # (cached per frame) groups the whole table by instance: no global sort.
    keys: list[tuple[str | None, int | None]] = []
    inst_ep, inst_eng, orders, insts = [], [], [], []
    for i, e in enumerate(view.endpoints):
        fa = stats.frames[i]
        a = int(stats.starts[i])
        seen = np.unique(fa.engine)
        engines = np.array(sorted(set(int(x) for x in e.engines) | set(seen.tolist())), dtype=np.int64)
        eo = fa.engine_order()
        orders.append(eo + a)
        insts.append(len(keys) + np.searchsorted(engines, fa.engine[eo]))
        for g in engines.tolist():
            keys.append((e.name, g))
            inst_ep.append(i)
            inst_eng.append(float(g))
    order = np.concatenate(orders) if orders else np.empty(0, dtype=np.int64)
    row_inst = np.concatenate(insts) if insts else np.empty(0, dtype=np.int64)
    eng_rel = rel[order]
    eng_layout = Layout("engine", view, np.array(inst_ep, dtype=np.int64),
                        np.array(inst_eng, dtype=np.float64), keys, eng_rel,
                        row_inst * span + eng_rel, order, span, t0, stats, events)

    empty = np.empty(0, dtype=np.int64)
    dep_layout = Layout("deployment", view, np.array([-1], dtype=np.int64), np.array([np.nan]),
                        [(None, None)], empty, empty, None, span, t0, stats, events)
    return Layouts(ep_layout, eng_layout, dep_layout, t0)
