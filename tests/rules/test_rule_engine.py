"""The evaluation loop: alert states, for/keep_firing_for, periods, merging, evidence."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import pytest
from rule_helpers import at, engine_for, one, run, view

from pdwatch.rules import DeploymentView, RuleEngine, load_rules
from pdwatch.units import engine_ranges as fmt_engines
from pdwatch.units import fmt_precise as fmt_num

QUEUE = """
finding: queue
scope: engine
expr: last(waiting) > 0
severity: warning
summary: "{{ endpoint }} engine {{ engines }}: {{ value }} waiting"
"""


def states(engine, v, times):
    return {t: [(r, s) for r, s, _e, _g in got] for t, got in run(engine, v, times).items()}


def test_pending_then_firing_after_for_then_resolved():
    eng = engine_for(QUEUE + "for: 30s")
    v = one({0: {"waiting": "0 5 5 5 5 0 0"}})
    got = states(eng, v, [0, 10, 20, 30, 40, 50, 60])
    assert got == {0: [], 10: [("queue", "pending")], 20: [("queue", "pending")],
                   30: [("queue", "pending")], 40: [("queue", "firing")],
                   50: [("queue", "resolved")], 60: []}
    [f] = eng.findings()
    assert (f.start, f.end, f.pending_since) == (at(40), at(50), at(10))
    assert (f.rule, f.endpoint, f.engines, f.severity, f.value) == ("queue", "e", [0], "warning", 5.0)
    assert f.summary == "e engine 0: 5 waiting"


def test_state_details():
    eng = engine_for(QUEUE + "for: 10s")
    v = one({0: {"waiting": "0 5 5 0"}})
    eng.evaluate(v, at(10))
    [s] = eng.evaluate(v, at(20))
    assert (s.state, s.active_at, s.fired_at, s.resolved_at) == ("firing", at(10), at(20), None)
    assert (s.scope, s.labels, s.explanation, s.recommendation) == ("engine", {}, "", "")
    [s] = eng.evaluate(v, at(30))
    assert (s.state, s.resolved_at) == ("resolved", at(30))


def test_pending_that_stops_never_fires():
    eng = engine_for(QUEUE + "for: 30s")
    got = states(eng, one({0: {"waiting": "0 5 5 0 0"}}), [0, 10, 20, 30, 40])
    assert got[30] == [] and eng.findings() == []


def test_keep_firing_for_bridges_gaps():
    eng = engine_for(QUEUE + "keep_firing_for: 20s")
    v = one({0: {"waiting": "0 5 0 5 0 0 0 0"}})
    got = states(eng, v, [0, 10, 20, 30, 40, 50, 60, 70])
    assert [t for t, s in got.items() if s == [("queue", "firing")]] == [10, 20, 30, 40, 50]
    assert got[60] == [("queue", "resolved")]
    [f] = eng.findings()  # one period: the dip at 20 s stayed within keep_firing_for
    assert (f.start, f.end) == (at(10), at(60))


def test_refiring_makes_a_new_period():
    eng = engine_for(QUEUE)
    run(eng, one({0: {"waiting": "5 0 0 5 5 0"}}), [0, 10, 20, 30, 40, 50])
    assert [(f.start, f.end) for f in eng.findings()] == [(at(0), at(10)), (at(30), at(50))]


@pytest.mark.parametrize("interval", [1, 2, 10, 60])
def test_samples_read_the_same_at_any_interval(interval):
    # 3 queued lines in a row are needed ("for: 3 samples"), then it keeps firing for
    # 2 more lines after the queue is gone.
    eng = engine_for(QUEUE + "for: 3 samples\nkeep_firing_for: 2 samples")
    v = one({0: {"waiting": "0 5 5 5 5 0 0 0 0"}}, interval=f"{interval}s")
    got = states(eng, v, [k * interval for k in range(9)])
    seq = [s[0][1] if s else "-" for s in got.values()]
    assert seq == ["-", "pending", "pending", "firing", "firing", "firing", "firing", "resolved", "-"]


def test_window_in_samples_is_lines_not_seconds():
    body = "finding: q\nscope: engine\nexpr: min(waiting, 3 samples) > 0\nseverity: info\nsummary: s"
    for interval in (1, 10):
        eng = engine_for(body)
        v = one({0: {"waiting": "5 5 5 0"}}, interval=f"{interval}s")
        got = states(eng, v, [k * interval for k in range(4)])
        # the window of the 4th evaluation holds lines 2-4, and line 4 has no queue
        assert [s[0][1] for s in got.values()] == ["firing", "firing", "firing", "resolved"]


def test_when_filters_instances():
    body = QUEUE + 'when: role() == "prefill"'
    eng = engine_for(body)
    v = view([{"name": "p", "role": "prefill", "engines": {0: {"waiting": "5"}}},
              {"name": "d", "role": "decode", "engines": {0: {"waiting": "5"}}}])
    assert [s.endpoint for s in eng.evaluate(v, at(0))] == ["p"]


def test_overlapping_engines_merge_and_separate_periods_do_not():
    eng = engine_for(QUEUE)
    v = one({0: {"waiting": "5 5 0 0 0 0"}, 1: {"waiting": "0 5 5 0 0 0"}, 3: {"waiting": "0 0 0 0 5 0"}})
    run(eng, v, [0, 10, 20, 30, 40, 50])
    got = [(f.engines, f.start, f.end) for f in eng.findings()]
    assert got == [([0, 1], at(0), at(30)), ([3], at(40), at(50))]
    merged = eng.findings()[0]
    assert merged.summary == "e engine 0-1: 5 waiting"


def test_endpoint_scope_lists_the_endpoints_engines():
    # At endpoint scope a window holds the lines of all engines (last() would be the
    # newest line of any engine).
    eng = engine_for(QUEUE.replace("scope: engine", "scope: endpoint")
                     .replace("last(waiting) > 0", "max(waiting, 1 sample) > 0"))
    [s] = eng.evaluate(one({0: {"waiting": "5"}, 1: {"waiting": "5"}, 2: {"waiting": "0"}}), at(0))
    assert (s.endpoint, s.engines, s.summary) == ("e", [0, 1, 2], "e engine 0-2: 5 waiting")


def test_deployment_scope():
    body = """
finding: prefill_bound
scope: deployment
expr: peer_min("prefill", avg(waiting, 30s)) > 10 and peer_max("decode", avg(running, 30s) / fact("max_num_seqs")) < 0.5
value: peer_max("decode", avg(running, 30s) / fact("max_num_seqs"))
severity: critical
summary: "decode at {{ 100 * peer_max('decode', avg(running, 30s) / fact('max_num_seqs')) }}% of its slots while {{ peer_count('prefill') }} prefill endpoints queue"
"""
    eng = engine_for(body)
    v = view([{"name": "p0", "role": "prefill", "engines": {0: {"waiting": "20x5"}}},
              {"name": "p1", "role": "prefill", "engines": {0: {"waiting": "30x5"}}},
              {"name": "d", "role": "decode", "facts": {"max_num_seqs": 256},
               "engines": {0: {"running": "64x5"}, 1: {"running": "32x5"}}}])
    [s] = eng.evaluate(v, at(40))
    assert (s.endpoint, s.engines, s.value) == (None, [], 0.1875)
    assert s.summary == "decode at 18.8% of its slots while 2 prefill endpoints queue"


def test_resolves_when_the_instance_disappears():
    eng = engine_for(QUEUE)
    assert eng.evaluate(one({0: {"waiting": "5 5"}}), at(0))[0].state == "firing"
    [s] = eng.evaluate(one({}, name="e"), at(10))
    assert s.state == "resolved"


def test_only_data_up_to_now_and_growing_views():
    # Live: the store hands new, longer frames; replay: one view, the clock moves.
    eng = engine_for(QUEUE)
    full = one({0: {"waiting": "0 0 5"}})
    assert eng.evaluate(full, at(10)) == []  # the 5 at 20 s is in the future
    eng2 = engine_for(QUEUE)
    assert eng2.evaluate(one({0: {"waiting": "0 0"}}), at(10)) == []
    assert eng2.evaluate(one({0: {"waiting": "0 0 5"}}), at(20))[0].state == "firing"


def test_facts_come_from_the_current_view_without_a_rebuild():
    eng = engine_for(QUEUE.replace("last(waiting) > 0", 'last(waiting) > fact("max_num_seqs")'))
    v1 = one({0: {"waiting": "5 5"}}, max_num_seqs=8)
    assert eng.evaluate(v1, at(0)) == []
    ep = v1.endpoints[0]
    v2 = DeploymentView((replace(ep, facts={**ep.facts, "max_num_seqs": 4}),), {})
    arrays = eng._cache[2]
    assert eng.evaluate(v2, at(10))[0].state == "firing"
    assert eng._cache[2] is arrays  # same frames: the arrays were reused


def test_clock_rules():
    eng = engine_for(QUEUE)
    v = one({0: {"waiting": "5"}})
    eng.evaluate(v, at(10))
    eng.evaluate(v, at(10))  # the same instant twice is fine
    with pytest.raises(ValueError, match="backwards"):
        eng.evaluate(v, at(5))
    with pytest.raises(ValueError, match="timezone"):
        eng.evaluate(v, datetime(2026, 1, 1))
    eng.reset()
    eng.evaluate(v, at(0))


def test_deterministic():
    def go():
        eng = RuleEngine(load_rules())
        v = view([{"name": f"d{k}", "role": "decode", "facts": {"max_num_seqs": 4},
                   "engines": {g: {"running": "4x9", "waiting": f"{g + 1}x9", "kv_usage_pct": "1x9"}
                               for g in range(4)}} for k in range(3)])
        states = [eng.evaluate(v, at(10 * t)) for t in range(12)]
        return states, eng.findings()
    assert go() == go()


def test_evidence_quotes_events_and_ranked_lines():
    body = """
finding: kv_expired
scope: engine
expr: count_events("kv_expired", 1m) > 0 and avg(waiting, 1m) > 0
severity: warning
summary: s
evidence:
  rank: waiting
  limit: 2
"""
    eng = engine_for(body)
    v = view([{"name": "d", "engines": {0: {"waiting": "1 9 3 7 2", "running": "1x4"}},
               "events": [{"at": "5s", "kind": "kv_expired", "engine": 0, "text": "Releasing expired KV blocks for req-1"},
                          {"at": "25s", "kind": "kv_expired", "engine": 0, "text": "Releasing expired KV blocks for req-2"},
                          {"at": "26s", "kind": "kv_expired", "engine": 0, "text": "Releasing expired KV blocks for req-3"}]}])
    run(eng, v, [10, 20, 30, 40])
    [f] = eng.findings()
    assert [(e["kind"], e["line_no"], e["text"]) for e in f.evidence] == [
        ("kv_expired", 10000, "Releasing expired KV blocks for req-1"),
        ("kv_expired", 10001, "Releasing expired KV blocks for req-2"),
        ("stats", 2, "Engine 000: Waiting: 9 reqs"),
        ("stats", 4, "Engine 000: Waiting: 7 reqs")]
    assert f.evidence[2]["source"] == "d.log" and f.evidence[2]["ts"] == at(10).isoformat()


def test_evidence_rows_filter():
    body = QUEUE + """evidence:
  rows: waiting > 3
  fields: [waiting, running]
"""
    eng = engine_for(body)
    run(eng, one({0: {"waiting": "1 5 2 6 3 7", "running": "2x5"}}), [0, 10, 20, 30, 40, 50])
    [f] = eng.findings()
    assert [e["text"] for e in f.evidence] == [  # onset first (no rank), only lines with > 3 waiting
        "Engine 000: Waiting: 5 reqs, Running: 2 reqs",  # in the order `fields:` gives
        "Engine 000: Waiting: 6 reqs, Running: 2 reqs",
        "Engine 000: Waiting: 7 reqs, Running: 2 reqs"]


def test_formatting():
    assert fmt_engines([0, 1, 2, 3, 5, 7, 8]) == "0-3, 5, 7-8"
    assert fmt_engines([]) == "-"
    assert [fmt_num(x) for x in (4, 2097152, 2444.7, 87.25, 12.34, 1.5, 0.2, 0.8333)] == [
        "4", "2,097,152", "2,445", "87.2", "12.3", "1.5", "0.2", "0.83"]
    eng = engine_for(QUEUE.replace('summary: "{{ endpoint }} engine {{ engines }}: {{ value }} waiting"',
                                   'summary: "{{ fact.capture_sizes }} / {{ fact.kv_role }} / {{ fact.hybrid }} / '
                                   '{{ fact.block_size }} / {{ has_fact(\'hybrid\') }} / {{ role }} / {{ finding }}"'))
    v = one({0: {"waiting": "5"}}, capture_sizes=list(range(1, 20)), kv_role="kv_consumer", hybrid=False)
    [s] = eng.evaluate(v, at(0))
    assert s.summary == "1, 2, 3, ..., 19 (19 values) / kv_consumer / false / unknown / true / decode / queue"
