"""What a verdict is made of: findings grouped across endpoints, each endpoint's load over a window,
and the one line that says what is wrong, worst first.

The wording and the priority of each built-in rule's verdict are in ``rules/builtin/verdicts.py``,
beside the rules they speak for; a rule without an entry there is said generically. Nothing here
reads a finding's text: a verdict is made from each finding's rule, severity, endpoint, engines and
times, and from the figures (``EndpointFigures``) the caller measured on its store.

The verdict, worst first (the first group in this order decides; the others are counted):

- severity (critical, warning, info), then the rule's place in the priority table: a failure
  before a bottleneck, before a slowdown, a blind spot, a capacity note and the lints;
- with no finding, or only lints (info): "No bottleneck found", with each role's load.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterable, Mapping, Protocol, Sequence

import pandas as pd

from pdwatch.units import fmt_count, fmt_pct

from .builtin.verdicts import PRIORITY, SERVING, WORDING, Said, generic
from .findings import severity_rank


class FindingLike(Protocol):
    """What grouping reads of a finding: the rule engine's ``Finding`` and the dashboard's rows alike."""
    rule: str
    severity: str
    endpoint: str | None
    engines: Any
    start: Any
    end: Any


@dataclass(frozen=True)
class FindingGroup:
    """Findings of one rule and severity, across endpoints: one row, its endpoints listed."""
    rule: str
    severity: str
    endpoints: tuple[str | None, ...]  # in the members' order; None = the deployment
    label: str  # "prefill_w0–w3", "decode_w0", "the deployment"
    members: tuple[int, ...]  # indices into the findings the group was made from
    start: datetime | None
    end: datetime | None  # None while any member still fires

    def to_json_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "severity": self.severity, "endpoints": list(self.endpoints),
                "label": self.label, "findings": list(self.members), "start": _iso(self.start),
                "end": _iso(self.end)}


@dataclass(frozen=True)
class EndpointFigures:
    """One endpoint's load over a window of the run, per engine (means)."""
    name: str
    role: str
    engines: int
    has_stats: bool
    prompt_tps: float | None = None  # per engine
    gen_tps: float | None = None  # per engine
    running: float | None = None  # per engine
    waiting: float | None = None  # per engine
    kv_pct: float | None = None  # mean over the window and the engines
    kv_max_pct: float | None = None  # the highest engines' mean of one interval in the window


@dataclass(frozen=True)
class Verdict:
    """The one line that leads the dashboard and the report."""
    kind: str  # failure | bottleneck | slowdown | blind | capacity | config | ok
    title: str  # "Bottleneck: prefill"
    detail: str  # "4/4 prefill endpoints saturated (≈42k tok/s per engine, ~275 waiting); decode at ≤18% KV"
    severity: str | None = None  # of the finding that decided it; None when nothing is wrong
    rule: str | None = None
    endpoints: tuple[str, ...] = ()  # the endpoints it names (worst first)
    others: int = 0  # further finding groups, not in the line
    figures: dict[str, float] = field(default_factory=dict, compare=False)  # the numbers in the line

    @property
    def text(self) -> str:
        return f"{self.title} — {self.detail}" if self.detail else self.title

    def to_json_dict(self) -> dict[str, Any]:
        return {"text": self.text, "kind": self.kind, "title": self.title, "detail": self.detail,
                "severity": self.severity, "rule": self.rule, "endpoints": list(self.endpoints),
                "other_findings": self.others}


# ------------------------------------------------------------------------------------------ groups


def group_findings(findings: Sequence[FindingLike]) -> tuple[FindingGroup, ...]:
    """Group findings by (rule, severity): most severe first, then the rule's priority, then the
    earliest start."""
    keyed: dict[tuple[str, str], list[int]] = {}
    for i, f in enumerate(findings):
        keyed.setdefault((f.rule, f.severity), []).append(i)
    groups = []
    for (rule, sev), idx in keyed.items():
        idx.sort(key=lambda i: (_ts(findings[i].start), name_key(findings[i].endpoint)))
        endpoints = tuple(dict.fromkeys(findings[i].endpoint for i in idx))
        ends = [findings[i].end for i in idx]
        groups.append(FindingGroup(rule, sev, endpoints, endpoint_label(endpoints), tuple(idx),
                                   min((findings[i].start for i in idx), key=_ts),
                                   None if any(e is None for e in ends) else max(ends, key=_ts)))
    groups.sort(key=lambda g: (severity_rank(g.severity), _priority(g.rule), _ts(g.start), g.rule))
    return tuple(groups)


def endpoint_label(names: Iterable[str | None]) -> str:
    """Endpoint names said short: prefill_w0, prefill_w1, prefill_w2 -> "prefill_w0–w2"."""
    names = list(dict.fromkeys(names))
    if not names:
        return ""
    if names == [None]:
        return "the deployment"
    parts: list[str] = []
    runs: dict[str, list[int]] = {}
    order: list[tuple[str, Any]] = []
    for n in names:
        m = re.fullmatch(r"(.*?[A-Za-z_])(\d+)", n or "")
        if m and not (len(m.group(2)) > 1 and m.group(2).startswith("0")):
            stem = m.group(1)
            if stem not in runs:
                runs[stem] = []
                order.append(("run", stem))
            runs[stem].append(int(m.group(2)))
        else:
            order.append(("name", n or "the deployment"))
    for kind, value in order:
        if kind == "name":
            parts.append(value)
            continue
        numbers = sorted(set(runs[value]))
        spans, lo = [], numbers[0]
        for a, b in zip(numbers, numbers[1:] + [None]):
            if b != a + 1:
                spans.append((lo, a))
                if b is not None:
                    lo = b
        tail = re.search(r"[A-Za-z]*$", value).group() or value  # "prefill_w" -> "w"
        texts = []
        for j, (a, b) in enumerate(spans):
            head = value if j == 0 else tail
            texts.append(f"{head}{a}" if a == b else f"{head}{a}–{tail}{b}" if b > a + 1 else
                         f"{head}{a}, {tail}{b}")
        parts.append(", ".join(texts))
    return ", ".join(parts)


def name_key(name: str | None) -> tuple:
    """An endpoint name as it sorts for a reader: w2 before w10."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", name or "") if p)


# ------------------------------------------------------------------------------------------ verdict


def decides(g: FindingGroup) -> bool:
    """Lints and other info findings do not make a verdict (capacity, an info, does: it is load)."""
    return severity_rank(g.severity) <= 1 or g.rule == "capacity"


def make_verdict(findings: Sequence[FindingLike], groups: Sequence[FindingGroup],
                 figs: Mapping[str, EndpointFigures]) -> Verdict:
    """The verdict of ``groups`` (of ``findings``), with each endpoint's figures ``figs``."""
    serving = [f for f in figs.values() if f.role in SERVING]
    decisive = [g for g in groups if decides(g)]
    if not decisive:
        return _healthy(serving, len(groups))
    g = decisive[0]
    members = [findings[i] for i in g.members]
    named = tuple(e for e in g.endpoints if e is not None)
    mine = [figs[e] for e in named if e in figs]
    said: Said = WORDING.get(g.rule, generic)(g, members, mine, serving)
    return Verdict(said.kind, said.title, said.detail, g.severity, g.rule, named, len(groups) - 1, dict(said.figures))


_ROLE_WORD = {"prefill": "prefill", "decode": "decode", "aggregated": "aggregated", "unknown": "server"}


def _healthy(serving: list[EndpointFigures], notes: int) -> Verdict:
    if not serving:
        return Verdict("ok", "No bottleneck found", "no serving endpoint seen yet", others=notes)
    parts = []
    for role in SERVING:
        eps = [f for f in serving if f.role == role]
        if not eps:
            continue
        stats = [f for f in eps if f.has_stats]
        word = _ROLE_WORD.get(role, role)
        if not stats:
            parts.append(f"{word} without stats")
            continue
        kv = _max(f.kv_max_pct for f in stats)
        wait = _max(f.waiting for f in stats)
        bits = []
        if kv is not None:
            bits.append(f"≤{fmt_pct(kv)} KV")
        if wait is not None:
            bits.append("no queue" if wait < 0.5 else f"~{fmt_count(wait)} waiting")
        parts.append(f"{word} {', '.join(bits)}" if bits else word)
    detail = "; ".join(parts)
    if notes:
        detail += f" ({notes} configuration note{'s' if notes != 1 else ''})"
    return Verdict("ok", "No bottleneck found", detail, others=notes)


# ------------------------------------------------------------------------------------------ helpers


def _priority(rule: str) -> int:
    return PRIORITY.index(rule) if rule in PRIORITY else len(PRIORITY)


def _ts(value: Any) -> float:
    if value is None:
        return math.inf
    try:
        return pd.Timestamp(value).timestamp()
    except (TypeError, ValueError):
        return math.inf


def _iso(value: Any) -> str | None:
    return None if value is None else pd.Timestamp(value).isoformat()


def _max(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return max(vals) if vals else None
