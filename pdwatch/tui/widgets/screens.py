"""The finding detail screen (explanation, evidence, fix) and the help screen."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from pdwatch.live import FindingRow

from .format import severity, time_text


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
                line.append(e.text)
                yield Static(line, classes="evidence", id=f"evidence-{i}")
            yield Static("Fix", classes="heading", markup=False)
            yield Static(Text(f.recommendation), id="detail-fix")
        yield Footer()


KEYS = [
    ("?", "this help"),
    ("q", "quit"),
    ("up/down", "move in the findings table"),
    ("enter", "open the selected finding: explanation, evidence lines, fix"),
    ("escape", "close a screen"),
    ("n / p", "next / previous finding (replay: n at the last one plays on until a new one fires)"),
    ("space", "replay: pause / resume"),
    ("+ / -", "replay: faster / slower (x2, /2)"),
    ("e", "export: write the Markdown report of what is on screen so far"),
]


class HelpScreen(ModalScreen):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 80; max-width: 95%; height: auto; max-height: 90%;
                                  border: thick $primary; background: $surface; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        text = Text("pdwatch keys\n\n", style="bold")
        for key, what in KEYS:
            text.append(f"{key:>10}", style="bold")
            text.append(f"  {what}\n")
        text.append("\nPanes: STALE = no line for more than 3 stats intervals; KV bar yellow >= 80%, red >= 95%.",
                    style="dim")
        with VerticalScroll():
            yield Static(text, id="help-text")
