r"""The rule expression language: a small, safe grammar parsed by hand.

Text is tokenised and parsed by recursive descent into ``rules.nodes`` objects, then
type-checked; nothing is ever passed to ``eval``, ``exec`` or pandas ``query``/``eval``.
Every problem is a ``RuleSyntaxError(message, column)``, column 1-based.

Grammar (EBNF; keywords are lower case)::

    expr     = or
    or       = and { "or" and }
    and      = not { "and" not }
    not      = "not" not | compare
    compare  = sum [ ( "==" | "!=" | "<" | "<=" | ">" | ">=" ) sum ]   (no chaining)
    sum      = product { ( "+" | "-" ) product }
    product  = unary { ( "*" | "/" ) unary }
    unary    = "-" unary | atom
    atom     = NUMBER [ "samples" | "sample" ] | DURATION | STRING | "true" | "false"
             | NAME "(" [ expr { "," expr } ] ")"          function call (whitelist)
             | "fact" "." NAME                              same as fact("NAME")
             | NAME                                         a stats field
             | "(" expr ")"
    NUMBER   = 12 | 0.5 | .5 | 1e3
    DURATION = NUMBER UNIT { NUMBER UNIT }, no spaces; UNIT = ms | s | m | h | d   (1m30s)
    STRING   = "..." | '...'   (backslash escapes the quote and itself)

Sample counts are written ``6 samples`` (``1 sample``): N stats lines, i.e. N x the
endpoint's stats interval, so a rule reads the same at 1 s and at 60 s intervals.

Two kinds of values:
  * instance values: one per scope instance (engine, endpoint, deployment) - what a rule's
    ``expr``, ``when``, ``value`` and templates compute;
  * row values: one per stats line. A stats field (``running``, ``kv_usage_pct``, ...) is
    a row value and may only appear inside the first argument of a window function,
    which reduces the window's lines to one instance value: ``avg(kv_usage_pct, 1m)``,
    ``fraction(kv_usage_pct > 87 and waiting > 0, 10 samples)``. Inside it, instance
    values (facts, literals, other window functions) apply to every line:
    ``fraction(running >= fact("max_num_seqs"), 2m)``. A bare field elsewhere is an
    error that suggests ``last(field)``.

Windows are ``(now - width, now]``. At endpoint scope a window holds the lines of all the
endpoint's engines (``avg(running, 1m)`` is the mean per-engine running); at engine scope
only that engine's. Deployment scope has no lines of its own: use ``peer_*`` functions.

Functions are a fixed whitelist (``rules.functions``; reference and worked examples in
``rules/builtin/README.md``); checks live in ``rules.typecheck``.

Unknowns: a missing fact or an empty window is *unknown*; comparisons with unknown are
unknown, logic is three-valued, and a rule fires only where its condition is true.
Numbers are floats; ``true``/``false`` compare with numbers as 1/0 (boolean facts);
durations are seconds in arithmetic; ``x / 0`` is unknown.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Mapping

from pdwatch.units import DURATION_RE, duration_seconds

from .errors import RuleSyntaxError
from .nodes import BOOL, DUR, NUM, STR, Binary, Call, Field, Lit, Node, Samples, Unary
from .typecheck import MAX_SECONDS, SCOPES, check, num_key

MAX_LENGTH = 4000
MAX_DEPTH = 40
MAX_NODES = 200  # keeps every recursive pass far from Python's recursion limit
MAX_SAMPLES = 1_000_000
KEYWORDS = {"and", "or", "not", "true", "false"}
_NUMBER_RE = re.compile(r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)
_DIGITS = "0123456789"
_NAME_START = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
_OPS = ("==", "!=", "<=", ">=", "<", ">", "+", "-", "*", "/", "(", ")", ",", ".")
_HINTS = {"=": "use == to compare", "&": "use 'and'", "|": "use 'or'", "!": "use 'not' or !="}
_ESCAPES = {"n": "\n", "t": "\t"}


@dataclass(frozen=True)
class Token:
    kind: str  # num dur str name op end
    text: str
    value: object
    col: int


def tokenize(text: str) -> list[Token]:
    if len(text) > MAX_LENGTH:
        raise RuleSyntaxError(f"expression longer than {MAX_LENGTH} characters", 1)
    out: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        col = i + 1
        if c.isspace():
            i += 1
            continue
        if c in _DIGITS or (c == "." and i + 1 < n and text[i + 1] in _DIGITS):
            i = _number(text, i, out)
            continue
        if c in _NAME_START:
            m = _NAME_RE.match(text, i)
            assert m
            out.append(Token("name", m.group(), m.group(), col))
            i = m.end()
            continue
        if c in "\"'":
            i = _string(text, i, out)
            continue
        op = next((o for o in _OPS if text.startswith(o, i)), None)
        if op is None:
            hint = _HINTS.get(c)
            raise RuleSyntaxError(f"unexpected character {c!r}" + (f": {hint}" if hint else ""), col)
        out.append(Token("op", op, op, col))
        i += len(op)
    out.append(Token("end", "", None, n + 1))
    return out


def _number(text: str, i: int, out: list[Token]) -> int:
    col = i + 1
    d = DURATION_RE.match(text, i)
    m = _NUMBER_RE.match(text, i)
    assert m
    if d and d.end() > m.end():
        tok, end = Token("dur", d.group(), duration_seconds(d.group()), col), d.end()
        if not tok.value <= MAX_SECONDS:  # type: ignore[operator]
            raise RuleSyntaxError(f"duration {tok.text} is longer than {MAX_SECONDS:g} seconds", col)
    else:
        tok, end = Token("num", m.group(), float(m.group()), col), m.end()
        if not math.isfinite(tok.value):  # type: ignore[arg-type]
            raise RuleSyntaxError(f"number {tok.text} is too large", col)
    if end < len(text) and (text[end].isalnum() or text[end] in "_."):
        bad = re.match(r"[\w.]*", text[i:]).group()  # type: ignore[union-attr]
        if text[end] == "x":
            raise RuleSyntaxError(f"bad number {bad!r}: write a sample count as '{tok.text} samples'", col)
        raise RuleSyntaxError(f"bad number or duration {bad!r} (units: ms, s, m, h, d)", col)
    out.append(tok)
    return end


def _string(text: str, i: int, out: list[Token]) -> int:
    quote, col = text[i], i + 1
    buf: list[str] = []
    j = i + 1
    while j < len(text):
        c = text[j]
        if c == "\\" and j + 1 < len(text):
            buf.append(_ESCAPES.get(text[j + 1], text[j + 1]))
            j += 2
            continue
        if c == quote:
            out.append(Token("str", text[i:j + 1], "".join(buf), col))
            return j + 1
        buf.append(c)
        j += 1
    raise RuleSyntaxError("unterminated string", col)


class _Parser:
    def __init__(self, text: str, names: Mapping[str, Node] | None = None) -> None:
        self.names = names or {}
        self.toks = tokenize(text)
        self.i = 0
        self.depth = 0
        self.nodes = 0

    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def take(self) -> Token:
        t = self.toks[self.i]
        self.i += 1
        return t

    def at(self, kind: str, text: str | None = None) -> bool:
        t = self.tok
        return t.kind == kind and (text is None or t.text == text)

    def expect_op(self, op: str, what: str) -> Token:
        if not self.at("op", op):
            raise RuleSyntaxError(f"expected {op!r} {what}, found {_describe(self.tok)}", self.tok.col)
        return self.take()

    def made(self, node: Node) -> Node:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise RuleSyntaxError(f"expression has more than {MAX_NODES} parts; split the rule", node.col)
        return node

    def nest(self, col: int) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise RuleSyntaxError(f"expression nested more than {MAX_DEPTH} deep", col)

    def parse(self) -> Node:
        if self.at("end"):
            raise RuleSyntaxError("empty expression", 1)
        node = self.or_()
        if not self.at("end"):
            raise RuleSyntaxError(f"unexpected {_describe(self.tok)} after a complete expression", self.tok.col)
        return node

    def or_(self) -> Node:
        node = self.and_()
        while self.at("name", "or"):
            t = self.take()
            node = self.made(Binary("or", node, self.and_(), t.col))
        return node

    def and_(self) -> Node:
        node = self.not_()
        while self.at("name", "and"):
            t = self.take()
            node = self.made(Binary("and", node, self.not_(), t.col))
        return node

    def not_(self) -> Node:
        if self.at("name", "not"):
            t = self.take()
            self.nest(t.col)
            node = self.made(Unary("not", self.not_(), t.col))
            self.depth -= 1
            return node
        return self.compare()

    def compare(self) -> Node:
        node = self.sum_()
        if self.at("op") and self.tok.text in ("==", "!=", "<", "<=", ">", ">="):
            t = self.take()
            node = self.made(Binary(t.text, node, self.sum_(), t.col))
            if self.at("op") and self.tok.text in ("==", "!=", "<", "<=", ">", ">="):
                raise RuleSyntaxError("comparisons do not chain: write 'a < b and b < c'", self.tok.col)
        return node

    def sum_(self) -> Node:
        node = self.product()
        while self.at("op") and self.tok.text in ("+", "-"):
            t = self.take()
            node = self.made(Binary(t.text, node, self.product(), t.col))
        return node

    def product(self) -> Node:
        node = self.unary()
        while self.at("op") and self.tok.text in ("*", "/"):
            t = self.take()
            node = self.made(Binary(t.text, node, self.unary(), t.col))
        return node

    def unary(self) -> Node:
        if self.at("op", "-"):
            t = self.take()
            self.nest(t.col)
            node = self.made(Unary("-", self.unary(), t.col))
            self.depth -= 1
            return node
        return self.atom()

    def atom(self) -> Node:
        t = self.tok
        if t.kind == "num":
            self.take()
            if self.at("name") and self.tok.text in ("samples", "sample") and not self._call_follows():
                self.take()
                if not 1 <= t.value <= MAX_SAMPLES or t.value != int(t.value):  # type: ignore[operator]
                    raise RuleSyntaxError(f"a sample count is a whole number from 1 to {MAX_SAMPLES:,}", t.col)
                return Samples(int(t.value), t.col)  # type: ignore[arg-type]
            return Lit(t.value, NUM, num_key(t.value), t.col)  # type: ignore[arg-type]
        if t.kind == "dur":
            self.take()
            return Lit(t.value, DUR, f"{t.value:g}s", t.col)
        if t.kind == "str":
            self.take()
            return Lit(t.value, STR, repr(t.value), t.col)
        if t.kind == "name":
            return self.name()
        if self.at("op", "("):
            self.take()
            self.nest(t.col)
            node = self.or_()
            self.depth -= 1
            self.expect_op(")", f"to close the '(' at column {t.col}")
            return node
        raise RuleSyntaxError(f"expected a value, found {_describe(t)}", t.col)

    def _call_follows(self) -> bool:
        nxt = self.toks[self.i + 1]
        return nxt.kind == "op" and nxt.text == "("

    def name(self) -> Node:
        t = self.take()
        word = t.text
        if word in ("true", "false"):
            return Lit(1.0 if word == "true" else 0.0, BOOL, word, t.col)
        if word in KEYWORDS:
            raise RuleSyntaxError(f"expected a value, found '{word}'", t.col)
        if word == "fact" and self.at("op", "."):
            self.take()
            if not self.at("name"):
                raise RuleSyntaxError(f"expected a fact name after 'fact.', found {_describe(self.tok)}", self.tok.col)
            f = self.take()
            return Call("fact", [Lit(f.text, STR, repr(f.text), f.col)], t.col, t.col)
        if not self.at("op", "("):
            if word in self.names:  # e.g. `value` inside a template: the rule's value expression
                return self.names[word]
            return self.made(Field(word, t.col))
        self.take()
        self.nest(t.col)
        args: list[Node] = []
        if not self.at("op", ")"):
            args.append(self.or_())
            while self.at("op", ","):
                self.take()
                args.append(self.or_())
        self.expect_op(")", f"to close the call to {word}() at column {t.col}")
        self.depth -= 1
        return self.made(Call(word, args, t.col, t.col))


def _describe(t: Token) -> str:
    return "end of expression" if t.kind == "end" else f"'{t.text}'"


@dataclass(frozen=True)
class Expr:
    """A compiled, checked expression."""

    text: str
    scope: str
    root: Node

    @property
    def type(self) -> str:
        return self.root.type

    def fields(self) -> list[str]:
        """Stats fields read, in order of first use."""
        seen: dict[str, None] = {}
        for n in self.root.walk():
            if isinstance(n, Field):
                seen.setdefault(n.name)
        return list(seen)

    def event_kinds(self) -> list[str]:
        seen: dict[str, None] = {}
        for n in self.root.walk():
            if isinstance(n, Call) and n.name in ("count_events", "count_matching"):
                seen.setdefault(n.args[0].value)  # type: ignore[attr-defined]
        return list(seen)

    def searched_kinds(self) -> list[str]:
        """Event kinds whose line text ``count_matching`` searches (the store keeps their text)."""
        return list(dict.fromkeys(n.args[0].value for n in self.root.walk()  # type: ignore[attr-defined]
                                  if isinstance(n, Call) and n.name == "count_matching"))

    def so_far_kinds(self) -> list[str]:
        """Event kinds read over the whole run so far: a count or reason without a window,
        ``before``. A watch keeps every event of these kinds (``Rule.reach``)."""
        kinds: dict[str, None] = {}
        for n in self.root.walk():
            if not isinstance(n, Call):
                continue
            if n.name in ("count_events", "top_reason", "count_matching") and n.fn is not None \
                    and len(n.args) < len(n.fn.params):
                kinds.setdefault(n.args[0].value)  # type: ignore[attr-defined]
            elif n.name == "before":
                for arg in n.args:
                    kinds.setdefault(arg.value)  # type: ignore[attr-defined]
        return list(kinds)

    def patterns(self) -> list[Node]:
        """Literals holding a user regular expression (``.pattern``, a ``UserPattern``)."""
        return [n for n in self.root.walk() if getattr(n, "pattern", None) is not None]

    def windows(self) -> list[Node]:
        """Window arguments (to know how far back the evidence of a finding reaches)."""
        return [n.args[-1] for n in self.root.walk()
                if isinstance(n, Call) and n.fn is not None and n.fn.kind == "window"
                and n.fn.params and n.fn.params[-1] == "window" and len(n.args) == len(n.fn.params)]


def compile_expr(text: str, scope: str = "endpoint", want: str | None = None,
                 rows: bool = False, names: Mapping[str, Node] | None = None) -> Expr:
    """Parse and check ``text`` for a rule of ``scope`` (checks: ``rules.typecheck``).

    Args:
        text: the expression.
        scope: "engine", "endpoint" or "deployment" (what instances it is evaluated for).
        want: required result type (``boolean`` for conditions), or None for any.
        rows: allow stats fields at the top (a per-line expression, e.g. evidence filters).
        names: extra names bound to checked expressions (templates bind ``value``).
    Raises:
        RuleSyntaxError: with the 1-based column of the problem.
    """
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {', '.join(SCOPES)}")
    if not isinstance(text, str):
        raise RuleSyntaxError(f"expected an expression, got {type(text).__name__}", 1)
    root = check(_Parser(text, names).parse(), scope, rows=rows, want=want)
    return Expr(text, scope, root)
