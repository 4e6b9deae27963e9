"""The time arguments of watch and replay: ``--speed``, ``--start`` and the seek prompt's times."""

from __future__ import annotations

import math
import re
from datetime import timezone, tzinfo

import pandas as pd


def parse_speed(text: str) -> float:
    """``10x``, ``10``, ``0.5x`` or ``max`` -> a factor (math.inf for max)."""
    value = text.strip().lower()
    if value in {"max", "inf", "fast"}:
        return math.inf
    if value.endswith("x"):
        value = value[:-1]
    try:
        speed = float(value)
    except ValueError:
        raise ValueError(f"--speed {text!r}: expected e.g. 1x, 10x, 0.5x or max") from None
    if not speed > 0 or math.isinf(speed) or math.isnan(speed):
        raise ValueError(f"--speed {text!r}: expected a positive factor or max")
    return speed


TIME_FORMS = "an ISO 8601 time (2026-05-29T14:01:00Z), HH:MM[:SS], or an offset like +5m, -90s, +1h30m"
_OFFSET = re.compile(r"^([+-])\s*(?=\d)(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s)?$")


def parse_start(text: str, tz: tzinfo | None = None) -> pd.Timestamp | pd.Timedelta | str:
    """An absolute time (ISO 8601; naive = in ``tz``, default UTC), an offset (``+5m``: from the
    first timestamp of the logs, ``-2m``: from the last one), or a bare HH:MM[:SS] kept as text
    (resolved against the logs' days once they are read)."""
    return parse_time(text, tz, what="--start")


def parse_time(text: str, tz: tzinfo | None = None, what: str = "time") -> pd.Timestamp | pd.Timedelta | str:
    """See :func:`parse_start`; ``what`` names the input in the error message."""
    value = text.strip()
    if _is_time_of_day(value):
        return value
    offset = parse_offset(value)
    if offset is not None:
        return offset
    try:
        ts = pd.Timestamp(value)
    except (ValueError, TypeError, OverflowError):
        raise ValueError(f"{what} {text!r}: expected {TIME_FORMS}") from None
    if ts is pd.NaT or not value:
        raise ValueError(f"{what} {text!r}: not a time; expected {TIME_FORMS}")
    if ts.tzinfo is None:
        ts = ts.tz_localize(tz or timezone.utc)
    return ts.tz_convert("UTC")


def parse_offset(value: str) -> pd.Timedelta | None:
    """``+5m``, ``-90s``, ``+1h30m``, ``+0.5h`` -> a signed Timedelta; None when not an offset."""
    m = _OFFSET.match(value.strip().lower())
    if m is None or not any(m.group(i) for i in (2, 3, 4)):
        return None
    hours, minutes, seconds = (float(m.group(i) or 0) for i in (2, 3, 4))
    delta = pd.Timedelta(hours=hours, minutes=minutes, seconds=seconds)
    return -delta if m.group(1) == "-" else delta


def _is_time_of_day(value: str) -> bool:
    parts = value.split(":")
    if len(parts) not in (2, 3):
        return False
    try:
        return all(p.replace(".", "", 1).isdigit() for p in parts) and int(parts[0]) < 24
    except ValueError:
        return False
