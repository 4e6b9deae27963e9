"""Finding text templates: literal text with ``{{ ... }}`` holes.

A hole is one of the names ``endpoint``, ``engines``, ``value``, ``role``, ``finding``,
``severity``, or any expression of the rule language evaluated for the instance
(``{{ avg(kv_usage_pct, 1m) }}``, ``{{ fact.max_num_seqs }}``, ``{{ 100 * value }}``: inside
an expression ``value`` is the rule's value expression). Holes are checked when the
rules file loads. ``engines`` is filled in last, when findings of several engines of one
endpoint are merged into one.

Values are formatted for people: integers with thousands separators (``2,097,152``),
other numbers to about three significant digits (``87.3``, ``0.83``), booleans as
``true``/``false``, long lists shortened, anything unknown as ``unknown``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from pdwatch.units import engine_ranges, fmt_precise

from .errors import RuleSyntaxError
from .expr import Expr, compile_expr
from .nodes import BOOL, Call

NAMES = ("endpoint", "engines", "value", "role", "finding", "severity")


class EnginesHole:
    """Placeholder for the engine list, resolved when the finding is built."""

    def __repr__(self) -> str:
        return "{{ engines }}"


ENGINES = EnginesHole()


@dataclass(frozen=True)
class Hole:
    name: str | None  # one of NAMES, or None for an expression
    expr: Expr | None


@dataclass(frozen=True)
class Template:
    text: str
    parts: tuple[str | Hole, ...]

    @property
    def exprs(self) -> list[Expr]:
        return [p.expr for p in self.parts if isinstance(p, Hole) and p.expr is not None]

    def render(self, fill: Callable[[Hole], str]) -> tuple[str | EnginesHole, ...]:
        """Fill every hole but ``engines``; consecutive text is joined."""
        out: list[str | EnginesHole] = []
        for p in self.parts:
            piece = p if isinstance(p, str) else ENGINES if p.name == "engines" else fill(p)
            if isinstance(piece, str) and out and isinstance(out[-1], str):
                out[-1] += piece
            else:
                out.append(piece)
        return tuple(out)


EMPTY = Template("", ())


def parse_template(text: str, scope: str, value: Expr | None = None) -> Template:
    """Split ``text`` into literal parts and checked holes; RuleSyntaxError columns are
    positions in ``text``. ``value`` binds the name ``value`` inside hole expressions."""
    names = {"value": value.root} if value is not None else None
    parts: list[str | Hole] = []
    i = 0
    while True:
        j = text.find("{{", i)
        if j < 0:
            if i < len(text):
                parts.append(text[i:])
            break
        if j > i:
            parts.append(text[i:j])
        k = text.find("}}", j + 2)
        if k < 0:
            raise RuleSyntaxError("'{{' is never closed with '}}'", j + 1)
        inner = text[j + 2:k]
        name = inner.strip()
        if name in NAMES:
            parts.append(Hole(name, None))
        else:
            lead = len(inner) - len(inner.lstrip())
            try:
                parts.append(Hole(None, compile_expr(name, scope, names=names)))
            except RuleSyntaxError as e:
                raise RuleSyntaxError(e.message, j + 2 + lead + e.column) from None
        i = k + 2
    return Template(text, tuple(parts))


def join(parts: Sequence[str | EnginesHole], engines: Sequence[int]) -> str:
    return "".join(engine_ranges(engines) if isinstance(p, EnginesHole) else p for p in parts)


def raw_fact_name(expr: Expr) -> str | None:
    """``fact.x`` / ``fact("x")`` holes print the fact as logged (lists, strings, bools)."""
    root = expr.root
    if isinstance(root, Call) and root.name == "fact":
        return root.args[0].value  # type: ignore[attr-defined]
    return None


def fmt_value(v: Any, type_: str | None = None) -> str:
    if v is None:
        return "unknown"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return v
    if isinstance(v, (list, tuple)):
        items = [fmt_value(x) for x in v]
        if len(items) > 8:
            return f"{', '.join(items[:3])}, ..., {items[-1]} ({len(items)} values)"
        return ", ".join(items)
    try:
        x = float(v)
    except (TypeError, ValueError):
        return str(v)
    if math.isnan(x):
        return "unknown"
    if type_ == BOOL:
        return "true" if x == 1 else "false"
    return fmt_precise(x)
