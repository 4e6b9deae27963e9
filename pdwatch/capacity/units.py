"""Byte counts for people: binary units, exact where they are round (4216 KiB, 4.125 MiB, 759 MiB)."""

from __future__ import annotations

_UNITS = (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))


def fmt_bytes(n: float, unit: str | None = None) -> str:
    """``n`` bytes in the largest unit it reaches (or ``unit``), up to 3 decimals, trailing zeros cut."""
    for name, size in _UNITS:
        if unit == name or (unit is None and abs(n) >= size):
            return f"{_trim(n / size, 2 if name == 'GiB' else 3)} {name}"
    return f"{int(n)} B"


def _trim(x: float, places: int) -> str:
    text = f"{x:.{places}f}".rstrip("0").rstrip(".")
    return text if text != "-0" else "0"
