"""One endpoint in detail: its series over the run so far, its start-up facts, its newest lines.

The app hands it a fresh :class:`EndpointDetail` on every tick while it is on top (``show``);
everything from the logs is shown as text, never as markup.
"""

from __future__ import annotations

from datetime import datetime

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from pdwatch.session.snapshot import EndpointDetail, EndpointSeries, Snapshot, StartupFacts

from ..widgets.endpoint_pane import render_numbers, render_title
from ..widgets.format import clock_text, count, fmt_rate, log_text, severity, time_text
from ..widgets.time_chart import ChartLine, TimeChart

# (series field, its times' field, label, number format, fixed ceiling, colour); KV first, as in
# the panes: it is what runs out, and the first chart is the one an 80x24 screen shows
CHARTS = (
    ("kv_usage_pct", "times", "KV cache usage %", lambda v: f"{v:.1f}", 100.0, "red"),
    ("running", "times", "running requests", count, None, "green"),
    ("waiting", "times", "waiting requests", count, None, "yellow"),
    ("prompt_tps", "times", "prompt tok/s", fmt_rate, None, "cyan"),
    ("gen_tps", "times", "generation tok/s", fmt_rate, None, "magenta"),
    # a Dynamo frontend's (its engine-less rows have no tokens or KV: those charts say "no data")
    ("ttft_s", "ttft_times", "TTFT s (/metrics)", lambda v: f"{v:.2f}", None, "cyan"),
    ("latency_s", "latency_times", "request latency s (log)", lambda v: f"{v:.2f}", None, "green"),
)
FRONTEND_ONLY = {"ttft_s", "latency_s"}


class EndpointDetailScreen(Screen):
    BINDINGS = [Binding("escape,q", "dismiss", "close"),
                Binding("d", "dismiss", "close", show=False)]
    DEFAULT_CSS = """
    EndpointDetailScreen #endpoint-title { height: auto; background: $boost; padding: 0 1; }
    EndpointDetailScreen #endpoint-clock { height: 1; background: $boost; padding: 0 1; }
    EndpointDetailScreen VerticalScroll { padding: 0 1; }
    EndpointDetailScreen .heading { text-style: bold; margin-top: 1; background: $panel; }
    EndpointDetailScreen .chart-label { height: 1; }
    EndpointDetailScreen TimeChart { height: 10; }
    EndpointDetailScreen #endpoint-lines { color: $text-muted; }
    """

    def __init__(self, detail: EndpointDetail, snap: Snapshot | None = None) -> None:
        super().__init__()
        self.endpoint = detail.row.name
        self.detail = detail
        self.snap = snap

    def compose(self) -> ComposeResult:
        yield Static(id="endpoint-title")
        yield Static(id="endpoint-clock")
        with VerticalScroll(id="endpoint-body"):
            yield Static(id="endpoint-range", classes="heading")
            for key, *_ in CHARTS:
                yield Static(id=f"label-{key}", classes="chart-label")
                yield TimeChart(id=f"chart-{key}")
            yield Static("Start-up (each engine: one GPU)", classes="heading", markup=False)
            yield Static(id="endpoint-startup")
            yield Static("Non-default args", classes="heading", markup=False)
            yield Static(id="endpoint-args")
            yield Static(id="endpoint-lines-title", classes="heading")
            yield Static(id="endpoint-lines")
        yield Footer()

    def on_mount(self) -> None:
        self._fill(self.detail)
        self._fill_clock(self.snap)

    def show(self, detail: EndpointDetail, snap: Snapshot | None = None) -> None:
        if detail != self.detail:
            self.detail = detail
            self._fill(detail)
        if snap is not None and snap != self.snap:
            self.snap = snap
            self._fill_clock(snap)

    def _fill_clock(self, snap: Snapshot | None) -> None:
        self.query_one("#endpoint-clock", Static).update(clock_line(snap, self.endpoint))

    def _fill(self, detail: EndpointDetail) -> None:
        title = render_title(detail.row)
        title.append("\n")
        title.append_text(render_numbers(detail.row))
        self.query_one("#endpoint-title", Static).update(title)
        series = detail.series
        self.query_one("#endpoint-range", Static).update(range_text(series, detail.row.interval_s))
        frontend = detail.row.role == "frontend"
        for key, times_key, label, fmt, ceiling, colour in CHARTS:
            # a frontend's rows hold requests and latencies (its token, queue and KV columns read as
            # zeros); an engine's, no latency series
            shown = (key in FRONTEND_ONLY) == frontend
            values, times = (getattr(series, key), getattr(series, times_key)) if shown else ((), ())
            label_widget = self.query_one(f"#label-{key}", Static)
            label_widget.display = shown
            label_widget.update(chart_label(label, values, fmt))
            chart = self.query_one(f"#chart-{key}", TimeChart)
            if values:  # its label is its title
                chart.show("", (ChartLine(label, times, values, colour),), times[0], times[-1], ceiling)
            else:  # no point: no chart (the label says "no data")
                chart.show("", (), datetime.min, datetime.min)
        self.query_one("#endpoint-startup", Static).update(startup_text(detail.startup))
        self.query_one("#endpoint-args", Static).update(args_text(detail.startup))
        self.query_one("#endpoint-lines-title", Static).update(
            Text(f"Recent lines ({len(detail.recent_lines)} newest stats and event lines, oldest first)"))
        self.query_one("#endpoint-lines", Static).update(lines_text(detail))


def clock_line(snap: Snapshot | None, endpoint: str) -> Text:
    """The clock, the replay state and the findings firing on this endpoint."""
    if snap is None:
        return Text("")
    out = Text(clock_text(snap.clock), style="bold")
    if snap.mode == "replay":
        state = "ended" if snap.done else "paused" if snap.paused else "playing"
        out.append(f"  replay {state}", style="yellow" if snap.paused else "")
    mine = [f for f in snap.findings if f.endpoint == endpoint]
    out.append("  │ ")
    if not mine:
        out.append("no finding firing here", style="green")
    for f in mine:
        out.append_text(severity(f.severity))
        out.append(f" {f.rule} ")
    return out


def range_text(series: EndpointSeries, interval_s: float) -> Text:
    if not series.times:
        return Text("Over the run: no stats lines yet")
    return Text(f"Over the run: {time_text(series.times[0])} – {time_text(series.times[-1])}, "
                f"{len(series.times)} points (engines combined per ~{interval_s:g} s)")


def chart_label(label: str, values: tuple[float, ...], fmt) -> Text:
    out = Text(f"{label:<17} ", style="bold")
    if not values:
        out.append("no data", style="dim")
        return out
    out.append(f"now {fmt(values[-1])}")
    out.append(f"  min {fmt(min(values))}  max {fmt(max(values))}", style="dim")
    out.append("  (scale from 0)", style="dim")
    return out


def startup_text(s: StartupFacts) -> Text:
    def gib(value: float | None) -> str:
        return "?" if value is None else f"{value:g} GiB"

    rows = [
        ("vLLM", s.version or "?"),
        ("model", s.model or "?"),
        ("memory", f"weights {gib(s.weights_gib)} · KV cache {gib(s.kv_memory_gib)} · CUDA graphs "
                   f"{gib(s.cudagraph_gib)}{'' if s.cudagraph_measured or s.cudagraph_gib is None else ' (estimate)'}"),
        ("KV capacity", "?" if s.kv_capacity_tokens is None else f"{s.kv_capacity_tokens:,} tokens"),
        ("max concurrency", "?" if s.max_concurrency is None else
            f"{s.max_concurrency:g} requests" + (f" of {s.max_concurrency_tokens:,} tokens"
                                                 if s.max_concurrency_tokens else "")),
        ("CUDA graphs", capture_text(s)),
    ]
    out = Text()
    for i, (name, value) in enumerate(rows):
        out.append(f"{name:>16}  ", style="bold")
        out.append(value)  # from the logs: plain text
        if i < len(rows) - 1:
            out.append("\n")
    return out


def capture_text(s: StartupFacts) -> str:
    if not s.capture_sizes:
        return "?" if s.max_capture_size is None else f"largest {s.max_capture_size}"
    sizes = ", ".join(map(str, s.capture_sizes))
    if len(s.capture_sizes) > 12:
        head = ", ".join(map(str, s.capture_sizes[:8]))
        sizes = f"{head}, … {s.capture_sizes[-1]}"
    largest = s.max_capture_size if s.max_capture_size is not None else max(s.capture_sizes)
    return f"{len(s.capture_sizes)} sizes ({sizes}); largest {largest}"


def args_text(s: StartupFacts) -> Text:
    if not s.non_default_args:
        return Text("(no non-default args line seen)", style="dim")
    out = Text()
    for i, (name, value) in enumerate(s.non_default_args):
        out.append(name, style="bold")
        out.append(" = ")
        out.append_text(log_text(value))
        if i < len(s.non_default_args) - 1:
            out.append("\n")
    return out


def lines_text(detail: EndpointDetail) -> Text:
    if not detail.recent_lines:
        return Text("(no lines kept yet)", style="dim")
    out = Text()
    for i, line in enumerate(detail.recent_lines):
        name = (line.source or "?").rsplit("/", 1)[-1]
        out.append(f"{name}:{line.line_no} ", style="dim")
        out.append_text(log_text(line.text))
        if i < len(detail.recent_lines) - 1:
            out.append("\n")
    return out
