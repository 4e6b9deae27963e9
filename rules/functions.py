"""The whitelist of functions a rule may call: signatures (checked at load) and code.

Parameter kinds:
  series  a per-stats-line expression (fields allowed) - the rows of the window
  cond    a per-stats-line boolean expression
  window  a duration (``60s``), a sample count (``6 samples``), or a computed number of
          seconds (``3 * interval()``); a bare number is rejected (seconds or samples?)
  num     a number (elementwise functions accept per-line numbers too)
  any     any value
  fact / role / kind / prob   a literal: fact name, role (or "*"), event kind, 0..1
  pattern a literal regular expression, compiled at load (``rules.userregex``: a timeout
          on every search, so a catastrophic pattern cannot hang an evaluation)
  peer_num / peer_bool        an expression evaluated for each endpoint of a role
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import reduce as R
from .context import Ctx
from .layout import MISSING, NAT
from .nodes import ANY, BOOL, DUR, NUM, STR, Call, Fn, Lit, Node, Samples, ev
from .userregex import UserPattern
from .values import NAN, broadcast, to_num

ALL_SCOPES = frozenset({"engine", "endpoint", "deployment"})
ENDPOINT_SCOPES = frozenset({"engine", "endpoint"})


# -- windows ---------------------------------------------------------------------------
def select_window(ctx: Ctx, node: Node) -> R.RowSel:
    if isinstance(node, Lit):
        us = round(float(node.value) * 1e6)  # checked at load: 0 < seconds <= 1e9
        return ctx.select(us, ("s", us))
    if isinstance(node, Samples):
        return ctx.select(ctx.interval_us() * node.count, ("n", node.count))
    seconds = np.asarray(to_num(ev(node, ctx)), dtype=np.float64)
    return ctx.select(seconds * 1e6, node.key)


def _series(ctx: Ctx, node: Node, sel: R.RowSel) -> np.ndarray:
    v = to_num(ev(node, ctx.rows(sel)))
    if not isinstance(v, np.ndarray) or v.shape != (sel.total,):
        v = np.full(sel.total, float(v))
    return v


def _reducer(fn: Callable[[R.RowSel, np.ndarray], np.ndarray]) -> Callable[[Ctx, Call], Any]:
    def impl(ctx: Ctx, node: Call) -> np.ndarray:
        sel = select_window(ctx, node.args[-1])
        return fn(sel, _series(ctx, node.args[0], sel))
    return impl


def _quantile_at(q: float | None) -> Callable[[Ctx, Call], Any]:
    def impl(ctx: Ctx, node: Call) -> np.ndarray:
        sel = select_window(ctx, node.args[-1])
        qq = float(node.args[1].value) if q is None else q  # type: ignore[attr-defined]
        return R.quantile(sel, _series(ctx, node.args[0], sel), qq)
    return impl


def _last(ctx: Ctx, node: Call) -> np.ndarray:
    # Without a window: the latest line of the last 3 intervals (older data is stale).
    if len(node.args) > 1:
        sel = select_window(ctx, node.args[1])
    else:
        sel = ctx.select(ctx.interval_us() * 3, ("n", 3))
    return R.last(sel, _series(ctx, node.args[0], sel))


def _fraction(ctx: Ctx, node: Call) -> np.ndarray:
    sel = select_window(ctx, node.args[1])
    return R.fraction(sel, _series(ctx, node.args[0], sel))


def _samples(ctx: Ctx, node: Call) -> np.ndarray:
    return select_window(ctx, node.args[0]).cnt.astype(np.float64)


def _now_of(ctx: Ctx, which: np.ndarray) -> Any:
    """The clock of the instances ``which``: one time, or one per instance in a sweep (``rules.sweep``)."""
    return ctx.now if ctx.sweep is None else ctx.now[which]


def _since_first(ctx: Ctx, node: Call) -> np.ndarray:
    start, end = ctx.extent()
    has = end > start
    out = np.full(ctx.n, NAN)
    out[has] = (_now_of(ctx, has) - ctx.lay.ts[start[has]]) / 1e6
    return out


def _since_last(ctx: Ctx, node: Call) -> np.ndarray:
    start, end = ctx.extent()
    has = end > start
    out = np.full(ctx.n, NAN)
    out[has] = (_now_of(ctx, has) - ctx.lay.ts[end[has] - 1]) / 1e6
    return out


def _event_bounds(ctx: Ctx, idx: Any, window: Node | None) -> tuple[np.ndarray, np.ndarray]:
    """Per instance, the positions [start, end) in ``idx`` of the dated events in the
    window (no window: every dated event up to now)."""
    lay = ctx.lay
    if ctx.sweep is None:
        inst = np.arange(ctx.n, dtype=np.int64) * lay.span
        hi = min(max(ctx.now, -1), lay.span - 1)
    else:  # a sweep: each instance of the layout at its own clock
        inst = ctx.base_inst * lay.span
        hi = np.clip(ctx.now, -1, lay.span - 1)
    end = np.searchsorted(idx.keys, inst + hi, side="right")
    if window is None:
        return np.searchsorted(idx.keys, inst - 1, side="right"), end
    if isinstance(window, Lit):
        width = np.float64(round(float(window.value) * 1e6))
    elif isinstance(window, Samples):
        width = ctx.interval_us() * window.count
    else:
        width = np.nan_to_num(np.asarray(to_num(ev(window, ctx)), dtype=np.float64) * 1e6)
    lo = np.clip(ctx.now - width, -1, lay.span - 1).astype(np.int64)
    return np.searchsorted(idx.keys, inst + lo, side="right"), end


EPISODE = "__episode_s"  # ctx.cache: per instance, seconds since its alert went pending (templates only)


def _episode(ctx: Ctx, node: Call) -> np.ndarray:
    """Seconds from the start of this finding's episode (when its condition began to hold) to
    now: a window over the whole episode, ``max(waiting, episode())``, for the texts a finding
    keeps. Set by the engine while it renders a finding's texts and value; elsewhere unknown."""
    got = ctx.base.cache.get(EPISODE)
    return np.full(ctx.base.n, NAN) if got is None else got


def uses_episode(node: Node) -> bool:
    return any(isinstance(n, Call) and n.name == "episode" for n in node.walk())


def _since_event(ctx: Ctx, node: Call) -> np.ndarray:
    """Seconds since the newest dated event of a kind up to now (unknown when there is none)."""
    idx = ctx.lay.event_index(node.args[0].value)  # type: ignore[attr-defined]
    start, end = _event_bounds(ctx, idx, None)
    has = end > start
    out = np.full(ctx.n, NAN)
    if has.any():
        inst = (np.arange(ctx.n, dtype=np.int64) if ctx.sweep is None else ctx.base_inst) * ctx.lay.span
        newest = idx.keys[end[has] - 1] - inst[has]
        out[has] = (_now_of(ctx, has) - newest) / 1e6
    return out


def _top_reason(ctx: Ctx, node: Call) -> np.ndarray:
    """The ``reason`` of a kind's events in the window (no window: so far), commonest first, at
    most three: ``"503"``, ``"404, 503"``; ``"none logged"`` when there is no such event. (The store
    keeps a few such events a second, so how often each came is not said.)"""
    idx = ctx.lay.event_index(node.args[0].value)  # type: ignore[attr-defined]
    start, end = _event_bounds(ctx, idx, node.args[1] if len(node.args) > 1 else None)
    reasons = ctx.lay.events.reason
    out = np.empty(ctx.n, dtype=object)
    for i, (a, b) in enumerate(zip(start.tolist(), end.tolist())):
        counts: dict[str, int] = {}
        for p in idx.rows[a:b].tolist():
            r = reasons[p]
            if r is not None and r == r:
                counts[str(r)] = counts.get(str(r), 0) + 1
        ranked = sorted(counts, key=lambda k: (-counts[k], k))[:3]
        out[i] = ", ".join(ranked) if ranked else "none logged"
    return out


def _count_events(ctx: Ctx, node: Call) -> np.ndarray:
    idx = ctx.lay.event_index(node.args[0].value)  # type: ignore[attr-defined]
    windowed = len(node.args) > 1
    start, end = _event_bounds(ctx, idx, node.args[1] if windowed else None)
    if windowed:
        return (end - start).astype(np.float64)
    # No window: everything so far, and events whose time the log did not say.
    undated = idx.undated if ctx.sweep is None else idx.undated[ctx.base_inst]
    return (end - start + undated).astype(np.float64)


def _count_matching(ctx: Ctx, node: Call) -> np.ndarray:
    """count_events of the events whose line matches a user pattern. Only the events
    counted are searched, each line text once (the pattern memoises); a pattern switched
    off after timeouts makes the count unknown."""
    assert ctx.sweep is None, "count_matching is evaluated step by step (rules.sweep.stepped)"
    lay, evs = ctx.lay, ctx.lay.events
    kind = node.args[0].value  # type: ignore[attr-defined]
    pat: UserPattern = node.args[1].pattern  # type: ignore[attr-defined]
    idx = lay.event_index(kind)
    windowed = len(node.args) > 2
    start, end = _event_bounds(ctx, idx, node.args[2] if windowed else None)
    rows: list[list[int]] = [idx.rows[a:b].tolist() for a, b in zip(start, end)]
    if not windowed and idx.undated.any():  # so far: the events without a time count too
        pos = np.flatnonzero((evs.kind == kind) & (evs.ts == NAT))
        for p, i in zip(pos.tolist(), lay._event_instances(evs.ep[pos], evs.engine[pos]).tolist()):
            if i >= 0:
                rows[i].append(p)
    out = np.zeros(ctx.n)
    for i, positions in enumerate(rows):
        for p in positions:
            got = pat.search(evs.text[p], f"{evs.source[p]}:{evs.line_no[p]}")
            if got is None:  # switched off: what it would have found is unknown
                return np.full(ctx.n, NAN)
            out[i] += got
    return out


def _before(ctx: Ctx, node: Call) -> np.ndarray:
    """1 where the first event of kind a came before the first of kind b (so far), else 0.

    Order is the log's own: within one source, line order (vLLM logs a crash and its
    teardown in the same second); across sources, an earlier second. A tie across sources
    cannot be ordered and counts as "not before". No event of kind a: 0; a but no b: 1.
    At engine scope an event without an engine (the API server's) counts for every engine
    of its endpoint: a stop of the server stops each of its engines.
    """
    if ctx.sweep is not None:
        return ctx.sweep.before(ctx, node, _before)
    first_kind, then_kind = node.args[0].value, node.args[1].value  # type: ignore[attr-defined]
    key = ("before", first_kind, then_kind, ctx.now)
    got = ctx.cache.get(key)
    if got is not None:
        return got
    a, b = _events_so_far(ctx, first_kind), _events_so_far(ctx, then_kind)
    out = np.zeros(ctx.n)
    for i, mine in a.items():
        theirs = b.get(i)
        out[i] = 1.0 if not theirs else float(_comes_first(ctx.lay.events, ctx.lay.t0, mine, theirs))
    ctx.cache[key] = out
    return out


def _events_so_far(ctx: Ctx, kind: str) -> dict[int, list[int]]:
    """Per instance, the event-table positions of ``kind`` dated up to now or undated."""
    lay, evs = ctx.lay, ctx.lay.events
    pos = np.flatnonzero(evs.kind == kind)
    if len(pos):
        ts = evs.ts[pos]
        pos = pos[(ts == NAT) | (ts <= ctx.now)]
    out: dict[int, list[int]] = {}
    if not len(pos):
        return out
    inst = lay._event_instances(evs.ep[pos], evs.engine[pos])
    for p, i in zip(pos.tolist(), inst.tolist()):
        if i >= 0:
            out.setdefault(i, []).append(p)
        elif lay.kind == "engine" and evs.engine[p] != evs.engine[p]:  # no engine: all of the endpoint's
            for j in np.flatnonzero(lay.ep == evs.ep[p]).tolist():
                out.setdefault(j, []).append(p)
    return out


def _comes_first(evs: Any, t0: int, a: list[int], b: list[int]) -> bool:
    by_source: dict[Any, list[list[int]]] = {}
    for which, positions in ((0, a), (1, b)):
        for p in positions:
            by_source.setdefault(evs.source[p], [[], []])[which].append(int(evs.line_no[p]))
    shared = [(min(x), min(y)) for x, y in by_source.values() if x and y]
    if shared:
        return all(x < y for x, y in shared)
    dated_a = [int(evs.ts[p]) for p in a if evs.ts[p] != NAT]
    dated_b = [int(evs.ts[p]) for p in b if evs.ts[p] != NAT]
    if len(dated_a) < len(a) or len(dated_b) < len(b) or not dated_a or not dated_b:
        return False  # an undated line in another source cannot be placed
    return (min(dated_a) + t0) // 1_000_000 < (min(dated_b) + t0) // 1_000_000


# -- facts and scope -------------------------------------------------------------------
def _fact(ctx: Ctx, node: Call) -> np.ndarray:
    return ctx.fact(node.args[0].value)  # type: ignore[attr-defined]


def _has_fact(ctx: Ctx, node: Call) -> np.ndarray:
    return ctx.has_fact(node.args[0].value)  # type: ignore[attr-defined]


def _max_capture_size(ctx: Ctx, node: Call) -> np.ndarray:
    # Logged size wins; None = CUDA graphs off (0: every batch runs without a graph);
    # not logged = vLLM's default min(2 * max_num_seqs, 512).
    raw = ctx.raw_fact("max_capture_size")
    seqs = ctx.fact("max_num_seqs")
    seqs = to_num(seqs)
    out = np.empty(ctx.n)
    for i, v in enumerate(raw):
        if v is MISSING:
            out[i] = min(2 * seqs[i], 512.0) if seqs[i] == seqs[i] else NAN
        elif v is None:
            out[i] = 0.0
        else:
            out[i] = to_num(v)
    return out


def _interval(ctx: Ctx, node: Call) -> np.ndarray:
    return ctx.interval_us() / 1e6


def _role(ctx: Ctx, node: Call) -> np.ndarray:
    eps = ctx.lay.view.endpoints
    return ctx.strings([eps[e].role for e in ctx.lay.ep])


def _endpoint(ctx: Ctx, node: Call) -> np.ndarray:
    eps = ctx.lay.view.endpoints
    return ctx.strings([eps[e].name for e in ctx.lay.ep])


def _engines(ctx: Ctx, node: Call) -> np.ndarray:
    elay = ctx.ev.layouts.engine
    per_ep = np.bincount(elay.ep, minlength=len(ctx.lay.view.endpoints)).astype(np.float64)
    return per_ep[ctx.lay.ep]


def _engine(ctx: Ctx, node: Call) -> np.ndarray:
    return ctx.lay.engine.copy()


# -- elementwise -----------------------------------------------------------------------
def _abs(ctx: Ctx, node: Call) -> Any:
    return np.abs(to_num(ev(node.args[0], ctx)))


def _least(ctx: Ctx, node: Call) -> Any:
    return np.minimum(to_num(ev(node.args[0], ctx)), to_num(ev(node.args[1], ctx)))


def _greatest(ctx: Ctx, node: Call) -> Any:
    return np.maximum(to_num(ev(node.args[0], ctx)), to_num(ev(node.args[1], ctx)))


def _coalesce(ctx: Ctx, node: Call) -> Any:
    a, b = ev(node.args[0], ctx), ev(node.args[1], ctx)
    n = ctx.sel.total if ctx.sel is not None else ctx.n
    if (isinstance(a, np.ndarray) and a.dtype == object) or isinstance(a, str) or isinstance(b, str):
        a, b = broadcast(a, n), broadcast(b, n)
        out = np.empty(n, dtype=object)
        out[:] = [y if (x is None or x != x) else x for x, y in zip(a, b)]
        return out
    a, b = to_num(a), to_num(b)
    return np.where(np.isnan(a), b, a)


# -- other endpoints -------------------------------------------------------------------
def _peer(how: str) -> Callable[[Ctx, Call], Any]:
    def impl(ctx: Ctx, node: Call) -> np.ndarray:
        role = node.args[0].value  # type: ignore[attr-defined]
        eps = ctx.lay.view.endpoints
        mask = np.array([role == "*" or e.role == role for e in eps], dtype=bool)
        if how == "count":
            return np.full(ctx.n, float(mask.sum()))
        if ctx.sweep is not None:
            return ctx.sweep.peer(ctx, node.args[1], mask, how)
        ectx = ctx.ev.ctx("endpoint")
        vals = broadcast(to_num(ev(node.args[1], ectx)), ectx.n)[mask]
        return np.full(ctx.n, peer_reduce(how, vals))
    return impl


def peer_reduce(how: str, v: np.ndarray) -> float:
    known = v[~np.isnan(v)]
    if how in ("any", "all"):
        if how == "any":
            return 1.0 if (known == 1).any() else (NAN if len(known) < len(v) else 0.0)
        if (known == 0).any():
            return 0.0
        return NAN if len(known) < len(v) or not len(v) else 1.0
    if not len(known):
        return NAN
    return float({"min": np.min, "max": np.max, "avg": np.mean, "sum": np.sum}[how](known))


def _fn(name, params, returns, kind, impl, scopes=ENDPOINT_SCOPES, optional=0, doc=""):
    return Fn(name, tuple(params), returns, kind, scopes, impl, optional, doc)


_W = ("series", "window")
FUNCTIONS: dict[str, Fn] = {f.name: f for f in [
    _fn("avg", _W, NUM, "window", _reducer(R.mean), doc="mean over the window"),
    _fn("min", _W, NUM, "window", _reducer(R.minimum), doc="smallest value"),
    _fn("max", _W, NUM, "window", _reducer(R.maximum), doc="largest value"),
    _fn("sum", _W, NUM, "window", _reducer(R.total), doc="sum (a condition counts lines)"),
    _fn("stddev", _W, NUM, "window", _reducer(R.stddev), doc="population standard deviation"),
    _fn("first", _W, NUM, "window", _reducer(R.first), doc="oldest line's value"),
    _fn("last", _W, NUM, "window", _last, optional=1, doc="newest line's value (default window: 3 samples)"),
    _fn("delta", _W, NUM, "window", _reducer(lambda s, v: R.last(s, v) - R.first(s, v)),
        doc="newest minus oldest"),
    _fn("slope", _W, NUM, "window", _reducer(R.slope), doc="least-squares change per second"),
    _fn("quantile", ("series", "prob", "window"), NUM, "window", _quantile_at(None), doc="q-quantile"),
    _fn("p50", _W, NUM, "window", _quantile_at(0.5), doc="median"),
    _fn("p90", _W, NUM, "window", _quantile_at(0.9), doc="90th percentile"),
    _fn("p99", _W, NUM, "window", _quantile_at(0.99), doc="99th percentile"),
    _fn("fraction", ("cond", "window"), NUM, "window", _fraction,
        doc="share of lines (0..1) where the condition holds"),
    _fn("samples", ("window",), NUM, "window", _samples, doc="stats lines in the window"),
    _fn("count_events", ("kind", "window"), NUM, "window", _count_events, scopes=ALL_SCOPES,
        optional=1, doc="events of a kind in the window (no window: so far)"),
    _fn("top_reason", ("kind", "window"), STR, "window", _top_reason, scopes=ALL_SCOPES, optional=1,
        doc="the reasons of a kind's events in the window (no window: so far), commonest first"),
    _fn("count_matching", ("kind", "pattern", "window"), NUM, "window", _count_matching, scopes=ALL_SCOPES,
        optional=1, doc="events of a kind whose line matches a regular expression, in the window / so far"),
    _fn("episode", (), NUM, "inst", _episode, scopes=ALL_SCOPES,
        doc="seconds since this finding's condition began to hold (in value and texts: a window over its episode)"),
    _fn("since_event", ("kind",), NUM, "inst", _since_event, scopes=ALL_SCOPES,
        doc="seconds since the newest event of a kind (none so far: unknown)"),
    _fn("before", ("kind", "kind"), BOOL, "inst", _before, scopes=ALL_SCOPES,
        doc="the first event of the first kind came before the first of the second (line order within a log)"),
    _fn("since_first", (), NUM, "inst", _since_first, doc="seconds since the first stats line"),
    _fn("since_last", (), NUM, "inst", _since_last, doc="seconds since the latest stats line"),
    _fn("fact", ("fact",), ANY, "inst", _fact, scopes=ALL_SCOPES, doc="a start-up fact"),
    _fn("has_fact", ("fact",), BOOL, "inst", _has_fact, scopes=ALL_SCOPES, doc="is the fact known"),
    _fn("max_capture_size", (), NUM, "inst", _max_capture_size,
        doc="largest CUDA-graph batch (default min(2*max_num_seqs, 512); 0 = no graphs)"),
    _fn("interval", (), NUM, "inst", _interval, scopes=ALL_SCOPES, doc="stats interval, seconds"),
    _fn("role", (), STR, "inst", _role, doc="the endpoint's role"),
    _fn("endpoint", (), STR, "inst", _endpoint, doc="the endpoint's name"),
    _fn("engines", (), NUM, "inst", _engines, doc="number of engines (DP ranks)"),
    _fn("engine", (), NUM, "inst", _engine, scopes=frozenset({"engine"}), doc="this engine's DP rank"),
    _fn("abs", ("num",), NUM, "elem", _abs, scopes=ALL_SCOPES, doc="absolute value"),
    _fn("least", ("num", "num"), NUM, "elem", _least, scopes=ALL_SCOPES, doc="smaller of two"),
    _fn("greatest", ("num", "num"), NUM, "elem", _greatest, scopes=ALL_SCOPES, doc="larger of two"),
    _fn("coalesce", ("any", "any"), ANY, "elem", _coalesce, scopes=ALL_SCOPES,
        doc="first value unless unknown, else the second"),
    _fn("peer_any", ("role", "peer_bool"), BOOL, "peer", _peer("any"), scopes=ALL_SCOPES,
        doc="true if it holds on some endpoint of the role"),
    _fn("peer_all", ("role", "peer_bool"), BOOL, "peer", _peer("all"), scopes=ALL_SCOPES,
        doc="true if it holds on every endpoint of the role (none: unknown)"),
    _fn("peer_min", ("role", "peer_num"), NUM, "peer", _peer("min"), scopes=ALL_SCOPES, doc="smallest"),
    _fn("peer_max", ("role", "peer_num"), NUM, "peer", _peer("max"), scopes=ALL_SCOPES, doc="largest"),
    _fn("peer_avg", ("role", "peer_num"), NUM, "peer", _peer("avg"), scopes=ALL_SCOPES, doc="mean"),
    _fn("peer_sum", ("role", "peer_num"), NUM, "peer", _peer("sum"), scopes=ALL_SCOPES, doc="sum"),
    _fn("peer_count", ("role",), NUM, "peer", _peer("count"), scopes=ALL_SCOPES,
        doc="number of endpoints of the role"),
]}

assert all(t in (NUM, BOOL, STR, DUR, ANY) for t in (f.returns for f in FUNCTIONS.values()))
