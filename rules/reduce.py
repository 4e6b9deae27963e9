"""Per-instance reductions over a window's rows, vectorised.

A selection holds the window's rows of every instance back to back (instance 0's rows,
then instance 1's, ...), ``off[i]``/``cnt[i]`` locating instance ``i``'s run. Each
reduction is a few numpy calls over all instances at once (bincount for sums, ufunc
``reduceat`` for min/max, one lexsort for quantiles), never a Python loop over rows or
instances. Rows whose value is NaN (field not printed) are skipped; an instance without
a usable row gets NaN (unknown).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

NAN = float("nan")


@dataclass
class RowSel:
    """The rows of one window, for all instances of a layout."""

    idx: np.ndarray  # row positions in the layout's arrays
    inst: np.ndarray  # instance of each selected row
    off: np.ndarray  # start of each instance's run in the selection
    cnt: np.ndarray  # rows per instance
    ts: np.ndarray  # row times, seconds relative to the clock (<= 0)
    cache: dict = field(default_factory=dict)  # field name -> gathered column

    @property
    def n(self) -> int:
        return len(self.cnt)

    @property
    def total(self) -> int:
        return len(self.idx)


def _valid(v: np.ndarray) -> np.ndarray:
    return ~np.isnan(v)


def count(sel: RowSel, v: np.ndarray) -> np.ndarray:
    return np.bincount(sel.inst, weights=_valid(v), minlength=sel.n)


def total(sel: RowSel, v: np.ndarray) -> np.ndarray:
    c = count(sel, v)
    s = np.bincount(sel.inst, weights=np.where(_valid(v), v, 0.0), minlength=sel.n)
    return np.where(c > 0, s, NAN)


def mean(sel: RowSel, v: np.ndarray) -> np.ndarray:
    c = count(sel, v)
    s = np.bincount(sel.inst, weights=np.where(_valid(v), v, 0.0), minlength=sel.n)
    with np.errstate(all="ignore"):
        return np.where(c > 0, s / c, NAN)


def stddev(sel: RowSel, v: np.ndarray) -> np.ndarray:
    c = count(sel, v)
    w = np.where(_valid(v), v, 0.0)
    m = mean(sel, v)
    # Two-pass (deviation from the mean) keeps precision for large, flat values.
    dev = np.where(_valid(v), w - m[sel.inst], 0.0) if sel.total else w
    ss = np.bincount(sel.inst, weights=dev * dev, minlength=sel.n)
    with np.errstate(all="ignore"):
        return np.where(c > 0, np.sqrt(ss / c), NAN)


def _extreme(sel: RowSel, v: np.ndarray, ufunc) -> np.ndarray:
    out = np.full(sel.n, NAN)
    has = sel.cnt > 0
    if has.any():
        out[has] = ufunc.reduceat(v, sel.off[has])
    return out


def minimum(sel: RowSel, v: np.ndarray) -> np.ndarray:
    return _extreme(sel, v, np.fmin)  # fmin skips NaN


def maximum(sel: RowSel, v: np.ndarray) -> np.ndarray:
    return _extreme(sel, v, np.fmax)


def first(sel: RowSel, v: np.ndarray) -> np.ndarray:
    out = np.full(sel.n, NAN)
    has = sel.cnt > 0
    out[has] = v[sel.off[has]]
    return out


def last(sel: RowSel, v: np.ndarray) -> np.ndarray:
    out = np.full(sel.n, NAN)
    has = sel.cnt > 0
    out[has] = v[sel.off[has] + sel.cnt[has] - 1]
    return out


def slope(sel: RowSel, v: np.ndarray) -> np.ndarray:
    """Least-squares slope per second (how fast a queue grows)."""
    ok = _valid(v)
    t = np.where(ok, sel.ts, 0.0)
    y = np.where(ok, v, 0.0)

    def s(w):
        return np.bincount(sel.inst, weights=w, minlength=sel.n)

    n, st, sy, stt, sty = s(ok.astype(np.float64)), s(t), s(y), s(t * t), s(t * y)
    den = n * stt - st * st
    with np.errstate(all="ignore"):
        out = (n * sty - st * sy) / den
    return np.where((n >= 2) & (den > 1e-12), out, NAN)


def quantile(sel: RowSel, v: np.ndarray, q: float) -> np.ndarray:
    """Linear-interpolated quantile (numpy's default method) per instance."""
    out = np.full(sel.n, NAN)
    if not sel.total:
        return out
    order = np.lexsort((v, sel.inst))  # by instance, then value; NaN sorts last
    sv = v[order]
    c = count(sel, v).astype(np.int64)
    has = c > 0
    pos = q * (c - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, np.maximum(c - 1, 0))
    frac = pos - lo
    base = sel.off
    a = sv[np.where(has, base + lo, 0)]
    b = sv[np.where(has, base + hi, 0)]
    out[has] = (a + (b - a) * frac)[has]
    return out


def fraction(sel: RowSel, cond: np.ndarray) -> np.ndarray:
    """Share of rows where ``cond`` is true, among rows where it is known."""
    known = np.bincount(sel.inst, weights=_valid(cond), minlength=sel.n)
    true = np.bincount(sel.inst, weights=cond == 1.0, minlength=sel.n)
    with np.errstate(all="ignore"):
        return np.where(known > 0, true / known, NAN)
