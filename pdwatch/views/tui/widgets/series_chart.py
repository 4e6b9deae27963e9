"""A block chart of one series over the whole run, scaled from zero, with a time axis.

Each column is a slice of the run's time; a column holds the mean of the points in its slice,
and a slice with no point stays empty; with fewer points than columns the chart is one column
per point, only that wide, never a point stretched into a wide block (a Sparkline does, and scales from the series' minimum, which makes a KV cache steady
at 18% look like it swings from empty to full). The last row is the time axis.
"""

from __future__ import annotations

from datetime import datetime
from typing import Sequence

from rich.text import Text
from textual.widget import Widget

BARS = " ▁▂▃▄▅▆▇█"


class SeriesChart(Widget):
    DEFAULT_CSS = """
    SeriesChart { height: 3; width: 1fr; }
    """

    def __init__(self, *, ceiling: float | None = None, style: str = "cyan", **kwargs) -> None:
        super().__init__(**kwargs)
        self.ceiling = ceiling  # a fixed top (100 for a percentage); None: the series' maximum
        self.bar_style = style
        self.values: tuple[float, ...] = ()
        self.times: tuple[datetime, ...] = ()

    def show(self, values: Sequence[float], times: Sequence[datetime] = ()) -> None:
        values, times = tuple(values), tuple(times)
        if values != self.values or times != self.times:
            self.values, self.times = values, times
            self.refresh()

    def render(self) -> Text:
        return chart_text(self.values, self.size.width, self.size.height, self.ceiling, self.bar_style, self.times)


def chart_text(values: Sequence[float], width: int, height: int, ceiling: float | None, style: str,
               times: Sequence[datetime] = ()) -> Text:
    """``height - 1`` rows of bars (one column per slice of time) over a time-axis row."""
    width, height = max(width, 1), max(height, 2)
    rows = height - 1 if times else height
    if not values:
        return Text("\n".join(["·" * width] * height), style="dim", no_wrap=True)
    n = len(values)
    width = min(width, n)  # fewer points than cells: one column per point, the chart only as wide as that
    columns: list[float | None] = [None] * width
    if times and len(times) == n and n > 1 and (times[-1] - times[0]).total_seconds() > 0:
        t0, span = times[0], (times[-1] - times[0]).total_seconds()
        sums, counts = [0.0] * width, [0] * width
        for t, v in zip(times, values):
            i = min(width - 1, int((t - t0).total_seconds() / span * (width - 1) + 0.5))
            sums[i] += v
            counts[i] += 1
        columns = [sums[i] / counts[i] if counts[i] else None for i in range(width)]
    else:  # no times: one point per column from the left, never stretched
        for i in range(width):
            lo, hi = i * n // width, max((i + 1) * n // width, i * n // width + 1)
            if n >= width:
                chunk = values[lo:hi]
                columns[i] = sum(chunk) / len(chunk)
            elif i < n:
                columns[i] = values[i]
    known = [c for c in columns if c is not None]
    top = ceiling if ceiling is not None else (max(known) if known else 0.0)
    levels = rows * (len(BARS) - 1)
    heights = [None if c is None else (0 if top <= 0 else max(0, min(levels, round(c / top * levels))))
               for c in columns]
    out = Text(no_wrap=True)
    for row in reversed(range(rows)):
        base = row * (len(BARS) - 1)
        for h in heights:
            if h is None:
                out.append(" ")
            elif row == 0 and h == 0:  # a dim floor where the series is (or rounds to) zero
                out.append("▁", style="dim")
            else:
                out.append(BARS[max(0, min(len(BARS) - 1, h - base))], style=style)
        if row:
            out.append("\n")
    if times:
        out.append("\n")
        out.append_text(axis_text(times, width))
    return out


def axis_text(times: Sequence[datetime], width: int) -> Text:
    """The time axis: the first and last times at the ends, the middle one centred."""
    first, last = times[0].strftime("%H:%M:%S"), times[-1].strftime("%H:%M:%S")
    line = [" "] * width
    if width < 2 * len(first) + 2:
        return Text(first[: width], style="dim", no_wrap=True)
    line[: len(first)] = first
    line[width - len(last):] = last
    if width >= 3 * len(first) + 6 and len(times) > 2:
        mid = times[0] + (times[-1] - times[0]) / 2
        text = mid.strftime("%H:%M:%S")
        at = (width - len(text)) // 2
        line[at:at + len(text)] = text
    return Text("".join(line), style="dim", no_wrap=True)
