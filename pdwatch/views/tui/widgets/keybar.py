"""The footer: the keys of the focused panel first, then the dashboard's (like htop and k9s).

Whole entries per line, at most two lines; "? help" and "q quit" always end it. The app says
which panel has the focus and whether the replay keys apply (``show``)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

PANEL_KEYS = {
    "endpoints": [("⏎", "detail"), ("d", "detail"), ("t", "panes")],
    "panes": [("⏎", "detail"), ("d", "detail"), ("t", "table")],
    "findings": [("⏎", "open"), ("x", "expand"), ("h", "hide cleared"), ("d", "endpoint")],
}
COMMON = [("tab", "next panel"), ("n/p", "finding"), ("l", "logs")]
REPLAY = [("space", "pause"), ("s", "step"), ("+/-", "speed"), ("g", "go to"), ("f", "first trouble")]
LAST = [("e", "export"), ("?", "help"), ("q", "quit")]


def key_entries(panel: str, replay: bool) -> list[tuple[str, str]]:
    return [*PANEL_KEYS.get(panel, []), *COMMON, *(REPLAY if replay else []), *LAST]


def _part(key: str, what: str) -> Text:
    part = Text()
    part.append(f" {key} ", style="bold reverse")
    part.append(what)
    return part


def keybar_text(entries: list[tuple[str, str]], width: int, max_lines: int = 2) -> Text:
    """Whole entries per line; the last three ("e export", "? help", "q quit") always shown: an
    entry that does not fit before them is left out (the help lists it)."""
    head, tail = [_part(*e) for e in entries[:-len(LAST)]], [_part(*e) for e in entries[-len(LAST):]]
    tail_len = sum(len(p.plain) for p in tail) + len(tail) - 1
    lines: list[Text] = [Text()]
    for part in head:
        line = lines[-1]
        need = len(part.plain) + (1 if line.plain else 0)
        room = width - len(line.plain)
        last_line = len(lines) == max_lines
        if need <= room - ((tail_len + 1) if last_line else 0):
            if line.plain:
                line.append(" ")
            line.append_text(part)
        elif not last_line:
            lines.append(Text())
            if len(lines) == max_lines and len(part.plain) > width - tail_len - 1:
                continue
            lines[-1].append_text(part)
    for part in tail:
        line = lines[-1]
        if line.plain and len(line.plain) + 1 + len(part.plain) > width and len(lines) < max_lines:
            lines.append(Text())
            line = lines[-1]
        if line.plain:
            line.append(" ")
        line.append_text(part)
    out = Text("\n").join(lines)
    out.no_wrap = True
    out.overflow = "crop"
    return out


class KeyBar(Static):
    DEFAULT_CSS = """
    KeyBar { height: auto; max-height: 2; background: $panel; color: $text; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.panel = "endpoints"
        self.replay = False

    def show(self, panel: str, replay: bool) -> None:
        if (panel, replay) != (self.panel, self.replay):
            self.panel, self.replay = panel, replay
            self.refresh(layout=True)

    @property
    def entries(self) -> list[tuple[str, str]]:
        return key_entries(self.panel, self.replay)

    def render(self) -> Text:
        return keybar_text(self.entries, max(self.size.width, 1))

    def get_content_height(self, container, viewport, width: int) -> int:
        return keybar_text(self.entries, max(width, 1)).plain.count("\n") + 1
