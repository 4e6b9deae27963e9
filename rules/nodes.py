"""Expression tree nodes, and ``ev``: how a node is evaluated against a context.

Nodes are built by ``rules.expr`` (which also type-checks them) and never change after.
Each knows its static type (NUM, BOOL, STR, DUR, ANY), whether it is *row-wise* (it
reads a stats field, so it has one value per stats line and is only meaningful inside a
window function), and a canonical ``key`` text used to share results between rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .values import arith, compare, logic_and, logic_not, logic_or, to_num

if TYPE_CHECKING:
    from .context import Ctx

NUM, BOOL, STR, DUR, ANY = "number", "boolean", "string", "duration", "any"


@dataclass(frozen=True)
class Fn:
    """A function of the rule language, as a call node refers to it (the table is ``rules.functions``)."""
    name: str
    params: tuple[str, ...]
    returns: str
    kind: str  # "window" (reads a window of rows), "inst", "elem" (elementwise), "peer"
    scopes: frozenset[str]
    impl: Callable[["Ctx", "Call"], Any]
    optional: int = 0  # trailing optional parameters
    doc: str = ""


class Node:
    col: int = 1
    type: str = ANY
    rowwise: bool = False
    const: bool = False
    key: str = ""

    def _eval(self, ctx: "Ctx") -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def children(self) -> tuple["Node", ...]:
        return ()

    def rekey(self) -> None:
        """Recompute ``key`` after children were replaced (constant folding)."""

    def walk(self):
        yield self
        for c in self.children():
            yield from c.walk()

    def __repr__(self) -> str:
        return self.key


def ev(node: Node, ctx: "Ctx") -> Any:
    """Value of ``node``: per instance, or per selected row inside a window function."""
    if node.const:
        return node.value  # type: ignore[attr-defined]
    if ctx.sel is not None:
        if not node.rowwise:  # an instance value inside a window: one per row of its instance
            v = ev(node, ctx.base)
            return v[ctx.sel.inst] if isinstance(v, np.ndarray) else v
        return scalar(node._eval(ctx))
    cache = ctx.cache
    got = cache.get(node.key)
    if got is None:
        if ctx.sweep is not None:  # many clock times at once (rules.sweep)
            got = ctx.sweep.evaluate(node, ctx)
        else:
            got = scalar(node._eval(ctx))
        cache[node.key] = got
    return got


def scalar(v: Any) -> Any:
    """numpy returns 0-d arrays for operations on literals only: make them plain scalars."""
    return v.item() if isinstance(v, np.ndarray) and v.ndim == 0 else v


class Lit(Node):
    const = True

    def __init__(self, value: Any, type_: str, key: str, col: int) -> None:
        self.value, self.type, self.key, self.col = value, type_, key, col


class Samples(Node):
    """``6 samples``: as a number, 6 x the instance's stats interval in seconds."""

    type = DUR

    def __init__(self, count: int, col: int) -> None:
        self.count, self.col = count, col
        self.key = f"{count} samples"

    def _eval(self, ctx: "Ctx") -> Any:
        return ctx.interval_us() * (self.count / 1e6)


class Field(Node):
    rowwise = True
    type = NUM

    def __init__(self, name: str, col: int) -> None:
        self.name, self.col, self.key = name, col, name

    def _eval(self, ctx: "Ctx") -> Any:
        return ctx.column(self.name)


class Unary(Node):
    def __init__(self, op: str, x: Node, col: int) -> None:
        self.op, self.x, self.col = op, x, col
        self.rekey()

    def rekey(self) -> None:
        self.key = f"(not {self.x.key})" if self.op == "not" else f"(-{self.x.key})"

    def children(self) -> tuple[Node, ...]:
        return (self.x,)

    def _eval(self, ctx: "Ctx") -> Any:
        v = ev(self.x, ctx)
        return logic_not(v) if self.op == "not" else -to_num(v)


class Binary(Node):
    def __init__(self, op: str, a: Node, b: Node, col: int) -> None:
        self.op, self.a, self.b, self.col = op, a, b, col
        self.rekey()

    def rekey(self) -> None:
        self.key = f"({self.a.key} {self.op} {self.b.key})"

    def children(self) -> tuple[Node, ...]:
        return (self.a, self.b)

    def _eval(self, ctx: "Ctx") -> Any:
        op = self.op
        a = ev(self.a, ctx)
        if op in ("and", "or"):
            # Skip the right side when the left already decides every instance
            # (a cheap ``when``-style guard in front of an expensive window).
            arr = to_num(a)
            if op == "and" and np.all(arr == 0):
                return arr
            if op == "or" and np.all(arr == 1):
                return arr
            b = ev(self.b, ctx)
            return logic_and(a, b) if op == "and" else logic_or(a, b)
        b = ev(self.b, ctx)
        if op in ("+", "-", "*", "/"):
            return arith(op, a, b)
        return compare(op, a, b)


class Call(Node):
    def __init__(self, name: str, args: list[Node], col: int, name_col: int) -> None:
        self.name, self.args, self.col, self.name_col = name, args, col, name_col
        self.fn: Fn | None = None
        self.rekey()

    def rekey(self) -> None:
        self.key = f"{self.name}({', '.join(a.key for a in self.args)})"

    def children(self) -> tuple[Node, ...]:
        return tuple(self.args)

    def _eval(self, ctx: "Ctx") -> Any:
        return self.fn.impl(ctx, self)  # type: ignore[union-attr]
