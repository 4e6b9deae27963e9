"""Loading rules files: every problem is `file:line: problem`; overrides; safe YAML."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rule_helpers import rule_yaml

from pdwatch.rules import RuleFileError, RuleSyntaxError, load_rule_file, load_rules, parse_rules_text
from pdwatch.rules.spec import builtin_paths
from pdwatch.rules.template import parse_template

CASES = Path(__file__).parent / "cases"
BAD = sorted(CASES.glob("*.bad.yaml"))


def expected_errors(path: Path) -> str:
    lines = path.read_text().splitlines()
    want = [ln.split("# error: ", 1)[1] for ln in lines if ln.startswith("# error: ")]
    assert want, f"{path.name} declares no '# error:' line"
    return "\n".join(w.replace("{file}", str(path)) for w in want)


@pytest.mark.parametrize("path", BAD, ids=[p.name for p in BAD])
def test_bad_rules_file(path):
    with pytest.raises(RuleFileError) as err:
        load_rules([path])  # with the built-ins, as `pdwatch --rules FILE` does
    assert str(err.value) == expected_errors(path)


def test_python_tag_is_never_constructed(tmp_path):
    marker = Path("/tmp/pdwatch-pwned")
    with pytest.raises(RuleFileError):
        load_rules([CASES / "python_tag.bad.yaml"])
    assert not marker.exists()


def test_all_problems_of_all_files_at_once(tmp_path):
    with pytest.raises(RuleFileError) as err:
        load_rules([CASES / "bad_severity.bad.yaml", tmp_path / "missing.yaml", CASES / "bad_scope.bad.yaml"])
    text = str(err.value).splitlines()
    assert len(text) == 3 and len(err.value.problems) == 3
    assert text[1] == f"{tmp_path / 'missing.yaml'}: cannot read rules file: No such file or directory"


def test_builtins_load_and_are_written_in_the_same_grammar():
    rules = {r.finding: r for r in load_rules()}
    assert "seq_cap_bound" in rules
    assert all(p.endswith(".yaml") for p in builtin_paths())
    r = rules["seq_cap_bound"]
    assert (r.scope, r.severity, str(r.for_), str(r.keep_firing_for)) == ("engine", "warning", "3 samples", "1 sample")
    assert r.origin.endswith("seq_cap_bound.yaml:5")
    assert r.quoted_fields() == ("running", "waiting", "kv_usage_pct")


def test_user_file_overrides_and_disables(tmp_path):
    user = tmp_path / "mine.yaml"
    user.write_text(rule_yaml("""
finding: seq_cap_bound
expr: last(waiting) > 100
severity: critical
summary: mine
""") + """  - finding: my_rule
    expr: last(running) > 0
    severity: info
    summary: new
""")
    rules = {r.finding: r for r in load_rules([user])}
    assert rules["seq_cap_bound"].severity == "critical"  # replaced, not merged
    assert rules["seq_cap_bound"].scope == "endpoint"
    assert rules["seq_cap_bound"].origin == f"{user}:4"
    assert list(rules)[-2:] == ["seq_cap_bound", "my_rule"]  # replaced in place, new ones last

    off = tmp_path / "off.yaml"
    off.write_text(rule_yaml("finding: seq_cap_bound\nenabled: false"))
    builtin_ids = [r.finding for r in load_rules()]
    assert [r.finding for r in load_rules([off])] == [i for i in builtin_ids if i != "seq_cap_bound"]
    assert [r.finding for r in load_rules([user, off])] == [i for i in builtin_ids if i != "seq_cap_bound"] + ["my_rule"]
    assert [r.enabled for r in load_rule_file(off)] == [False]
    assert load_rules([user], include_builtin=False)[0].finding == "seq_cap_bound"


def test_rule_fields_and_defaults():
    [r] = parse_rules_text(rule_yaml("""
finding: waiting_grows
expr: slope(waiting, 2m) > 0.1 and last(waiting) > 10
severity: info
summary: "{{ endpoint }}: +{{ slope(waiting, 2m) * 60 }}/min"
labels: {bottleneck: prefill, n: 3}
"""), "x.yaml")
    assert (r.scope, r.for_.is_zero, r.keep_firing_for.is_zero) == ("endpoint", True, True)
    assert r.labels == {"bottleneck": "prefill", "n": "3"}
    assert r.value.root.key == "slope(waiting, 120s)"  # the leftmost comparison's left side
    assert r.explanation.text == "" and r.evidence.limit == 3
    assert r.quoted_fields() == ("waiting",)


def test_group_labels_and_explicit_value():
    text = """groups:
- name: g
  labels: {team: serving, bottleneck: x}
  rules:
  - finding: a
    expr: 'true'
    value: fact("max_num_seqs")
    severity: info
    summary: s
    labels: {bottleneck: kv}
"""
    [r] = parse_rules_text(text, "g.yaml")
    assert r.labels == {"team": "serving", "bottleneck": "kv"}
    assert r.value.root.key == "fact('max_num_seqs')"
    assert r.expr.root.key == "true"  # a YAML boolean is read as the expression text


def test_evidence_mapping():
    [r] = parse_rules_text(rule_yaml("""
finding: x
scope: engine
expr: fraction(running >= 4, 1m) > 0.5
severity: info
summary: s
evidence:
  rows: running >= 4 and waiting > 0
  rank: waiting - running
  events: [kv_expired, preemption]
  limit: 5
"""), "e.yaml")
    ev = r.evidence
    assert ev.rows.root.rowwise and ev.rank.root.key == "(waiting - running)"
    assert (ev.events, ev.limit) == (("kv_expired", "preemption"), 5)
    assert r.quoted_fields() == ("running", "waiting")
    assert r.quoted_events() == ("kv_expired", "preemption")


def test_block_scalar_positions(tmp_path):
    # A `|` block maps expression lines to file lines exactly.
    p = tmp_path / "b.yaml"
    p.write_text(rule_yaml("finding: x\nexpr: |\n  last(waiting) > 0\n  and\n  avg(runing, 1m) > 0\nseverity: info\nsummary: s"))
    with pytest.raises(RuleFileError) as err:
        load_rules([p], include_builtin=False)
    assert str(err.value) == f"{p}:8: expr: unknown name 'runing' (did you mean 'running'?) (column 5)"


def test_every_bad_fixture_is_distinct():
    messages = [expected_errors(p) for p in BAD]
    assert len(set(messages)) == len(messages)
    assert os.path.basename(str(BAD[0])).endswith(".bad.yaml")


@pytest.mark.parametrize("tag", ["!!python/object:collections.OrderedDict {}", "!!python/name:os.system",
                                 "!!python/object/new:subprocess.Popen [[touch, /tmp/pdwatch-pwned]]",
                                 "!custom x", "!!binary aGk="])
def test_unsafe_or_unknown_tags_are_refused(tag):
    text = rule_yaml(f"finding: x\nexpr: last(waiting) > 0\nseverity: info\nsummary: {tag}")
    with pytest.raises(RuleFileError, match=r"t\.yaml:7: YAML tag .* is not allowed"):
        parse_rules_text(text, "t.yaml")
    assert not Path("/tmp/pdwatch-pwned").exists()


_YAML_BITS = st.sampled_from([
    "groups:", "\n", "- ", "  ", "name: g", "rules:", "finding: x", "expr: ", "last(waiting) > 0",
    "severity: info", "summary: ", "{{ endpoint }}", "{{", "}}", "for: ", "3 samples", "30s", "scope: ",
    "engine", "labels: {a: b}", "evidence: [waiting]", "enabled: false", "&a ", "*a", "!!python/none ''",
    "[", "]", "{", "}", ":", "'", '"', "#", "\t", "when: ", "role() == 'decode'", "value: ", "1e999"])


@settings(max_examples=300, deadline=2000)
@given(st.one_of(st.text(max_size=200), st.lists(_YAML_BITS, max_size=60).map("".join)))
def test_fuzz_rules_files_only_raise_rule_file_errors(text):
    try:
        parse_rules_text(text, "fuzz.yaml")
    except RuleFileError as e:
        assert all(str(p).startswith("fuzz.yaml") for p in e.problems)


@settings(max_examples=300, deadline=1000)
@given(st.lists(st.sampled_from(list("{} ab()'\".,+*") + ["{{", "}}", "value", "endpoint", "fact.",
                                                           "max_num_seqs", "avg(waiting, 1m)"]),
                max_size=30).map("".join))
def test_fuzz_templates_only_raise_syntax_errors(text):
    try:
        parse_template(text, "engine")
    except RuleSyntaxError as e:
        assert 1 <= e.column <= len(text) + 1


def test_counting_a_kind_the_store_does_not_keep_is_refused():
    """http_access lines are not kept (one per request): a rule counting them would always see 0."""
    from pdwatch.rules import RuleFileError, parse_rules_text

    text = ("groups:\n  - name: g\n    rules:\n      - finding: errors\n        scope: endpoint\n"
            "        severity: warning\n        expr: count_events('http_access', 1m) > 10\n"
            "        summary: x\n        recommendation: y\n")
    try:
        parse_rules_text(text, "mine.yaml")
    except RuleFileError as exc:
        message = str(exc)
    else:
        raise AssertionError("accepted a count of http_access events")
    assert "mine.yaml:7" in message and "'http_access' is not kept for rules" in message
