"""Every evaluation of a run at once: the rule clock swept over whole columns.

A report (and a replay, and a seek in one) evaluates every rule at every stats interval of
the run: the same clock a live dashboard steps through one tick at a time. Stepping the
interpreter once per interval cost ~2-3 ms a step (15 rules), so a report's time grew with the run's
length. ``RuleEngine.evaluate_series(view, times)`` gives what ``evaluate(view, t)`` for each
of ``times`` in order would leave behind (alerts, firing periods, texts, values, evidence,
notices), with each expression evaluated once for all the times:

* **pairs**: an instance of a rule's scope at one clock time is one *pair*; a ``SweepCtx``
  holds many (a grid: every instance at every time of a chunk). Window functions find every
  pair's rows with one ``searchsorted`` on the layout's composite keys, exactly as a step
  finds every instance's, and reduce them with the same numpy calls in the same row order:
  every value is bit for bit the step engine's. Nodes that do not depend on the clock (facts,
  roles, ``peer_count``...) are evaluated once on the layout and spread to the pairs.
  ``and``/``or`` evaluate their right side only on the pairs the left side leaves open (the
  step engine skips it when the left side decides every instance of a step): the values are
  the same, and a one-hour window behind a rare condition is gathered only where needed.
* **states**: ``for:`` holds, ``keep_firing_for:``, pending/firing/resolved are a walk over
  the runs of each instance's condition (not its steps): where a hold is met, where a grace
  period ends.
* **texts and evidence** are evaluated only where they are kept: a finding's summary and
  value at the evaluation where it fired and at the last one where its condition held, its
  evidence lines over the windows of the steps it fired in (the same lines a step-by-step
  collection keeps, shown equal in ``tests/rules/test_rule_sweep.py``).

A rule that cannot be swept exactly is stepped, alone (``stepped``): ``count_matching``,
whose user pattern may time out and be switched off after a few timeouts, which depends
on the order of its searches.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

from .alerts import Alert, AlertBook, engines_of
from .context import DEFAULT_INTERVAL_US, Ctx, Evaluation, serving_endpoints
from .evidence import EvidenceLog, Quote, add_event_quotes, lookback_us, stats_text
from .findings import FIRING, PENDING
from .functions import peer_reduce
from .layout import NAT, Layout, Layouts
from .model import DeploymentView
from .nodes import Binary, Call, Field, Lit, Node, Samples, Unary, scalar, ev
from .reduce import RowSel
from .spec import Rule
from .step import step
from .texts import refresh
from .values import NAN, broadcast, logic_and, logic_or, to_num

# Rows a chunk of the clock may gather in one window (the time axis is cut so that the
# widest window of any rule stays under it): memory stays bounded whatever the run's length.
# Measured on the simulated 8 h run (2,894 times, 24 engines): 2M rows +73 MB of peak RSS and
# 0.16 s of rules, 1M +50 MB and 0.2 s, 0.5M +34 MB and 0.26 s, 0.2M +11 MB and 0.44 s.
ROW_BUDGET = 1_000_000
STEP_AT_MOST = 2
_CLOCKLESS_CALLS = frozenset({"fact", "has_fact", "max_capture_size", "role", "endpoint", "engines", "engine",
                              "abs", "least", "greatest", "coalesce", "peer_count", "peer_any", "peer_all",
                              "peer_min", "peer_max", "peer_avg", "peer_sum"})


def stepped(rule: Rule) -> str | None:
    """Why ``rule`` must be evaluated step by step (None: it is swept)."""
    exprs = [rule.expr, rule.when, rule.value, rule.evidence.rows, rule.evidence.rank]
    exprs += [e for t in (rule.summary, rule.explanation, rule.recommendation) for e in t.exprs]
    for v in rule.variants:
        exprs += [v.when] + [e for t in (v.summary, v.explanation, v.recommendation) if t for e in t.exprs]
    for e in exprs:
        if e is not None and any(isinstance(n, Call) and n.name == "count_matching" for n in e.root.walk()):
            return "count_matching: a user pattern's timeouts depend on the order of its searches"
    return None


def facts_read(node: Node) -> frozenset[str]:
    """The facts a node reads (``fact``, ``has_fact``, ``max_capture_size``, ``interval``)."""
    got = getattr(node, "_facts_read", None)
    if got is None:
        names: set[str] = set()
        for n in node.walk():
            if isinstance(n, Call):
                if n.name in ("fact", "has_fact") and n.args and isinstance(n.args[0], Lit):
                    names.add(str(n.args[0].value))
                elif n.name == "max_capture_size":
                    names |= {"max_capture_size", "max_num_seqs"}
                elif n.name == "interval":
                    names.add("stats_interval_s")
            elif isinstance(n, Samples):
                names.add("stats_interval_s")
        got = frozenset(names)
        node._facts_read = got  # type: ignore[attr-defined]
    return got


def clockless(node: Node) -> bool:
    """The node's value does not depend on the clock (so not on the evaluation time)."""
    got = getattr(node, "_clockless", None)
    if got is None:
        if isinstance(node, Lit):
            got = True
        elif isinstance(node, (Field, Samples)):
            got = False
        elif isinstance(node, (Unary, Binary)):
            got = all(clockless(c) for c in node.children())
        elif isinstance(node, Call):
            got = node.name in _CLOCKLESS_CALLS and all(clockless(c) for c in node.args)
        else:
            got = False
        node._clockless = got  # type: ignore[attr-defined]
    return got


class Sweep:
    """One view evaluated at many clock times (``times``: us relative to the layouts' t0)."""

    def __init__(self, layouts: Layouts, view: DeploymentView, times: np.ndarray,
                 facts_at: dict[str, np.ndarray] | None = None) -> None:
        """``facts_at``: endpoint facts that change along the clock, name -> (times, endpoints)
        array of floats (NaN: the view's value)."""
        self.layouts = layouts
        self.view = view
        self.times = np.asarray(times, dtype=np.int64)
        self.facts_at = facts_at or {}
        self._steps: dict[str, Ctx] = {}
        self._grids: dict[tuple, SweepCtx] = {}

    now = None  # a row context asks its evaluation for nothing else

    def step_ctx(self, kind: str) -> Ctx:
        """A plain context of the layout, for what does not depend on the clock."""
        got = self._steps.get(kind)
        if got is None:
            got = Evaluation(self.layouts, self.layouts.t0, self.view).ctx(kind)
            self._steps[kind] = got
        return got

    def grid(self, kind: str, tset: np.ndarray | None = None) -> "SweepCtx":
        """Every instance of ``kind`` at each time of ``tset`` (indices into ``times``; None: all)."""
        key = (kind, None if tset is None else tset.tobytes())
        got = self._grids.get(key)
        if got is None:
            lay = self.layouts.get(kind)
            t = np.arange(len(self.times), dtype=np.int64) if tset is None else tset
            got = SweepCtx(self, lay, np.repeat(t, lay.n), np.tile(np.arange(lay.n, dtype=np.int64), len(t)))
            self._grids[key] = got
        return got

    def ctx(self, kind: str) -> "SweepCtx":
        return self.grid(kind)

    def points(self, kind: str, tidx: np.ndarray, base: np.ndarray) -> "SweepCtx":
        return SweepCtx(self, self.layouts.get(kind), np.asarray(tidx, dtype=np.int64), np.asarray(base, dtype=np.int64))

    # -- how a node is evaluated over pairs ------------------------------------------------
    def evaluate(self, node: Node, ctx: "SweepCtx") -> Any:
        if clockless(node) and not (self.facts_at and facts_read(node) & self.facts_at.keys()):
            v = ev(node, self.step_ctx(ctx.lay.kind))
            return v[ctx.base_inst] if isinstance(v, np.ndarray) else v
        if isinstance(node, Binary) and node.op in ("and", "or"):
            return self._logic(node, ctx)
        return scalar(node._eval(ctx))

    def _logic(self, node: Binary, ctx: "SweepCtx") -> Any:
        a = ev(node.a, ctx)
        arr = to_num(a)
        is_and = node.op == "and"
        if is_and and np.all(arr == 0):
            return arr
        if not is_and and np.all(arr == 1):
            return arr
        if isinstance(arr, np.ndarray) and arr.shape == (ctx.n,):
            need = arr != 0 if is_and else arr != 1  # the pairs the left side leaves open
            if not need.all():
                sub = ctx.subset(need)
                b = np.full(ctx.n, 0.0 if is_and else 1.0)  # what the left side already decided
                b[need] = broadcast(to_num(ev(node.b, sub)), sub.n)
                return logic_and(a, b) if is_and else logic_or(a, b)
        b = ev(node.b, ctx)
        return logic_and(a, b) if is_and else logic_or(a, b)

    # -- the functions that look across instances or at the clock's past -------------------
    def peer(self, ctx: "SweepCtx", arg: Node, mask: np.ndarray, how: str) -> np.ndarray:
        tset, where = ctx.times_used()
        grid = self.grid("endpoint", tset)
        vals = broadcast(to_num(ev(arg, grid)), grid.n).reshape(len(tset), grid.lay.n)[:, mask]
        if vals.shape[1] == 0:
            per_time = np.full(len(tset), peer_reduce(how, vals[0] if len(vals) else np.empty(0)))
        elif how in ("min", "max"):
            per_time = (np.fmin if how == "min" else np.fmax).reduce(vals, axis=1)
        elif how == "any":
            unknown = np.isnan(vals).any(axis=1)
            per_time = np.where((vals == 1).any(axis=1), 1.0, np.where(unknown, NAN, 0.0))
        elif how == "all":
            unknown = np.isnan(vals).any(axis=1)
            per_time = np.where((vals == 0).any(axis=1), 0.0, np.where(unknown, NAN, 1.0))
        else:  # sums and means as the step engine adds them, one time at a time
            per_time = np.array([peer_reduce(how, row) for row in vals], dtype=np.float64)
        return per_time[where]

    def before(self, ctx: "SweepCtx", node: Call, step_fn: Callable[[Ctx, Call], np.ndarray]) -> np.ndarray:
        """``before(a, b)`` depends on the clock only through which events of a and b it has
        passed: evaluated once per such set, at one of its times."""
        lay = ctx.lay
        evs = lay.events
        kinds = [node.args[0].value, node.args[1].value]  # type: ignore[attr-defined]
        ts = evs.ts[np.isin(evs.kind, kinds)] if len(evs.kind) else np.empty(0, dtype=np.int64)
        breaks = np.unique(ts[ts != NAT])
        passed = np.searchsorted(breaks, ctx.now, side="right")
        out = np.zeros(ctx.n)
        for p in np.unique(passed).tolist():
            which = np.flatnonzero(passed == p)
            at = Evaluation(self.layouts, lay.t0 + int(ctx.now[which[0]]), self.view).ctx(lay.kind)
            out[which] = step_fn(at, node)[ctx.base_inst[which]]
        return out


class SweepCtx(Ctx):
    """``Ctx`` over pairs: instance ``base_inst[k]`` of the layout at time ``times[tidx[k]]``."""

    def __init__(self, sweep: Sweep, lay: Layout, tidx: np.ndarray, base: np.ndarray) -> None:
        self.ev = sweep  # type: ignore[assignment]
        self.sweep = sweep
        self.lay = lay
        self.tidx = tidx
        self.base_inst = base
        self.n = len(base)
        self.sel = None
        self.base = self
        self.cache: dict[Any, Any] = {}
        self._sels: dict[Any, RowSel] = {}
        self._iv: np.ndarray | None = None
        self._now = sweep.times[tidx]
        self._used: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def now(self) -> np.ndarray:  # type: ignore[override]
        return self._now

    def subset(self, mask: np.ndarray) -> "SweepCtx":
        return SweepCtx(self.sweep, self.lay, self.tidx[mask], self.base_inst[mask])

    def times_used(self) -> tuple[np.ndarray, np.ndarray]:
        """The distinct time indices of the pairs, and each pair's position among them."""
        if self._used is None:
            tset = np.unique(self.tidx)
            self._used = (tset, np.searchsorted(tset, self.tidx))
        return self._used

    def instances(self) -> np.ndarray:
        return self.base_inst

    # -- per-instance facts: the layout's, spread to the pairs -------------------------
    def fact(self, name: str) -> np.ndarray:
        key = ("fact", name)
        got = self.cache.get(key)
        if got is None:
            got = self.sweep.step_ctx(self.lay.kind).fact(name)[self.base_inst]
            changing = self._changing(name)
            if changing is not None:
                got = np.where(np.isnan(changing), got, changing) if got.dtype != object else \
                    np.array([g if c != c else c for g, c in zip(got, changing)], dtype=object)
            self.cache[key] = got
        return got

    def _changing(self, name: str) -> np.ndarray | None:
        """The pairs' values of a fact that changes along the clock (NaN: the view's), or None."""
        table = self.sweep.facts_at.get(name)
        if table is None or self.lay.kind == "deployment":
            return None
        ep = self.base_inst if self.lay.kind == "endpoint" else self.lay.ep[self.base_inst]
        return table[self.tidx, ep]

    def has_fact(self, name: str) -> np.ndarray:
        return self.sweep.step_ctx(self.lay.kind).has_fact(name)[self.base_inst]

    def raw_fact(self, name: str) -> list[Any]:
        raw = self.sweep.step_ctx(self.lay.kind).raw_fact(name)
        out = [raw[b] for b in self.base_inst.tolist()]
        changing = self._changing(name)
        if changing is not None:
            out = [x if c != c else float(c) for x, c in zip(out, changing.tolist())]
        return out

    # -- stats interval ----------------------------------------------------------------
    def _deployment_interval(self) -> np.ndarray:
        tset, where = self.times_used()
        grid = self.sweep.grid("endpoint", tset)
        if not grid.lay.n:
            return np.full(self.n, float(DEFAULT_INTERVAL_US))
        per_ep = grid.interval_us().reshape(len(tset), grid.lay.n)
        serving = serving_endpoints(grid.lay)  # the finest serving endpoint's, as a step's
        if serving.any():
            per_ep = per_ep[:, serving]
        return per_ep.min(axis=1)[where]

    def _measured_interval_us(self, needed: np.ndarray) -> np.ndarray:
        default = float(DEFAULT_INTERVAL_US)
        lay = self.lay
        if lay.kind == "engine":
            start, end = self.extent()
            start = np.maximum(start, end - 64)  # the latest lines say the current interval
            out = np.full(self.n, default)
            memo: dict[tuple[int, int], float] = {}
            for k in np.flatnonzero((end - start >= 2) & needed).tolist():
                a, b = int(start[k]), int(end[k])
                got = memo.get((a, b))
                if got is None:
                    d = np.diff(lay.ts[a:b])
                    d = d[d > 0]
                    got = memo[(a, b)] = float(np.median(d)) if len(d) else default
                out[k] = got
            return out
        # Endpoint scope: the median of its engines' intervals at the same time.
        needed_eps = np.unique(self.base_inst[needed])
        tset, where = self.times_used()
        grid = self.sweep.grid("engine", tset)
        elay = grid.lay
        engines_needed = np.tile(np.isin(elay.ep, needed_eps), len(tset))
        per_engine = grid._measured_interval_us(engines_needed).reshape(len(tset), elay.n)
        out = np.full(self.n, default)
        for e in needed_eps.tolist():
            mine = elay.ep == e
            if not mine.any():
                continue
            median = np.median(per_engine[:, mine], axis=1)
            which = needed & (self.base_inst == e)
            out[which] = median[where[which]]
        return out


# --- the engine's loop over a whole clock --------------------------------------------------------


@dataclass
class _Episode:
    """One alert's life within this sweep (it may have begun before and go on after)."""

    key: Any
    inst: int  # base instance index
    alert: Alert
    created: int | None = None  # step it went pending at (None: it was there before)
    fired: int | None = None  # step it fired at in this sweep
    resolved: int | None = None
    deleted: bool = False  # pending, then the condition stopped holding
    last_held: int | None = None  # last step where its condition held
    firing_from: int | None = None  # steps it was firing at (evidence is collected then): [from, to]
    firing_to: int | None = None
    keep_since: int | None = None


def run(book: AlertBook, rules: list[Rule], layouts: Layouts, view: DeploymentView, times_abs: np.ndarray,
        facts_at: dict[str, dict[str, Any]] | None = None, after_step: Callable[[], None] = lambda: None) -> None:
    """Evaluate ``rules`` on ``view`` at each time (absolute us, non-decreasing), moving the alerts of
    ``book`` as a step at each time would. ``facts_at``: endpoint facts that change along the clock,
    name -> endpoint -> value per time. ``after_step``: called after each time a rule was stepped at
    (the engine takes its user patterns' notices there, in the order a step-by-step run would)."""
    t0 = layouts.t0
    times = np.asarray(times_abs, dtype=np.int64) - t0
    changing: dict[str, np.ndarray] = {}
    names = [e.name for e in view.endpoints]
    for fact, per_endpoint in (facts_at or {}).items():
        table = np.full((len(times), len(names)), np.nan)
        for e, name in enumerate(names):
            if name in per_endpoint:
                table[:, e] = np.asarray(per_endpoint[name], dtype=np.float64)
        changing[fact] = table
    # Two times or fewer are stepped: a sweep's set-up (~4 ms for the built-in rules) costs two steps.
    swept = [ri for ri, rule in enumerate(rules) if stepped(rule) is None] if len(times) > STEP_AT_MOST else []
    stepped_rules = [ri for ri in range(len(rules)) if ri not in set(swept)]
    with np.errstate(all="ignore"):
        if swept:
            truths = _conditions(rules, layouts, view, times, swept, changing)
            for ri in swept:
                _advance(book, ri, rules[ri], layouts, view, times, changing, *truths[ri])
    for k, t in enumerate(times_abs.tolist() if stepped_rules else []):
        evaluation = Evaluation(layouts, int(t), _view_at(view, changing, k))
        with np.errstate(all="ignore"):
            for ri in stepped_rules:
                rule = rules[ri]
                step(book, ri, rule, evaluation.ctx(rule.scope), int(t))
        after_step()


def _view_at(view: DeploymentView, changing: dict[str, np.ndarray], k: int) -> DeploymentView:
    """The view with the changing facts' values of the ``k``-th time."""
    if not changing:
        return view
    endpoints = []
    for e, ep in enumerate(view.endpoints):
        facts = dict(ep.facts)
        for name, table in changing.items():
            if table[k, e] == table[k, e]:
                facts[name] = float(table[k, e])
        endpoints.append(replace(ep, facts=facts))
    return DeploymentView(tuple(endpoints), view.facts)


def _widest_window_s(rules: list[Rule], view: DeploymentView) -> float:
    """The widest window any rule gathers rows over, in seconds (a computed one counts as 1 h)."""
    intervals = [e.facts.get("stats_interval_s") for e in view.endpoints]
    iv = max([x for x in intervals if isinstance(x, (int, float)) and x > 0] or [DEFAULT_INTERVAL_US / 1e6])
    widest = 3 * iv
    for rule in rules:
        for e in (rule.expr, rule.when):
            if e is None:
                continue
            for n in e.root.walk():
                if not (isinstance(n, Call) and n.fn is not None and n.fn.kind == "window"):
                    continue
                if n.name in ("count_events", "count_matching"):
                    continue  # counted with searchsorted, no rows gathered
                w = n.args[-1] if len(n.args) > 1 else None
                widest = max(widest, float(w.value) if isinstance(w, Lit) else
                             w.count * iv if isinstance(w, Samples) else 3 * iv if w is None else 3600.0)
    return widest


def _chunk(layouts: Layouts, rules: list[Rule], view: DeploymentView, times: np.ndarray) -> int:
    """How many times a chunk of the clock takes: its widest window's rows stay under the budget."""
    rows = len(layouts.endpoint.ts)
    span_s = max((int(times[-1]) - int(times[0])) / 1e6, 1.0) if len(times) else 1.0
    ts = layouts.endpoint.ts
    if rows > 1:
        span_s = max(span_s, (int(ts.max()) - int(ts.min())) / 1e6)
    per_time = rows * min(1.0, _widest_window_s(rules, view) / span_s) + layouts.engine.n + layouts.endpoint.n + 1
    return int(max(8, min(len(times), ROW_BUDGET // max(1.0, per_time))))


def _conditions(all_rules: list[Rule], layouts: Layouts, view: DeploymentView, times: np.ndarray,
                swept: list[int], changing: dict[str, np.ndarray]
                ) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
    """Per rule, (condition, hold, keep) for every (time, instance): arrays of shape (T, n)."""
    rules = [all_rules[ri] for ri in swept]
    T = len(times)
    out: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray | None]] = {}
    for ri, rule in zip(swept, rules):
        n = layouts.get(rule.scope).n
        keep = None if rule.keep_firing_for.is_zero else np.zeros((T, n))
        out[ri] = (np.zeros((T, n), dtype=bool), np.zeros((T, n)), keep)
    step = _chunk(layouts, rules, view, times)
    for a in range(0, T, step):
        b = min(T, a + step)
        sweep = Sweep(layouts, view, times[a:b], {k: v[a:b] for k, v in changing.items()})
        for ri, rule in zip(swept, rules):
            ctx = sweep.grid(rule.scope)
            n = ctx.lay.n
            if not n:
                continue
            truth, hold, keep = out[ri]
            truth[a:b] = _truth(rule, ctx).reshape(b - a, n)
            hold[a:b] = ctx.span_us(rule.for_, hold=True).reshape(b - a, n)
            if keep is not None:
                keep[a:b] = ctx.span_us(rule.keep_firing_for, hold=False).reshape(b - a, n)
    return out


def _truth(rule: Rule, ctx: SweepCtx) -> np.ndarray:
    n = ctx.n
    ok = np.ones(n, dtype=bool)
    if rule.when is not None:
        ok = broadcast(to_num(ev(rule.when.root, ctx)), n) == 1.0
    truth = np.zeros(n, dtype=bool)
    if not ok.any():
        return truth
    sub = ctx if ok.all() else ctx.subset(ok)
    truth[ok] = broadcast(to_num(ev(rule.expr.root, sub)), sub.n) == 1.0
    return truth


def _advance(book: AlertBook, ri: int, rule: Rule, layouts: Layouts, view: DeploymentView,
             times: np.ndarray, changing: dict[str, np.ndarray], truth: np.ndarray, hold: np.ndarray,
             keep: np.ndarray | None) -> None:
    """Move rule ``ri``'s alerts in ``book`` through ``times`` (relative us) given its condition there."""
    lay = layouts.get(rule.scope)
    t0 = layouts.t0
    active = book.active(ri)
    T, n = truth.shape
    abs_now = times + t0
    abs_times = abs_now.tolist()
    episodes: list[_Episode] = []
    # Alerts of instances the layout no longer has: a pending one is dropped, a firing one resolves.
    for key in [k for k in active if k not in lay.index]:
        alert = active[key]
        if alert.state != PENDING:
            book.resolve(ri, alert, abs_times[0])
        else:
            book.drop(ri, key)
    for i in range(n):
        key = lay.keys[i]
        alert = active.get(key)
        col = truth[:, i]
        if alert is None and not col.any():
            continue
        episodes += _walk(key, i, alert, col, abs_now, hold[:, i], None if keep is None else keep[:, i])
    if not episodes:
        return
    for ep in episodes:
        if ep.created is not None:
            ep.alert = book.begin(ri, ep.key, abs_times[ep.created], engines_of(lay, ep.inst))
    # What happened, in the order the step engine saw it (time, then instance).
    fired = sorted((ep for ep in episodes if ep.fired is not None), key=lambda ep: (ep.fired, ep.inst))
    _texts(rule, Sweep(layouts, view, times, changing), episodes)
    if fired:
        ctx = Sweep(layouts, view, times, changing).points(rule.scope, [ep.fired for ep in fired], [ep.inst for ep in fired])
        back = lookback_us(rule, ctx)
        for k, ep in enumerate(fired):
            book.fire(ri, ep.alert, abs_times[ep.fired], ep.alert.active_at - back[k])
    _evidence(rule, Sweep(layouts, view, times, changing), [ep for ep in episodes if ep.firing_from is not None])
    for ep in episodes:
        alert = ep.alert
        if ep.resolved is not None:
            alert.keep_since = ep.keep_since
            book.resolve(ri, alert, abs_times[ep.resolved])
        elif ep.deleted:
            book.drop(ri, ep.key)
        else:
            alert.state = FIRING if alert.fired_at is not None else PENDING
            alert.keep_since = ep.keep_since
            book.keep(ri, alert)


def _walk(key: Any, i: int, alert: Alert | None, truth: np.ndarray, now: np.ndarray,
          hold: np.ndarray, keep: np.ndarray | None) -> list[_Episode]:
    """The step engine's state machine for one instance over the steps (absolute times ``now``),
    taken run by run of its condition rather than step by step."""
    T = len(truth)
    true_at = np.flatnonzero(truth)
    false_at = np.flatnonzero(~truth)

    def next_true(s: int) -> int:
        j = int(np.searchsorted(true_at, s))
        return int(true_at[j]) if j < len(true_at) else T

    def next_false(s: int) -> int:
        j = int(np.searchsorted(false_at, s))
        return int(false_at[j]) if j < len(false_at) else T

    out: list[_Episode] = []
    ep: _Episode | None = None
    state, active_at = PENDING, 0
    if alert is not None:
        ep = _Episode(key, i, alert, keep_since=alert.keep_since)
        out.append(ep)
        state, active_at = alert.state, alert.active_at
    s = 0
    while s < T:
        if ep is None:
            s = next_true(s)
            if s >= T:
                break
            ep = _Episode(key, i, None, created=s)  # type: ignore[arg-type]
            out.append(ep)
            state, active_at = PENDING, int(now[s])
        if state == PENDING:
            if not truth[s]:  # (an alert pending from before)
                ep.deleted = True
                ep, s = None, s + 1
                continue
            e = next_false(s)
            ep.last_held = e - 1
            met = np.flatnonzero(now[s:e] - active_at >= hold[s:e])
            if not len(met):  # the hold is not met in this run
                if e < T:
                    ep.deleted = True
                    ep = None
                s = e + 1
                continue
            ep.fired, ep.keep_since = s + int(met[0]), None
            state, s = FIRING, e
            continue
        if truth[s]:  # firing, and the condition holds
            e = next_false(s)
            ep.last_held, ep.keep_since = e - 1, None
            s = e
            continue
        if keep is None:  # firing, the condition stopped holding: resolved
            ep.resolved = s
            ep, s = None, s + 1
            continue
        since = ep.keep_since if ep.keep_since is not None else int(now[s])  # keep_firing_for: a grace
        f = next_true(s)
        ends = np.flatnonzero(now[s:f] - since >= keep[s:f])
        if not len(ends):  # the condition came back (or the steps ended) within the grace
            ep.keep_since = since if f >= T else None
            s = f
            continue
        ep.resolved, ep.keep_since = s + int(ends[0]), since
        ep, s = None, ep.resolved + 1
    for x in out:  # the steps it was firing at: evidence is collected there
        first = x.fired if x.fired is not None else (0 if x.created is None and x.alert.state == FIRING else None)
        last = T - 1 if x.resolved is None else x.resolved - 1
        if first is not None and not x.deleted and last >= first:
            x.firing_from, x.firing_to = first, last
    # Alerts born and dropped within these steps leave nothing behind.
    return [x for x in out if not (x.deleted and x.created is not None)]


def _texts(rule: Rule, sweep: Sweep, episodes: list[_Episode]) -> None:
    """Value, severity and texts where the step engine last refreshed them (and when it fired)."""
    wanted = [ep for ep in episodes if ep.last_held is not None and not ep.deleted]
    if not wanted:
        return
    at_fire = [ep for ep in wanted if ep.fired is not None]
    steps = [ep.fired for ep in at_fire] + [ep.last_held for ep in wanted]
    insts = [ep.inst for ep in at_fire] + [ep.inst for ep in wanted]
    ctx = sweep.points(rule.scope, steps, insts)
    if at_fire:
        refresh(rule, ctx, [(k, ep.alert) for k, ep in enumerate(at_fire)])
        for ep in at_fire:
            ep.alert.remember_firing()
    last = [(len(at_fire) + k, ep.alert) for k, ep in enumerate(wanted) if ep.fired is None or ep.last_held != ep.fired]
    refresh(rule, ctx, last)


def _evidence(rule: Rule, sweep: Sweep, episodes: list[_Episode]) -> None:
    """The lines ``evidence.collect`` would have added at each step an alert fired at."""
    layouts, times = sweep.layouts, sweep.times
    lay = layouts.get(rule.scope)
    if lay.kind == "deployment":
        return
    t0 = layouts.t0
    episodes = [ep for ep in episodes if ep.alert.evidence is not None]
    if not episodes:
        return
    limit = rule.evidence.limit
    fields = rule.quoted_fields()
    kinds = rule.quoted_events()
    rank = rule.evidence.rank
    # Each firing step scans (what the previous one scanned up to, its time].
    steps = [np.arange(ep.firing_from, ep.firing_to + 1) for ep in episodes]
    if fields:
        tidx = np.concatenate(steps)
        base = np.concatenate([np.full(len(s), ep.inst) for s, ep in zip(steps, episodes)])
        lo = np.concatenate([np.concatenate(([ep.alert.evidence.scanned_to - t0], times[s[:-1]]))
                             for s, ep in zip(steps, episodes)])
        ctx = sweep.points(rule.scope, tidx, base)
        sel = ctx.select_between(np.maximum(lo, -1), ctx.now)
        if sel.total:
            rctx = ctx.rows(sel)
            keep = np.ones(sel.total, dtype=bool)
            if rule.evidence.rows is not None:
                keep = broadcast(to_num(ev(rule.evidence.rows.root, rctx)), sel.total) == 1.0
            score = (broadcast(to_num(ev(rank.root, rctx)), sel.total) if rank is not None
                     else np.zeros(sel.total))
            score = np.where(np.isnan(score), -np.inf, score)
            first = 0
            for s, ep in zip(steps, episodes):
                k = np.arange(first, first + len(s))
                first += len(s)
                _rows_of(ep.alert.evidence, lay, sel, keep, score, k, limit, fields, t0)
    if kinds:
        for s, ep in zip(steps, episodes):
            _events_of(ep.alert.evidence, lay, ep.inst, kinds, limit, times[s], ep.alert.evidence.scanned_to - t0)
    for s, ep in zip(steps, episodes):
        ep.alert.evidence.scanned_to = max(ep.alert.evidence.scanned_to, int(times[s[-1]]) + t0)


def _rows_of(log: EvidenceLog, lay: Layout, sel: RowSel, keep: np.ndarray, score: np.ndarray, pairs: np.ndarray,
             limit: int, fields: tuple[str, ...], t0: int) -> None:
    """The rows one alert keeps. A step keeps its best ``limit`` rows (score, then row), adds them
    and keeps the best ``limit`` of all (score, then time, the earlier added first): the same as
    the best ``limit`` of every step's rows by (score, time, step, row)."""
    a, b = int(sel.off[pairs[0]]), int(sel.off[pairs[-1]] + sel.cnt[pairs[-1]])
    picked = np.flatnonzero(keep[a:b]) + a
    if not len(picked):
        return
    rows = sel.idx[picked]
    order = np.lexsort((rows, sel.inst[picked], lay.ts[rows], -score[picked]))[:limit]
    picked, rows = picked[order], rows[order]
    values = {f: lay.gather(f, rows) for f in fields}
    for j, r in enumerate(rows.tolist()):
        src, line, eng, ts = lay.row_meta(r)
        text = stats_text(eng, {f: float(values[f][j]) for f in fields})
        log.rows.append(Quote("stats", src, line, ts, eng, text, float(score[picked[j]])))
    log.rows.sort(key=lambda q: (-q.score, q.ts_us))
    del log.rows[limit:]
    log.dicts = None


def _events_of(log: EvidenceLog, lay: Layout, i: int, kinds: tuple[str, ...], limit: int, nows: np.ndarray,
               scanned: int) -> None:
    """``evidence._collect_events`` at each step (time ``nows``), skipping steps that see no event."""
    base = i * lay.span
    found_any = []
    for kind in kinds:
        idx = lay.event_index(kind)
        a = np.searchsorted(idx.keys, base + min(max(scanned, -1), lay.span - 1), side="right")
        b = np.searchsorted(idx.keys, base + min(max(int(nows[-1]), -1), lay.span - 1), side="right")
        if b > a:
            found_any.append(idx.keys[a:b] - base)
    if not found_any:
        return
    when = np.unique(np.concatenate(found_any))  # relative times of the events in range
    steps = np.unique(np.searchsorted(nows, when, side="left"))  # the first step whose time reaches each
    prev = [scanned] + nows[:-1].tolist()
    for k in steps.tolist():
        if len(log.events) >= limit:
            break
        add_event_quotes(log, lay, i, kinds, limit, max(int(prev[k]), -1), int(nows[k]))
