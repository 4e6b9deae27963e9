"""The help screen: every key of the dashboard."""

from __future__ import annotations

import textwrap

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS = [
    ("?", "this help"),
    ("q", "quit (on a screen over the dashboard: close it)"),
    ("escape", "close a screen"),
    ("tab / shift+tab", "move between the endpoint panes and the findings table"),
    ("up / down", "move in the findings table"),
    ("enter", "open the selected finding (why, evidence lines, fix) or the focused endpoint"),
    ("d", "endpoint detail: series over the run, start-up facts, recent lines (the focused pane, "
          "else the selected finding's endpoint)"),
    ("n", "next finding (replay: plays on at full speed until a new one fires; watch: next row)"),
    ("p", "previous finding (replay: rewinds to the start of the one before the clock; watch: previous row)"),
    ("space", "replay: pause / resume"),
    ("s", "replay: step one refresh forward (pauses)"),
    ("+ / -", "replay: faster / slower (x2, /2)"),
    ("g", "replay: go to a time: 2026-05-29T14:01:00Z, 14:01[:30], +5m or -2m (from the clock)"),
    ("e", "export: write the Markdown report of what has been seen so far"),
]


class HelpScreen(ModalScreen):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 100; max-width: 100%; height: auto; max-height: 100%;
                                  border: thick $primary; background: $surface; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        text = Text("pdwatch keys\n\n", style="bold")
        for key, what in KEYS:  # wrapped for a 76-column box, with a hanging indent
            text.append(f"{key:>15}", style="bold")
            text.append("  " + "\n                 ".join(textwrap.wrap(what, 57)) + "\n")
        text.append("\nPanes: STALE = no line for more than 3 stats intervals; KV bar yellow >= 80%, red >= 95%. "
                    "A rewind replays the logs up to the new time: findings and charts are those of the clock.",
                    style="dim")
        with VerticalScroll():
            yield Static(text, id="help-text")
