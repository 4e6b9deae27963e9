"""An honest one-line sparkline: zero-based, one column per stats interval (never stretched),
labelled with its scale's top and unit. Panes of one role share one scale (the app passes it),
so neighbours compare at a glance and 65–92k tok/s never draws as a collapse to the floor."""

from __future__ import annotations

from typing import Sequence

from rich.text import Text
from textual.widget import Widget

from .format import fmt_rate

BARS = "▁▂▃▄▅▆▇█"


def spark_text(values: Sequence[float], width: int, top: float | None, unit: str = "tok/s",
               style: str = "cyan") -> Text:
    """The newest ``width - label`` values, one per column, right-aligned; a label "0–92.1k tok/s"."""
    top = top if top and top > 0 else (max(values) if values else 0.0)
    label = f" 0–{fmt_rate(top)} {unit}" if top > 0 else f" 0 {unit}"
    room = max(width - len(label), 1)
    shown = list(values)[-room:]
    out = Text(no_wrap=True, overflow="crop")
    out.append(" " * (room - len(shown)))
    for v in shown:
        if top <= 0 or v <= 0:
            out.append("▁", style="dim")  # zero: the floor, dim
        else:
            out.append(BARS[max(0, min(len(BARS) - 1, round(v / top * (len(BARS) - 1))))], style=style)
    out.append(label, style="dim")
    return out


class Spark(Widget):
    DEFAULT_CSS = """
    Spark { height: 1; width: 1fr; }
    """

    def __init__(self, *, unit: str = "tok/s", style: str = "cyan", **kwargs) -> None:
        super().__init__(**kwargs)
        self.unit = unit
        self.bar_style = style
        self.values: tuple[float, ...] = ()
        self.top: float | None = None

    def show(self, values: Sequence[float], top: float | None) -> None:
        values = tuple(values)
        if values != self.values or top != self.top:
            self.values, self.top = values, top
            self.refresh()

    def render(self) -> Text:
        return spark_text(self.values, self.size.width, self.top, self.unit, self.bar_style)
