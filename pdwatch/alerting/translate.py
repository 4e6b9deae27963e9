"""A rule's expressions as PromQL, node by node: ``Translator``.

A translated value is a ``V``: a constant (``C(x)``; ``C(None)`` is pdwatch's unknown) or a
vector of one level (engine, endpoint, deployment). ``Translator.num`` translates a number
(a condition as 0/1 per line or per instance), ``Translator.cond`` a condition as a filter
(the instances where it holds); ``Ctx`` says where the node sits (the rule's scope, inside a
window's per-line expression, in a template's query, inside ``peer_*()``). What PromQL cannot
say raises ``Untranslatable``, whose message is the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable

from pdwatch.alerting.facts import DEPLOYMENT_FACTS, FACT_SERIES, NUMERIC_FACTS
from pdwatch.alerting.fields import ENDPOINTS, ENGINES, RANK, ExportOptions, field_levels, label_list, number
from pdwatch.rules.nodes import BOOL, STR, Binary, Call, Field, Lit, Node, Samples, Unary
from pdwatch.sources.promql import quote
from pdwatch.units import fmt_compact_duration

_INVERSE = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}


class Untranslatable(Exception):
    """A part of a rule PromQL cannot say; the message is the reason, for stderr."""


# -- values ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class V:
    """A translated value: a constant (``level`` const; ``const`` None is unknown) or a vector."""

    q: str = ""
    level: str = "const"
    const: Any = None
    plain: str = ""  # q is this one series name (a range selector may follow it)

    @property
    def is_const(self) -> bool:
        return self.level == "const"


def C(value: Any) -> V:  # noqa: N802 - a constant
    return V(const=value)


@dataclass(frozen=True)
class Ctx:
    scope: str  # engine | endpoint | deployment: the level of the rule's instances
    rows: bool = False  # inside a window's per-line expression
    pin: bool = False  # a template's query: leaves carry the alert's own labels (printf %[n]q)
    peer: bool = False  # inside peer_*(): every endpoint of a role, not this one


class Translator:
    """One rule's translation: its nodes as PromQL, the facts it reads, what is approximate."""

    def __init__(self, options: ExportOptions) -> None:
        self.o = options
        self.fields = field_levels(options)
        self.facts_used: set[str] = set()
        self.notes: list[str] = []  # what is approximate, for the rule's stderr line

    # -- leaves ------------------------------------------------------------------------------------------
    def _pins(self, ctx: Ctx, level: str) -> list[str]:
        if not ctx.pin:
            return []
        pins = [f"{label}=%[{4 + i}]q" for i, label in enumerate(self.o.deployment_labels)]
        if ctx.peer or level == "deployment":
            return pins
        pins += ["job=%[1]q", "instance=%[2]q"]
        if level == "engine" and ctx.scope == "engine":
            pins.append("engine=%[3]q")
        return pins

    def leaf(self, name: str, level: str, ctx: Ctx, matchers: Iterable[str] = ()) -> V:
        inside = [*matchers, *self._pins(ctx, level)]
        q = f"{name}{{{','.join(inside)}}}" if inside else name
        return V(q, level, plain=q)

    def universe(self, level: str, ctx: Ctx, role: str | None = None, op: str = "=") -> V:
        """Every instance of a level (value 1), optionally of a role."""
        matchers = [f"role{op}{quote('' if role == 'unknown' else role)}"] if role is not None else []
        if level == "engine":
            return self.leaf(ENGINES, "engine", ctx, matchers)
        endpoints = self.leaf(ENDPOINTS, "endpoint", ctx, matchers)
        if level == "endpoint":
            return endpoints
        return V(f"group by ({label_list(self.o.deployment_labels)}) ({endpoints.q})", "deployment")

    # -- levels ------------------------------------------------------------------------------------------
    def lift(self, v: V, level: str, ctx: Ctx) -> V:
        """``v`` as a vector of ``level`` (a constant over the instances, or a coarser vector repeated)."""
        if v.level == level:
            return v
        if v.is_const:
            if v.const is None:
                raise Untranslatable("an unknown value where a number is needed")
            if isinstance(v.const, str):
                raise Untranslatable(f"the string {v.const!r} where a number is needed")
            u = self.universe(level, ctx)
            return V(f"(0 * {u.q} + {number(float(v.const))})", level)
        if RANK[v.level] > RANK[level]:
            raise Untranslatable(f"an {v.level} value where an {level} one is needed")
        u = self.universe(level, ctx)
        return V(f"(0 * {u.q} + on({label_list(self.o.labels(v.level))}) group_left {paren(v.q)})", level)

    def join(self, a: V, op: str, b: V, ctx: Ctx, *, bool_: bool = False) -> V:
        """``a op b`` for two vectors, matched on the coarser one's labels."""
        mod = " bool" if bool_ else ""
        if a.level == b.level:
            return V(f"{paren(a.q)} {op}{mod} {paren(b.q)}", a.level)
        if RANK[a.level] > RANK[b.level]:
            return V(f"{paren(a.q)} {op}{mod} on({label_list(self.o.labels(b.level))}) group_left {paren(b.q)}",
                     a.level)
        return V(f"{paren(a.q)} {op}{mod} on({label_list(self.o.labels(a.level))}) group_right {paren(b.q)}", b.level)

    # -- numbers -----------------------------------------------------------------------------------------
    def num(self, node: Node, ctx: Ctx) -> V:
        if isinstance(node, Lit):
            if node.type == STR:
                return C(node.value)
            return C(float(node.value))
        if isinstance(node, Samples):
            return C(node.count * self.o.interval_s)
        if isinstance(node, Field):
            return self.field(node.name, ctx)
        if isinstance(node, Unary):
            if node.op == "not":
                return self.bool_num(node, ctx)
            x = self.num(node.x, ctx)
            return C(None if x.const is None else -x.const) if x.is_const else V(f"-{paren(x.q)}", x.level)
        if isinstance(node, Binary):
            if node.op in ("+", "-", "*", "/"):
                return self.arith(node.op, self.num(node.a, ctx), self.num(node.b, ctx), ctx)
            return self.bool_num(node, ctx)
        assert isinstance(node, Call)
        return self.call(node, ctx)

    def arith(self, op: str, a: V, b: V, ctx: Ctx) -> V:
        if a.is_const and b.is_const:
            if a.const is None or b.const is None:
                return C(None)
            x, y = float(a.const), float(b.const)
            if op == "/":
                return C(x / y if y != 0 else None)
            return C({"+": x + y, "-": x - y, "*": x * y}[op])
        if a.is_const or b.is_const:
            k = a if a.is_const else b
            if k.const is None:
                return C(None)  # unknown in arithmetic is unknown
            if isinstance(k.const, str):
                raise Untranslatable(f"the string {k.const!r} in arithmetic")
            x = float(k.const)
            if (op in ("+", "-") and x == 0 and k is b) or (op == "+" and x == 0) or \
                    (op in ("*", "/") and x == 1 and k is b) or (op == "*" and x == 1):
                return b if k is a else a  # x + 0, x * 1: the same vector
            left = number(float(a.const)) if a.is_const else paren(a.q)
            right = number(float(b.const)) if b.is_const else paren(b.q)
            return V(f"{left} {op} {right}", b.level if a.is_const else a.level)
        return self.join(a, op, b, ctx)

    def field(self, name: str, ctx: Ctx) -> V:
        if name not in self.fields:
            raise Untranslatable(f"the stats field {name} is not read from /metrics (only from the log)")
        if not ctx.rows:
            raise Untranslatable(f"the field {name} outside a window")
        return self.leaf(f"pdwatch:{name}", self.fields[name], ctx)

    def bool_num(self, node: Node, ctx: Ctx) -> V:
        """A condition as a number: 0/1 per line or per instance."""
        if isinstance(node, Unary) and node.op == "not":
            x = self.bool_num(node.x, ctx)
            if x.is_const:
                return C(None if x.const is None else 1.0 - x.const)
            return V(f"1 - {paren(x.q)}", x.level)
        if isinstance(node, Binary) and node.op in ("and", "or"):
            a, b = self.bool_num(node.a, ctx), self.bool_num(node.b, ctx)
            if a.is_const or b.is_const:
                k, other = (a, b) if a.is_const else (b, a)
                if k.const is None:
                    if other.is_const:
                        return C(kleene(node.op, a.const, b.const))
                    # unknown and x / unknown or x: pdwatch keeps x's false / true; a line is skipped here
                    return C(None)
                if node.op == "and":
                    return other if k.const else C(0.0)
                return C(1.0) if k.const else other
            if node.op == "and":
                return self.join(a, "*", b, ctx)
            s = self.join(a, "+", b, ctx)
            return V(f"clamp_max({s.q}, 1)", s.level)
        if isinstance(node, Binary) and node.op in _INVERSE:
            if _is_role(node.a) or _is_role(node.b):
                c = self.cond(node, ctx)
                return C(None if c.const is None else float(c.const)) if c.is_const else \
                    V(f"(0 * {self.universe(c.level, ctx).q} + 1 and {paren(c.q)}) or "
                      f"0 * {self.universe(c.level, ctx).q}", c.level)
            a, b = self.num(node.a, ctx), self.num(node.b, ctx)
            if a.is_const and b.is_const:
                return C(_compare(node.op, a.const, b.const))
            if a.is_const and a.const is None or b.is_const and b.const is None:
                return C(None)
            if a.is_const or b.is_const:
                left = number(float(a.const)) if a.is_const else paren(a.q)
                right = number(float(b.const)) if b.is_const else paren(b.q)
                return V(f"{left} {node.op} bool {right}", b.level if a.is_const else a.level)
            return self.join(a, node.op, b, ctx, bool_=True)
        if node.type == BOOL:
            c = self.cond(node, ctx)
            if c.is_const:
                return C(None if c.const is None else float(c.const))
            u = self.universe(c.level, ctx)
            return V(f"((0 * {u.q} + 1) and {paren(c.q)}) or 0 * {u.q}", c.level)
        return self.num(node, ctx)

    # -- conditions (filters) ----------------------------------------------------------------------------
    def cond(self, node: Node, ctx: Ctx) -> V:
        """An instance-level condition: a const (True/False/None) or a vector of the instances where it holds."""
        if isinstance(node, Lit):
            return C(bool(node.value))
        if isinstance(node, Unary) and node.op == "not":
            return self.cond(_negate(node.x), ctx)
        if isinstance(node, Binary) and node.op in ("and", "or"):
            a, b = self.cond(node.a, ctx), self.cond(node.b, ctx)
            if a.is_const and b.is_const:
                return C(kleene(node.op, a.const, b.const))
            if a.is_const or b.is_const:
                k, other = (a, b) if a.is_const else (b, a)
                if node.op == "and":
                    return other if k.const is True else C(False if k.const is False else None)
                return other if k.const is not True else C(True)  # false/unknown or x: where x holds
            if node.op == "and":
                if a.level == b.level:
                    return V(f"{paren(a.q)} and {paren(b.q)}", a.level)
                fine, coarse = (a, b) if RANK[a.level] > RANK[b.level] else (b, a)
                return V(f"{paren(fine.q)} and on({label_list(self.o.labels(coarse.level))}) {paren(coarse.q)}",
                         fine.level)
            level = a.level if RANK[a.level] >= RANK[b.level] else b.level
            return V(f"{paren(self.spread(a, level, ctx).q)} or {paren(self.spread(b, level, ctx).q)}", level)
        if isinstance(node, Binary) and node.op in _INVERSE:
            if _is_role(node.a) or _is_role(node.b):
                return self.role_cond(node, ctx)
            a, b = self.num(node.a, ctx), self.num(node.b, ctx)
            if a.is_const and b.is_const:
                return C(_compare(node.op, a.const, b.const))
            if a.is_const and a.const is None or b.is_const and b.const is None:
                return C(None)
            if b.is_const:
                return V(f"{paren(a.q)} {node.op} {number(float(b.const))}", a.level)
            if a.is_const:
                return V(f"{number(float(a.const))} {node.op} {paren(b.q)}", b.level)
            return self.join(a, node.op, b, ctx)
        if isinstance(node, Call):
            return self.bool_call(node, ctx)
        if isinstance(node, _Not):
            x = self.cond(node.x, ctx)
            if x.is_const:
                return C(None if x.const is None else not x.const)
            u = self.universe(x.level, ctx)
            return V(f"{u.q} unless {paren(x.q)}", x.level)
        raise Untranslatable(f"the condition {node.key}")

    def spread(self, c: V, level: str, ctx: Ctx) -> V:
        """A condition of a coarser level, as the instances of ``level`` it holds for."""
        if c.level == level:
            return c
        u = self.universe(level, ctx)
        return V(f"{u.q} and on({label_list(self.o.labels(c.level))}) {paren(c.q)}", level)

    def role_cond(self, node: Binary, ctx: Ctx) -> V:
        role_side, other = (node.a, node.b) if _is_role(node.a) else (node.b, node.a)
        if not (isinstance(other, Lit) and other.type == STR) or node.op not in ("==", "!="):
            raise Untranslatable(f"{node.key}: role() compares with a role name only")
        level = "endpoint" if ctx.scope == "deployment" else ctx.scope
        return self.universe(level, ctx, role=str(other.value), op="=" if node.op == "==" else "!=")

    def bool_call(self, node: Call, ctx: Ctx) -> V:
        name = node.name
        if name == "has_fact":
            fact = node.args[0].value  # type: ignore[attr-defined]
            if fact not in NUMERIC_FACTS:
                return C(False)
            v = self.fact(fact, ctx)
            return v
        if name in ("peer_any", "peer_all"):
            role = node.args[0].value  # type: ignore[attr-defined]
            if name == "peer_all":
                raise Untranslatable("peer_all()")
            inner = self.cond(node.args[1], replace(ctx, peer=True, scope="endpoint"))
            if inner.is_const:
                return C(inner.const)
            inner = self.spread(inner, "endpoint", replace(ctx, peer=True))
            u = self.universe("endpoint", replace(ctx, peer=True), role=None if role == "*" else role)
            return V(f"group by ({label_list(self.o.deployment_labels)}) ({paren(inner.q)} and {u.q})", "deployment")
        if name == "before":
            return C(None)  # the order of log lines: none here
        if node.type == BOOL or name in ("coalesce",):
            v = self.num(node, ctx)
            if v.is_const:
                return C(None if v.const is None else bool(v.const))
            return V(f"{paren(v.q)} == 1", v.level)
        raise Untranslatable(f"{name}() as a condition")

    # -- calls -------------------------------------------------------------------------------------------
    def call(self, node: Call, ctx: Ctx) -> V:
        name = node.name
        fn = node.fn
        if fn is not None and fn.kind == "window" and name not in ("count_events", "count_matching", "top_reason"):
            return self.window(node, ctx)
        if name in ("count_events", "count_matching"):
            return C(0.0)  # log events: Prometheus has none
        if name == "top_reason":
            return C(None)  # the same: no log event, no reason
        if name == "episode":
            # An alert's annotations are evaluated anew at each evaluation, with no memory of
            # when it began: a window of greatest(episode(), W) is W there.
            return C(0.0)
        if name == "fact":
            fact = node.args[0].value  # type: ignore[attr-defined]
            if fact == "stats_interval_s":
                return C(self.o.interval_s)
            if fact not in NUMERIC_FACTS:
                return C(None)  # a string or yes/no the start-up lines say: unknown to Prometheus
            return self.fact(fact, ctx)
        if name == "has_fact":
            return self._has_fact_num(node, ctx)
        if name == "interval":
            return C(self.o.interval_s)
        if name == "max_capture_size":
            level = "engine" if ctx.scope == "engine" or ctx.rows else "endpoint"
            mcs = self.fact("max_capture_size", replace(ctx, scope=level) if level == "endpoint" else ctx)
            seqs = self.fact("max_num_seqs", replace(ctx, scope=level) if level == "endpoint" else ctx)
            return V(f"{paren(mcs.q)} or clamp_max(2 * {paren(seqs.q)}, 512)", mcs.level)
        if name == "engines":
            u = self.leaf(ENGINES, "engine", replace(ctx, scope="endpoint") if not ctx.peer else ctx)
            return V(f"count by ({label_list(self.o.endpoint_labels)}) ({u.q})", "endpoint")
        if name in ("abs",):
            x = self.num(node.args[0], ctx)
            return C(None if x.const is None else abs(x.const)) if x.is_const else V(f"abs({x.q})", x.level)
        if name in ("least", "greatest"):
            a, b = self.num(node.args[0], ctx), self.num(node.args[1], ctx)
            pick = min if name == "least" else max
            if a.is_const and b.is_const:
                return C(None if a.const is None or b.const is None else pick(float(a.const), float(b.const)))
            if a.is_const or b.is_const:
                k, v = (a, b) if a.is_const else (b, a)
                if k.const is None:
                    return C(None)
                fn_name = "clamp_max" if name == "least" else "clamp_min"
                return V(f"{fn_name}({v.q}, {number(float(k.const))})", v.level)
            level = a.level if RANK[a.level] >= RANK[b.level] else b.level
            a, b = self.lift(a, level, ctx), self.lift(b, level, ctx)
            op = "<=" if name == "least" else ">="
            return V(f"({paren(a.q)} {op} {paren(b.q)}) or {paren(b.q)}", level)
        if name == "coalesce":
            a, b = self.num(node.args[0], ctx), self.num(node.args[1], ctx)
            if a.is_const:
                return a if a.const is not None else b
            if b.is_const and b.const is None:
                return a
            if b.is_const and isinstance(b.const, str):
                raise Untranslatable("coalesce() with a text default outside a template")
            b = self.lift(b, a.level, ctx) if RANK[b.level] <= RANK[a.level] else b
            a = self.lift(a, b.level, ctx) if RANK[a.level] < RANK[b.level] else a
            return V(f"{paren(a.q)} or {paren(b.q)}", a.level)
        if name.startswith("peer_"):
            return self.peer(node, ctx)
        if name in ("role", "endpoint", "engine"):
            raise Untranslatable(f"{name}() outside a comparison with a name")
        if name in ("since_last", "since_first"):
            raise Untranslatable(f"{name}() (the time since a stats line)")
        if name == "since_event":
            raise Untranslatable("since_event() (the time since a log event)")
        raise Untranslatable(f"{name}()")

    def _has_fact_num(self, node: Call, ctx: Ctx) -> V:
        c = self.bool_call(node, ctx)
        if c.is_const:
            return C(float(bool(c.const)))
        u = self.universe(c.level, ctx)
        return V(f"((0 * {u.q} + 1) and {paren(c.q)}) or 0 * {u.q}", c.level)

    def fact(self, name: str, ctx: Ctx) -> V:
        """A numeric fact: per engine (joined from ``pdwatch_fact``), per endpoint, or the deployment's."""
        self.facts_used.add(name)
        if name in DEPLOYMENT_FACTS:
            pins = [f"{label}=%[{4 + i}]q" for i, label in enumerate(self.o.deployment_labels)] if ctx.pin else []
            inside = ",".join([f'fact="{name}"', 'job=""', 'instance=""', *pins])
            return V(f"max by ({label_list(self.o.deployment_labels)}) ({FACT_SERIES}{{{inside}}})", "deployment")
        series = self.leaf(f"pdwatch:fact:{name}", "engine", ctx if ctx.scope == "engine" or ctx.rows else
                           replace(ctx, scope="endpoint"))
        if ctx.scope == "engine" or ctx.rows:
            return series
        return V(f"max by ({label_list(self.o.endpoint_labels)}) ({series.q})", "endpoint")

    def peer(self, node: Call, ctx: Ctx) -> V:
        how = node.name.removeprefix("peer_")
        role = node.args[0].value  # type: ignore[attr-defined]
        pctx = replace(ctx, peer=True, scope="endpoint", rows=False)
        u = self.universe("endpoint", pctx, role=None if role == "*" else role)
        if how == "count":
            return V(f"count by ({label_list(self.o.deployment_labels)}) ({u.q})", "deployment")
        if how in ("any", "all"):
            return self._has_fact_num(node, ctx)  # as 0/1 (peer_any); peer_all is refused there
        x = self.num(node.args[1], pctx)
        if x.is_const:
            if x.const is None:
                return C(None)
            x = self.lift(x, "endpoint", pctx)
        x = self.lift(x, "endpoint", pctx) if x.level == "deployment" else x
        if x.level == "engine":
            raise Untranslatable("a per-engine value inside peer_*()")
        agg = {"max": "max", "min": "min", "avg": "avg", "sum": "sum"}[how]
        return V(f"{agg} by ({label_list(self.o.deployment_labels)}) ({paren(x.q)} and {u.q})", "deployment")

    # -- windows -----------------------------------------------------------------------------------------
    def window_seconds(self, node: Node, ctx: Ctx) -> float:
        if isinstance(node, Samples):
            return node.count * self.o.interval_s
        v = self.num(node, replace(ctx, rows=False))
        if not v.is_const or v.const is None:
            raise Untranslatable(f"a window ({node.key}) that is not a fixed length here")
        return float(v.const)

    def window(self, node: Call, ctx: Ctx) -> V:
        if ctx.rows:
            raise Untranslatable(f"{node.name}() inside another window's per-line expression")
        name = node.name
        if name == "samples":
            seconds = self.window_seconds(node.args[0], ctx)
            series = self.leaf("pdwatch:running", "engine", replace(ctx, rows=True))
            per = f"count_over_time({series.q}[{fmt_compact_duration(seconds - 0.001)}])"
            return self._pool(per, "sum", ctx, "engine")
        if name == "last" and len(node.args) == 1:
            seconds = 3 * self.o.interval_s  # pdwatch: the newest line of the last 3 intervals
        else:
            seconds = self.window_seconds(node.args[-1], ctx)
        rctx = replace(ctx, rows=True)
        x = self.bool_num(node.args[0], rctx) if name == "fraction" else self.num(node.args[0], rctx)
        if x.is_const:
            if x.const is None:
                return C(None)
            if name in ("avg", "min", "max", "last", "first", "p50", "p90", "p99", "quantile"):
                return x
            raise Untranslatable(f"{name}() of a constant")
        rng = fmt_compact_duration(seconds - 0.001)  # pdwatch's window is (now - W, now]
        sel = f"{x.plain}[{rng}]" if x.plain else f"({x.q})[{rng}:{fmt_compact_duration(self.o.interval_s)}]"
        level = x.level
        if name in ("avg", "fraction"):
            return self._mean(sel, ctx, level)
        if name == "sum":
            return self._pool(f"sum_over_time({sel})", "sum", ctx, level)
        if name in ("max", "min"):
            return self._pool(f"{name}_over_time({sel})", name, ctx, level)
        if name in ("p50", "p90", "p99", "quantile"):
            q = {"p50": 0.5, "p90": 0.9, "p99": 0.99}.get(name)
            if q is None:
                q = float(node.args[1].value)  # type: ignore[attr-defined]
            self._approx(ctx, level, f"{name}() pooled over the engines is the {q:g}-quantile of their quantiles")
            return self._pool(f"quantile_over_time({number(q)}, {sel})", f"quantile({number(q)},", ctx, level)
        if name == "last":
            self._approx(ctx, level, "last() over the engines is their mean")
            return self._pool(f"last_over_time({sel})", "avg", ctx, level)
        if name == "slope":
            self._approx(ctx, level, "slope() over the engines is the mean of their slopes")
            return self._pool(f"deriv({sel})", "avg", ctx, level)
        if name == "stddev":
            self._approx(ctx, level, "stddev() over the engines is the mean of theirs")
            return self._pool(f"stddev_over_time({sel})", "avg", ctx, level)
        raise Untranslatable(f"{name}()")

    def _approx(self, ctx: Ctx, level: str, note: str) -> None:
        if RANK[level] > RANK[ctx.scope] and note not in self.notes:
            self.notes.append(note)

    def _pool(self, per_series: str, how: str, ctx: Ctx, level: str) -> V:
        """A per-engine reduction, as the instance's (an endpoint pools its engines)."""
        if RANK[level] <= RANK[ctx.scope]:
            return V(per_series, level)
        by = label_list(self.o.labels(ctx.scope))
        if how.startswith("quantile("):
            return V(f"quantile by ({by}) ({how.removeprefix('quantile(').rstrip(',')}, {per_series})", ctx.scope)
        return V(f"{how} by ({by}) ({per_series})", ctx.scope)

    def _mean(self, sel: str, ctx: Ctx, level: str) -> V:
        if RANK[level] <= RANK[ctx.scope]:
            return V(f"avg_over_time({sel})", level)
        by = label_list(self.o.labels(ctx.scope))
        return V(f"sum by ({by}) (sum_over_time({sel})) / sum by ({by}) (count_over_time({sel}))", ctx.scope)


# -- helpers ----------------------------------------------------------------------------------------------
def paren(q: str) -> str:
    """``q`` parenthesised unless it is one term already."""
    depth = 0
    for i, ch in enumerate(q):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and (ch == " " and i and q[i - 1] != "," or ch in "+-*/^%<>=!" and i):
            return f"({q})"
    return q


def _is_role(node: Node) -> bool:
    return isinstance(node, Call) and node.name == "role"


def _negate(node: Node) -> Node:
    """``not node`` pushed down to the comparisons (De Morgan), so an unknown stays unknown."""
    if isinstance(node, Unary) and node.op == "not":
        return node.x
    if isinstance(node, Binary) and node.op in ("and", "or"):
        out = Binary("or" if node.op == "and" else "and", _negate(node.a), _negate(node.b), node.col)
        out.type = BOOL
        return out
    if isinstance(node, Binary) and node.op in _INVERSE:
        out = Binary(_INVERSE[node.op], node.a, node.b, node.col)
        out.type = BOOL
        return out
    if isinstance(node, Lit):
        return Lit(0.0 if node.value else 1.0, BOOL, "false" if node.value else "true", node.col)
    return _Not(node)


class _Not(Node):
    """``not f()`` of a boolean function that cannot be pushed down: the instances it does not hold for."""

    type = BOOL

    def __init__(self, x: Node) -> None:
        self.x, self.col, self.key = x, x.col, f"(not {x.key})"


def kleene(op: str, a: Any, b: Any) -> Any:
    """``a and b`` / ``a or b`` of two constants, in pdwatch's three-valued logic (None is unknown)."""
    a = None if a is None else bool(a)
    b = None if b is None else bool(b)
    if op == "and":
        if a is False or b is False:
            return False
        return None if a is None or b is None else True
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


def _compare(op: str, a: Any, b: Any) -> Any:
    """``a op b`` of two constants (numbers or strings); None when it is unknown."""
    if a is None or b is None:
        return None
    if isinstance(a, str) or isinstance(b, str):
        if op not in ("==", "!="):
            return None
        return (a == b) == (op == "==")
    x, y = float(a), float(b)
    return {"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y, "==": x == y, "!=": x != y}[op]
