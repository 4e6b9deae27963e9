"""The "go to a time" input of a replay: the session parses and checks the text; a bad one
keeps the input open with the reason under it."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from pdwatch.session.live import LiveSession

from ..widgets.format import clock_text


class SeekScreen(ModalScreen):
    """Dismissed with the target time (a pandas Timestamp), or None when cancelled."""

    BINDINGS = [Binding("escape", "cancel", "cancel")]
    DEFAULT_CSS = """
    SeekScreen { align: center middle; }
    SeekScreen > Vertical { width: 76; max-width: 100%; height: auto; border: thick $primary;
                            background: $surface; padding: 0 1; }
    SeekScreen #seek-error { color: $error; height: auto; }
    SeekScreen #seek-hint { color: $text-muted; height: auto; }
    """

    def __init__(self, session: LiveSession) -> None:
        super().__init__()
        self.session = session

    def compose(self) -> ComposeResult:
        snap_clock = self.session.clock
        start, end = self.session.time_range
        hint = Text(f"Go to: ISO 8601, HH:MM[:SS], or +5m / -2m from the clock ({clock_text(_dt(snap_clock))}).\n"
                    f"The logs run {clock_text(_dt(start))} – {clock_text(_dt(end))}. Enter: go, Esc: cancel.")
        with Vertical():
            yield Static(hint, id="seek-hint")
            yield Input(placeholder="14:01:30 or +5m", id="seek-input")
            yield Static("", id="seek-error", markup=False)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        try:
            target = self.session.resolve_time(event.value)
        except ValueError as exc:
            self.query_one("#seek-error", Static).update(Text(str(exc)))
            return
        self.dismiss(target)

    def action_cancel(self) -> None:
        self.dismiss(None)


def _dt(value):
    return None if value is None else value.to_pydatetime()
