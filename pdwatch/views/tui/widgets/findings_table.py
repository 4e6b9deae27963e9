"""The findings table: one row per group of identical findings across endpoints
("prefill_bound on prefill_w0–w3 (4)"), which ``x`` expands into a row per endpoint.
Cells are Text, never markup; ``findings`` keeps every finding firing, most severe first."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable

from pdwatch.session.snapshot import FindingRow
from pdwatch.rules.verdict import FindingGroup, endpoint_label

from .format import log_text, severity, time_text


class FindingsTable(DataTable):
    BINDINGS = [Binding("x", "toggle_group", "expand", show=False)]
    DEFAULT_CSS = """
    FindingsTable { height: auto; max-height: 100%; min-height: 4; overflow-x: hidden; }  /* enter shows it all */
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.findings: list[FindingRow] = []
        self.groups: list[FindingGroup] = []
        self.items: list[tuple[int, int | None]] = []  # (group index, member index or None for the group row)
        self.expanded: set[tuple[str, str]] = set()
        self._shown: tuple | None = None
        self.labels: dict[str, str] = {}  # endpoint -> its short name

    def on_mount(self) -> None:
        for label in ("severity", "rule", "endpoint", "since", "summary"):
            self.add_column(label, width=len(label))

    def show(self, findings: tuple[FindingRow, ...], groups: tuple[FindingGroup, ...],
             labels: dict[str, str] | None = None) -> None:
        """``groups``: the diagnosis' groups of ``findings`` (their members index it); ``labels``:
        endpoint -> its short name (the finding's detail keeps the full name)."""
        if labels is None:
            labels = self.labels
        state = (tuple((f.key, f.summary) for f in findings), tuple(sorted(self.expanded)),
                 tuple(sorted(labels.items())))
        if state == self._shown:
            return
        self._shown = state
        self.labels = dict(labels)

        def name(endpoint: str | None) -> str:
            return "(deployment)" if endpoint is None else labels.get(endpoint, endpoint)

        selected = self.selected()
        selected_row = self.items[self.cursor_row] if self.items and 0 <= self.cursor_row < len(self.items) else None
        self.findings, self.groups = list(findings), list(groups)
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
        # explicit widths from what is shown now (auto widths grew with the widest text of the run)
        labels = ("severity", "rule", "endpoint", "since", "summary")
        widths = [max([len(label)] + [r[i].cell_len for r in rows]) for i, label in enumerate(labels)]
        self.clear(columns=True)
        for label, width in zip(labels, widths):
            self.add_column(label, width=width)
        for row in rows:
            self.add_row(*row)
        target = None
        if selected_row is not None and selected is not None:
            for r, (gi, mi) in enumerate(self.items):
                f = self.findings[mi] if mi is not None else self.findings[self.groups[gi].members[0]]
                if f.key == selected.key and (mi is None) == (selected_row[1] is None):
                    target = r
                    break
        if target is not None:
            self.move_cursor(row=target)

    def selected(self) -> FindingRow | None:
        """The finding of the cursor's row (a group row: its first member)."""
        if not self.items or self.cursor_row is None or not 0 <= self.cursor_row < len(self.items):
            return None
        gi, mi = self.items[self.cursor_row]
        return self.findings[mi if mi is not None else self.groups[gi].members[0]]

    def selected_group(self) -> FindingGroup | None:
        if not self.items or self.cursor_row is None or not 0 <= self.cursor_row < len(self.items):
            return None
        gi, mi = self.items[self.cursor_row]
        return self.groups[gi] if mi is None else None

    def action_toggle_group(self) -> None:
        """x: expand a group into a row per endpoint, or fold it back."""
        if not self.items or not 0 <= self.cursor_row < len(self.items):
            return
        gi, _ = self.items[self.cursor_row]
        g = self.groups[gi]
        if len(g.members) < 2:
            return
        key = (g.rule, g.severity)
        self.expanded.symmetric_difference_update({key})
        self.show(tuple(self.findings), tuple(self.groups), self.labels)
        for r, (gj, mi) in enumerate(self.items):
            if gj == gi and mi is None:
                self.move_cursor(row=r)
                break
