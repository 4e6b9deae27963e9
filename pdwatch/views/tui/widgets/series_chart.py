"""A block chart of one series over the whole run, scaled from zero (a Sparkline scales from the
series' minimum, which makes a KV cache steady at 18% look like it swings from empty to full)."""

from __future__ import annotations

from typing import Sequence

from rich.text import Text
from textual.widget import Widget

BARS = " ▁▂▃▄▅▆▇█"


class SeriesChart(Widget):
    DEFAULT_CSS = """
    SeriesChart { height: 2; width: 1fr; }
    """

    def __init__(self, *, ceiling: float | None = None, style: str = "cyan", **kwargs) -> None:
        super().__init__(**kwargs)
        self.ceiling = ceiling  # a fixed top (100 for a percentage); None: the series' maximum
        self.bar_style = style
        self.values: tuple[float, ...] = ()

    def show(self, values: Sequence[float]) -> None:
        values = tuple(values)
        if values != self.values:
            self.values = values
            self.refresh()

    def render(self) -> Text:
        return chart_text(self.values, self.size.width, self.size.height, self.ceiling, self.bar_style)


def chart_text(values: Sequence[float], width: int, height: int, ceiling: float | None, style: str) -> Text:
    """``height`` rows of block characters, one column per cell (each the mean of its share of the points)."""
    width, height = max(width, 1), max(height, 1)
    if not values:
        return Text("\n".join(["·" * width] * height), style="dim", no_wrap=True)
    n = len(values)
    columns = []
    for i in range(width):  # fewer points than cells: each point spans several cells
        lo = i * n // width
        chunk = values[lo:max((i + 1) * n // width, lo + 1)]
        columns.append(sum(chunk) / len(chunk))
    top = ceiling if ceiling is not None else max(columns)
    levels = height * (len(BARS) - 1)
    heights = [0 if top <= 0 else max(0, min(levels, round(v / top * levels))) for v in columns]
    out = Text(no_wrap=True)
    for row in reversed(range(height)):
        base = row * (len(BARS) - 1)
        for h in heights:
            if row == 0 and h == 0:  # a dim floor where the series is (or rounds to) zero: the chart stays visible
                out.append("▁", style="dim")
            else:
                out.append(BARS[max(0, min(len(BARS) - 1, h - base))], style=style)
        if row:
            out.append("\n")
    return out
