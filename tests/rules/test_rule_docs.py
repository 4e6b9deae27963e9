"""rules/builtin/README.md stays true: its examples load and behave, its tables are complete."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rule_helpers import at, view

from pdwatch.rules import ENDPOINT_FACTS, RuleEngine, parse_rules_text
from pdwatch.rules.functions import FUNCTIONS

README = Path(__file__).resolve().parents[2] / "rules" / "builtin" / "README.md"
TEXT = README.read_text()
BLOCKS = re.findall(r"```yaml\n(.*?)```", TEXT, re.S)


def example(name: str) -> RuleEngine:
    block = next(b for b in BLOCKS if f"finding: {name}" in b)
    return RuleEngine(parse_rules_text(block, f"README:{name}"))


def test_file_shape_example_loads():
    rules = parse_rules_text(BLOCKS[0], "README")
    assert [(r.finding, r.enabled) for r in rules] == [("kv_swings_full", True), ("seq_cap_bound", False)]


def test_every_function_and_fact_is_documented():
    for name in FUNCTIONS:
        if name.startswith("peer_"):
            assert "peer_" in TEXT
        else:
            assert f"`{name}(" in TEXT or f" `{name}(" in TEXT or f"{name}(" in TEXT, name
    for fact in ENDPOINT_FACTS:
        assert f"`{fact}`" in TEXT, fact


@pytest.mark.parametrize("interval", ["1s", "10s"])
def test_kv_example_fires_on_swings_with_a_queue(interval):
    swing = "87 95 100 91 88 99 100 89 93 100 97 88 100 96 90 99 100"  # dips under 95
    eng = example("kv_exhausted_example")
    v = view([{"name": "d", "role": "decode", "facts": {"max_num_seqs": 256},
               "engines": {0: {"kv_usage_pct": swing, "waiting": "30x16", "running": "100x16"},
                           1: {"kv_usage_pct": "40x16", "waiting": "0x16", "running": "100x16"}}}],
             interval=interval)
    step = int(interval[:-1])
    for k in range(17):
        states = eng.evaluate(v, at(k * step))
    assert [(s.state, s.engines) for s in states] == [("firing", [0])]
    assert states[0].summary.startswith("d engine 0: KV cache 95.9% full on average with 30 requests waiting")


def test_kv_example_silent_when_the_slot_cap_is_the_limit():
    eng = example("kv_exhausted_example")
    v = view([{"name": "d", "role": "decode", "facts": {"max_num_seqs": 100},
               "engines": {0: {"kv_usage_pct": "95x16", "waiting": "30x16", "running": "100x16"}}}])
    assert all(eng.evaluate(v, at(10 * k)) == [] for k in range(17))


def test_prefill_bound_example():
    def deployment(decode_running: str):
        return view([{"name": f"p{i}", "role": "prefill", "engines": {0: {"waiting": "5+1x11"}, 1: {"waiting": "9x11"}}}
                     for i in range(4)] +
                    [{"name": "d", "role": "decode", "facts": {"max_num_seqs": 512},
                      "engines": {g: {"running": decode_running, "kv_usage_pct": "20x11"} for g in range(8)}}],
                    facts={"isl": 8192})
    eng = example("prefill_bound_example")
    for k in range(12):
        states = eng.evaluate(deployment("100x11"), at(10 * k))
    [s] = states
    assert (s.state, s.endpoint, s.engines) == ("firing", None, [])
    assert s.summary == ("Prefill-bound: every prefill endpoint has a queue (11.2 or more waiting) "
                         "while decode uses at most 19.5% of its slots")
    assert s.recommendation.endswith("(16,384).")
    busy = example("prefill_bound_example")
    assert all(busy.evaluate(deployment("400x11"), at(10 * k)) == [] for k in range(12))
