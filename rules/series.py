"""promtool's expanding series notation, for writing stats rows compactly in tests.

    '1 2 3'      three values
    '_'          a missing value (the field, or if every field is missing, the line)
    'a+bxn'      n+1 values: a, a+b, ..., a+n*b     '0+10x3'  -> 0 10 20 30
    'a-bxn'      n+1 values counting down           '44-11x4' -> 44 33 22 11 0
    'axn'        n+1 copies of a ('a+0xn')          '4x3'     -> 4 4 4 4
    '_xn'        n missing values                   '_x2'     -> _ _

Exactly as ``promtool test rules`` reads ``input_series`` values (including the n+1).
"""

from __future__ import annotations

import math
import re

_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_TOKEN = re.compile(rf"(?P<a>{_NUM})(?:(?P<sign>[+-])(?P<b>{_NUM}))?x(?P<n>\d+)|(?P<v>{_NUM})"
                    r"|_x(?P<gap>\d+)|(?P<miss>_)")
MAX_VALUES = 1_000_000


def expand(text: str) -> list[float]:
    """Values of a series string; NaN for missing. ValueError names the bad token."""
    out: list[float] = []
    for tok in str(text).split():
        m = _TOKEN.fullmatch(tok)
        if not m:
            raise ValueError(f"bad series token {tok!r} (want e.g. 4, _, 4x3, 0+10x3, _x2)")
        if m.group("v") is not None:
            out.append(float(m.group("v")))
        elif m.group("miss"):
            out.append(math.nan)
        elif m.group("gap") is not None:
            out += [math.nan] * int(m.group("gap"))
        else:
            a, n = float(m.group("a")), int(m.group("n"))
            b = float(m.group("b") or 0) * (-1 if m.group("sign") == "-" else 1)
            if n > MAX_VALUES:
                raise ValueError(f"series token {tok!r} is too long")
            out += [a + k * b for k in range(n + 1)]
        if len(out) > MAX_VALUES:
            raise ValueError("series too long")
    return out
