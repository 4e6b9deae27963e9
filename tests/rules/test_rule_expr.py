"""The expression language: parsing, precedence, checks, errors with columns, fuzzing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pdwatch.rules import RuleSyntaxError, compile_expr
from pdwatch.rules.expr import MAX_NODES, tokenize


def key(text: str, scope: str = "endpoint") -> str:
    return compile_expr(text, scope).root.key


@pytest.mark.parametrize("text, expected", [
    # precedence: or < and < not < comparison < +- < */ < unary
    ("avg(waiting, 1m) > 1 or avg(running, 1m) > 2 and last(waiting) > 3",
     "((avg(waiting, 60s) > 1) or ((avg(running, 60s) > 2) and (last(waiting) > 3)))"),
    ("not last(waiting) > 0 and true", "((not (last(waiting) > 0)) and true)"),
    ("last(waiting) + last(running) * 2 > 10", "((last(waiting) + (last(running) * 2)) > 10)"),
    ("(last(waiting) + last(running)) * 2 > 10", "(((last(waiting) + last(running)) * 2) > 10)"),
    ("last(waiting) - last(running) - 1 > 0", "(((last(waiting) - last(running)) - 1) > 0)"),
    ("-last(waiting) < -1", "((-last(waiting)) < -1)"),
    ("last(waiting) / 2 / 2 > 1", "(((last(waiting) / 2) / 2) > 1)"),
    # literals: durations, compound durations, samples, strings, booleans, fact sugar
    ("since_last() > 1m30s", "(since_last() > 90s)"),
    ("since_last() > 250ms", "(since_last() > 0.25s)"),
    ("avg(running, 6 samples) > 1", "(avg(running, 6 samples) > 1)"),
    ("samples(1 sample) > 0", "(samples(1 samples) > 0)"),
    ("role() == 'decode'", "(role() == 'decode')"),
    ('role() == "decode"', "(role() == 'decode')"),
    ("fact.max_num_seqs > 4", "(fact('max_num_seqs') > 4)"),
    ("fact(\"hybrid\") == true", "(fact('hybrid') == true)"),
    ("avg(running, 2 * 30s) > 0", "(avg(running, 60s) > 0)"),  # computed window, folded
    ("avg(running, 3 * interval()) > 0", "(avg(running, (3 * interval())) > 0)"),
    # constant folding
    ("1 + 2 * 3 == 7", "true"),
    ("not (1 < 2)", "false"),
    ("1 / 0 > 0", "unknown"),  # x / 0 is unknown, and so is anything compared with it
    ('"a" == "a"', "true"),
])
def test_parses_with_precedence(text, expected):
    assert key(text) == expected


def test_row_wise_inside_windows_only():
    e = compile_expr("fraction(kv_usage_pct >= 87 and waiting > fact('max_num_seqs') / 4, 10 samples) > 0.8")
    assert e.fields() == ["kv_usage_pct", "waiting"]
    assert not e.root.rowwise
    # a per-line expression may hold window functions too (an instance value per line)
    compile_expr("fraction(running >= max(running, 5m), 5m) > 0.5")
    # evidence filters are per-line expressions at the top
    assert compile_expr("running >= 4 and waiting > 0", rows=True).root.rowwise


def test_types_and_scopes():
    assert compile_expr("avg(running, 1m)").type == "number"
    assert compile_expr("fact('kv_role')").type == "any"
    assert compile_expr("engine() == 3", "engine").type == "boolean"
    assert compile_expr("peer_max('decode', avg(running, 1m)) > 1", "deployment")
    assert compile_expr("count_events('oom', 5m) > 0", "deployment")
    assert compile_expr("fact('concurrency') > 1", "deployment")
    assert compile_expr("coalesce(fact('num_speculative_tokens'), 0) + 1 > 1")
    assert compile_expr("sum(waiting > 0, 1m) > 2")  # conditions count as 1/0


@pytest.mark.parametrize("text, message, column", [
    ("", "empty expression", 1),
    ("avg(kv_usage_pct, 60s", "expected ')' to close the call to avg() at column 1, found end of expression", 22),
    ("(1 + 2", "expected ')' to close the '(' at column 1, found end of expression", 7),
    ("avg(kv_usage_pct 60s)", "expected ')' to close the call to avg() at column 1, found '60s'", 18),
    ("avg(kv_usage_pct, 60)", "avg() needs a window with a unit: 60s or 60 samples", 19),
    ("avg(kv_usage_pct, 0s) > 1", "avg() needs a window longer than 0s", 19),
    ("kv_usage_pct > 95", "field 'kv_usage_pct' has one value per stats line; a rule expression needs one value: "
     "use a window function such as last(kv_usage_pct) or avg(kv_usage_pct, 1m)", 1),
    ("avg(kv_usage, 1m) > 1", "unknown name 'kv_usage' (did you mean 'kv_usage_pct'?)", 5),
    ("avrg(running, 1m) > 1", "unknown function 'avrg' (did you mean 'avg'?)", 1),
    ("avg(running) > 1", "avg() takes 2 arguments, got 1", 1),
    ("last(running, 1m, 2m) > 1", "last() takes 1 or 2 arguments, got 3", 1),
    ("fact('max_num_seq') > 1", "unknown fact name 'max_num_seq' (did you mean 'max_num_seqs'?)", 6),
    ("fact(max_num_seqs) > 1", "fact() needs a quoted fact name here", 6),
    ("count_events('kv_expird', 1m) > 0", "unknown event kind 'kv_expird' (did you mean 'kv_expired'?)", 14),
    ("role() == 'decoder'", "unknown role 'decoder' (did you mean 'decode'?)", 11),
    ("peer_max('decod', avg(running, 1m)) > 0", "unknown role 'decod' (did you mean 'decode'?)", 10),
    ("engine() == 0", "engine() needs an engine scope; this rule's scope is endpoint", 1),
    ("role() == 'x' or 1", "unknown role 'x'", 11),
    ("avg(running, 1m) and true", "'and' needs a boolean, got a number", 1),
    ("true and 3", "'and' needs a boolean, got a number", 10),
    ("not avg(running, 1m)", "'not' needs a boolean, got a number", 5),
    ("last(running) + true > 1", "'+' needs a number, got a boolean", 17),
    ("role() > 'a'", "'>' compares numbers, not a string", 1),
    ("role() == 3", "cannot compare a string with a number", 8),
    ("1 < 2 < 3", "comparisons do not chain: write 'a < b and b < c'", 7),
    ("a = b", "unexpected character '=': use == to compare", 3),
    ("last(waiting) > 0 && true", "unexpected character '&': use 'and'", 19),
    ("5min > 1", "bad number or duration '5min' (units: ms, s, m, h, d)", 1),
    ("avg(running, 6x) > 1", "bad number '6x': write a sample count as '6 samples'", 14),
    ("avg(running, 0 samples) > 1", "a sample count is a whole number from 1 to 1,000,000", 14),
    ("avg(running, 1.5 samples) > 1", "a sample count is a whole number from 1 to 1,000,000", 14),
    ("'open", "unterminated string", 1),
    ("quantile(running, 1.5, 1m) > 0", "quantile() needs a quantile between 0 and 1 here", 19),
    ("avg(running, 1m) > 1 )", "unexpected ')' after a complete expression", 22),
    ("avg(running, last(waiting) + running) > 1",
     "field 'running' has one value per stats line; avg() window needs one value: "
     "use a window function such as last(running) or avg(running, 1m)", 30),
    ("avg(running, 1m)", "the expression must be a boolean, but it is a number", 1),
    ("peer_max('decode', running) > 1",
     "field 'running' has one value per stats line; peer_max() needs one value: "
     "use a window function such as last(running) or avg(running, 1m)", 20),
])
def test_errors_name_the_column(text, message, column):
    with pytest.raises(RuleSyntaxError) as err:
        compile_expr(text, "endpoint", want="boolean")
    assert (err.value.message, err.value.column) == (message, column)
    assert str(err.value) == f"{message} (column {column})"


def test_deployment_scope_has_no_lines_of_its_own():
    with pytest.raises(RuleSyntaxError) as err:
        compile_expr("avg(waiting, 1m) > 0", "deployment")
    assert (err.value.message, err.value.column) == (
        "avg() needs an endpoint; this rule's scope is deployment (use a peer_* function)", 1)
    with pytest.raises(RuleSyntaxError) as err:
        compile_expr("peer_max('decode', 1) > last(waiting)", "deployment")
    assert err.value.column == 25  # the call to last()


def test_limits():
    with pytest.raises(RuleSyntaxError, match="nested more than"):
        compile_expr("(" * 100 + "1" + ")" * 100)
    with pytest.raises(RuleSyntaxError, match="more than"):
        compile_expr(" + ".join(["last(waiting)"] * (MAX_NODES + 1)) + " > 0")
    with pytest.raises(RuleSyntaxError, match="longer than"):
        compile_expr("1" * 5000)
    with pytest.raises(RuleSyntaxError, match="too large"):
        compile_expr("1" + "0" * 400 + " > 1")


def test_tokens_carry_columns():
    toks = tokenize("avg(kv_usage_pct, 6 samples) >= 87.5")
    assert [(t.kind, t.text, t.col) for t in toks] == [
        ("name", "avg", 1), ("op", "(", 4), ("name", "kv_usage_pct", 5), ("op", ",", 17),
        ("num", "6", 19), ("name", "samples", 21), ("op", ")", 28), ("op", ">=", 30),
        ("num", "87.5", 33), ("end", "", 37)]


def test_no_eval_anywhere():
    # The language is parsed by hand: Python syntax is not an expression.
    for text in ["__import__('os').system('true')", "().__class__", "[x for x in ()]", "lambda: 1"]:
        with pytest.raises(RuleSyntaxError):
            compile_expr(text)


_ALPHABET = st.sampled_from(list("()+-*/<>=!&|.,'\"_ 0123456789samxhd") + [
    "avg", "fraction", "running", "waiting", "kv_usage_pct", "fact", "peer_max", "and", "or", "not",
    "samples", "1m", "30s", "true", "role()", "'decode'", "\u00b2", "\u0663", "\u00e9", "\n"])


@settings(max_examples=600, deadline=1000)
@given(st.one_of(st.text(max_size=80), st.lists(_ALPHABET, max_size=40).map("".join)))
def test_fuzz_only_syntax_errors(text):
    for scope in ("engine", "endpoint", "deployment"):
        try:
            compile_expr(text, scope)
        except RuleSyntaxError as e:
            assert 1 <= e.column <= len(text) + 1
