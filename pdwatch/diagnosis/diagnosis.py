"""The diagnosis: what is wrong, worst first, computed once from the findings and the deployment.

``diagnose(store, findings, until)`` is the one place the verdict, the grouping of findings across
endpoints, the order of the endpoints by trouble and each endpoint's (and engine's) worst severity
are made. The report (``session.analysis``) and the live snapshot (``session.rows``) carry the
``Diagnosis``; the report writers, the dashboard's widgets and the exporter render it and never
sort, group or rank findings again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

from pdwatch.model.kept import KeptWhile
from pdwatch.model.store import Store
from pdwatch.rules.findings import severity_rank
from pdwatch.rules.verdict import FindingGroup, FindingLike, Verdict, decides, group_findings, make_verdict, name_key

from .figures import WINDOW_INTERVALS, figures

ROLE_ORDER = {"prefill": 0, "decode": 1, "aggregated": 2, "unknown": 3, "frontend": 4}


@dataclass(frozen=True)
class Diagnosis:
    """The findings judged together with the deployment."""
    findings: tuple[Any, ...]  # most severe first, then by start, rule and endpoint: what groups index
    verdict: Verdict
    groups: tuple[FindingGroup, ...]  # most severe and most pressing first; members index ``findings``
    endpoint_order: tuple[str, ...]  # every endpoint, worst first (severity, role, name)
    endpoint_severity: Mapping[str, str] = field(default_factory=dict)  # the worst finding on it; absent: none
    engine_severity: Mapping[str, Mapping[int, str]] = field(default_factory=dict)  # engines the findings name

    def to_json_dict(self) -> dict[str, Any]:
        """The report's keys of the diagnosis (``groups[].findings`` index the report's ``findings``)."""
        return {"verdict": self.verdict.to_json_dict(), "groups": [g.to_json_dict() for g in self.groups],
                "endpoints_order": list(self.endpoint_order), "endpoint_severity": dict(self.endpoint_severity)}


def diagnose(store: Store, findings: Iterable[FindingLike], until: Any = None,
             intervals: int = WINDOW_INTERVALS, memo: KeptWhile | None = None) -> Diagnosis:
    """The diagnosis of ``findings`` (those to judge: firing now on a dashboard, every period of the
    run in a report). The verdict's numbers are each endpoint's last ``intervals`` stats intervals up
    to ``until`` (a dashboard: 1, what its panes show now), or the episode of the deciding findings
    when they all ended (a report of a run whose trouble passed)."""
    ordered = tuple(severity_order(findings))
    groups = group_findings(ordered)
    decisive = [g for g in groups if decides(g)]
    since = None
    if decisive and decisive[0].end is not None:
        # A finding that ended: the numbers of its episode (its typical and peak load), not of the
        # tail as it resolved. One still firing: the endpoints' last window, what the panes show.
        since = decisive[0].start
        until = decisive[0].end if until is None else min(pd.Timestamp(until), pd.Timestamp(decisive[0].end))
    verdict = make_verdict(ordered, groups, figures(store, until, intervals, since=since, memo=memo))
    worst = _endpoint_severity(ordered)
    order = sorted(((ep.name, ep.role) for ep in store.endpoints()), key=lambda nr: (
        severity_rank(worst.get(nr[0])), ROLE_ORDER.get(nr[1], 5), name_key(nr[0])))
    return Diagnosis(ordered, verdict, groups, tuple(name for name, _ in order), worst, _engine_severity(ordered))


def severity_order(findings: Iterable[FindingLike]) -> list[Any]:
    """Findings most severe first, then by start, rule and endpoint (a report's and a dashboard's order)."""
    return sorted(findings, key=lambda f: (severity_rank(f.severity), _ts_key(f.start), f.rule, f.endpoint or ""))


def _endpoint_severity(findings: Sequence[FindingLike]) -> dict[str, str]:
    out: dict[str, str] = {}
    for f in findings:
        if f.endpoint is not None and severity_rank(f.severity) < severity_rank(out.get(f.endpoint)):
            out[f.endpoint] = f.severity
    return out


def _engine_severity(findings: Sequence[FindingLike]) -> dict[str, dict[int, str]]:
    out: dict[str, dict[int, str]] = {}
    for f in findings:
        if f.endpoint is None:
            continue
        for e in f.engines or ():
            marks = out.setdefault(f.endpoint, {})
            if severity_rank(f.severity) < severity_rank(marks.get(e)):
                marks[e] = f.severity
    return out


def _ts_key(value: Any) -> float:
    return float("inf") if value is None else pd.Timestamp(value).timestamp()
