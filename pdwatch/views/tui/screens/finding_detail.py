"""The finding detail screen: explanation, evidence lines (literal text), fix."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from pdwatch.session.snapshot import FindingRow

from ..widgets.format import log_text, severity, time_text


class FindingDetail(ModalScreen):
    BINDINGS = [Binding("escape,q,enter", "dismiss", "close")]
    DEFAULT_CSS = """
    FindingDetail { align: center middle; }
    FindingDetail > VerticalScroll { width: 95%; height: 90%; border: thick $primary; background: $surface;
                                     padding: 0 1; }
    FindingDetail .heading { text-style: bold; margin-top: 1; }
    FindingDetail .evidence { color: $text-muted; }
    """

    def __init__(self, finding: FindingRow) -> None:
        super().__init__()
        self.finding = finding

    def compose(self) -> ComposeResult:
        f = self.finding
        title = severity(f.severity)
        title.append(" ")
        title.append(f.rule, style="bold")
        title.append(" on ")
        title.append(f.endpoint or "the deployment")
        if f.engines:
            title.append(f" (engines {', '.join(map(str, f.engines))})")
        title.append(f"  since {time_text(f.start)}")
        if f.end is not None:
            title.append(f", resolved {time_text(f.end)}")
        with VerticalScroll():
            yield Static(title, id="detail-title")
            yield Static(Text(f.summary), id="detail-summary")
            if f.explanation:
                yield Static("Why", classes="heading", markup=False)
                yield Static(Text(f.explanation), id="detail-explanation")
            yield Static("Evidence", classes="heading", markup=False)
            if not f.evidence:
                yield Static("(no lines quoted)", markup=False)
            for i, e in enumerate(f.evidence):
                line = Text(f"{e.source}:{e.line_no}", style="dim")
                line.append("  ")
                line.append_text(log_text(e.text))
                yield Static(line, classes="evidence", id=f"evidence-{i}")
            yield Static("Fix", classes="heading", markup=False)
            yield Static(Text(f.recommendation), id="detail-fix")
        yield Footer()
