"""The help screen: every key of the dashboard, in a box that fits 80x24, and how to close it."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS = [  # the key in 13 columns, its meaning in 60: a line fits the 76 columns of an 80x24 box
    ("tab/shift+tab", "next / previous panel (the footer lists its keys)"),
    ("enter", "open: endpoint detail, finding (why, evidence, fix), log"),
    ("d", "endpoint detail (focused row, else the selected finding's)"),
    ("t", "endpoints as a table (one line each) or as panes"),
    ("x", "findings: expand a group into one row per endpoint"),
    ("h", "findings: hide / show the ones that cleared (greyed)"),
    ("n / p", "next / previous finding (replay: play on / rewind to it)"),
    ("space / s", "replay: pause, resume / step one refresh forward (pauses)"),
    ("+ / -", "replay: faster / slower (x2, /2)"),
    ("g", "replay: go to a time (14:01[:30], +5m, -2m, ISO 8601)"),
    ("f", "replay: jump to the run's first warning-or-worse finding"),
    ("e", "export the Markdown report of what was seen so far"),
    ("l", "the job's logs interleaved by time (at the replay's clock)"),
    ("/ n N [ ]", "in a log: search, next / previous match, earlier / later"),
    ("e / v", "in the job's logs: one endpoint at a time / minimum level"),
    ("q", "quit (on a screen over the dashboard: close it)"),
    ("ctrl+c", "quit, from any screen or text box"),
]


def help_text() -> Text:
    text = Text("pdwatch keys", style="bold")
    text.append("   (Esc, q or ? closes this)\n", style="bold yellow")
    for key, what in KEYS:
        text.append(f"{key:>13}", style="bold")
        text.append(f"  {what}\n")
    text.append("Worst first: critical, then warning. ● a finding's endpoint, ! its engines;\n"
                "KV yellow >= 80%, red >= 95%; STALE: no line for 3 stats intervals.",
                style="dim")
    return text


class HelpScreen(ModalScreen):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 100; max-width: 100%; height: auto; max-height: 100%;
                                  border: round $primary; background: $surface; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(help_text(), id="help-text")
