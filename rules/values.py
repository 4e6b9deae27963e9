"""Run-time values of expressions, and the operators on them.

A value is a Python scalar (a literal) or a numpy array with one element per scope
instance (or per selected stats row inside a window function). Numbers and booleans are
float64 (true = 1.0, false = 0.0); NaN means *unknown* (a fact not logged, an empty
window). Strings (roles, string facts) are object arrays, None = unknown.

Logic is three-valued (Kleene): ``false and unknown`` is false, ``true and unknown`` is
unknown; comparisons with unknown are unknown; a rule fires only where its condition is
exactly true. So a missing fact never makes a rule fire, and ``not`` does not turn
"unknown" into "true".
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

NAN = float("nan")

_ORDER = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_EQ = {"==": operator.eq, "!=": operator.ne}


def is_obj(v: Any) -> bool:
    return isinstance(v, str) or (isinstance(v, np.ndarray) and v.dtype == object)


def to_num(v: Any) -> Any:
    """Numbers stay; strings, lists and None in an object array become NaN."""
    if isinstance(v, np.ndarray):
        if v.dtype != object:
            return v
        return np.array([_num_or_nan(x) for x in v], dtype=np.float64)
    return _num_or_nan(v)


def _num_or_nan(x: Any) -> float:
    if isinstance(x, bool):
        return 1.0 if x else 0.0
    if isinstance(x, (int, float, np.integer, np.floating)):
        return float(x)
    return NAN


def logic_and(a: Any, b: Any) -> Any:
    a, b = to_num(a), to_num(b)
    # fmin ignores NaN (so false wins), minimum propagates it (true and unknown = unknown).
    return np.where(np.fmin(a, b) == 0, 0.0, np.minimum(a, b))


def logic_or(a: Any, b: Any) -> Any:
    a, b = to_num(a), to_num(b)
    return np.where(np.fmax(a, b) == 1, 1.0, np.maximum(a, b))


def logic_not(a: Any) -> Any:
    return 1.0 - to_num(a)


def arith(op: str, a: Any, b: Any) -> Any:
    a, b = to_num(a), to_num(b)
    with np.errstate(all="ignore"):
        if op == "+":
            return np.add(a, b)
        if op == "-":
            return np.subtract(a, b)
        if op == "*":
            return np.multiply(a, b)
        out = np.true_divide(a, b)
        # x / 0 is unknown, not infinity: a zero denominator means "no capacity known".
        return np.where(np.asarray(b) == 0, NAN, out)


def compare(op: str, a: Any, b: Any) -> Any:
    if is_obj(a) or is_obj(b):
        return _compare_objects(op, a, b)
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    fn = _ORDER.get(op) or _EQ[op]
    with np.errstate(invalid="ignore"):
        out = fn(a, b).astype(np.float64)
    return np.where(np.isnan(a) | np.isnan(b), NAN, out)


def _compare_objects(op: str, a: Any, b: Any) -> np.ndarray:
    n = len(a) if isinstance(a, np.ndarray) else len(b)
    xs = a if isinstance(a, np.ndarray) else [a] * n
    ys = b if isinstance(b, np.ndarray) else [b] * n
    return np.array([_compare_one(op, x, y) for x, y in zip(xs, ys)], dtype=np.float64)


def _compare_one(op: str, x: Any, y: Any) -> float:
    x, y = _plain(x), _plain(y)
    if x is None or y is None or _isnan(x) or _isnan(y):
        return NAN
    if op in _EQ:
        same = _same(x, y)
        return float(same if op == "==" else not same)
    if _is_number(x) and _is_number(y):
        return float(_ORDER[op](x, y))
    return NAN  # strings and lists have no order here


def _plain(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float))  # bools too: boolean facts compare as 1/0


def _same(x: Any, y: Any) -> bool:
    # Only like with like: a string never equals a number, a list only an equal list.
    if isinstance(x, str) or isinstance(y, str):
        return isinstance(x, str) and isinstance(y, str) and x == y
    if isinstance(x, (list, tuple, dict)) or isinstance(y, (list, tuple, dict)):
        return type(x) is type(y) and x == y
    return bool(x == y) if _is_number(x) and _is_number(y) else False


def _isnan(x: Any) -> bool:
    return isinstance(x, float) and x != x


def broadcast(v: Any, n: int) -> np.ndarray:
    """``v`` as an array of length ``n`` (literals are scalars until here)."""
    if isinstance(v, np.ndarray) and v.shape == (n,):
        return v
    if isinstance(v, str):
        out = np.empty(n, dtype=object)
        out[:] = v
        return out
    return np.full(n, to_num(v), dtype=np.float64)
