"""``/``, ``n``, ``N`` over the lines a log screen shows: the search box, the matches, the current one.

Shared by the single-file log viewer and the job's log view. The screen gives the box's and the
body's ids, finds its matches (``_find``: what a line's text is differs) and says where the
current match is (``_announce``); this mixin opens and closes the box and steps through matches.
"""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.widgets import Input


# the keys of the search and of the window of lines read, the same on both log screens (spliced into
# each screen's BINDINGS: Textual reads bindings from its own classes, not from a mixin)
SEARCH_BINDINGS = [
    Binding("slash", "search", "search", key_display="/"),
    Binding("n", "next_match", "next"),
    Binding("N", "previous_match", "prev", key_display="N"),
    Binding("left_square_bracket", "earlier", "earlier", key_display="["),
    Binding("right_square_bracket", "later", "later", key_display="]"),
]


class LineSearch:
    SEARCH_BOX = "#search"
    BODY = "#body"
    NO_MATCH_HERE = "no match in these lines"

    query_text: str = ""
    matches: list[int] = []  # indices into the lines shown (set per instance by _find)
    current: int = -1

    def action_search(self) -> None:
        box = self.query_one(self.SEARCH_BOX, Input)
        box.add_class("-open")
        box.value = self.query_text
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        box = self.query_one(self.SEARCH_BOX, Input)
        box.remove_class("-open")
        self.query_one(self.BODY).focus()
        self._find(event.value)

    def on_key(self, event) -> None:
        box = self.query_one(self.SEARCH_BOX, Input)
        if event.key == "escape" and box.has_class("-open"):  # Esc closes the box, not the screen
            event.stop()
            event.prevent_default()
            box.remove_class("-open")
            self.query_one(self.BODY).focus()

    def _scroll_to_index(self, index: int) -> None:
        """The line at ``index`` in the middle of the body."""
        body = self.query_one(self.BODY)
        body.scroll_to(y=max(0, index - max(body.size.height // 2, 1)), animate=False)

    def _current_index(self) -> int:
        return self.matches[self.current] if 0 <= self.current < len(self.matches) else -1

    def _step(self, delta: int) -> None:
        if not self.matches:
            self._say("no search yet (/ to search)" if not self.query_text else self.NO_MATCH_HERE)
            return
        self.current = (self.current + delta) % len(self.matches)
        self._announce()
        self._render_lines()
        self._scroll_to_index(self.matches[self.current])

    def action_next_match(self) -> None:
        self._step(1)

    def action_previous_match(self) -> None:
        self._step(-1)


def mark_matches(text: Text, needle: str, current: bool, start: int = 0) -> None:
    """Highlight each (case-blind) occurrence of ``needle`` in ``text`` from ``start``; the current
    match's line in green, the others in yellow."""
    if not needle:
        return
    lowered = text.plain.lower()
    at = lowered.find(needle, start)
    while at >= 0:
        text.stylize("black on bright_green" if current else "black on yellow", at, at + len(needle))
        at = lowered.find(needle, at + len(needle))
