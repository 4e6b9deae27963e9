"""One evaluation of one rule at one clock time: the live loop's step (``RuleEngine.evaluate``),
and the sweep's for the rules it cannot sweep (``rules.sweep``)."""

from __future__ import annotations

import numpy as np

from .alerts import Alert, AlertBook, engines_of, finding_state
from .context import Ctx
from .evidence import collect, lookback_us
from .findings import FIRING, PENDING, RESOLVED, FindingState
from .nodes import ev
from .spec import Rule
from .texts import refresh
from .values import broadcast, to_num


def step(book: AlertBook, ri: int, rule: Rule, ctx: Ctx, now: int) -> list[FindingState]:
    """Evaluate rule ``ri`` at ``now`` (absolute us) and move its alerts in ``book``; the states of
    the alerts this evaluation touched (pending, firing, or just resolved)."""
    lay = ctx.lay
    n = lay.n
    active = book.active(ri)
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
    hold = ctx.span_us(rule.for_, hold=True)
    keep = ctx.span_us(rule.keep_firing_for, hold=False)
    for i in np.flatnonzero(truth):
        key = lay.keys[i]
        if key not in active:
            book.keep(ri, book.begin(ri, key, now, engines_of(lay, i)))

    changed: list[Alert] = []
    for key in sorted(active, key=lambda k: index.get(k, n)):
        alert = active[key]
        i = index.get(key)
        if i is not None and truth[i]:
            alert.keep_since = None
            if alert.state == PENDING and now - alert.active_at >= hold[i]:
                book.fire(ri, alert, now, alert.active_at - lookback_us(rule, ctx)[i])
            changed.append(alert)
            continue
        if alert.state == PENDING:
            book.drop(ri, key)
            continue
        if keep is not None and i is not None:
            alert.keep_since = alert.keep_since if alert.keep_since is not None else now
            if now - alert.keep_since < keep[i]:
                changed.append(alert)
                continue
        book.resolve(ri, alert, now)
        changed.append(alert)

    # Value and texts describe the last evaluation where the condition held (not the
    # keep_firing_for grace); evidence keeps growing while firing.
    held = [(index[a.key], a) for a in changed if a.state != RESOLVED and a.keep_since is None]
    firing = [(index[a.key], a) for a in changed
              if a.state == FIRING and a.key in index and a.evidence is not None]
    refresh(rule, ctx, held)
    for _, a in held:
        if a.state == FIRING:
            a.remember_firing()
    collect(rule, ctx, [(i, a.evidence) for i, a in firing])  # type: ignore[misc]
    return [finding_state(rule, a) for a in changed]
