"""pdwatch's rule engine: findings from rules written as data (YAML).

Pure: pandas, numpy, PyYAML. Nothing here imports the rest of pdwatch (not even ``parsers``); the only
contract with them is ``rules.model`` (the views the store builds).

    from pdwatch.rules import load_rules, RuleEngine
    engine = RuleEngine(load_rules(["my_rules.yaml"]))
    states = engine.evaluate(view, now)      # every tick (live)
    engine.evaluate_series(view, times)      # a whole clock at once (report, replay): the same results
    report = engine.findings()               # firing periods, with evidence

The expression language is documented in ``rules.expr``, the file format in
``rules.spec`` and ``rules/builtin/README.md``.
"""

import importlib
from typing import TYPE_CHECKING, Any

# The names below, each from its module, loaded when first asked for: ``pdwatch.rules.model``
# alone (the names of the store's columns, which a report's workers fold events by) must not
# load the engine, numpy and pandas with it.
_WHERE = {
    "RuleEngine": "engine", "RuleFileError": "errors", "RuleProblem": "errors", "RuleSyntaxError": "errors",
    "Expr": "expr", "compile_expr": "expr", "Finding": "findings", "FindingState": "findings",
    "DEPLOYMENT_FACTS": "model", "ENDPOINT_FACTS": "model", "EVENT_KINDS": "model", "ROLES": "model",
    "STATS_FIELDS": "model", "DeploymentView": "model", "EndpointView": "model", "Span": "span",
    "parse_span": "span", "Rule": "spec", "builtin_paths": "spec", "load_rule_file": "spec", "load_rules": "spec",
    "parse_rules_text": "spec",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from .engine import RuleEngine
    from .errors import RuleFileError, RuleProblem, RuleSyntaxError
    from .expr import Expr, compile_expr
    from .findings import Finding, FindingState
    from .model import (DEPLOYMENT_FACTS, ENDPOINT_FACTS, EVENT_KINDS, ROLES, STATS_FIELDS,
                        DeploymentView, EndpointView)
    from .span import Span, parse_span
    from .spec import Rule, builtin_paths, load_rule_file, load_rules, parse_rules_text

__all__ = [
    "DEPLOYMENT_FACTS", "ENDPOINT_FACTS", "EVENT_KINDS", "ROLES", "STATS_FIELDS",
    "DeploymentView", "EndpointView", "Expr", "Finding", "FindingState", "Rule", "RuleEngine",
    "RuleFileError", "RuleProblem", "RuleSyntaxError", "Span", "builtin_paths", "compile_expr",
    "load_rule_file", "load_rules", "parse_rules_text", "parse_span",
]
