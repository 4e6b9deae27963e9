"""The Dynamo frontends in a line or two each, after the serving endpoints: what their users get.

Over the last minute up to the clock: inference requests per second, the share that failed with
their commonest HTTP status and Dynamo error type, and from the frontend's /metrics (when scraped)
TTFT and ITL with their p99 and the requests in flight and queued. One line each from 120 columns,
two below; at most ``SHOWN`` frontends, then how many more. Names, statuses and error types come
from the logs: they are appended as text (never markup), control characters escaped.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from pdwatch.session.snapshot import EndpointRow, FrontendSummary
from pdwatch.units import fmt_pct

from .format import SEVERITY_FG, count, log_text, rate

WIDE = 120  # from this width a frontend is one line
SHOWN = 2  # frontends shown; the others are counted ("+1 more frontend")


class FrontendStrip(Static):
    DEFAULT_CSS = """
    FrontendStrip { height: auto; padding: 0 1; background: $boost; }
    FrontendStrip.-empty { display: none; }
    """

    _shown: Text | None = None
    _last: tuple | None = None

    def show(self, rows: list[EndpointRow], severity: dict[str, str], labels: dict[str, str] | None = None) -> None:
        """``rows``: the endpoints worst first; ``severity``: endpoint -> its worst finding firing;
        ``labels``: endpoint -> its short name."""
        self._last = (rows, severity, labels)
        text = render_frontends(rows, severity, max(self.size.width - 2, 20) if self.size.width else 78, labels)
        self.set_class(not text.plain, "-empty")
        if text != self._shown:
            same_shape = self._shown is not None and self._shown.plain.count("\n") == text.plain.count("\n")
            self._shown = text
            self.update(text, layout=not same_shape)

    def on_resize(self, _event) -> None:
        if self._last is not None:
            self._shown = None
            self.show(*self._last)


def render_frontends(rows: list[EndpointRow], severity: dict[str, str], width: int = 78,
                     labels: dict[str, str] | None = None) -> Text:
    """The frontends that have something to say (request or /metrics rows), worst first."""
    labels = labels or {}
    frontends = [r for r in rows if r.frontend_summary is not None]
    lines: list[Text] = []
    last_first = 0  # the first line of the last frontend shown: the shorter one, where "+N more" goes
    for row in frontends[:SHOWN]:
        last_first = len(lines)
        lines += frontend_lines(row, row.frontend_summary, severity.get(row.name), width,  # type: ignore[arg-type]
                                labels.get(row.name))
    more = len(frontends) - SHOWN
    if more > 0:
        lines[last_first] = _fit(lines[last_first].append(f"  +{more} more frontend{'s' if more != 1 else ''} "
                                                          "(t: table)", style="dim"), width)
    return Text("\n").join(lines)


def frontend_lines(row: EndpointRow, f: FrontendSummary, severity: str | None, width: int = 78,
                   label: str | None = None) -> list[Text]:
    """One frontend: its requests, then its latencies and load (one line when ``width`` allows);
    ``label``: its short name."""
    name = Text()
    if severity:
        name.append("● ", style=SEVERITY_FG.get(severity, "bold"))
    name.append_text(log_text(label or row.name, style="bold"))
    if width >= WIDE and "frontend" not in (label or row.name).lower():  # not "frontend frontend"
        name.append(" frontend", style="bold")
    first = Text(f"{_per_s(f.requests_per_s)} req/s")
    pct = f.failed_pct
    if pct is None:
        first.append(", no request answered", style="dim")
    else:
        style = "bold red" if pct > 5 else "bold yellow" if pct > 0 else "green"
        first.append(", ")
        first.append(f"{fmt_pct(pct)} failed", style=style)
        why = [*f.statuses[:2 if width >= WIDE else 1], *f.error_types[:1]]  # the commonest first
        if f.requests_failed and why:
            first.append(" (")
            first.append_text(log_text(", ".join(why), style=style))
            first.append(")")
    second = Text()
    if f.scraped:
        second.append(f"TTFT {_seconds(f.ttft_s)} p99 {_seconds(f.ttft_p99_s)}")
        second.append(" │ ")
        second.append(f"ITL {_ms(f.itl_s)} p99 {_ms(f.itl_p99_s)}")
        second.append(" │ ")
        second.append(f"in flight {count(f.inflight)} queued {count(f.queued)}",
                      style="bold yellow" if (f.queued or 0) > 0 else "")
    else:
        second.append(f"latency {_seconds(f.latency_s)} (log)")
        second.append(" │ /metrics not scraped", style="dim")
    if width >= WIDE:
        first.append(" │ ").append_text(second)
    # the window said when the line has room for it (an 80-column line with a long name has not)
    window = Text(f"  last {f.window_s:.0f} s: " if f.window_s < 59.5 else "  last min: ", style="dim")
    if len(name.plain) + len(window.plain) + len(first.plain) > width:
        window = Text("  ")
    first = name.append_text(window).append_text(first)
    if width >= WIDE:
        return [_fit(first, width)]
    return [_fit(first, width), _fit(Text("  ").append_text(second), width)]


def _fit(line: Text, width: int) -> Text:
    line.no_wrap = True
    line.overflow = "ellipsis"
    if len(line.plain) > width:
        line.truncate(width, overflow="ellipsis")
    return line


def _per_s(value: float) -> str:
    return f"{value:.1f}" if value < 100 else rate(value)


def _seconds(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f} s" if value < 10 else f"{value:.1f} s"


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{1000 * value:.1f} ms" if value < 0.1 else f"{1000 * value:.0f} ms"
