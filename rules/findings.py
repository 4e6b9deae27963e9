"""What the engine reports: the state of each active alert, and firing periods."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterable

PENDING, FIRING, RESOLVED = "pending", "firing", "resolved"

# The severity scale, worst first: its one definition, for the rule files, the diagnosis and every view.
SEVERITIES = ("critical", "warning", "info")
_RANK = {s: i for i, s in enumerate(SEVERITIES)}


def severity_rank(severity: str | None) -> int:
    """Where a severity stands on the scale, worst first: 0 for critical, 1 warning, 2 info, and 3 for
    none (an endpoint without a finding)."""
    return _RANK.get(severity or "", len(SEVERITIES))


def worst_severity(severities: Iterable[str | None]) -> str | None:
    """The worst of some severities (None when there are none)."""
    return min((s for s in severities if s), key=severity_rank, default=None)


@dataclass(frozen=True)
class FindingState:
    """One scope instance of a rule at one evaluation: pending, firing, or just resolved.

    ``evaluate`` returns these for every pending or firing instance, and once more with
    state ``resolved`` at the evaluation where a firing instance stops.
    """

    rule: str
    state: str
    severity: str
    scope: str
    endpoint: str | None  # None at deployment scope
    engines: list[int]  # the engine at engine scope; the endpoint's engines at endpoint scope
    active_at: datetime  # since when the condition holds (pending since)
    fired_at: datetime | None
    resolved_at: datetime | None
    value: float | None
    summary: str
    explanation: str
    recommendation: str
    labels: dict[str, str] = field(default_factory=dict)
    evidence: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Finding:
    """One firing period of a rule on an endpoint (or the deployment).

    Engine-scope periods of several engines of one endpoint that overlap in time are
    merged into one finding listing those engines. ``end`` is None while still firing.
    """

    rule: str
    severity: str
    endpoint: str | None
    engines: list[int]
    start: datetime  # first firing evaluation
    end: datetime | None  # evaluation at which it resolved
    summary: str
    explanation: str
    recommendation: str
    value: float | None
    evidence: list[dict[str, Any]]
    scope: str = "endpoint"
    pending_since: datetime | None = None  # when the condition began to hold
    labels: dict[str, str] = field(default_factory=dict)
    summary_at_start: str = ""  # the summary when it fired (``summary`` is the latest)
    value_at_start: float | None = None
    engines_at_start: list[int] = field(default_factory=list)
