"""The job's logs interleaved by time (``l``, or Enter on a finding's evidence line), like lnav.

Each line has a short prefix: its endpoint (the part the endpoints' names do not share) and its
level, coloured by level. ``e`` shows one endpoint at a time (cycling back to all), ``v`` raises
the minimum level (ALL, INFO, WARNING, ERROR), ``/`` ``n`` ``N`` search the lines shown, ``[`` and
``]`` read earlier or later, ``g`` and ``G`` go to the job's start and end. The lines are read
around a position by ``pdwatch.events.job_log`` in a worker thread (a few hundred per file,
whatever the logs' size); the text is shown through ``log_text``: no markup, no control character.
"""

from __future__ import annotations

from datetime import datetime

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from pdwatch.events.job_log import JobLine, JobLog, JobWindow

from ..widgets.format import log_text
from ..widgets.short_names import short_names
from .line_search import SEARCH_BINDINGS, LineSearch, mark_matches

WINDOW_LINES = 300  # lines read each side of the position
LEVEL_FILTERS = (None, "INFO", "WARNING", "ERROR")
LEVEL_SHORT = {"ERROR": "ERR", "WARNING": "WARN", "INFO": "INFO", "DEBUG": "DBG"}
LEVEL_STYLE = {"ERROR": "bold red", "WARNING": "bold yellow", "INFO": "green", "DEBUG": "dim"}
BODY_STYLE = {"ERROR": "red", "WARNING": "yellow", "DEBUG": "dim"}
ENDPOINT_STYLES = ("cyan", "magenta", "blue", "bright_green", "bright_cyan", "bright_magenta")


class JobLogScreen(LineSearch, Screen):
    SEARCH_BOX, BODY = "#job-search", "#job-body"
    BINDINGS = [
        Binding("escape,q", "close", "close"),
        Binding("e", "next_endpoint", "endpoint"),
        Binding("v", "next_level", "level"),
        *SEARCH_BINDINGS,
        # as in less: g the start, G the end (Home and End scroll the lines read)
        Binding("g", "job_start", "start", show=False),
        Binding("G", "job_end", "end", show=False, key_display="G"),
    ]
    DEFAULT_CSS = """
    JobLogScreen #job-title { height: 1; background: $boost; padding: 0 1; }
    JobLogScreen #job-body { height: 1fr; padding: 0 1; }
    JobLogScreen #job-lines { width: auto; }
    JobLogScreen #job-search { dock: bottom; display: none; }
    JobLogScreen #job-search.-open { display: block; }
    JobLogScreen #job-status { height: 1; color: $text-muted; padding: 0 1; }
    """

    def __init__(self, job: JobLog, *, at_line: tuple[str, int] | None = None,
                 at_time: datetime | float | None = None) -> None:
        """Opened at line ``at_line`` (source, line number), marked; else at ``at_time`` (None: the end)."""
        super().__init__()
        self.job = job
        self.target = at_line
        self.at_time = at_time
        self.endpoint: str | None = None
        self.min_level: str | None = None
        self.window: JobWindow | None = None
        self.query_text = ""
        self.matches: list[int] = []  # indices into window.lines
        self.current = -1
        names = [f.endpoint or f.path.rsplit("/", 1)[-1] for f in job.files]
        self._short_names = short_names(list(dict.fromkeys(names)))
        self._endpoint_styles = {name: ENDPOINT_STYLES[i % len(ENDPOINT_STYLES)]
                                 for i, name in enumerate(self._short_names)}

    def compose(self) -> ComposeResult:
        yield Static(Text("job log  reading…"), id="job-title")
        with VerticalScroll(id="job-body"):
            yield Static(id="job-lines")
        yield Static("", id="job-status", markup=False)
        yield Input(placeholder="search (Enter: find, Esc: cancel)", id="job-search")
        yield Footer()

    def on_mount(self) -> None:
        if self.target is not None:
            self.load_at_line(*self.target)
        else:
            self.load_at_time(self.at_time)

    # -- reading (a worker thread) --------------------------------------------------------------
    @work(thread=True, exclusive=True, group="job-log")
    def load_at_line(self, source: str, line_no: int) -> None:
        window = self.job.window_at_line(source, line_no, before=WINDOW_LINES, after=WINDOW_LINES,
                                         endpoint=self.endpoint, min_level=self.min_level)
        self.app.call_from_thread(self.show_window, window)

    @work(thread=True, exclusive=True, group="job-log")
    def load_at_time(self, when: datetime | float | None) -> None:
        window = self.job.window_at_time(when, before=WINDOW_LINES, after=WINDOW_LINES,
                                         endpoint=self.endpoint, min_level=self.min_level)
        self.app.call_from_thread(self.show_window, window)

    def show_window(self, window: JobWindow) -> None:
        self.window = window
        self._show_title()
        self._render_lines()
        self._find(self.query_text, scroll=False)
        if window.anchor is not None:
            self.call_after_refresh(self._scroll_to_index, window.anchor)

    def _show_title(self) -> None:
        window = self.window
        title = Text("job log", style="bold")
        title.append(f"  {self._short_names.get(self.endpoint, self.endpoint) if self.endpoint else 'all endpoints'}")
        title.append(f", {self.min_level or 'ALL'} and above" if self.min_level else ", every level")
        if window is not None:
            if window.problems:
                title.append("  " + "; ".join(window.problems), style="bold red")
            elif not window.lines:
                title.append("  no line", style="yellow")
            else:
                title.append(f"  {len(window.lines):,} lines", style="dim")
                edges = [w for w, on in (("start", window.at_start), ("end", window.at_end)) if on]
                if edges:
                    title.append(f" ({' and '.join(edges)} of the job)", style="dim")
        self.query_one("#job-title", Static).update(title)

    # -- drawing ----------------------------------------------------------------------------------
    def _label_of(self, line: JobLine) -> str:
        return line.endpoint or line.source.rsplit("/", 1)[-1]

    def prefix_width(self) -> int:
        longest = max((len(s) for s in self._short_names.values()), default=1)
        return min(longest, 12 if self.app.size.width < 120 else 24)

    def line_text(self, line: JobLine, width: int, marked: bool = False) -> Text:
        """One line: endpoint and level (coloured), then the log text as text."""
        name = self._label_of(line)
        short = self._short_names.get(name, name)
        if len(short) > width:
            short = "…" + short[-(width - 1):]
        out = Text(no_wrap=True)
        out.append(f"{short:<{width}} ", style="bold reverse" if marked else self._endpoint_styles.get(name, ""))
        level = line.level
        out.append(f"{LEVEL_SHORT.get(level, ''):<4} ", style=LEVEL_STYLE.get(level, "dim"))
        body = log_text(line.text, style=BODY_STYLE.get(line.record_level or "", "") + (" bold" if marked else ""))
        body.no_wrap = True
        out.append_text(body)
        return out

    def _render_lines(self) -> None:
        window = self.window
        if window is None:
            return
        width = self.prefix_width()
        out = Text(no_wrap=True)
        needle = self.query_text.lower()
        current = self._current_index()
        for i, line in enumerate(window.lines):
            marked = self.target is not None and (line.source, line.line_no) == self.target
            text = self.line_text(line, width, marked)
            mark_matches(text, needle, i == current, start=len(text.plain) - len(line.text))  # not in the prefix
            out.append_text(text)
            if i < len(window.lines) - 1:
                out.append("\n")
        self.query_one("#job-lines", Static).update(out)

    def center_index(self) -> int | None:
        """The index of the line in the middle of the view."""
        if self.window is None or not self.window.lines:
            return None
        body = self.query_one("#job-body", VerticalScroll)
        return max(0, min(len(self.window.lines) - 1, round(body.scroll_y) + body.size.height // 2))

    # -- filters ----------------------------------------------------------------------------------
    def action_next_endpoint(self) -> None:
        choices = [None, *self.job.endpoints]
        self.endpoint = choices[(choices.index(self.endpoint) + 1) % len(choices)] \
            if self.endpoint in choices else None
        self._reload(f"endpoint: {self.endpoint or 'all'} (e: next)")

    def action_next_level(self) -> None:
        self.min_level = LEVEL_FILTERS[(LEVEL_FILTERS.index(self.min_level) + 1) % len(LEVEL_FILTERS)]
        self._reload(f"level: {self.min_level or 'ALL'}{' and above' if self.min_level else ''} (v: next)")

    def _reload(self, said: str) -> None:
        """Read again with the filters, at the time of the line in the middle of the view."""
        self._say(said)
        center = self.center_index()
        when = self.window.lines[center].key if center is not None else self.at_time
        self.load_at_time(when)

    # -- moving -----------------------------------------------------------------------------------
    def action_earlier(self) -> None:
        if self.window is not None and self.window.lines and not self.window.at_start:
            first = self.window.lines[0]
            self.load_at_time(first.key)

    def action_later(self) -> None:
        if self.window is not None and self.window.lines and not self.window.at_end:
            last = self.window.lines[-1]
            self.load_at_time(last.key)

    def action_job_start(self) -> None:
        self.load_at_time(float("-inf"))

    def action_job_end(self) -> None:
        self.load_at_time(None)

    def action_close(self) -> None:
        self.dismiss(None)

    # -- search -------------------------------------------------------------------------------------
    def _find(self, text: str, scroll: bool = True) -> None:
        self.query_text = text
        window = self.window
        needle = text.lower()
        self.matches = [i for i, line in enumerate(window.lines) if needle in line.text.lower()] \
            if window is not None and needle else []
        if not needle:
            self.current = -1
        elif not self.matches:
            self.current = -1
            self._say(f"“{text}” is not in these lines ([ and ] read earlier and later)")
        else:
            center = self.center_index() if scroll else window.anchor
            after = [k for k, i in enumerate(self.matches) if i >= (center or 0)]
            self.current = after[0] if after else 0
            self._announce()
        self._render_lines()
        if scroll and self.matches:
            self._scroll_to_index(self.matches[self.current])

    def _announce(self) -> None:
        line = self.window.lines[self.matches[self.current]]
        name = self._label_of(line)
        self._say(f"“{self.query_text}”: match {self.current + 1} of {len(self.matches)}, "
                  f"{self._short_names.get(name, name)} line {line.line_no:,} (n next, N previous)")

    def _say(self, text: str) -> None:
        self.query_one("#job-status", Static).update(Text(text))
