"""What a verdict is made of (pdwatch.rules.verdict) and the built-in rules' wording table
(rules/builtin/verdicts.py): grouping across endpoints, endpoint labels, and a wording for every
built-in rule that can decide a verdict."""

from __future__ import annotations

import pytest

from pdwatch.rules import load_rules
from pdwatch.rules.builtin import verdicts
from pdwatch.rules.verdict import EndpointFigures, endpoint_label, group_findings, make_verdict


class _F:
    def __init__(self, rule, severity, endpoint, start, end=None, engines=()):
        self.rule, self.severity, self.endpoint, self.start, self.end, self.engines = \
            rule, severity, endpoint, start, end, engines


def test_grouping_orders_by_severity_then_priority_then_start():
    findings = [_F("prefill_bound", "warning", "p_w2", "2026-01-01T00:00:10Z"),
                _F("kv_exhausted", "critical", "d_w0", "2026-01-01T00:00:20Z"),
                _F("prefill_bound", "warning", "p_w0", "2026-01-01T00:00:10Z", "2026-01-01T00:01:00Z"),
                _F("prefill_bound", "warning", "p_w1", "2026-01-01T00:00:05Z"),
                _F("cudagraph_overflow", "warning", "d_w0", "2026-01-01T00:00:01Z")]
    groups = group_findings(findings)
    # prefill_bound outranks cudagraph_overflow (a bottleneck before a slowdown), though it began later
    assert [(g.rule, g.label, g.members, g.end) for g in groups] == [
        ("kv_exhausted", "d_w0", (1,), None), ("prefill_bound", "p_w0–w2", (3, 2, 0), None),
        ("cudagraph_overflow", "d_w0", (4,), None)]


@pytest.mark.parametrize("names, label", [
    (["prefill_w0", "prefill_w1", "prefill_w2", "prefill_w3"], "prefill_w0–w3"),
    (["prefill_w0", "prefill_w1"], "prefill_w0, w1"),
    (["prefill_w0", "prefill_w1", "prefill_w2", "prefill_w5"], "prefill_w0–w2, w5"),
    (["decode_w0", "prefill_w3"], "decode_w0, prefill_w3"),
    (["server"], "server"),
    ([None], "the deployment"),
    (["[bold]x[/] w1", "[bold]x[/] w2", "[bold]x[/] w3"], "[bold]x[/] w1–w3"),  # text stays text
])
def test_endpoint_labels(names, label):
    assert endpoint_label(names) == label


def test_every_wording_and_priority_names_a_built_in_rule_and_every_deciding_rule_has_one():
    builtin = {r.finding: r for r in load_rules()}
    assert set(verdicts.WORDING) <= set(builtin) and set(verdicts.PRIORITY) <= set(builtin)
    assert set(verdicts.WORDING) == set(verdicts.PRIORITY)
    lints = {name for name in builtin if name.startswith("lint_")}
    assert lints == set(verdicts.LINT_WORDS)
    # a rule that can decide a verdict (warning or critical) has its own line, a lint its few words
    deciding = {name for name, r in builtin.items()
                if {r.severity, *(v.severity for v in r.variants)} & {"warning", "critical"}}
    assert deciding - lints <= set(verdicts.WORDING), deciding - lints - set(verdicts.WORDING)


def test_a_rule_without_wording_is_said_generically():
    figs = {"d_w0": EndpointFigures("d_w0", "decode", 8, True, waiting=3.0)}
    findings = [_F("my_site_rule", "warning", "d_w0", "2026-01-01T00:00:10Z")]
    v = make_verdict(findings, group_findings(findings), figs)
    assert (v.kind, v.text, v.severity) == ("bottleneck", "Finding: my_site_rule — on d_w0", "warning")
