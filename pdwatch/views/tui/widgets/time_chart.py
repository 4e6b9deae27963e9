"""A line chart of series over time, with a time axis (HH:MM:SS), drawn by plotext
(textual-plotext's PlotextPlot): a terminal plotting library keeps the axes, ticks, legend
and braille lines, which a hand-made block chart did not have.

Cost: plotext draws every point it is given, so each line is cut to one mean per cell of the plot's
width first (a 2,000-point series would take ~30 ms per line); the chart is built again only when
its lines, its time range or its size changed (``show`` with the same data does nothing), and its
text is kept between repaints. A line with no points is not drawn, nor is a chart with no line.
Labels come from file names: control characters are escaped before plotext sees them (its output
is read back as ANSI).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Sequence

from rich.text import Text
from textual_plotext import PlotextPlot

from .format import log_text, time_text

Y_AXIS = 8  # cells plotext takes for the y axis' labels (about): the plot's width is the rest


@dataclass(frozen=True)
class ChartLine:
    label: str
    times: tuple[datetime, ...]
    values: tuple[float, ...]
    color: str = "cyan"


def downsample(times: Sequence[datetime], values: Sequence[float], start: datetime, end: datetime,
               cells: int) -> tuple[list[float], list[float]]:
    """One point per cell of ``cells`` over [start, end]: the mean of the points in it, at its
    mean time (seconds from ``start``); cells with no point have none (no line is made up there)."""
    span = (end - start).total_seconds()
    if span <= 0 or len(values) <= cells:
        return [(t - start).total_seconds() for t in times], [float(v) for v in values]
    sums: dict[int, list[float]] = {}
    for t, v in zip(times, values):
        x = (t - start).total_seconds()
        acc = sums.setdefault(max(0, min(cells - 1, int(x / span * cells))), [0.0, 0.0, 0])
        acc[0] += x
        acc[1] += v
        acc[2] += 1
    xs, ys = [], []
    for cell in sorted(sums):
        x, v, n = sums[cell]
        xs.append(x / n)
        ys.append(v / n)
    return xs, ys


def time_ticks(start: datetime, end: datetime, width: int) -> tuple[list[float], list[str]]:
    """Tick positions (seconds from ``start``) and their HH:MM:SS labels: one per ~16 cells."""
    span = (end - start).total_seconds()
    count = max(2, min(8, width // 16))
    positions = [span * i / (count - 1) for i in range(count)]
    return positions, [time_text(start + (end - start) * (i / (count - 1))) for i in range(count)]


class TimeChart(PlotextPlot):
    DEFAULT_CSS = """
    TimeChart { height: 1fr; width: 1fr; }
    TimeChart.-empty { display: none; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.lines: tuple[ChartLine, ...] = ()
        self._data: tuple | None = None  # (title, lines, start, end, ceiling) as last shown
        self._built: tuple | None = None  # (data, size, theme) of the text kept
        self._text: Text | None = None
        self.builds = 0  # how many times the plot was built (a test checks an idle tick builds none)

    def show(self, title: str, lines: Sequence[ChartLine], start: datetime, end: datetime,
             ceiling: float | None = None) -> None:
        """``lines`` with no points are left out; none left: the chart hides. ``ceiling``: a fixed
        top (100 for a %); else the highest point."""
        lines = tuple(line for line in lines if line.values)
        self.lines = lines
        self.set_class(not lines, "-empty")
        data = (title, lines, start, end, ceiling)
        if data != self._data:
            self._data = data
            self.refresh()

    def render(self) -> Text:
        if self._data is None or not self.lines:
            return Text("")
        key = (self._data, self.size, self.app.theme)
        if key != self._built or self._text is None:
            self._built = key
            self._build(*self._data)
            self._text = super().render()  # type: ignore[assignment]
            self.builds += 1
        return self._text

    def _build(self, title: str, lines: tuple[ChartLine, ...], start: datetime, end: datetime,
               ceiling: float | None) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        cells = max(self.size.width - Y_AXIS, 10)
        top = 0.0
        for line in lines:
            xs, ys = downsample(line.times, line.values, start, end, cells)
            top = max(top, max(ys, default=0.0))
            plt.plot(xs, ys, marker="braille", color=line.color, label=_label(line.label) if len(lines) > 1 else None)
        span = max((end - start).total_seconds(), 1e-6)
        plt.xlim(0, span)
        plt.ylim(0, ceiling if ceiling is not None else (top * 1.05 if top > 0 else 1.0))
        positions, labels = time_ticks(start, end, cells)
        plt.xticks(positions, labels)
        if title:
            plt.title(_label(title))


def _label(text: str) -> str:
    return log_text(text).plain
