"""The wide dashboard's charts: KV cache %, running, waiting and tokens/s over the run, one chart
per metric with one line per endpoint, and the frontend's TTFT (else its logged request latency).

One chart per metric, not one per endpoint: the endpoints then compare on one scale at a glance,
and the layout is the same for 2 endpoints or 72. Lines are the ``LINES`` worst endpoints (the
diagnosis' order): more lines cannot be told apart in a terminal, and only those endpoints' series are
asked for (each is computed once per store generation), so a 72-endpoint job costs what a
6-endpoint one does. ``chart_specs`` is pure; ``RunCharts`` lays the charts out in a grid.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Callable, Sequence

from textual.app import ComposeResult
from textual.containers import Container

from pdwatch.model.throughput import COUNTED
from pdwatch.session.snapshot import EndpointRow, EndpointSeries

from .time_chart import ChartLine, TimeChart

LINES = 6
COLORS = ("red", "cyan", "magenta", "green", "yellow", "blue")  # the worst endpoint first: red
# (chart id, title, the field of the series, fixed top)
METRICS = (("kv", "KV cache %", "kv_usage_pct", 100.0),
           ("running", "running requests", "running", None),
           ("waiting", "waiting requests", "waiting", None),
           ("tps", "tok/s (prompt on prefill, generated on decode)", "counted", None))


@dataclass(frozen=True)
class ChartSpec:
    id: str
    title: str
    lines: tuple[ChartLine, ...]
    ceiling: float | None = None


def counted(series: EndpointSeries, role: str) -> tuple[float, ...]:
    """The tokens/s the endpoint adds to the deployment's total, per point (as the headline counts)."""
    fields = COUNTED.get(role, ("prompt_tps", "gen_tps"))
    columns = [getattr(series, f) for f in fields]
    return tuple(sum(values) for values in zip(*columns))


def chart_specs(rows: Sequence[EndpointRow], series_of: Callable[[str], EndpointSeries | None],
                labels: dict[str, str]) -> tuple[ChartSpec, ...]:
    """``rows``: the endpoints worst first; ``series_of``: an endpoint's series (asked only for those
    drawn); ``labels``: the short names. Charts with no line are left out."""
    serving = [r for r in rows if r.role in COUNTED and r.engine_rows][:LINES]
    drawn: list[tuple[EndpointRow, EndpointSeries, str]] = []
    for row in serving:
        series = series_of(row.name)
        if series is not None and series.times:
            drawn.append((row, series, COLORS[len(drawn) % len(COLORS)]))
    more = len([r for r in rows if r.role in COUNTED and r.engine_rows]) - len(serving)
    note = f" — {len(serving)} worst of {len(serving) + more} endpoints" if more > 0 else ""
    specs = []
    for chart_id, title, field, ceiling in METRICS:
        lines = tuple(ChartLine(labels.get(row.name, row.name), series.times,
                                counted(series, row.role) if field == "counted" else getattr(series, field), colour)
                      for row, series, colour in drawn)
        if any(line.values for line in lines):
            specs.append(ChartSpec(chart_id, title + note, lines, ceiling))
    frontends = [(r, series_of(r.name)) for r in [r for r in rows if r.role == "frontend"][:LINES]]
    latency = [ChartLine(labels.get(r.name, r.name), series.ttft_times, series.ttft_s, COLORS[i % len(COLORS)])
               for i, (r, series) in enumerate((r, s) for r, s in frontends if s is not None and s.ttft_s)]
    ttft = bool(latency)
    if not ttft:  # no /metrics read: the requests' latency its log says
        latency = [ChartLine(labels.get(r.name, r.name), series.latency_times, series.latency_s,
                             COLORS[i % len(COLORS)])
                   for i, (r, series) in enumerate((r, s) for r, s in frontends if s is not None and s.latency_s)]
    if latency:
        specs.append(ChartSpec("latency", "frontend TTFT s (/metrics)" if ttft else "frontend request latency s (log)",
                               tuple(latency)))
    return tuple(specs)


class RunCharts(Container):
    """Up to five charts in a grid (three columns when five, else two); hidden with none."""

    DEFAULT_CSS = """
    RunCharts { layout: grid; grid-size: 2; grid-gutter: 0 1; height: 1fr; min-height: 12; }
    RunCharts.-empty { display: none; }
    """

    def compose(self) -> ComposeResult:
        for chart_id, *_ in METRICS:
            yield TimeChart(id=f"chart-{chart_id}", classes="-empty")
        yield TimeChart(id="chart-latency", classes="-empty")

    def show(self, specs: Sequence[ChartSpec], start: datetime, end: datetime) -> None:
        """Each chart its lines over [start, end] (the timeline's range: the time axes line up with it)."""
        by_id = {spec.id: spec for spec in specs}
        for chart in self.query(TimeChart):
            spec = by_id.get((chart.id or "").removeprefix("chart-"))
            chart.show(spec.title if spec else "", spec.lines if spec else (), start, end, spec.ceiling if spec else None)
        self.set_class(not specs, "-empty")
        columns = 3 if len(specs) > 4 else 2
        if self.styles.grid_size_columns != columns:
            self.styles.grid_size_columns = columns
