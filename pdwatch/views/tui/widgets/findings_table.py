"""The findings table: severity, rule, endpoint, since, summary (cells are Text, never markup)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from pdwatch.session.snapshot import FindingRow

from .format import severity, time_text


class FindingsTable(DataTable):
    DEFAULT_CSS = """
    FindingsTable { height: auto; max-height: 100%; min-height: 4; overflow-x: hidden; }  /* enter shows it all */
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.findings: list[FindingRow] = []

    def on_mount(self) -> None:
        self.add_columns("severity", "rule", "endpoint", "since", "summary")

    def show(self, findings: tuple[FindingRow, ...]) -> None:
        if [f.key for f in findings] == [f.key for f in self.findings] and \
                [f.summary for f in findings] == [f.summary for f in self.findings]:
            return
        selected = self.selected()
        self.findings = list(findings)
        self.clear()
        for f in findings:
            endpoint = f.endpoint or "(deployment)"
            if f.engines and len(f.engines) < 8:
                endpoint += " e" + ",".join(map(str, f.engines))
            self.add_row(severity(f.severity), Text(f.rule), Text(endpoint), Text(time_text(f.start)),
                         Text(f.summary, overflow="ellipsis", no_wrap=True))
        if selected is not None:
            for i, f in enumerate(self.findings):
                if f.key == selected.key:
                    self.move_cursor(row=i)

    def selected(self) -> FindingRow | None:
        if not self.findings or self.cursor_row is None or not 0 <= self.cursor_row < len(self.findings):
            return None
        return self.findings[self.cursor_row]
