"""pdwatch's rules as a Prometheus rule file: recording rules for the stats fields, alerts for the findings.

``export(rules, options) -> Export``: the YAML text of one rule group (``pdwatch``), and the
rules left out with the reason. ``pdwatch rules export --format prometheus`` prints it.

**The stats lines.** Recording rules make pdwatch's per-stats-line fields from the series
pdwatch reads off a ``/metrics`` page (the names of ``pdwatch.parsers.exposition``, the one
table), one series per engine labelled ``job``, ``instance``, ``role``, ``engine``:
``pdwatch:running``, ``pdwatch:waiting``, ``pdwatch:kv_usage_pct`` (100 x the fraction),
``pdwatch:prompt_tps`` / ``pdwatch:gen_tps`` (``irate`` of the token counters: the rate
between the last two scrapes, as pdwatch computes it per scrape), ``pdwatch:preemptions``
(their increase), ``pdwatch:prefix_hit_pct`` and ``pdwatch:external_prefix_hit_pct`` (the cache's hits over
its queries in that interval), and a Dynamo frontend's fields per endpoint. The group is evaluated
every ``interval`` (``--interval``, which must be the scrape interval: "N samples" are N
scrapes), so each evaluation is one stats line.

**The rules.** Each built-in rule's ``expr``, ``when`` and ``value`` are translated node by
node; pdwatch's semantics map onto PromQL as follows.

- A window of ``N samples`` is ``N x interval`` back, left-open as pdwatch's: ``[W - 1ms]``
  (Prometheus 2.x range selectors include their start). A window function over a plain
  field is ``<fn>_over_time(pdwatch:field[W])``; over a per-line expression, a subquery at
  the interval (``(expr)[W:interval]``). At endpoint scope a window pools the lines of all
  engines: sums and counts are added over the engines (``avg``, ``fraction``, ``sum``,
  ``samples`` are exact), ``max``/``min`` taken over them; ``p50``/``quantile``, ``slope``,
  ``last``, ``stddev`` are the engines' values combined (exact for one engine).
- A per-line condition is 0/1 (``> bool``; ``and`` is a product, ``or`` a sum capped at 1,
  ``not`` 1 - x), so ``fraction`` is an average. An instance-level condition is a filter:
  ``and``/``or``/``unless`` on label sets; ``not`` is pushed into the comparisons (``not a < b``
  is ``a >= b``), which keeps pdwatch's rule that an unknown never fires.
- ``role() == "decode"`` selects by the ``role`` label (``unknown``: no label); a Dynamo
  frontend (its ``dynamo_frontend_`` series) is role ``frontend``. ``peer_max("decode", x)``
  is ``max`` of x over the endpoints with that label (over the whole server, or per
  ``--deployment-label``); ``engines()`` counts an endpoint's engines.
- Facts are not metrics: ``fact("max_num_seqs")`` reads the series
  ``pdwatch_fact{fact="max_num_seqs", job=..., instance=...}`` (``job``/``instance`` may be
  left out: a fact for a job, or for all). ``--fact NAME[{job="...",instance="..."}]=VALUE``
  writes those as recording rules; a user may also supply them. A rule that needs a fact
  fires only where it is given (pdwatch's "unknown"); ``coalesce`` gives the default.
  ``max_capture_size()`` is the fact, else vLLM's default ``min(2 x max_num_seqs, 512)``.
- Log events (``count_events``) are none in Prometheus: 0. A rule whose condition is then
  never true (it reads only log events or start-up facts the logs have) is left out, and
  said so; ``stats_missing`` is written by hand from ``up`` and absent series instead.
- ``keep_firing_for`` is left out (Prometheus 2.42, Debian's, has none; 2.47 added it).

**Annotations.** ``summary`` and ``description`` (the explanation, then "Fix:" and the
recommendation) are pdwatch's templates: ``{{ endpoint }}`` is ``$labels.instance``,
``{{ value }}`` ``$value`` (the alert's value is the rule's ``value``), and any other hole
is the same expression as an instant query for the alert's own labels (Prometheus's
``query`` template function), or ``unknown``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

import yaml

from pdwatch.parsers import dynamo_metrics as dynamo
from pdwatch.parsers.exposition import (GENERATION_TOKENS, KV_USAGE, HIT_RATES, PREEMPTIONS, PROMPT_TOKENS,
                                        PROMPT_TOKENS_BY_SOURCE, RUNNING, WAITING)
from pdwatch.rules import Rule
from pdwatch.rules.nodes import BOOL, STR, Binary, Call, Field, Lit, Node, Samples, Unary
from pdwatch.rules.template import Hole, Template
from pdwatch.sources.promql import Matcher, quote
from pdwatch.units import fmt_compact_duration

GROUP = "pdwatch"
FACT_SERIES = "pdwatch_fact"
ENGINES = "pdwatch:engines"  # one series per engine (value 1): the instances of engine scope
ENDPOINTS = "pdwatch:endpoints"  # one per endpoint, a Dynamo frontend's with role="frontend"
CONDITION = "pdwatch:condition:"  # + finding: the instances where a rule's expr and when hold
NUMERIC_FACTS = frozenset({
    "max_num_seqs", "max_num_batched_tokens", "max_capture_size", "num_speculative_tokens", "kv_capacity_tokens",
    "max_concurrency", "max_concurrency_tokens", "planned_concurrency", "api_server_count", "block_size",
    "tensor_parallel_size", "data_parallel_size", "concurrency", "isl", "osl"})
DEPLOYMENT_FACTS = frozenset({"concurrency", "isl", "osl"})
RANK = {"const": -1, "deployment": 0, "endpoint": 1, "engine": 2}
_INVERSE = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}


class Untranslatable(Exception):
    """A part of a rule PromQL cannot say; the message is the reason, for stderr."""


# -- options and the fields --------------------------------------------------------------------------
@dataclass(frozen=True)
class FactValue:
    name: str
    value: float
    job: str | None = None
    instance: str | None = None


@dataclass(frozen=True)
class ExportOptions:
    interval_s: float = 10.0  # the scrape interval = the group's evaluation interval = one stats line
    facts: tuple[FactValue, ...] = ()
    match: tuple[Matcher, ...] = ()  # the vLLM targets (stats_missing: up == 1 without a vllm: series)
    deployment_labels: tuple[str, ...] = ()  # peers are the endpoints sharing these labels

    @property
    def endpoint_labels(self) -> tuple[str, ...]:
        return (*self.deployment_labels, "job", "instance", "role")

    @property
    def engine_labels(self) -> tuple[str, ...]:
        return (*self.endpoint_labels, "engine")

    def labels(self, level: str) -> tuple[str, ...]:
        return {"deployment": self.deployment_labels, "endpoint": self.endpoint_labels,
                "engine": self.engine_labels}[level]


def _by(labels: Iterable[str]) -> str:
    return ", ".join(labels)


def field_rules(o: ExportOptions) -> list[tuple[str, str, str]]:
    """(record name, PromQL, level) of each stats field pdwatch maps from /metrics, and the universes."""
    e, p = _by(o.engine_labels), _by(o.endpoint_labels)
    r = fmt_compact_duration(3 * o.interval_s)  # irate's range: the last two scrapes, one missed scrape allowed
    kv_now, kv_old = KV_USAGE[:2]  # vLLM's; a Dynamo worker's own gauge is read by the log path only
    out = [
        (ENGINES, f"group by ({e}) ({RUNNING})", "engine"),
        (ENDPOINTS, f'group by ({p}) ({ENGINES}) or label_replace(group by ({p}) ({dynamo.INFLIGHT}), '
                    f'"role", "frontend", "role", "")', "endpoint"),
        ("pdwatch:running", f"sum by ({e}) ({RUNNING})", "engine"),
        ("pdwatch:waiting", f"sum by ({e}) ({WAITING})", "engine"),
        ("pdwatch:kv_usage_pct", f"100 * sum by ({e}) ({kv_now}) or 100 * sum by ({e}) ({kv_old})", "engine"),
        # vLLM >= 0.16: the log's prompt throughput counts locally computed tokens only
        ("pdwatch:prompt_tps", f'sum by ({e}) (irate({PROMPT_TOKENS_BY_SOURCE}{{source="local_compute"}}[{r}])) '
                               f"or sum by ({e}) (irate({PROMPT_TOKENS}[{r}]))", "engine"),
        ("pdwatch:gen_tps", f"sum by ({e}) (irate({GENERATION_TOKENS}[{r}]))", "engine"),
        ("pdwatch:preemptions", f"sum by ({e}) (clamp_min(idelta({PREEMPTIONS}[{r}]), 0))", "engine"),
    ]
    # the interval's hits over its queries (tokens); none when nothing was looked up (0/0 is NaN)
    for key, pairs in HIT_RATES.items():
        out.append((f"pdwatch:{key}", " or ".join(
            f"(100 * sum by ({e}) (irate({hits}[{r}])) / sum by ({e}) (irate({queries}[{r}])) > -Inf)"
            for queries, hits in pairs), "engine"))
    # A Dynamo frontend's page: role "frontend" unless its target says another (as pdwatch reads such a page).
    def frontend(q: str) -> str:
        return f'label_replace({q}, "role", "frontend", "role", "")'

    for histogram, name in dynamo.HISTOGRAMS.items():  # mean over the scrape interval; none when nothing ended
        out.append((f"pdwatch:{name}", frontend(f"(sum by ({p}) (irate({histogram}_sum[{r}])) / sum by ({p}) "
                                                f"(irate({histogram}_count[{r}]))) > -Inf"), "endpoint"))
    out.append(("pdwatch:request_rate", frontend(f"sum by ({p}) (irate({dynamo.REQUESTS}[{r}]))"), "endpoint"))
    for gauge, name in dynamo.GAUGES.items():
        out.append((f"pdwatch:{name}", frontend(f"sum by ({p}) ({gauge})"), "endpoint"))
    return out


def _field_levels(o: ExportOptions) -> dict[str, str]:
    return {name.removeprefix("pdwatch:"): level for name, _, level in field_rules(o)
            if name not in (ENGINES, ENDPOINTS)}


def number(x: float) -> str:
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return repr(float(x))


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
    def __init__(self, options: ExportOptions) -> None:
        self.o = options
        self.fields = _field_levels(options)
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
        return V(f"group by ({_by(self.o.deployment_labels)}) ({endpoints.q})", "deployment")

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
        return V(f"(0 * {u.q} + on({_by(self.o.labels(v.level))}) group_left {_paren(v.q)})", level)

    def join(self, a: V, op: str, b: V, ctx: Ctx, *, bool_: bool = False) -> V:
        """``a op b`` for two vectors, matched on the coarser one's labels."""
        mod = " bool" if bool_ else ""
        if a.level == b.level:
            return V(f"{_paren(a.q)} {op}{mod} {_paren(b.q)}", a.level)
        if RANK[a.level] > RANK[b.level]:
            return V(f"{_paren(a.q)} {op}{mod} on({_by(self.o.labels(b.level))}) group_left {_paren(b.q)}", a.level)
        return V(f"{_paren(a.q)} {op}{mod} on({_by(self.o.labels(a.level))}) group_right {_paren(b.q)}", b.level)

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
            return C(None if x.const is None else -x.const) if x.is_const else V(f"-{_paren(x.q)}", x.level)
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
            left = number(float(a.const)) if a.is_const else _paren(a.q)
            right = number(float(b.const)) if b.is_const else _paren(b.q)
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
            return V(f"1 - {_paren(x.q)}", x.level)
        if isinstance(node, Binary) and node.op in ("and", "or"):
            a, b = self.bool_num(node.a, ctx), self.bool_num(node.b, ctx)
            if a.is_const or b.is_const:
                k, other = (a, b) if a.is_const else (b, a)
                if k.const is None:
                    if other.is_const:
                        return C(_kleene(node.op, a.const, b.const))
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
                    V(f"(0 * {self.universe(c.level, ctx).q} + 1 and {_paren(c.q)}) or "
                      f"0 * {self.universe(c.level, ctx).q}", c.level)
            a, b = self.num(node.a, ctx), self.num(node.b, ctx)
            if a.is_const and b.is_const:
                return C(_compare(node.op, a.const, b.const))
            if a.is_const and a.const is None or b.is_const and b.const is None:
                return C(None)
            if a.is_const or b.is_const:
                left = number(float(a.const)) if a.is_const else _paren(a.q)
                right = number(float(b.const)) if b.is_const else _paren(b.q)
                return V(f"{left} {node.op} bool {right}", b.level if a.is_const else a.level)
            return self.join(a, node.op, b, ctx, bool_=True)
        if node.type == BOOL:
            c = self.cond(node, ctx)
            if c.is_const:
                return C(None if c.const is None else float(c.const))
            u = self.universe(c.level, ctx)
            return V(f"((0 * {u.q} + 1) and {_paren(c.q)}) or 0 * {u.q}", c.level)
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
                return C(_kleene(node.op, a.const, b.const))
            if a.is_const or b.is_const:
                k, other = (a, b) if a.is_const else (b, a)
                if node.op == "and":
                    return other if k.const is True else C(False if k.const is False else None)
                return other if k.const is not True else C(True)  # false/unknown or x: where x holds
            if node.op == "and":
                if a.level == b.level:
                    return V(f"{_paren(a.q)} and {_paren(b.q)}", a.level)
                fine, coarse = (a, b) if RANK[a.level] > RANK[b.level] else (b, a)
                return V(f"{_paren(fine.q)} and on({_by(self.o.labels(coarse.level))}) {_paren(coarse.q)}",
                         fine.level)
            level = a.level if RANK[a.level] >= RANK[b.level] else b.level
            return V(f"{_paren(self.spread(a, level, ctx).q)} or {_paren(self.spread(b, level, ctx).q)}", level)
        if isinstance(node, Binary) and node.op in _INVERSE:
            if _is_role(node.a) or _is_role(node.b):
                return self.role_cond(node, ctx)
            a, b = self.num(node.a, ctx), self.num(node.b, ctx)
            if a.is_const and b.is_const:
                return C(_compare(node.op, a.const, b.const))
            if a.is_const and a.const is None or b.is_const and b.const is None:
                return C(None)
            if b.is_const:
                return V(f"{_paren(a.q)} {node.op} {number(float(b.const))}", a.level)
            if a.is_const:
                return V(f"{number(float(a.const))} {node.op} {_paren(b.q)}", b.level)
            return self.join(a, node.op, b, ctx)
        if isinstance(node, Call):
            return self.bool_call(node, ctx)
        if isinstance(node, _Not):
            x = self.cond(node.x, ctx)
            if x.is_const:
                return C(None if x.const is None else not x.const)
            u = self.universe(x.level, ctx)
            return V(f"{u.q} unless {_paren(x.q)}", x.level)
        raise Untranslatable(f"the condition {node.key}")

    def spread(self, c: V, level: str, ctx: Ctx) -> V:
        """A condition of a coarser level, as the instances of ``level`` it holds for."""
        if c.level == level:
            return c
        u = self.universe(level, ctx)
        return V(f"{u.q} and on({_by(self.o.labels(c.level))}) {_paren(c.q)}", level)

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
            return V(f"group by ({_by(self.o.deployment_labels)}) ({_paren(inner.q)} and {u.q})", "deployment")
        if name == "before":
            return C(None)  # the order of log lines: none here
        if node.type == BOOL or name in ("coalesce",):
            v = self.num(node, ctx)
            if v.is_const:
                return C(None if v.const is None else bool(v.const))
            return V(f"{_paren(v.q)} == 1", v.level)
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
            return V(f"{_paren(mcs.q)} or clamp_max(2 * {_paren(seqs.q)}, 512)", mcs.level)
        if name == "engines":
            u = self.leaf(ENGINES, "engine", replace(ctx, scope="endpoint") if not ctx.peer else ctx)
            return V(f"count by ({_by(self.o.endpoint_labels)}) ({u.q})", "endpoint")
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
            return V(f"({_paren(a.q)} {op} {_paren(b.q)}) or {_paren(b.q)}", level)
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
            return V(f"{_paren(a.q)} or {_paren(b.q)}", a.level)
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
        return V(f"((0 * {u.q} + 1) and {_paren(c.q)}) or 0 * {u.q}", c.level)

    def fact(self, name: str, ctx: Ctx) -> V:
        """A numeric fact: per engine (joined from ``pdwatch_fact``), per endpoint, or the deployment's."""
        self.facts_used.add(name)
        if name in DEPLOYMENT_FACTS:
            pins = [f"{label}=%[{4 + i}]q" for i, label in enumerate(self.o.deployment_labels)] if ctx.pin else []
            inside = ",".join([f'fact="{name}"', 'job=""', 'instance=""', *pins])
            return V(f"max by ({_by(self.o.deployment_labels)}) ({FACT_SERIES}{{{inside}}})", "deployment")
        series = self.leaf(f"pdwatch:fact:{name}", "engine", ctx if ctx.scope == "engine" or ctx.rows else
                           replace(ctx, scope="endpoint"))
        if ctx.scope == "engine" or ctx.rows:
            return series
        return V(f"max by ({_by(self.o.endpoint_labels)}) ({series.q})", "endpoint")

    def peer(self, node: Call, ctx: Ctx) -> V:
        how = node.name.removeprefix("peer_")
        role = node.args[0].value  # type: ignore[attr-defined]
        pctx = replace(ctx, peer=True, scope="endpoint", rows=False)
        u = self.universe("endpoint", pctx, role=None if role == "*" else role)
        if how == "count":
            return V(f"count by ({_by(self.o.deployment_labels)}) ({u.q})", "deployment")
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
        return V(f"{agg} by ({_by(self.o.deployment_labels)}) ({_paren(x.q)} and {u.q})", "deployment")

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
        by = _by(self.o.labels(ctx.scope))
        if how.startswith("quantile("):
            return V(f"quantile by ({by}) ({how.removeprefix('quantile(').rstrip(',')}, {per_series})", ctx.scope)
        return V(f"{how} by ({by}) ({per_series})", ctx.scope)

    def _mean(self, sel: str, ctx: Ctx, level: str) -> V:
        if RANK[level] <= RANK[ctx.scope]:
            return V(f"avg_over_time({sel})", level)
        by = _by(self.o.labels(ctx.scope))
        return V(f"sum by ({by}) (sum_over_time({sel})) / sum by ({by}) (count_over_time({sel}))", ctx.scope)


# -- helpers ----------------------------------------------------------------------------------------------
def _paren(q: str) -> str:
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


def _kleene(op: str, a: Any, b: Any) -> Any:
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
    if a is None or b is None:
        return None
    if isinstance(a, str) or isinstance(b, str):
        if op not in ("==", "!="):
            return None
        return (a == b) == (op == "==")
    x, y = float(a), float(b)
    return {"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y, "==": x == y, "!=": x != y}[op]


# -- templates -------------------------------------------------------------------------------------------------
_PRINTF_ARGS = "$labels.job $labels.instance $labels.engine"


def annotation(template: Template, rule: Rule, tr: Translator) -> str:
    """A pdwatch template as a Prometheus annotation (Go text/template)."""
    scope = rule.scope
    out = []
    for part in template.parts:
        if isinstance(part, str):
            out.append(part.replace("{{", "{{ `{{` }}"))
            continue
        assert isinstance(part, Hole)
        out.append(_hole(part, rule, tr, scope))
    return " ".join("".join(out).split())


def _hole(part: Hole, rule: Rule, tr: Translator, scope: str) -> str:
    if part.name == "endpoint":
        return "{{ $labels.instance }}"
    if part.name == "engines":
        return "{{ $labels.engine }}" if scope == "engine" else "(its engines)"
    if part.name == "role":
        return '{{ with $labels.role }}{{ . }}{{ else }}unknown{{ end }}'
    if part.name == "value":
        return "{{ $value | humanize }}"
    if part.name == "finding":
        return rule.finding
    if part.name == "severity":
        return rule.severity
    assert part.expr is not None
    root = part.expr.root
    fallback = "unknown"
    if isinstance(root, Call) and root.name == "coalesce" and isinstance(root.args[1], Lit) and \
            root.args[1].type == STR:
        root, fallback = root.args[0], str(root.args[1].value)
    try:
        v = tr.num(root, Ctx(scope, pin=True))
    except Untranslatable:
        return fallback
    if v.is_const:
        if v.const is None:
            return fallback
        if isinstance(v.const, str):
            return v.const
        return _fmt_const(float(v.const))
    fmt = v.q.replace("%", "%%").replace("%%[", "%[")  # the pins are printf verbs, nothing else is
    deployment_args = " ".join(f"$labels.{label}" for label in tr.o.deployment_labels)
    args = f"{_PRINTF_ARGS} {deployment_args}".strip()
    show = "{{ . | first | value | humanize }}"
    if root.type == BOOL:
        show = '{{ if eq (. | first | value) 1.0 }}true{{ else }}false{{ end }}'
    if "%[" not in v.q:  # nothing of the alert's own (a peer's value): the query as it is
        return f"{{{{ with query {_go_string(v.q)} }}}}{show}{{{{ else }}}}{fallback}{{{{ end }}}}"
    return (f"{{{{ with printf {_go_string(fmt)} {args} | query }}}}{show}"
            f"{{{{ else }}}}{fallback}{{{{ end }}}}")


def _go_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _fmt_const(x: float) -> str:
    return str(int(x)) if x == int(x) and abs(x) < 1e15 else f"{x:.3g}"


# -- the rule file -------------------------------------------------------------------------------------------
@dataclass
class Export:
    text: str
    exported: list[str] = field(default_factory=list)
    left_out: list[tuple[str, str]] = field(default_factory=list)  # (rule, why)
    notes: list[tuple[str, str]] = field(default_factory=list)  # (rule, what is approximate)


class _Literal(str):
    """A block scalar in the YAML (long PromQL reads better on its own lines)."""


def _literal(dumper: yaml.SafeDumper, data: _Literal) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|" if "\n" in data else None)


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Literal, _literal)


def translate_rule(rule: Rule, o: ExportOptions) -> tuple[list[dict[str, Any]], list[str], set[str]]:
    """The recording rule of its condition and the alerting rule(s) of one pdwatch rule, the notes
    on what is approximate, the facts read.

    Raises ``Untranslatable`` when it cannot be said in PromQL, or would never fire there."""
    if rule.finding in OVERRIDES:
        return OVERRIDES[rule.finding](rule, o), [], set()
    tr = Translator(o)
    fields = set(rule.expr.fields()) | set(rule.when.fields() if rule.when else [])
    if not fields:
        kinds = rule.expr.event_kinds() + (rule.when.event_kinds() if rule.when else [])
        reads = f"log events ({', '.join(dict.fromkeys(kinds))})" if kinds else "start-up facts from the logs"
        raise Untranslatable(f"it reads no metric, only {reads}")
    ctx = Ctx(rule.scope)
    cond = tr.cond(rule.expr.root, ctx)
    when = tr.cond(rule.when.root, ctx) if rule.when is not None else C(True)
    both = _and(tr, cond, when, ctx)
    if both.is_const:
        if both.const is True:
            raise Untranslatable("its condition is always true without the logs")
        kinds = rule.expr.event_kinds()
        why = f"log events ({', '.join(kinds)})" if kinds else "start-up facts only the logs have"
        raise Untranslatable(f"without {why} its condition never holds")
    level = both.level
    if RANK[level] < RANK[rule.scope if rule.scope != "deployment" else "deployment"]:
        both = tr.spread(both, rule.scope, ctx)
    # The condition is recorded (pdwatch:condition:<finding>); the alert's value is the rule's value.
    condition = f"{CONDITION}{rule.finding}"
    records = [{"record": condition, "expr": _Literal(both.q)}]
    value = tr.num(rule.value.root, ctx)
    if value.is_const:
        expr = condition if value.const is None or isinstance(value.const, str) else \
            f"{condition} * 0 + {number(float(value.const))}"
    else:
        if RANK[value.level] < RANK[both.level]:
            value = tr.lift(value, both.level, ctx)
        expr = f"({_paren(value.q)} and {condition}) or {condition}"
    alerts: list[dict[str, Any]] = []
    variants = [(v, tr.cond(v.when.root, ctx)) for v in rule.variants]
    holding = [c for _, c in variants if not c.is_const or c.const is True]
    base_expr = expr
    for c in holding:  # the rule's own wording where no variant holds
        base_expr = f"({base_expr}) unless ({_spread_q(tr, c, both.level, ctx)})" if not c.is_const else ""
    if base_expr:
        alerts.append(_alert(rule, base_expr, rule.severity, rule.summary, rule.explanation, rule.recommendation,
                             o, tr))
    earlier: list[V] = []
    for variant, c in variants:
        if c.is_const and c.const is not True:
            continue  # never holds without the logs
        q = expr if c.is_const else f"({expr}) and ({_spread_q(tr, c, both.level, ctx)})"
        for e in earlier:
            q = f"({q}) unless ({_spread_q(tr, e, both.level, ctx)})"
        alerts.append(_alert(rule, q, variant.severity or rule.severity, variant.summary or rule.summary,
                             variant.explanation or rule.explanation, variant.recommendation or rule.recommendation,
                             o, tr))
        if not c.is_const:
            earlier.append(c)
    return records + alerts, list(dict.fromkeys(tr.notes)), tr.facts_used


def _spread_q(tr: Translator, c: V, level: str, ctx: Ctx) -> str:
    return tr.spread(c, level, ctx).q if RANK[c.level] < RANK[level] else c.q


def _and(tr: Translator, a: V, b: V, ctx: Ctx) -> V:
    if a.is_const and b.is_const:
        return C(_kleene("and", a.const, b.const))
    if a.is_const or b.is_const:
        k, other = (a, b) if a.is_const else (b, a)
        return other if k.const is True else C(False if k.const is False else None)
    if a.level == b.level:
        return V(f"{_paren(a.q)} and {_paren(b.q)}", a.level)
    fine, coarse = (a, b) if RANK[a.level] > RANK[b.level] else (b, a)
    return V(f"{_paren(fine.q)} and on({_by(tr.o.labels(coarse.level))}) {_paren(coarse.q)}", fine.level)


def _alert(rule: Rule, expr: str, severity: str, summary: Template, explanation: Template,
           recommendation: Template, o: ExportOptions, tr: Translator) -> dict[str, Any]:
    alert: dict[str, Any] = {"alert": rule.finding, "expr": _Literal(expr)}
    hold = rule.for_.hold_us(o.interval_s * 1e6) / 1e6
    if hold > 0:
        alert["for"] = fmt_compact_duration(hold)
    alert["labels"] = {"severity": severity, **{k: str(v) for k, v in sorted(rule.labels.items())}}
    description = annotation(explanation, rule, tr)
    fix = annotation(recommendation, rule, tr)
    alert["annotations"] = {"summary": annotation(summary, rule, tr),
                            "description": f"{description}\n\nFix: {fix}" if fix else description}
    if tr.facts_used:
        alert["annotations"]["facts"] = facts_note(sorted(tr.facts_used), o)
    return alert


def facts_note(names: list[str], o: ExportOptions) -> str:
    """Where the facts a rule reads come from: they are no metrics."""
    given = {}
    for f in o.facts:
        where = ",".join(f'{k}="{v}"' for k, v in (("job", f.job), ("instance", f.instance)) if v is not None)
        given.setdefault(f.name, []).append(f"{number(f.value)}" + (f" for {{{where}}}" if where else ""))
    parts = []
    for name in names:
        source = f"given at export: {', '.join(given[name])}" if name in given else "not given at export"
        parts.append(f"{name} ({source})")
    capture = " max_capture_size falls back to vLLM's default min(2 x max_num_seqs, 512)." \
        if "max_capture_size" in names else ""
    return (f"Start-up facts, not metrics: {'; '.join(parts)}. They are read from {FACT_SERIES}{{fact=\"NAME\"}} "
            f"series (per job or instance, or for all targets): pdwatch rules export --fact "
            f"'NAME{{job=\"...\"}}=VALUE' writes them; vLLM logs them at start-up (pdwatch report shows them). "
            f"Where a fact is missing the rule does not fire, as pdwatch does with an unknown fact.{capture}")


# -- rules written by hand ------------------------------------------------------------------------------------
def _stats_missing(rule: Rule, o: ExportOptions) -> list[dict[str, Any]]:
    """stats_missing reads the log (silence, "disabling stats logging"); its Prometheus form: an
    endpoint that served vLLM series in the last hour serves none now (its target is down, or its
    page lost them), or (with --match naming the vLLM targets) a target that is up but serves no
    vllm: series at all (--disable-log-stats on vLLM 0.32), while another endpoint does."""
    p, d, target = _by(o.endpoint_labels), _by(o.deployment_labels), _by(o.endpoint_labels[:-1])
    # silent for more than 3 stats intervals: no sample in the last 3 (a range includes its start)
    recent = f"group by ({p}) (present_over_time({RUNNING}[{fmt_compact_duration(3 * o.interval_s)}]))"
    clauses = [f"group by ({p}) (present_over_time({RUNNING}[1h])) unless on({target}) {recent}"]
    if o.match:
        up = "up{" + ",".join(m.promql() for m in o.match) + "}"
        clauses.append(f"group by ({p}) ({up} == 1) unless on({target}) {recent}")
    silent = " or ".join(f"({c})" for c in clauses)
    expr = f"({silent}) and on({d}) (count by ({d}) ({RUNNING}) > 0)"
    hold = rule.for_.hold_us(o.interval_s * 1e6) / 1e6
    checked = "its target is down or its page has no vllm: series" + (
        "" if o.match else " (after serving some in the last hour)")
    return [{
        "alert": rule.finding, "expr": _Literal(expr), "for": fmt_compact_duration(hold),
        "labels": {"severity": rule.severity, **{k: str(v) for k, v in sorted(rule.labels.items())}},
        "annotations": {
            "summary": "{{ $labels.instance }} ({{ with $labels.role }}{{ . }}{{ else }}unknown{{ end }}) serves "
                       "no vLLM stats series while other endpoints do: " + checked,
            "description": "Without vLLM's running, waiting, KV-usage and throughput series this endpoint is "
                           "invisible: no bottleneck rule can judge it and the deployment's TPS per GPU cannot "
                           "be computed. Its target is down (see up), or vLLM serves no vllm: series (vLLM 0.32 "
                           "started with --disable-log-stats serves none)."
                           "\n\nFix: Check that {{ $labels.instance }} is up and reachable from Prometheus; start "
                           "it without --disable-log-stats (and with --api-server-count 1 to keep its stats "
                           "lines in the log too).",
        },
    }]


OVERRIDES = {"stats_missing": _stats_missing}


def export(rules: list[Rule], options: ExportOptions) -> Export:
    out = Export("")
    alerts: list[dict[str, Any]] = []
    facts: set[str] = set()
    for rule in sorted(rules, key=lambda r: r.finding):
        try:
            made, notes, used = translate_rule(rule, options)
        except Untranslatable as exc:
            out.left_out.append((rule.finding, str(exc)))
            continue
        alerts += made
        facts |= used
        out.exported.append(rule.finding)
        out.notes += [(rule.finding, n) for n in notes]
    # A group is evaluated in order: what a rule reads is recorded before it.
    records: list[dict[str, Any]] = [{"record": name, "expr": _Literal(q)} for name, q, _ in field_rules(options)]
    for given in options.facts:  # --fact: the facts as series
        labels = {"fact": given.name}
        if given.job is not None:
            labels["job"] = given.job
        if given.instance is not None:
            labels["instance"] = given.instance
        records.append({"record": FACT_SERIES, "expr": f"vector({number(given.value)})", "labels": labels})
    for fact in sorted(facts - DEPLOYMENT_FACTS):
        records.append({"record": f"pdwatch:fact:{fact}", "expr": _Literal(_fact_join(fact, options))})
    group = {"name": GROUP, "interval": fmt_compact_duration(options.interval_s), "rules": records + alerts}
    head = ("# pdwatch's rules for Prometheus (pdwatch rules export --format prometheus).\n"
            f"# Evaluated every {fmt_compact_duration(options.interval_s)}: set it to the scrape interval of the vLLM "
            "targets (--interval), one stats line per scrape.\n"
            f"# Exported: {', '.join(out.exported) or 'none'}.\n"
            + "".join(f"# Left out: {r}: {why}.\n" for r, why in out.left_out)
            + f"# Facts (not metrics) are read from {FACT_SERIES}{{fact=\"NAME\", job=..., instance=...}}; "
              "--fact NAME=VALUE writes them.\n")
    body = yaml.dump({"groups": [group]}, Dumper=_Dumper, sort_keys=False, width=100, allow_unicode=True)
    out.text = head + body
    return out


def _fact_join(fact: str, o: ExportOptions) -> str:
    """``pdwatch_fact`` for each engine: its own instance's, else its job's, else everyone's."""
    e0 = f"0 * {ENGINES}"
    sel = f'{FACT_SERIES}{{fact="{fact}"'
    return (f'({e0} + on(job, instance) group_left {sel},instance!=""}})\n'
            f'or ({e0} + on(job) group_left {sel},instance="",job!=""}})\n'
            f'or ({e0} + on() group_left {sel},instance="",job=""}})')


def parse_fact(text: str) -> FactValue:
    """``--fact NAME=VALUE`` or ``--fact 'NAME{job="decode",instance="node7:8000"}=VALUE'``."""
    from pdwatch.sources.promql import SelectorError, parse_selector

    head, sep, value = text.rpartition("=")
    if not sep or not head:
        raise ValueError(f"--fact {text!r}: expected NAME=VALUE, e.g. max_capture_size=512")
    name, brace, rest = head.partition("{")
    name = name.strip()
    if name not in NUMERIC_FACTS:
        raise ValueError(f"--fact {text!r}: {name!r} is not a numeric fact a rule reads "
                         f"({', '.join(sorted(NUMERIC_FACTS))})")
    try:
        number_value = float(value)
    except ValueError:
        raise ValueError(f"--fact {text!r}: {value!r} is not a number") from None
    job = instance = None
    if brace:
        try:
            matchers = parse_selector("{" + rest)
        except SelectorError as exc:
            raise ValueError(f"--fact {text!r}: {exc}") from None
        for m in matchers:
            if m.op != "=" or m.name not in ("job", "instance"):
                raise ValueError(f"--fact {text!r}: only job=\"...\" and instance=\"...\" may be given")
        job = next((m.value for m in matchers if m.name == "job"), None)
        instance = next((m.value for m in matchers if m.name == "instance"), None)
        if instance is not None and job is None:
            raise ValueError(f"--fact {text!r}: an instance needs its job too")
    if name in DEPLOYMENT_FACTS and (job or instance):
        raise ValueError(f"--fact {text!r}: {name} is a deployment fact: give it without labels")
    return FactValue(name, number_value, job, instance)
