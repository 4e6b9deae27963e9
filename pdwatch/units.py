"""Durations, numbers, sizes and times, as pdwatch reads and writes them: the one home of each.

Every layer uses it (the rules' grammar, the sources' ``--since``, the report, the dashboard),
so it imports nothing of pdwatch and nothing outside the standard library.

Durations are written the way Prometheus writes them: number+unit pairs without spaces
(``250ms``, ``30s``, ``1m30s``, ``2h``, ``1d``, ``1w``; a pair's number may have decimals).
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta
from typing import Any, Iterable

# -- durations ------------------------------------------------------------------------------------------

DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
# One or more number+unit pairs, no spaces: 30s, 1.5m, 1m30s ("ms" is tried before "m").
DURATION_RE = re.compile(r"(?:(?:\d+(?:\.\d+)?|\.\d+)(?:ms|s|m|h|d|w))+", re.ASCII)
_PART_RE = re.compile(r"(\d+(?:\.\d+)?|\.\d+)(ms|s|m|h|d|w)", re.ASCII)


def duration_seconds(text: str) -> float:
    """The seconds of a ``DURATION_RE`` match (``1m30s`` -> 90.0)."""
    return sum(float(number) * DURATION_UNITS[unit] for number, unit in _PART_RE.findall(text))


def parse_duration(text: str) -> float | None:
    """``30m``, ``1h30m``, ``250ms``, ``2d`` -> seconds; None when the text is not a duration."""
    text = text.strip()
    return duration_seconds(text) if DURATION_RE.fullmatch(text) else None


def fmt_duration(seconds: float) -> str:
    """A length of time for a reader, to the second: ``45 s``, ``5 min 3 s``, ``2 h 5 min``."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, sec = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {sec} s" if sec else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


def fmt_span(seconds: float) -> str:
    """A length of time to three digits in its largest unit: ``1.5 h``, ``20 min``, ``2.01 s``."""
    if seconds >= 3600:
        return f"{seconds / 3600:.3g} h"
    if seconds >= 60:
        return f"{seconds / 60:.3g} min"
    return f"{seconds:.3g} s"


def fmt_age(seconds: float | None) -> str:
    """How long ago, for a narrow column: ``59s``, ``2m05s``, then ``h:mm:ss``; "" when unknown."""
    if seconds is None:
        return ""
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m{s % 60:02d}s"
    return str(timedelta(seconds=s))


def fmt_compact_duration(seconds: float) -> str:
    """A duration in Prometheus' own syntax, to the millisecond: ``1h30m``, ``59s999ms``."""
    ms = max(1, round(seconds * 1000))
    parts = []
    for unit, size in (("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1)):
        if ms >= size:
            parts.append(f"{ms // size}{unit}")
            ms %= size
    return "".join(parts)


# -- numbers --------------------------------------------------------------------------------------------

def fmt_num(value: Any) -> str:
    """A figure in a report: ``?`` when unknown, whole numbers and anything from 100 up with thousands
    separators and no decimals, else one decimal from 10 and two below (a text stays as it is)."""
    if value is None:
        return "?"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, (int, float)):
        if abs(value) >= 100 or float(value).is_integer():
            return f"{value:,.0f}"
        return f"{value:,.1f}" if abs(value) >= 10 else f"{value:,.2f}"
    return str(value)


def fmt_precise(x: float) -> str:
    """A value in a rule's text: exact when whole, else as many digits as its size warrants
    (``1,234``, ``42.5``, ``3.14``, ``0.0012``; ``infinite``)."""
    if math.isinf(x):
        return "infinite" if x > 0 else "-infinite"
    a = abs(x)
    if x == int(x) and a < 1e15:
        return f"{int(x):,}"
    if a >= 1000:
        return f"{x:,.0f}"
    if a >= 100:
        return f"{x:.0f}"
    if a >= 10:
        return f"{x:.1f}"
    if a >= 1:
        return f"{x:.2f}".rstrip("0").rstrip(".")
    return f"{x:.2g}"


def fmt_count(value: float | None) -> str:
    """A count of things, whole, with thousands separators (``?`` when unknown)."""
    return "?" if value is None else f"{value:,.0f}"


# How a large number is shortened, per place it is shown: (from, divisor, suffix, format), the first
# row whose "from" the absolute value reaches; a format of None writes a whole number as such and
# any other to 3 significant digits.
_SHORT_STYLES: dict[str, tuple[tuple[float, float, str, str | None], ...]] = {
    # a sentence (the verdict): 1.2M, 42k, 1.2k, 850
    "line": ((1e6, 1e6, "M", ".1f"), (1e4, 1e3, "k", ".0f"), (1e3, 1e3, "k", ".1f"), (0, 1, "", ".0f")),
    # a narrow column of tokens/s (the dashboard): 1.23M, 12.3k, 1,234
    "column": ((1e6, 1e6, "M", ".2f"), (1e4, 1e3, "k", ".1f"), (0, 1, "", ",.0f")),
    # a chart's axis: 1.25M, 12.5k, 1,234, 2.5
    "tick": ((1e6, 1e6, "M", ".3g"), (1e4, 1e3, "k", ".3g"), (1e3, 1, "", ",.0f"), (0, 1, "", None)),
}


def fmt_short(value: float | None, style: str = "line") -> str:
    """A large number shortened with k and M, as ``_SHORT_STYLES[style]`` says (``?`` when unknown)."""
    if value is None:
        return "?"
    a = abs(value)
    for start, divisor, suffix, spec in _SHORT_STYLES[style]:
        if a >= start:
            if spec is None:
                return f"{value:.0f}" if float(value).is_integer() else f"{value:.3g}"
            return f"{value / divisor:{spec}}{suffix}"
    return f"{value}"  # (a NaN)


def fmt_pct(value: float) -> str:
    """A percentage in a sentence: ``42%``, ``3.5%``, ``0%``; just under 100 stays under it
    (``99.7%``, not ``100%``, for a cache with a few blocks free)."""
    if 99.5 <= value < 100:
        return f"{math.floor(value * 10) / 10:.1f}%"
    return f"{value:.0f}%" if value >= 10 or value == 0 else f"{value:.1f}%"


def fmt_bytes(n: float, unit: str | None = None) -> str:
    """``n`` bytes in the largest binary unit it reaches (or ``unit``), up to 3 decimals (2 for GiB),
    trailing zeros cut: exact where it is round (4216 KiB, 4.125 MiB, 759 MiB)."""
    for name, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if unit == name or (unit is None and abs(n) >= size):
            text = f"{n / size:.{2 if name == 'GiB' else 3}f}".rstrip("0").rstrip(".")
            return f"{text if text != '-0' else '0'} {name}"
    return f"{int(n)} B"


def engine_ranges(engines: Iterable[Any] | None, dash: str = "-", sep: str = ", ", shortest_run: int = 2,
                  empty: str = "-") -> str:
    """Engine numbers said short: ``[0, 1, 2, 3, 5]`` -> ``0-3, 5``. A run of consecutive numbers
    shorter than ``shortest_run`` is listed number by number."""
    numbers = sorted({int(e) for e in engines or ()})
    if not numbers:
        return empty
    parts: list[str] = []
    start = 0
    for i in range(1, len(numbers) + 1):
        if i < len(numbers) and numbers[i] == numbers[i - 1] + 1:
            continue
        run = numbers[start:i]
        parts += [f"{run[0]}{dash}{run[-1]}"] if len(run) >= max(shortest_run, 2) else [str(n) for n in run]
        start = i
    return sep.join(parts)


# -- times ----------------------------------------------------------------------------------------------

def fmt_clock(value: Any) -> str:
    """The time of day of a datetime (or pandas Timestamp): ``14:03:07``; ``?`` when unknown."""
    return "?" if value is None else value.strftime("%H:%M:%S")


def fmt_datetime(value: datetime | None, unknown: str = "?") -> str:
    """A date and time to the second: ``2026-12-03 14:03:07``."""
    return unknown if value is None else value.strftime("%Y-%m-%d %H:%M:%S")


def fmt_iso(iso: str | None) -> str:
    """An ISO 8601 time (a report's JSON) for a reader: ``2026-12-03 14:03:07 UTC``; ``?`` when
    missing; a text that is not a time stays as it is."""
    if not iso:
        return "?"
    try:
        return datetime.fromisoformat(iso).strftime("%Y-%m-%d %H:%M:%S %Z").strip()
    except ValueError:
        return iso
