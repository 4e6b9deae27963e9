"""Any expression that loads also evaluates: no exception at run time, whatever the data."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from rule_helpers import at, view

from pdwatch.rules import RuleEngine, RuleSyntaxError, compile_expr
from pdwatch.rules.findings import FindingState
from pdwatch.rules.spec import Rule
from pdwatch.rules.template import parse_template

FIELDS = ["running", "waiting", "kv_usage_pct", "preemptions", "deferred", "prefix_hit_pct"]
FACTS = ["max_num_seqs", "capture_sizes", "kv_role", "hybrid", "max_capture_size", "stats_interval_s",
         "concurrency", "block_size"]
WINDOWS = ["1m", "10s", "3 samples", "1 sample", "2 * interval()", "fact('max_num_seqs') * 1s", "1h"]

# Awkward data: an endpoint without lines, NaN fields, facts of every type, events
# without time or engine, engines declared but silent, a stats interval of 0.
VIEW = view([
    {"name": "d", "role": "decode",
     "facts": {"max_num_seqs": 4, "capture_sizes": [1, 2, 4], "kv_role": "kv_consumer", "hybrid": True,
               "max_capture_size": None, "stats_interval_s": 0},
     "engines": {0: {"running": "1 _ 4 4", "waiting": "_ 3 0 7", "kv_usage_pct": "0 50 100 _"},
                 1: {"running": "_x3"}, 3: {"waiting": "1"}},
     "events": [{"at": "5s", "kind": "kv_expired"}, {"kind": "oom", "engine": 3},
                {"at": "25s", "kind": "nixl_failure", "engine": 9}]},
    {"name": "p", "role": "prefill", "facts": {"max_num_seqs": "sixteen", "block_size": [1]}, "engines": {}},
    {"name": "f", "role": "frontend", "engines": {0: {"gen_tps": "1e308 1e308"}}},
], facts={"concurrency": 64})


NUM_LEAVES = ["1", "0", "-2.5", "1e308", "30s", "2 samples", "interval()", "engines()", "max_capture_size()",
              "since_first()", "since_last()", "count_events('kv_expired')", "count_events('oom', 1m)",
              "peer_count('*')"] + [f"fact('{f}')" for f in FACTS]
BOOL_LEAVES = ["true", "false", "role() == 'decode'", "endpoint() != 'p'", "fact('kv_role') == 'kv_consumer'",
               "fact('hybrid') == true"] + [f"has_fact('{f}')" for f in FACTS]
SCOPE_ONLY = ["engine()"]


def num(row: bool, depth: int):
    leaves = st.sampled_from(NUM_LEAVES + (FIELDS if row else []) + SCOPE_ONLY)
    if depth == 0:
        return leaves
    n = num(row, depth - 1)
    inner_n, inner_b = num(True, depth - 1), boolean(True, depth - 1)
    win = st.sampled_from(WINDOWS)
    return st.one_of(
        leaves,
        st.tuples(n, st.sampled_from(["+", "-", "*", "/"]), n).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        n.map(lambda x: f"(-{x})"),
        st.tuples(st.sampled_from(["avg", "min", "max", "sum", "stddev", "first", "last", "delta", "slope",
                                   "p50", "p90", "p99"]), st.one_of(inner_n, inner_b), win)
        .map(lambda t: f"{t[0]}({t[1]}, {t[2]})"),
        st.tuples(inner_b, win).map(lambda t: f"fraction({t[0]}, {t[1]})"),
        st.tuples(inner_n, st.sampled_from(["0", "0.5", "1"]), win).map(lambda t: f"quantile({t[0]}, {t[1]}, {t[2]})"),
        win.map(lambda w: f"samples({w})"),
        n.map(lambda x: f"abs({x})"),
        st.tuples(st.sampled_from(["coalesce", "least", "greatest"]), n, n).map(lambda t: f"{t[0]}({t[1]}, {t[2]})"),
        st.tuples(st.sampled_from(["peer_min", "peer_max", "peer_avg", "peer_sum"]),
                  st.sampled_from(["'decode'", "'*'", "'frontend'"]), num(False, depth - 1))
        .map(lambda t: f"{t[0]}({t[1]}, {t[2]})"),
    )


def boolean(row: bool, depth: int):
    leaves = st.sampled_from(BOOL_LEAVES)
    if depth == 0:
        return leaves
    n, b = num(row, depth - 1), boolean(row, depth - 1)
    return st.one_of(
        leaves,
        st.tuples(n, st.sampled_from(["<", "<=", ">", ">=", "==", "!="]), n).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(b, st.sampled_from(["and", "or"]), b).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        b.map(lambda x: f"(not {x})"),
        st.tuples(st.sampled_from(["peer_any", "peer_all"]), st.sampled_from(["'decode'", "'*'", "'frontend'"]),
                  boolean(False, depth - 1)).map(lambda t: f"{t[0]}({t[1]}, {t[2]})"),
    )


def expr():
    return st.one_of(num(False, 3), boolean(False, 3))


@settings(max_examples=400, deadline=None)
@given(expr(), st.sampled_from(["engine", "endpoint", "deployment"]))
def test_loaded_expressions_always_evaluate(text, scope):
    try:
        cond = compile_expr(f"({text}) == ({text})", scope, want="boolean")
        val = compile_expr(text, scope)
        tmpl = parse_template(f"{{{{ {text} }}}} on {{{{ endpoint }}}} {{{{ engines }}}}", scope)
    except RuleSyntaxError:
        return
    rule = Rule(finding="f", scope=scope, expr=cond, value=val, severity="info", summary=tmpl,
                explanation=tmpl)
    engine = RuleEngine([rule])
    for t in (-10, 0, 10, 20, 30, 100, 10_000):
        for s in engine.evaluate(VIEW, at(t)):
            assert isinstance(s, FindingState) and isinstance(s.summary, str)
    for f in engine.findings():
        assert isinstance(f.summary, str)
