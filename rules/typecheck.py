"""Load-time checks of a parsed expression: types, scopes, names, where fields may be.

Every problem is a ``RuleSyntaxError`` with the column of the offending part, so a rules
file with a typo fails when it loads instead of silently never firing. Operators over
literals are folded here (``2 * 60s`` -> ``120s``).
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass

import numpy as np

from .errors import RuleSyntaxError
from .functions import FUNCTIONS
from .model import DEPLOYMENT_FACTS, ENDPOINT_FACTS, EVENT_KINDS, ROLES, STATS_FIELDS, STORED_EVENT_KINDS
from .nodes import ANY, BOOL, DUR, NUM, STR, Binary, Call, Field, Fn, Lit, Node, Samples, Unary
from .userregex import PatternError, UserPattern
from .values import NAN, arith, compare, logic_and, logic_not, logic_or

SCOPES = ("engine", "endpoint", "deployment")
MAX_SECONDS = 1e9  # ~31 years: longer durations are typos


def num_key(v: float) -> str:
    return repr(int(v)) if math.isfinite(v) and v == int(v) and abs(v) < 1e15 else repr(v)


def check(root: Node, scope: str, rows: bool = False, want: str | None = None) -> Node:
    """Type and validate a parsed tree for ``scope``; returns the (folded) root.

    Args:
        rows: the expression is per stats line (evidence filters): fields allowed on top.
        want: required result type, or None.
    """
    checker = _Checker(scope)
    root = checker.check(root, _Env(scope))
    if not rows:
        checker._no_rows(root, "a rule expression")
    if want is not None and _cat(root.type) not in (want, ANY):
        raise RuleSyntaxError(f"the expression must be a {want}, but it is a {root.type}", root.col)
    return root


@dataclass
class _Env:
    scope: str


class _Checker:
    """Types every node, rejects what cannot run, and folds constant sub-expressions."""

    def __init__(self, scope: str) -> None:
        self.scope = scope

    def check(self, node: Node, env: _Env) -> Node:
        if isinstance(node, Lit | Samples):
            return node
        if isinstance(node, Field):
            return self._field(node, env)
        if isinstance(node, Unary):
            node.x = self.check(node.x, env)
            want = BOOL if node.op == "not" else NUM
            self._want(node.x, want, f"'{node.op}'")
            node.type = DUR if node.x.type == DUR else want
            node.rowwise = node.x.rowwise
            node.rekey()
            return _fold(node)
        if isinstance(node, Binary):
            return self._binary(node, env)
        assert isinstance(node, Call)
        return self._call(node, env)

    def _field(self, node: Field, env: _Env) -> Node:
        if node.name not in STATS_FIELDS:
            names = list(STATS_FIELDS) + list(FUNCTIONS)
            raise RuleSyntaxError(f"unknown name '{node.name}'{_suggest(node.name, names)}", node.col)
        if env.scope == "deployment":
            raise RuleSyntaxError(
                f"field '{node.name}' needs an endpoint: at deployment scope use e.g. "
                f"peer_max(\"decode\", avg({node.name}, 1m))", node.col)
        return node

    def _binary(self, node: Binary, env: _Env) -> Node:
        node.a = self.check(node.a, env)
        node.b = self.check(node.b, env)
        op, a, b = node.op, node.a, node.b
        node.rowwise = a.rowwise or b.rowwise
        if op in ("and", "or"):
            self._want(a, BOOL, f"'{op}'")
            self._want(b, BOOL, f"'{op}'")
            node.type = BOOL
        elif op in ("+", "-", "*", "/"):
            self._want(a, NUM, f"'{op}'")
            self._want(b, NUM, f"'{op}'")
            node.type = DUR if DUR in (a.type, b.type) else NUM  # 2 * 30s is still a window
        elif op in ("==", "!="):
            ta, tb = _cat(a.type), _cat(b.type)
            if ANY not in (ta, tb) and ta != tb and {ta, tb} != {NUM, BOOL}:
                raise RuleSyntaxError(f"cannot compare a {a.type} with a {b.type}", node.col)
            node.type = BOOL
        else:
            for side in (a, b):
                if _cat(side.type) not in (NUM, ANY):
                    raise RuleSyntaxError(f"'{op}' compares numbers, not a {side.type}", side.col)
            node.type = BOOL
        self._check_role_literal(a, b)
        node.rekey()
        return _fold(node)

    def _check_role_literal(self, a: Node, b: Node) -> None:
        # role() == "decod" would silently never match: check the literal.
        for x, y in ((a, b), (b, a)):
            if isinstance(x, Call) and x.name == "role" and isinstance(y, Lit) and y.type == STR:
                if y.value not in ROLES:
                    raise RuleSyntaxError(f"unknown role {y.value!r}{_suggest(y.value, ROLES)}", y.col)

    def _want(self, node: Node, want: str, what: str) -> None:
        got = _cat(node.type)
        if got == ANY or got == want:
            return
        if want == NUM and got == BOOL:
            raise RuleSyntaxError(f"{what} needs a number, got a boolean", node.col)
        raise RuleSyntaxError(f"{what} needs a {want}, got a {node.type}", node.col)

    def _call(self, node: Call, env: _Env) -> Node:
        fn = FUNCTIONS.get(node.name)
        if fn is None:
            raise RuleSyntaxError(f"unknown function '{node.name}'{_suggest(node.name, list(FUNCTIONS))}",
                                  node.name_col)
        node.fn = fn
        if env.scope not in fn.scopes:
            need = "an engine scope" if fn.scopes == {"engine"} else "an endpoint"
            raise RuleSyntaxError(f"{fn.name}() needs {need}; this rule's scope is {env.scope}"
                                  + (" (use a peer_* function)" if env.scope == "deployment" else ""),
                                  node.name_col)
        lo, hi = len(fn.params) - fn.optional, len(fn.params)
        if not lo <= len(node.args) <= hi:
            want = str(lo) if lo == hi else f"{lo} or {hi}"
            raise RuleSyntaxError(f"{fn.name}() takes {want} argument{'s' if hi != 1 else ''}, "
                                  f"got {len(node.args)}", node.name_col)
        node.args = [self._arg(fn, kind, arg, env) for kind, arg in zip(fn.params, node.args)]
        node.rekey()
        node.type = fn.returns
        if fn.kind == "elem":
            node.rowwise = any(a.rowwise for a in node.args)
            if fn.name == "coalesce":
                node.type = node.args[0].type
        return node

    def _arg(self, fn: Fn, kind: str, arg: Node, env: _Env) -> Node:
        where = f"{fn.name}()"
        if kind in ("fact", "role", "kind"):
            return self._literal_arg(fn, kind, arg, env)
        if kind == "pattern":
            return _pattern_arg(fn, arg)
        if kind == "prob":
            if not (isinstance(arg, Lit) and arg.type == NUM and 0 <= arg.value <= 1):  # type: ignore[operator]
                raise RuleSyntaxError(f"{where} needs a quantile between 0 and 1 here", arg.col)
            return arg
        if kind in ("peer_num", "peer_bool"):
            arg = self.check(arg, _Env("endpoint"))
            self._no_rows(arg, where)
            self._want(arg, NUM if kind == "peer_num" else BOOL, where)
            return arg
        if kind in ("series", "cond"):
            arg = self.check(arg, env)
            if kind == "cond":
                self._want(arg, BOOL, where)
            elif arg.type == STR:  # a condition counts as 1/0, so sum(waiting > 0, 1m) counts lines
                raise RuleSyntaxError(f"{where} needs a number, got a string", arg.col)
            return arg
        arg = self.check(arg, env)
        if kind == "window":
            if isinstance(arg, Lit) and arg.type == NUM:
                raise RuleSyntaxError(
                    f"{where} needs a window with a unit: {num_key(arg.value)}s or "  # type: ignore[arg-type]
                    f"{num_key(arg.value)} samples", arg.col)  # type: ignore[arg-type]
            if isinstance(arg, Lit) and not 0 < arg.value <= MAX_SECONDS:  # type: ignore[operator]
                raise RuleSyntaxError(f"{where} needs a window longer than 0s", arg.col)
            self._no_rows(arg, where + " window")
            self._want(arg, NUM, f"{where} window")
            return arg
        if kind == "num":
            self._want(arg, NUM, where)
        if fn.kind != "elem":
            self._no_rows(arg, where)
        return arg

    def _literal_arg(self, fn: Fn, kind: str, arg: Node, env: _Env) -> Node:
        what = {"fact": "fact name", "role": "role", "kind": "event kind"}[kind]
        if not (isinstance(arg, Lit) and arg.type == STR):
            raise RuleSyntaxError(f"{fn.name}() needs a quoted {what} here", arg.col)
        value = arg.value
        if kind == "fact":
            known = list(DEPLOYMENT_FACTS) if env.scope == "deployment" else list(ENDPOINT_FACTS) + list(DEPLOYMENT_FACTS)
        elif kind == "role":
            known = list(ROLES) + ["*"]
        else:
            known = list(STORED_EVENT_KINDS)
            if value in EVENT_KINDS and value not in known:
                raise RuleSyntaxError(f"event kind {value!r} is not kept for rules (one per request, or read into "
                                      f"facts); kinds a rule can count: {', '.join(known)}", arg.col)
        if value not in known:
            raise RuleSyntaxError(f"unknown {what} {value!r}{_suggest(value, known)}", arg.col)  # type: ignore[arg-type]
        return arg

    def _no_rows(self, node: Node, where: str) -> None:
        if node.rowwise:
            f = node  # follow row-wise children down to the field that makes it per-line
            while not isinstance(f, Field):
                f = next(c for c in f.children() if c.rowwise)
            raise RuleSyntaxError(
                f"field '{f.name}' has one value per stats line; {where} needs one value: "
                f"use a window function such as last({f.name}) or avg({f.name}, 1m)", f.col)


def _pattern_arg(fn: Fn, arg: Node) -> Node:
    """A quoted regular expression, compiled now: a bad one fails the load, not a tick."""
    if not (isinstance(arg, Lit) and arg.type == STR):
        raise RuleSyntaxError(f"{fn.name}() needs a quoted regular expression here", arg.col)
    try:
        arg.pattern = UserPattern(str(arg.value))  # type: ignore[attr-defined]
    except PatternError as e:
        raise RuleSyntaxError(str(e), arg.col) from None
    return arg


def _cat(t: str) -> str:
    return NUM if t == DUR else t


def _fold(node: Node) -> Node:
    """Replace an operator over literals by its value (``2 * 60`` -> ``120``)."""
    kids = node.children()
    if not kids or not all(isinstance(k, Lit) for k in kids):
        return node
    vals = [k.value for k in kids]  # type: ignore[attr-defined]
    if isinstance(node, Unary):
        v = logic_not(vals[0]) if node.op == "not" else -float(vals[0])
    else:
        op = node.op  # type: ignore[attr-defined]
        if any(isinstance(x, str) for x in vals):  # only == and != reach here (checked)
            same = isinstance(vals[0], str) and isinstance(vals[1], str) and vals[0] == vals[1]
            v = float(same if op == "==" else not same)
        elif op == "and":
            v = logic_and(*vals)
        elif op == "or":
            v = logic_or(*vals)
        elif op in ("+", "-", "*", "/"):
            v = arith(op, *vals)
        else:
            v = compare(op, *vals)
    v = float(np.asarray(v, dtype=np.float64).reshape(-1)[0])
    t = node.type
    if t == BOOL:
        key = "true" if v == 1 else "false" if v == 0 else "unknown"
    else:
        key = (num_key(v) if v == v else "nan") + ("s" if t == DUR else "")
    return Lit(v if v == v else NAN, t, key, node.col)


def _suggest(word: str, names: list[str] | tuple[str, ...]) -> str:
    close = difflib.get_close_matches(word, list(names), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""
