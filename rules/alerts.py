"""The alerts of the rule engine and their one owner, the ``AlertBook``.

An alert is one rule on one scope instance while pending or firing; once it fires, its firing
period is kept for ``findings()``. The book is the only code that moves an alert through
pending -> firing -> resolved (as Prometheus' ``rules/alerting.go``) and keeps the periods: the
stepping loop (``rules.step``, one evaluation a tick, for ``watch``) and the whole-clock sweep
(``rules.sweep``, for ``report`` and ``replay``) both drive it, so they cannot keep two ideas of
an alert's state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Sequence

import numpy as np

from .evidence import EvidenceLog
from .findings import FIRING, PENDING, RESOLVED, Finding, FindingState
from .layout import Layout
from .spec import Rule
from .template import EnginesHole, join

Key = tuple[str | None, int | None]  # (endpoint name, engine) of a scope instance
Texts = dict[str, tuple[str | EnginesHole, ...]]


@dataclass
class Alert:
    """One rule on one instance while pending or firing (then frozen in its period). Times are
    absolute microseconds since the epoch."""

    key: Key
    state: str
    active_at: int  # since when the condition holds (pending since)
    engines: list[int]
    fired_at: int | None = None
    resolved_at: int | None = None
    keep_since: int | None = None  # the condition stopped holding; keep_firing_for's grace runs since
    value: float | None = None
    severity: str | None = None  # of the rule, or of the variant that words it
    texts: Texts = field(default_factory=dict)
    evidence: EvidenceLog | None = None
    # What was true when it fired: the summary and value of that evaluation. A replay or a
    # report reads a finding after its end; what live printed at the moment is these.
    fired_texts: Texts | None = None
    fired_value: float | None = None

    def remember_firing(self) -> None:
        """Keep its texts and value as they are now as what it said when it fired (the first time)."""
        if self.fired_texts is None:
            self.fired_texts, self.fired_value = dict(self.texts), self.value


@dataclass
class Period:
    """A firing period: rule ``rule`` (its index) and the alert, which keeps growing until it resolves."""

    rule: int
    alert: Alert


class AlertBook:
    """Every rule's alerts: those pending or firing now, per rule and instance, and every firing period
    so far, in the order they fired."""

    def __init__(self, rule_count: int) -> None:
        self._active: list[dict[Key, Alert]] = [{} for _ in range(rule_count)]
        self.periods: list[Period] = []

    def active(self, ri: int) -> dict[Key, Alert]:
        """Rule ``ri``'s alerts pending or firing now, by instance (read it; change it through the book)."""
        return self._active[ri]

    def active_per_rule(self) -> tuple[dict[Key, Alert], ...]:
        return tuple(self._active)

    # -- the states ------------------------------------------------------------------------------
    def begin(self, ri: int, key: Key, at: int, engines: list[int]) -> Alert:
        """The condition began to hold on an instance: a pending alert (not yet kept: ``keep``)."""
        return Alert(key, PENDING, at, engines)

    def keep(self, ri: int, alert: Alert) -> None:
        """The alert goes on (pending or firing) after this evaluation."""
        self._active[ri][alert.key] = alert

    def fire(self, ri: int, alert: Alert, at: int, evidence_since: int) -> None:
        """Its condition held for its ``for:``: it fires and its period begins, with evidence from
        ``evidence_since`` (absolute us) on."""
        alert.state, alert.fired_at = FIRING, at
        alert.evidence = EvidenceLog(int(evidence_since))
        self.periods.append(Period(ri, alert))

    def resolve(self, ri: int, alert: Alert, at: int) -> None:
        """A firing alert stops (its condition and its grace are over): its period ends."""
        alert.state, alert.resolved_at = RESOLVED, at
        self._active[ri].pop(alert.key, None)

    def drop(self, ri: int, key: Key) -> None:
        """A pending alert whose condition stopped holding before it fired: nothing is kept."""
        self._active[ri].pop(key, None)

    # -- what it reports -------------------------------------------------------------------------
    def findings(self, rules: Sequence[Rule]) -> list[Finding]:
        """Every firing period so far; engine-scope periods of one endpoint that overlap are merged
        into one finding with the union of their engines."""
        groups: dict[tuple[int, str | None], list[Alert]] = {}
        for p in self.periods:
            groups.setdefault((p.rule, p.alert.key[0]), []).append(p.alert)
        out: list[Finding] = []
        for (ri, _endpoint), alerts in groups.items():
            for cluster in _overlapping(alerts):
                out.append(_finding(rules[ri], cluster))
        order = {r.finding: i for i, r in enumerate(rules)}
        out.sort(key=lambda f: (f.start, order[f.rule], f.endpoint or "", f.engines))
        return out


def finding_state(rule: Rule, a: Alert) -> FindingState:
    """What one evaluation says of an alert it moved."""
    return FindingState(
        rule=rule.finding, state=a.state, severity=a.severity or rule.severity, scope=rule.scope,
        endpoint=a.key[0], engines=list(a.engines), active_at=_dt(a.active_at),  # type: ignore[arg-type]
        fired_at=_dt(a.fired_at), resolved_at=_dt(a.resolved_at), value=a.value,
        summary=join(a.texts.get("summary", ()), a.engines),
        explanation=join(a.texts.get("explanation", ()), a.engines),
        recommendation=join(a.texts.get("recommendation", ()), a.engines),
        labels=dict(rule.labels),
        evidence=a.evidence.as_dicts() if a.evidence else [])


def engines_of(lay: Layout, i: int) -> list[int]:
    """Engines a finding names: the engine, or all the endpoint's (declared or seen)."""
    if lay.kind == "engine":
        return [int(lay.engine[i])]
    if lay.kind != "endpoint":
        return []
    e = lay.view.endpoints[i]
    s = lay.stats
    return sorted(set(int(x) for x in e.engines) | set(int(x) for x in np.unique(s.engine[s.ep == i])))


def _dt(us: int | None) -> datetime | None:
    return None if us is None else datetime.fromtimestamp(us / 1e6, tz=timezone.utc)


def _finding(rule: Rule, cluster: list[Alert]) -> Finding:
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


def _overlapping(alerts: list[Alert]) -> list[list[Alert]]:
    """Cluster periods whose [fired_at, resolved_at] intervals overlap or touch."""
    inf = float("inf")
    ordered = sorted(alerts, key=lambda a: (a.fired_at, a.key[1] if a.key[1] is not None else -1))
    clusters: list[list[Alert]] = []
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
