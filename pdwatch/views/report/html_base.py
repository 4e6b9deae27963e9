"""What every part of the HTML report shares: log text made safe as HTML, times as epochs, and the
arithmetic of an SVG chart's axes. No page layout here: html.py and html_overview.py build on it."""

from __future__ import annotations

import html
import math
import re
from datetime import datetime, timedelta, timezone
from typing import Any

from pdwatch.rules.findings import SEVERITIES

# C0/C1 controls (not tab or newline), lone surrogates, bidi overrides and isolates, line/paragraph separators.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u200e\u200f\u2028-\u202e\u2066-\u2069]")

TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
              172800, 604800)


def _visible(match: re.Match) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # ␛ for ESC, ␍ for CR, ...
    if code == 0x7F:
        return "\u2421"
    if 0xD800 <= code <= 0xDFFF or 0x80 <= code <= 0x9F:
        return "\ufffd"
    return f"<U+{code:04X}>"  # bidi/separator: shown, not obeyed (escaped below like the rest)


def esc(value: Any) -> str:
    """Any value as HTML text: controls made visible, then escaped (quotes too)."""
    return html.escape(_CONTROL.sub(_visible, str(value)), quote=True)


def epoch(iso: Any) -> float | None:
    if not isinstance(iso, str) or not iso:
        return None
    try:
        dt = datetime.fromisoformat(iso)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


def severity_of(finding: dict[str, Any]) -> str:
    sev = str(finding.get("severity") or "info")
    return sev if sev in SEVERITIES else "info"  # a class name: one of the scale's words, never the input


def coord(x: float) -> str:
    """An SVG coordinate: one decimal is finer than a pixel."""
    return f"{x:.1f}"


def nice_step(span: float, target: int = 4) -> float:
    raw = span / target
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def time_ticks(lo: float, hi: float, tz: Any, most: int = 6) -> list[tuple[float, str]]:
    span = hi - lo
    step = next((s for s in TIME_STEPS if span / s <= most), TIME_STEPS[-1])
    offset = datetime.fromtimestamp(lo, tz).utcoffset() or timedelta(0)
    off = offset.total_seconds()
    if span > 86400 * 2:
        fmt = "%m-%d %H:%M"
    elif step >= 60:
        fmt = "%H:%M"
    else:
        fmt = "%H:%M:%S"
    first = math.ceil((lo + off) / step) * step - off
    ticks, t = [], first
    while t <= hi + 1e-6:
        ticks.append((t, datetime.fromtimestamp(t, tz).strftime(fmt)))
        t += step
    return ticks


def finite_values(data: dict[str, Any], key: str) -> list[float | None]:
    """A series' values, each a finite float or None (a gap)."""
    out = []
    for v in data.get(key) or []:
        out.append(float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None)
    return out


def has_points(data: dict[str, Any], keys: Any) -> bool:
    """Whether any of ``keys`` has a value at a known time: a chart of them would draw something."""
    times = [epoch(t) is not None for t in data.get("ts") or []]
    return any(known and v is not None for key in keys for known, v in zip(times, finite_values(data, key)))
