"""The findings table: one row per group of identical findings across endpoints
("prefill_bound on prefill_w0–w3 (4)"), which ``x`` expands into a row per endpoint, then the
findings that fired and cleared before the clock, greyed, with how long they lasted (the run's
history stays on screen; the app's ``h`` hides them). Cells are Text, never markup; ``findings``
keeps every finding firing, most severe first, ``resolved`` those that cleared, newest first."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable

from pdwatch.session.snapshot import FindingRow
from pdwatch.rules.verdict import FindingGroup, endpoint_label

from pdwatch.units import fmt_age

from .format import log_text, severity, time_text

RESOLVED = -1  # the group index of a resolved finding's row (its member index is into ``resolved``)


class FindingsTable(DataTable):
    BINDINGS = [Binding("x", "toggle_group", "expand", show=False)]
    DEFAULT_CSS = """
    FindingsTable { height: auto; max-height: 100%; min-height: 4; overflow-x: hidden; }  /* enter shows it all */
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.findings: list[FindingRow] = []
        self.resolved: list[FindingRow] = []
        self.groups: list[FindingGroup] = []
        self.items: list[tuple[int, int | None]] = []  # (group index, member index or None for the group row)
        self.expanded: set[tuple[str, str]] = set()
        self._shown: tuple | None = None
        self.labels: dict[str, str] = {}  # endpoint -> its short name

    def on_mount(self) -> None:
        for label in ("severity", "rule", "endpoint", "since", "summary"):
            self.add_column(label, width=len(label))

    def show(self, findings: tuple[FindingRow, ...], groups: tuple[FindingGroup, ...],
             labels: dict[str, str] | None = None, resolved: tuple[FindingRow, ...] = ()) -> None:
        """``groups``: the diagnosis' groups of ``findings`` (their members index it); ``labels``:
        endpoint -> its short name (the finding's detail keeps the full name); ``resolved``: the
        findings that cleared, shown greyed after them."""
        if labels is None:
            labels = self.labels
        state = (tuple((f.key, f.summary) for f in findings), tuple(sorted(self.expanded)),
                 tuple(sorted(labels.items())), tuple(f.key for f in resolved))
        if state == self._shown:
            return
        self._shown = state
        self.labels = dict(labels)

        def name(endpoint: str | None) -> str:
            return "(deployment)" if endpoint is None else labels.get(endpoint, endpoint)

        selected = self.selected()
        selected_row = self.items[self.cursor_row] if self.items and 0 <= self.cursor_row < len(self.items) else None
        self.findings, self.groups = list(findings), list(groups)
        self.resolved = sorted(resolved, key=lambda f: f.end or f.start, reverse=True)
        self.items = []
        rows: list[list[Text]] = []
        for gi, g in enumerate(self.groups):
            first = self.findings[g.members[0]]
            if len(g.members) == 1:
                self.items.append((gi, g.members[0]))
                endpoint = name(first.endpoint)
                if first.engines and len(first.engines) < 8:
                    endpoint += " e" + ",".join(map(str, first.engines))
                rows.append([severity(first.severity), Text(first.rule), log_text(endpoint), Text(time_text(first.start)),
                             Text(first.summary, overflow="ellipsis", no_wrap=True)])
                continue
            open_ = (g.rule, g.severity) in self.expanded
            self.items.append((gi, None))
            said = endpoint_label([labels.get(e, e) if e is not None else None for e in g.endpoints])
            label = log_text(("▾ " if open_ else "▸ ") + f"{said} ({len(set(g.endpoints))})")
            summary = Text(first.summary, overflow="ellipsis", no_wrap=True)
            summary.append(f" (+{len(g.members) - 1} alike)", style="dim")
            rows.append([severity(first.severity), Text(first.rule), label, Text(time_text(first.start)), summary])
            if open_:
                for i in g.members:
                    f = self.findings[i]
                    self.items.append((gi, i))
                    endpoint = "  └ " + name(f.endpoint)
                    rows.append([Text(""), Text(""), log_text(endpoint), Text(time_text(f.start)),
                                 Text(f.summary, overflow="ellipsis", no_wrap=True)])
        for i, f in enumerate(self.resolved):
            self.items.append((RESOLVED, i))
            rows.append(_resolved_row(f, name(f.endpoint)))
        # explicit widths from what is shown now (auto widths grew with the widest text of the run)
        columns = ("severity", "rule", "endpoint", "since", "summary")
        widths = [max([len(label)] + [r[i].cell_len for r in rows]) for i, label in enumerate(columns)]
        self.clear(columns=True)
        for label, width in zip(columns, widths):
            self.add_column(label, width=width)
        for row in rows:
            self.add_row(*row)
        target = None
        if selected_row is not None and selected is not None:
            for r, (gi, mi) in enumerate(self.items):
                f = self._finding_of(gi, mi)
                if f.key == selected.key and (mi is None) == (selected_row[1] is None):
                    target = r
                    break
        if target is not None:
            self.move_cursor(row=target)

    def selected(self) -> FindingRow | None:
        """The finding of the cursor's row (a group row: its first member)."""
        if not self.items or self.cursor_row is None or not 0 <= self.cursor_row < len(self.items):
            return None
        return self._finding_of(*self.items[self.cursor_row])

    def _finding_of(self, gi: int, mi: int | None) -> FindingRow:
        if gi == RESOLVED:
            assert mi is not None
            return self.resolved[mi]
        return self.findings[mi if mi is not None else self.groups[gi].members[0]]

    def selected_group(self) -> FindingGroup | None:
        if not self.items or self.cursor_row is None or not 0 <= self.cursor_row < len(self.items):
            return None
        gi, mi = self.items[self.cursor_row]
        return self.groups[gi] if mi is None and gi != RESOLVED else None

    def action_toggle_group(self) -> None:
        """x: expand a group into a row per endpoint, or fold it back."""
        if not self.items or not 0 <= self.cursor_row < len(self.items):
            return
        gi, _ = self.items[self.cursor_row]
        if gi == RESOLVED:
            return
        g = self.groups[gi]
        if len(g.members) < 2:
            return
        key = (g.rule, g.severity)
        self.expanded.symmetric_difference_update({key})
        self.show(tuple(self.findings), tuple(self.groups), self.labels, tuple(self.resolved))
        for r, (gj, mi) in enumerate(self.items):
            if gj == gi and mi is None:
                self.move_cursor(row=r)
                break


def _resolved_row(f: FindingRow, endpoint: str) -> list[Text]:
    """A finding that cleared: greyed, its severity in words, how long it lasted before the summary."""
    grey = "dim"
    lasted = fmt_age((f.end - f.start).total_seconds()) if f.end is not None else "?"
    summary = Text(f"cleared after {lasted} · ", style=grey)
    summary.append(f.summary)
    summary.stylize(grey)
    summary.overflow, summary.no_wrap = "ellipsis", True
    return [Text(f" {f.severity} ", style=grey), Text(f.rule, style=grey), log_text(endpoint, grey),
            Text(time_text(f.start), style=grey), summary]
