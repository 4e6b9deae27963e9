"""Which findings a UI has been told of: each firing once, each escalation to a worse severity
(a warning that became critical while it held), each resolution once.

A replay that seeks back re-creates findings it already announced: those are not news. A
finding that fired and resolved between two ticks is announced as it read when it fired
(what watching would have printed then), then resolved.
"""

from __future__ import annotations

from datetime import datetime

from pdwatch.diagnosis import severity_order
from pdwatch.rules.findings import severity_rank

from .snapshot import Change, FindingRow


class FindingsFeed:
    def __init__(self) -> None:
        self._told_firing: set[tuple] = set()
        self._told_resolved: set[tuple] = set()
        self._told_severity: dict[tuple, str] = {}

    def changes(self, rows: tuple[FindingRow, ...], now: datetime | None = None) -> tuple[Change, ...]:
        """Fired / escalated / resolved since the previous call, in time order (an escalation at
        ``now``, the clock it was seen at)."""
        out: list[Change] = []
        for f in rows:
            if f.key not in self._told_firing:
                self._told_firing.add(f.key)
                self._told_severity[f.key] = f.at_firing.severity
                out.append(Change("firing", f.start, f.at_firing))
            told = self._told_severity[f.key]
            if f.end is None and severity_rank(f.severity) < severity_rank(told):
                self._told_severity[f.key] = f.severity
                out.append(Change("escalated", now or f.start, f))
            if f.end is not None and f.key not in self._told_resolved:
                self._told_resolved.add(f.key)
                out.append(Change("resolved", f.end, f))
        out.sort(key=lambda c: (c.at, c.state != "firing", c.finding.rule, c.finding.endpoint or ""))
        return tuple(out)


def firing_now(rows: tuple[FindingRow, ...]) -> tuple[FindingRow, ...]:
    """The findings firing now, most severe first."""
    return tuple(severity_order(f for f in rows if f.end is None))
