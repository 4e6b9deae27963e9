"""Rule variants: another severity and wording where a condition holds; same finding id."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from pdwatch.rules import RuleEngine, parse_rules_text
from pdwatch.rules.casefile import build_view
from pdwatch.rules.errors import RuleFileError

RULES = """
groups:
- name: g
  rules:
  - finding: busy
    expr: last(running) > 10
    severity: warning
    summary: "{{ endpoint }} is busy ({{ severity }})"
    recommendation: "add GPUs"
    variants:
    - when: role() == "prefill"
      severity: info
      summary: "{{ endpoint }} prefill is busy ({{ severity }})"
    - when: true
      severity: critical
"""


def evaluate(rules_text: str):
    view = build_view({"interval": "10s", "endpoints": [
        {"name": "p", "role": "prefill", "engines": {0: {"running": "20x3"}}},
        {"name": "d", "role": "decode", "engines": {0: {"running": "20x3"}}},
        {"name": "quiet", "role": "decode", "engines": {0: {"running": "1x3"}}}]})
    engine = RuleEngine(parse_rules_text(rules_text, "r.yaml"))
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    for k in range(3):
        engine.evaluate(view, start + timedelta(seconds=10 * k))
    return {f.endpoint: f for f in engine.findings()}


def test_first_matching_variant_words_the_finding():
    found = evaluate(RULES)
    assert set(found) == {"p", "d"}
    assert (found["p"].severity, found["p"].summary) == ("info", "p prefill is busy (info)")
    assert found["p"].recommendation == "add GPUs"  # not given by the variant: the rule's
    assert (found["d"].severity, found["d"].summary) == ("critical", "d is busy (critical)")
    assert {f.rule for f in found.values()} == {"busy"}


def test_without_a_matching_variant_the_rule_words_it():
    found = evaluate(RULES.replace("when: true", "when: false"))
    assert (found["d"].severity, found["d"].summary) == ("warning", "d is busy (warning)")


@pytest.mark.parametrize("variants,problem", [
    ("    variants: {when: true}\n", "variants must be a list"),
    ("    variants:\n    - severity: info\n", "variant without 'when'"),
    ("    variants:\n    - when: true\n      severity: loud\n", "severity must be one of"),
    ("    variants:\n    - when: true\n      expr: true\n", "unknown key 'expr' in a variant"),
    ("    variants:\n    - when: last(nope) > 1\n", "variant when"),
])
def test_bad_variants_are_refused_with_their_line(variants, problem):
    text = ("groups:\n- name: g\n  rules:\n  - finding: f\n    expr: true\n    severity: info\n"
            "    summary: s\n" + variants)
    with pytest.raises(RuleFileError) as err:
        parse_rules_text(text, "r.yaml")
    assert problem in str(err.value) and "r.yaml:" in str(err.value)
