"""The run as one strip under the endpoints: when each finding fired, and where the clock is.

``HH:MM:SS ──██████▓▓──┃──▒▒── HH:MM:SS``: a cell per slice of the run (a replay: its logs' first to
last timestamp; a watch: from the first finding or the first tick up to the clock), each cell in
the worst severity of the findings firing in its slice — critical ``█`` red, warning ``▓`` yellow,
info ``▒`` blue (the glyph says it without colour too), nothing ``─`` — and the clock ``┃``. In a
replay the part after the clock is dim (the run's findings ahead of the clock are known once its
files are read). A second row, when the widget has one, names the spans' rules and the clock's
time. Rule names are pdwatch's own; the strip is cells of ``Text``, never markup.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Sequence

from rich.text import Text
from textual.widget import Widget

from pdwatch.rules.findings import severity_rank
from pdwatch.session.snapshot import FindingRow, Snapshot

from .format import SEVERITY_FG, time_text

GLYPH = {"critical": "█", "warning": "▓", "info": "▒"}
STYLE = {"critical": "red", "warning": "yellow", "info": "blue"}
EMPTY, CLOCK = "─", "┃"
LABEL = 8  # "HH:MM:SS"


@dataclass(frozen=True)
class Span:
    """What the timeline draws: a finding's firing period, its end known (an open one: to the end of the strip)."""
    rule: str
    severity: str
    start: datetime
    end: datetime


def spans_of(findings: Sequence[FindingRow], open_until: datetime) -> tuple[Span, ...]:
    """The findings as spans; one still firing (end None) lasts until ``open_until``."""
    return tuple(Span(f.rule, f.severity, f.start, f.end if f.end is not None else max(open_until, f.start))
                 for f in findings)


def column(t: datetime, start: datetime, end: datetime, width: int) -> int:
    """The cell of time ``t`` on a strip of ``width`` cells from ``start`` to ``end``."""
    span = (end - start).total_seconds()
    if span <= 0:
        return width - 1
    return max(0, min(width - 1, int((t - start).total_seconds() / span * width)))


def strip_cells(spans: Sequence[Span], start: datetime, end: datetime, width: int) -> list[str | None]:
    """Each cell's worst severity (None: nothing firing in its slice)."""
    cells: list[str | None] = [None] * width
    for s in spans:
        if s.end < start or s.start > end:
            continue
        for i in range(column(max(s.start, start), start, end, width), column(min(s.end, end), start, end, width) + 1):
            if cells[i] is None or severity_rank(s.severity) < severity_rank(cells[i]):
                cells[i] = s.severity
    return cells


def timeline_text(spans: Sequence[Span], start: datetime, end: datetime, clock: datetime | None,
                  width: int, rows: int = 1, dim_after_clock: bool = False) -> Text:
    """The strip between its start and end times (``width`` cells in all), and with ``rows`` = 2 a row of labels."""
    strip_width = width - 2 * (LABEL + 1)
    if strip_width < 10:  # too narrow for a strip: the range alone
        return Text(f"{time_text(start)} – {time_text(end)}"[:width], style="dim", no_wrap=True)
    cells = strip_cells(spans, start, end, strip_width)
    mark = column(clock, start, end, strip_width) if clock is not None else None
    out = Text(no_wrap=True, overflow="crop")
    out.append(time_text(start) + " ", style="dim")
    for i, sev in enumerate(cells):
        ahead = dim_after_clock and mark is not None and i > mark
        if i == mark:
            out.append(CLOCK, style="bold reverse" if sev else "bold")
        elif sev is None:
            out.append(EMPTY, style="dim")
        else:
            out.append(GLYPH.get(sev, "▒"), style=STYLE.get(sev, "") + (" dim" if ahead else ""))
    out.append(" " + time_text(end), style="dim")
    if rows >= 2:
        out.append("\n")
        out.append_text(labels_row(spans, start, end, clock, strip_width, mark))
    return out


def labels_row(spans: Sequence[Span], start: datetime, end: datetime, clock: datetime | None,
               strip_width: int, mark: int | None) -> Text:
    """Under the strip: the clock's time at its mark, then each rule's name where its first span
    starts, worst first, where it does not overlap a label already placed."""
    line: list[tuple[str, str]] = [(" ", "")] * strip_width
    taken = [False] * strip_width

    def place(at: int, text: str, style: str) -> bool:
        at = max(0, min(at, strip_width - len(text)))
        if at < 0 or len(text) > strip_width or any(taken[max(0, at - 1):at + len(text) + 1]):
            return False
        for j, ch in enumerate(text):
            line[at + j] = (ch, style)
            taken[at + j] = True
        return True

    if mark is not None and clock is not None:
        place(mark, "▲" + time_text(clock), "bold")
    seen: set[str] = set()
    for s in sorted(spans, key=lambda s: (severity_rank(s.severity), s.start)):
        if s.rule in seen or s.end < start or s.start > end:
            continue
        seen.add(s.rule)
        place(column(max(s.start, start), start, end, strip_width), s.rule, SEVERITY_FG.get(s.severity, ""))
    out = Text(" " * (LABEL + 1), no_wrap=True, overflow="crop")
    for ch, style in line:
        out.append(ch, style=style)
    return out


def run_range(snap: Snapshot, first_seen: datetime | None) -> tuple[datetime, datetime] | None:
    """The time the strip spans: a replay's logs (once read), else from the first finding or the
    first tick seen (``first_seen``) up to the clock."""
    if snap.start is not None and snap.end is not None and snap.end > snap.start:
        return snap.start, snap.end
    if snap.clock is None:
        return None
    starts = [f.start for f in (snap.run_findings or snap.all_findings)]
    if first_seen is not None:
        starts.append(first_seen)
    begin = min(starts, default=snap.clock)
    return (begin, snap.clock) if snap.clock > begin else None


class Timeline(Widget):
    """One row (two when its CSS height gives it two: the labels); hidden until there is a range."""

    DEFAULT_CSS = """
    Timeline { height: 1; padding: 0 1; }
    Timeline.-empty { display: none; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.first_seen: datetime | None = None  # a watch's first clock: where its strip begins
        self._drawn: tuple | None = None
        self._args: tuple | None = None

    def show(self, snap: Snapshot) -> None:
        if self.first_seen is None and snap.clock is not None:
            self.first_seen = snap.clock
        found = run_range(snap, self.first_seen)
        self.set_class(found is None, "-empty")
        if found is None:
            return
        start, end = found
        findings = snap.run_findings or snap.all_findings
        # a whole run's findings: one open at the end of the logs lasts to the end; the findings so far: to the clock
        open_until = end if snap.run_findings else (snap.clock or end)
        spans = spans_of(findings, open_until)
        args = (spans, start, end, snap.clock, snap.mode == "replay")
        if args != self._args:
            self._args = args
            self._redraw()

    def _redraw(self) -> None:
        drawn = (self._args, self.size.width, self.size.height)
        if drawn != self._drawn:
            self._drawn = drawn
            self.refresh()

    def on_resize(self, _event) -> None:
        self._redraw()

    def render(self) -> Text:
        if self._args is None:
            return Text("")
        spans, start, end, clock, replay = self._args
        return timeline_text(spans, start, end, clock, max(self.content_size.width, 1),
                             rows=self.content_size.height, dim_after_clock=replay)
