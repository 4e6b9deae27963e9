"""Which findings a UI has been told of: each firing once, each resolution once.

A replay that seeks back re-creates findings it already announced: those are not news. A
finding that fired and resolved between two ticks is announced as it read when it fired
(what watching would have printed then), then resolved.
"""

from __future__ import annotations

from pdwatch.diagnosis import severity_order

from .snapshot import Change, FindingRow


class FindingsFeed:
    def __init__(self) -> None:
        self._told_firing: set[tuple] = set()
        self._told_resolved: set[tuple] = set()

    def changes(self, rows: tuple[FindingRow, ...]) -> tuple[Change, ...]:
        """Fired / resolved since the previous call, in time order."""
        out: list[Change] = []
        for f in rows:
            if f.key not in self._told_firing:
                self._told_firing.add(f.key)
                out.append(Change("firing", f.start, f.at_firing))
            if f.end is not None and f.key not in self._told_resolved:
                self._told_resolved.add(f.key)
                out.append(Change("resolved", f.end, f))
        out.sort(key=lambda c: (c.at, c.state != "firing", c.finding.rule, c.finding.endpoint or ""))
        return tuple(out)


def firing_now(rows: tuple[FindingRow, ...]) -> tuple[FindingRow, ...]:
    """The findings firing now, most severe first."""
    return tuple(severity_order(f for f in rows if f.end is None))
