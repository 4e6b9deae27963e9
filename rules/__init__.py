"""pdwatch's rule engine: findings from rules written as data (YAML).

Pure: pandas, numpy, PyYAML. Nothing here imports the rest of pdwatch (not even ``parsers``); the only
contract with them is ``rules.model`` (the views the store builds).

    from pdwatch.rules import load_rules, RuleEngine
    engine = RuleEngine(load_rules(["my_rules.yaml"]))
    states = engine.evaluate(view, now)      # every tick (live) or every step (replay)
    report = engine.findings()               # firing periods, with evidence

The expression language is documented in ``rules.expr``, the file format in
``rules.spec`` and ``rules/builtin/README.md``.
"""

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
