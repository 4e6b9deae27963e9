"""Numbers and times as a report shows them."""

from __future__ import annotations

from datetime import datetime
from typing import Any


def fmt_num(value: Any) -> str:
    if value is None:
        return "?"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, (int, float)):
        if abs(value) >= 100 or float(value).is_integer():
            return f"{value:,.0f}"
        return f"{value:,.1f}" if abs(value) >= 10 else f"{value:,.2f}"
    return str(value)


def fmt_time(iso: str | None) -> str:
    if not iso:
        return "?"
    try:
        return datetime.fromisoformat(iso).strftime("%Y-%m-%d %H:%M:%S %Z").strip()
    except ValueError:
        return iso


def fmt_window(window: dict[str, Any] | None) -> str:
    if not window or not window.get("start"):
        return "?"
    start, end = fmt_time(window["start"]), fmt_time(window["end"])
    if start[:10] == end[:10]:
        end = end[11:]
    return f"{start} to {end}"
