"""Small builders for rule tests: views from compact dict specs, and one-shot evaluation.

(No ``__init__.py`` in tests/rules on purpose: it would make this folder a package named
``rules`` and shadow the real one.)
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np

from pdwatch.rules import RuleEngine, compile_expr, parse_rules_text
from pdwatch.rules.casefile import DEFAULT_START, build_view
from pdwatch.rules.context import Evaluation
from pdwatch.rules.layout import build_layouts
from pdwatch.rules.model import DeploymentView
from pdwatch.rules.nodes import ev
from pdwatch.rules.values import broadcast, to_num

START = DEFAULT_START


def view(endpoints: list[dict[str, Any]], interval: str = "10s", facts: dict | None = None,
         start: datetime = START) -> DeploymentView:
    return build_view({"interval": interval, "start": start, "endpoints": endpoints, "facts": facts or {}})


def one(engines: dict, interval: str = "10s", name: str = "e", role: str = "decode", **facts) -> DeploymentView:
    """A deployment of one endpoint."""
    return view([{"name": name, "role": role, "engines": engines, "facts": facts}], interval)


def at(seconds: float, start: datetime = START) -> datetime:
    return start + timedelta(seconds=seconds)


def value(text: str, v: DeploymentView, t: float, scope: str = "endpoint") -> list[Any]:
    """The per-instance values of an expression at ``t`` seconds (NaN -> None)."""
    expr = compile_expr(text, scope)
    lays = build_layouts(v)
    evaluation = Evaluation(lays, int(at(t).timestamp() * 1e6))
    ctx = evaluation.ctx(scope)
    with np.errstate(all="ignore"):
        out = ev(expr.root, ctx)
    if isinstance(out, np.ndarray) and out.dtype == object:
        return list(out)
    arr = broadcast(to_num(out), ctx.n)
    return [None if x != x else float(x) for x in arr]


def rule_yaml(body: str) -> str:
    """One rule (YAML mapping lines, 4-space indented) wrapped in a group."""
    return "groups:\n- name: t\n  rules:\n  - " + body.strip().replace("\n", "\n    ") + "\n"


def engine_for(body: str) -> RuleEngine:
    return RuleEngine(parse_rules_text(rule_yaml(body), "t.yaml"))


def run(engine: RuleEngine, v: DeploymentView, times: list[float]) -> dict[float, list[tuple]]:
    """Evaluate at each time; {t: [(rule, state, endpoint, engines)]}."""
    out = {}
    for t in times:
        out[t] = [(s.rule, s.state, s.endpoint, s.engines) for s in engine.evaluate(v, at(t))]
    return out


UTC = timezone.utc
