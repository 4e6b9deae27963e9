"""A log opened at ``source:line`` in context (from a finding's evidence): scrollable, searchable.

The window of lines around the target is read by the sources layer (``sources.window``: a local
file streamed, an ``ssh://`` file cut on its host), in a worker thread, so a slow host never
freezes the dashboard; memory stays bounded whatever the log's size. ``[`` and ``]`` move the
window earlier or later. Lines are shown as text: no markup, control characters escaped.
"""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from pdwatch.sources.window import DEFAULT_CONTEXT, LogWindow, read_window

from ..widgets.format import log_text
from .line_search import SEARCH_BINDINGS, LineSearch, mark_matches


class LogViewerScreen(LineSearch, Screen):
    SEARCH_BOX, BODY = "#log-search", "#log-body"
    NO_MATCH_HERE = "no match in this window"
    BINDINGS = [
        Binding("escape,q", "close", "close"),
        *SEARCH_BINDINGS,
        Binding("home", "top", "top", show=False),
        Binding("end", "bottom", "end", show=False),
    ]
    DEFAULT_CSS = """
    LogViewerScreen #log-title { height: 1; background: $boost; padding: 0 1; }
    LogViewerScreen #log-body { height: 1fr; padding: 0 1; }
    LogViewerScreen #log-lines { width: auto; }
    LogViewerScreen #log-search { dock: bottom; display: none; }
    LogViewerScreen #log-search.-open { display: block; }
    LogViewerScreen #log-status { height: 1; color: $text-muted; padding: 0 1; }
    """

    def __init__(self, source: str, line_no: int, ssh_args: list[str] | None = None,
                 context: int = DEFAULT_CONTEXT) -> None:
        super().__init__()
        self.source = source
        self.line_no = int(line_no)
        self.center = self.line_no  # the window is read around this line; the target stays marked
        self.ssh_args = list(ssh_args or [])
        self.context = context
        self.window: LogWindow | None = None
        self.query_text = ""
        self.matches: list[int] = []  # indices into window.lines
        self.current = -1

    def compose(self) -> ComposeResult:
        yield Static(Text(f"{self.source}:{self.line_no}  reading…"), id="log-title")
        with VerticalScroll(id="log-body"):
            yield Static(id="log-lines")
        yield Static("", id="log-status", markup=False)
        yield Input(placeholder="search (Enter: find, Esc: cancel)", id="log-search")
        yield Footer()

    def on_mount(self) -> None:
        self.load(self.center)

    @work(thread=True, exclusive=True, group="log-window")
    def load(self, center: int) -> None:
        window = read_window(self.source, center, before=self.context, after=self.context, ssh_args=self.ssh_args)
        self.app.call_from_thread(self.show_window, window)

    def show_window(self, window: LogWindow) -> None:
        self.window = window
        title = Text(f"{window.source}", style="bold")
        title.append(f":{window.target}  ")
        if window.error:
            title.append(window.error, style="bold red")
        elif not window.lines:
            title.append(f"the file has no line {window.target}", style="yellow")
        else:
            title.append(f"lines {window.first:,}–{window.last:,}" + (" (end of file)" if window.at_end else ""),
                         style="dim")
        self.query_one("#log-title", Static).update(title)
        self._render_lines()
        self._find(self.query_text, scroll=False)
        self.call_after_refresh(self._scroll_to_index, self.center - window.first)

    def _render_lines(self) -> None:
        window = self.window
        if window is None:
            return
        width = len(str(window.last)) if window.lines else 1
        out = Text(no_wrap=True)
        needle = self.query_text.lower()
        for i, line in enumerate(window.lines):
            number = window.first + i
            target = number == self.line_no
            out.append(f"{number:>{width}} ", style="bold reverse" if target else "dim")
            body = log_text(line, style="bold" if target else "")
            body.no_wrap = True
            mark_matches(body, needle, i == self._current_index())
            out.append_text(body)
            if i < len(window.lines) - 1:
                out.append("\n")
        self.query_one("#log-lines", Static).update(out)

    # -- search ---------------------------------------------------------------------------------
    def _find(self, text: str, scroll: bool = True) -> None:
        self.query_text = text
        window = self.window
        needle = text.lower()
        self.matches = [i for i, line in enumerate(window.lines) if needle in log_text(line).plain.lower()] \
            if window is not None and needle else []
        if not needle:
            self.current = -1
            self._say("")
        elif not self.matches:
            self.current = -1
            self._say(f"“{text}” is not in lines {window.first:,}–{window.last:,} ([ and ] move the window)"
                      if window is not None and window.lines else f"“{text}”: no lines")
        else:
            target = self.line_no - window.first
            after = [k for k, i in enumerate(self.matches) if i >= target]
            self.current = after[0] if after else 0
            self._announce()
        self._render_lines()
        if scroll and self.matches:
            self._scroll_to_index(self.matches[self.current])

    def _announce(self) -> None:
        window = self.window
        number = window.first + self.matches[self.current] if window else 0
        self._say(f"“{self.query_text}”: match {self.current + 1} of {len(self.matches)}, line {number:,} "
                  "(n next, N previous)")

    # -- the window -----------------------------------------------------------------------------
    def action_earlier(self) -> None:
        if self.window is not None and self.window.first > 1:
            self.center = max(1, self.window.first - self.context // 2)
            self.load(self.center)

    def action_later(self) -> None:
        if self.window is not None and not self.window.at_end:
            self.center = self.window.last + self.context // 2
            self.load(self.center)

    def action_top(self) -> None:
        self.query_one("#log-body", VerticalScroll).scroll_home(animate=False)

    def action_bottom(self) -> None:
        self.query_one("#log-body", VerticalScroll).scroll_end(animate=False)

    def action_close(self) -> None:
        self.dismiss(None)

    def _say(self, text: str) -> None:
        self.query_one("#log-status", Static).update(Text(text))
