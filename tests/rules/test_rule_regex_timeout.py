"""User regular expressions (count_matching) are checked at load and run with a timeout.

A catastrophic pattern on a long line must not hang an evaluation: the search gives up,
the line counts as not matching, one notice names the pattern's file:line and rule, and
the other rules go on. The timeout is made tiny here so the tests stay fast; nothing
below asserts a duration, only that the calls return.
"""

from __future__ import annotations

import pytest
from rule_helpers import at, rule_yaml, view

from pdwatch.rules import RuleEngine, RuleFileError, parse_rules_text, userregex

EVIL = "(a+)+$"
LONG = "torch.OutOfMemoryError: CUDA out of memory. " + "a" * 3000 + "!"  # fails only after backtracking


@pytest.fixture(autouse=True)
def quick_timeout(monkeypatch):
    monkeypatch.setattr(userregex, "TIMEOUT_S", 0.01)


def two_rules(pattern: str = EVIL) -> str:
    return ("groups:\n- name: t\n  rules:\n"
            "  - finding: slow\n"
            "    severity: warning\n"
            f"    expr: count_matching('oom', '{pattern}', 1h) > 0\n"
            "    summary: slow\n"
            "  - finding: plain\n"
            "    severity: warning\n"
            "    expr: count_matching('oom', 'CUDA out of memory', 1h) > 0\n"
            "    summary: plain\n")


def oom_view(texts: list[str]):
    return view([{"name": "d", "role": "decode", "engines": {0: {"running": "1x7"}},
                  "events": [{"at": f"{5 + k}s", "kind": "oom", "text": t, "line_no": 40 + k}
                             for k, t in enumerate(texts)]}])


def test_a_catastrophic_pattern_returns_with_one_notice_and_the_other_rules_go_on():
    engine = RuleEngine(parse_rules_text(two_rules(), "mine.yaml"))
    states = engine.evaluate(oom_view([LONG]), at(30))
    assert [(s.rule, s.state) for s in states] == [("plain", "firing")]  # the slow line did not match
    [notice] = engine.take_notices()
    assert notice.startswith("mine.yaml:6: rule 'slow': pattern '(a+)+$' gave up after 0.01 s on d.log:40")
    assert "\n" not in notice and "counts as not matching" in notice
    assert engine.take_notices() == []


def test_a_line_is_searched_once_however_many_evaluations():
    engine = RuleEngine(parse_rules_text(two_rules(), "mine.yaml"))
    v = oom_view([LONG])
    for t in range(30, 90, 10):
        engine.evaluate(v, at(t))
    [pattern] = engine.rules[0].patterns()
    assert pattern.timeouts == 1 and not pattern.disabled
    assert len(engine.notices) == 1


def test_the_pattern_is_switched_off_after_repeated_timeouts():
    engine = RuleEngine(parse_rules_text(two_rules(), "mine.yaml"))
    lines = [LONG.replace("!", f"!{k}") for k in range(userregex.MAX_TIMEOUTS + 2)]
    states = engine.evaluate(oom_view(lines), at(30))
    assert [(s.rule, s.state) for s in states] == [("plain", "firing")]
    [pattern] = engine.rules[0].patterns()
    assert pattern.disabled and pattern.timeouts == userregex.MAX_TIMEOUTS
    first, off = engine.take_notices()
    assert first.startswith("mine.yaml:6: rule 'slow': pattern")
    assert off.startswith("mine.yaml:6: rule 'slow': pattern '(a+)+$' switched off after 3 lines")
    engine.evaluate(oom_view(lines), at(40))  # no more searching, no more notices
    assert engine.take_notices() == [] and pattern.timeouts == userregex.MAX_TIMEOUTS


def test_a_switched_off_pattern_is_unknown_so_not_matches_nothing():
    text = two_rules().replace("count_matching('oom', '(a+)+$', 1h) > 0", "count_matching('oom', '(a+)+$', 1h) == 0")
    engine = RuleEngine(parse_rules_text(text, "mine.yaml"))
    lines = [LONG.replace("!", f"!{k}") for k in range(userregex.MAX_TIMEOUTS)]
    states = engine.evaluate(oom_view(lines), at(30))
    assert "slow" not in [s.rule for s in states]  # unknown, not 0


def test_matching_lines_are_counted():
    engine = RuleEngine(parse_rules_text(two_rules(r"\\d+\\.\\d+ GiB"), "mine.yaml"))
    assert engine.rules[0].patterns()[0].text == r"\d+\.\d+ GiB"
    v = oom_view(["Tried to allocate 2.00 GiB", "no size here"])
    assert [(s.rule, s.state) for s in engine.evaluate(v, at(30))] == [("slow", "firing")]
    assert engine.notices == []


@pytest.mark.parametrize("pattern, problem", [
    ("(a+", "invalid regular expression '(a+'"),
    ("[z-a]", "invalid regular expression '[z-a]'"),
    ("x" * 1001, "longer than 1000 characters"),
])
def test_an_invalid_pattern_is_a_load_error_at_file_line(pattern, problem):
    with pytest.raises(RuleFileError) as err:
        parse_rules_text(two_rules(pattern), "mine.yaml")
    [p] = err.value.problems
    assert (p.path, p.line) == ("mine.yaml", 6)
    assert problem in p.message and p.message.startswith("expr: ") and "(column 23)" in p.message  # the opening quote


def test_the_pattern_must_be_a_literal():
    with pytest.raises(RuleFileError) as err:
        parse_rules_text(rule_yaml("finding: x\nseverity: info\nsummary: s\n"
                                   "expr: count_matching('oom', endpoint()) > 0"), "mine.yaml")
    assert "count_matching() needs a quoted regular expression here" in str(err.value)


def test_a_pattern_in_a_block_expression_names_its_own_line():
    text = ("groups:\n- name: t\n  rules:\n  - finding: slow\n    severity: info\n    summary: s\n"
            "    expr: |\n      samples(1h) > 0\n      and count_matching('oom', '(a+)+$') > 0\n")
    [rule] = [r for r in parse_rules_text(text, "mine.yaml")]
    [pattern] = rule.patterns()
    assert (pattern.origin, pattern.rule) == ("mine.yaml:9", "slow")


def test_report_analysis_carries_the_notice(tmp_path):
    from pdwatch.session.analysis import analyse
    from pdwatch.rules import load_rules

    stats = ("INFO 01-02 03:04:{s:02d} [loggers.py:1] Engine 000: Avg prompt throughput: 1.0 tokens/s, "
             "Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, "
             "GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%\n")
    log = tmp_path / "n1_decode_w0.out"
    log.write_text(stats.format(s=5) + stats.format(s=15) + f"ERROR 01-02 03:04:20 [core.py:1] {LONG}\n"
                   + stats.format(s=25) + stats.format(s=35))
    rules_file = tmp_path / "mine.yaml"
    rules_file.write_text(two_rules())
    analysis = analyse([str(log)], rules=load_rules([str(rules_file)]), year=2026)
    assert {f.rule for f in analysis.findings} >= {"plain"}
    assert "slow" not in {f.rule for f in analysis.findings}
    [notice] = [n for n in analysis.notices if n.kind == "rules"]
    assert notice.message.startswith(f"{rules_file}:6: rule 'slow': pattern '(a+)+$' gave up")
    assert f"{log}:3" in notice.message
    assert not analysis.failed_sources


def test_globs_are_not_regexes_and_cannot_backtrack():
    from pdwatch.model.deployment import EndpointSpec

    spec = EndpointSpec("d", "decode", ("*a" * 30 + "b",))
    assert spec.matches("a" * 5000 + ".out") is False  # fnmatch: atomic groups, it returns
