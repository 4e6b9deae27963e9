"""The evaluation loop: rules x scope instances -> Prometheus-style alert states.

``RuleEngine.evaluate(view, now)`` is the one loop live, replay and tests share: the clock
is an argument and only data with ``ts <= now`` is read. Per rule and instance the state
moves inactive -> pending (condition true) -> firing (true for ``for:``) -> resolved
(false, after ``keep_firing_for:``), as in Prometheus' ``rules/alerting.go``. Every
firing period is kept for ``findings()``. Same rules, same views, same clock sequence:
same results (no wall clock, no randomness, stable orderings).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .alerts import Key, _Alert, _engines_of, _Period  # noqa: F401  (Key: the engine's keys)
from .context import Ctx, Evaluation
from .evidence import EvidenceLog, collect, lookback_us
from .findings import FIRING, PENDING, RESOLVED, Finding, FindingState
from .layout import MISSING, FrameArrays, Layouts, build_layouts
from .model import DeploymentView
from .functions import EPISODE
from .nodes import ev
from .span import Span
from .spec import Rule
from .template import Hole, fmt_value, join, raw_fact_name
from .values import broadcast, to_num

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
        self._active: list[dict[Key, _Alert]] = [{} for _ in self.rules]
        self._periods: list[_Period] = []
        self._last_now: int | None = None
        self._cache: tuple[Any, DeploymentView, Layouts] | None = None
        self._frames: dict[int, FrameArrays] = {}

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
                out += self._step(ri, rule, evaluation.ctx(rule.scope), now_us)
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
        from .sweep import run  # here: a live session that only steps never loads it
        run(self, view, np.asarray(stamps, dtype=np.int64), {k: dict(v) for k, v in (facts_at or {}).items()})
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
        layouts = build_layouts(view, self._frames)
        self._cache = (sig, view, layouts)  # holding the view keeps the ids above valid
        return layouts

    def _step(self, ri: int, rule: Rule, ctx: Ctx, now: int) -> list[FindingState]:
        lay = ctx.lay
        n = lay.n
        active = self._active[ri]
        truth = np.zeros(n, dtype=bool)
        if n:
            ok = np.ones(n, dtype=bool)
            if rule.when is not None:
                ok = broadcast(to_num(ev(rule.when.root, ctx)), n) == 1.0
            if ok.any():
                truth = ok & (broadcast(to_num(ev(rule.expr.root, ctx)), n) == 1.0)
        if not truth.any() and not active:
            return []

        index = lay.index
        hold = self._span_us(rule.for_, ctx, hold=True)
        keep = self._span_us(rule.keep_firing_for, ctx, hold=False)
        for i in np.flatnonzero(truth):
            key = lay.keys[i]
            if key not in active:
                active[key] = _Alert(key, PENDING, now, _engines_of(lay, i))

        changed: list[_Alert] = []
        for key in sorted(active, key=lambda k: index.get(k, n)):
            alert = active[key]
            i = index.get(key)
            if i is not None and truth[i]:
                alert.keep_since = None
                if alert.state == PENDING and now - alert.active_at >= hold[i]:
                    alert.state, alert.fired_at = FIRING, now
                    alert.evidence = EvidenceLog(int(alert.active_at - lookback_us(rule, ctx)[i]))
                    self._periods.append(_Period(ri, alert))
                changed.append(alert)
                continue
            if alert.state == PENDING:
                del active[key]
                continue
            if keep is not None and i is not None:
                alert.keep_since = alert.keep_since if alert.keep_since is not None else now
                if now - alert.keep_since < keep[i]:
                    changed.append(alert)
                    continue
            alert.state, alert.resolved_at = RESOLVED, now
            del active[key]
            changed.append(alert)

        # Value and texts describe the last evaluation where the condition held (not the
        # keep_firing_for grace); evidence keeps growing while firing.
        held = [(index[a.key], a) for a in changed if a.state != RESOLVED and a.keep_since is None]
        firing = [(index[a.key], a) for a in changed
                  if a.state == FIRING and a.key in index and a.evidence is not None]
        self._refresh(rule, ctx, held)
        for _, a in held:
            if a.state == FIRING and a.fired_texts is None:
                a.fired_texts, a.fired_value = dict(a.texts), a.value
        collect(rule, ctx, [(i, a.evidence) for i, a in firing])  # type: ignore[misc]
        return [self._state(rule, a) for a in changed]

    def _span_us(self, span: Span, ctx: Ctx, hold: bool) -> np.ndarray | None:
        if span.is_zero:
            return None if not hold else np.zeros(ctx.n)
        if span.samples is None:
            return np.full(ctx.n, float(span.window_us(0)))
        iv = ctx.interval_us()
        return span.hold_us(iv) if hold else span.window_us(iv)

    def _refresh(self, rule: Rule, ctx: Ctx, live: list[tuple[int, _Alert]]) -> None:
        """Value and texts of the instances whose condition holds now."""
        if not live:
            return
        if rule.reads_episode:
            _set_episode(ctx, live)
        n = ctx.n
        value = broadcast(to_num(ev(rule.value.root, ctx)), n)
        variant_holds = [broadcast(to_num(ev(v.when.root, ctx)), n) == 1.0 for v in rule.variants]
        holes: dict[int, Any] = {}
        templates = [rule.summary, rule.explanation, rule.recommendation]
        templates += [t for v in rule.variants for t in (v.summary, v.explanation, v.recommendation) if t]
        for t in templates:
            for e in t.exprs:
                holes[id(e)] = ev(e.root, ctx)
        for i, alert in live:
            v = value[i]
            alert.value = None if v != v else float(v)
            variant = next((var for var, holds in zip(rule.variants, variant_holds) if holds[i]), None)
            alert.severity = (variant.severity if variant else None) or rule.severity
            for name in ("summary", "explanation", "recommendation"):
                tmpl = getattr(variant, name, None) or getattr(rule, name)
                alert.texts[name] = tmpl.render(lambda h: _fill(h, i, rule, ctx, alert, holes))

    def _state(self, rule: Rule, a: _Alert) -> FindingState:
        return FindingState(
            rule=rule.finding, state=a.state, severity=a.severity or rule.severity, scope=rule.scope,
            endpoint=a.key[0], engines=list(a.engines), active_at=_dt(a.active_at),  # type: ignore[arg-type]
            fired_at=_dt(a.fired_at), resolved_at=_dt(a.resolved_at), value=a.value,
            summary=join(a.texts.get("summary", ()), a.engines),
            explanation=join(a.texts.get("explanation", ()), a.engines),
            recommendation=join(a.texts.get("recommendation", ()), a.engines),
            labels=dict(rule.labels),
            evidence=a.evidence.as_dicts() if a.evidence else [])

    # -- history -----------------------------------------------------------------------
    def findings(self) -> list[Finding]:
        """Every firing period so far; engine-scope periods of one endpoint that overlap
        are merged into one finding with the union of their engines."""
        groups: dict[tuple[int, str | None], list[_Alert]] = {}
        for p in self._periods:
            groups.setdefault((p.rule, p.alert.key[0]), []).append(p.alert)
        out: list[Finding] = []
        for (ri, _ep), alerts in groups.items():
            rule = self.rules[ri]
            for cluster in _overlapping(alerts):
                out.append(self._finding(rule, cluster))
        out.sort(key=lambda f: (f.start, self._order[f.rule], f.endpoint or "", f.engines))
        return out

    @property
    def _order(self) -> dict[str, int]:
        return {r.finding: i for i, r in enumerate(self.rules)}

    def _finding(self, rule: Rule, cluster: list[_Alert]) -> Finding:
        engines = sorted({e for a in cluster for e in a.engines})
        # The text and value of the member that is freshest: still firing, else last to end.
        rep = max(cluster, key=lambda a: (a.resolved_at is None, a.resolved_at or 0, a.fired_at or 0))
        first = min(cluster, key=lambda a: a.fired_at or 0)  # the member that fired first: what was said then
        ends = [a.resolved_at for a in cluster]
        limit = rule.evidence.limit
        events = _round_robin([a.evidence.events if a.evidence else [] for a in cluster], limit)
        rows = _round_robin([a.evidence.rows if a.evidence else [] for a in cluster], limit)
        return Finding(
            rule=rule.finding, severity=rep.severity or rule.severity, endpoint=cluster[0].key[0], engines=engines,
            start=_dt(min(a.fired_at for a in cluster)),  # type: ignore[arg-type, type-var]
            end=None if any(e is None for e in ends) else _dt(max(ends)),  # type: ignore[type-var]
            summary=join(rep.texts.get("summary", ()), engines),
            explanation=join(rep.texts.get("explanation", ()), engines),
            recommendation=join(rep.texts.get("recommendation", ()), engines),
            value=rep.value, evidence=[q.as_dict() for q in _once(events + rows)], scope=rule.scope,
            pending_since=_dt(min(a.active_at for a in cluster)), labels=dict(rule.labels),
            summary_at_start=join((first.fired_texts or first.texts).get("summary", ()), first.engines),
            value_at_start=first.fired_value if first.fired_texts is not None else first.value,
            engines_at_start=list(first.engines))


def _set_episode(ctx: Ctx, live: list[tuple[int, _Alert]]) -> None:
    """``episode()`` for the instances rendered now: seconds since each alert went pending. What
    was computed from another rule's or another call's episodes is dropped first (the caches
    are shared by the rules of one evaluation, and keyed by the expression's text)."""
    for cache in (ctx.cache, ctx._sels):
        for key in [k for k in cache if "episode()" in str(k)]:
            del cache[key]
    t0 = ctx.sweep.layouts.t0 if ctx.sweep is not None else ctx.ev.layouts.t0
    now = np.broadcast_to(np.asarray(ctx.now, dtype=np.float64) + t0, (ctx.n,))
    seconds = np.full(ctx.n, np.nan)
    for i, alert in live:
        seconds[i] = (now[i] - alert.active_at) / 1e6
    ctx.cache[EPISODE] = seconds


def _overlapping(alerts: list[_Alert]) -> list[list[_Alert]]:
    """Cluster periods whose [fired_at, resolved_at] intervals overlap or touch."""
    inf = float("inf")
    ordered = sorted(alerts, key=lambda a: (a.fired_at, a.key[1] if a.key[1] is not None else -1))
    clusters: list[list[_Alert]] = []
    end = -inf
    for a in ordered:
        if clusters and a.fired_at <= end:  # type: ignore[operator]
            clusters[-1].append(a)
        else:
            clusters.append([a])
            end = -inf
        end = max(end, inf if a.resolved_at is None else a.resolved_at)
    return clusters


def _once(quotes: list[Any]) -> list[Any]:
    """Each line quoted once: a stats row built from a log line (a frontend's failed response)
    may be the line of an event quoted too."""
    seen: set[tuple[str, int]] = set()
    out = []
    for q in quotes:
        key = (q.source, q.line_no)
        if key not in seen:
            seen.add(key)
            out.append(q)
    return out


def _round_robin(lists: list[list[Any]], limit: int) -> list[Any]:
    out: list[Any] = []
    for k in range(limit):
        for lst in lists:
            if k < len(lst) and len(out) < limit:
                out.append(lst[k])
    return out


def _fill(hole: Hole, i: int, rule: Rule, ctx: Ctx, alert: _Alert, holes: dict[int, Any]) -> str:
    if hole.name == "endpoint":
        return alert.key[0] or "deployment"
    if hole.name == "value":
        return fmt_value(alert.value)
    if hole.name == "finding":
        return rule.finding
    if hole.name == "severity":
        return alert.severity or rule.severity
    if hole.name == "role":
        e = ctx.lay.ep[i if ctx.sweep is None else ctx.base_inst[i]]
        return ctx.lay.view.endpoints[e].role if e >= 0 else "deployment"
    assert hole.expr is not None
    fact = raw_fact_name(hole.expr)
    if fact is not None:
        raw = ctx.raw_fact(fact)[i]
        return fmt_value(None if raw is MISSING else raw)
    v = holes[id(hole.expr)]
    return fmt_value(v[i] if isinstance(v, np.ndarray) else v, hole.expr.type)
