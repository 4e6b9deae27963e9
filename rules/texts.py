"""What an alert says: its value, severity, summary, explanation and recommendation, rendered
from the rule's templates where its condition holds. Shared by the stepping loop and the sweep."""

from __future__ import annotations

from typing import Any

import numpy as np

from .alerts import Alert
from .context import Ctx
from .functions import EPISODE
from .layout import MISSING
from .nodes import ev
from .spec import Rule
from .template import Hole, fmt_value, raw_fact_name
from .values import broadcast, to_num


def refresh(rule: Rule, ctx: Ctx, live: list[tuple[int, Alert]]) -> None:
    """Value, severity and texts of the alerts ``live`` (each with its place in ``ctx``), whose
    condition holds at the context's clock."""
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


def _set_episode(ctx: Ctx, live: list[tuple[int, Alert]]) -> None:
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


def _fill(hole: Hole, i: int, rule: Rule, ctx: Ctx, alert: Alert, holes: dict[int, Any]) -> str:
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
