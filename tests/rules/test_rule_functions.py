"""Every function of the language on small hand-checked series, per scope."""

from __future__ import annotations

import math

import pytest
from rule_helpers import value, view

from pdwatch.rules.functions import FUNCTIONS

D_FACTS = {"max_num_seqs": 8, "max_concurrency": 12.5, "kv_role": "kv_consumer", "hybrid": True,
           "capture_sizes": [1, 2, 4, 8], "enable_prefix_caching": False}
P_FACTS = {"max_num_seqs": 16, "max_capture_size": None}


def deployment(interval: str = "10s"):
    """decode endpoint d (engines 0, 1) and prefill endpoint p (engine 0); 5 lines each."""
    return view([
        {"name": "d", "role": "decode", "facts": D_FACTS,
         "engines": {0: {"running": "1 2 3 4 5", "waiting": "0 0 5 10 20", "kv_usage_pct": "10+10x4"},
                     1: {"running": "10x4", "waiting": "0x4", "kv_usage_pct": "50x4"}},
         "events": [{"at": "15s", "kind": "kv_expired", "engine": 0},
                    {"at": "35s", "kind": "kv_expired", "engine": 1},
                    {"at": "38s", "kind": "nixl_failure"},
                    {"kind": "oom"}]},  # no time
        {"name": "p", "role": "prefill", "facts": P_FACTS,
         "engines": {0: {"running": "2x4", "waiting": "30+10x4", "kv_usage_pct": "5x4"}}},
    ], interval=interval, facts={"concurrency": 64})


V = deployment()


@pytest.mark.parametrize("text, engine_scope, endpoint_scope", [
    # windows (now = 40 s; 30s = the lines at 20, 30, 40; 2 samples = 30, 40)
    ("avg(running, 30s)", [4, 10, 2], [7, 2]),
    ("avg(running, 2 samples)", [4.5, 10, 2], [7.25, 2]),
    ("min(kv_usage_pct, 1m)", [10, 50, 5], [10, 5]),
    ("max(waiting, 1m)", [20, 0, 70], [20, 70]),
    ("sum(running, 1m)", [15, 50, 10], [65, 10]),
    ("sum(waiting > 0, 1m)", [3, 0, 5], [3, 5]),
    ("first(waiting, 30s)", [5, 0, 50], [5, 50]),
    ("last(running)", [5, 10, 2], [10, 2]),  # endpoint scope: the newest line of any engine
    ("last(running, 1m)", [5, 10, 2], [10, 2]),
    ("delta(waiting, 1m)", [20, 0, 40], [0, 40]),
    ("slope(waiting, 1m)", [0.5, 0, 1], [0.25, 1]),
    ("stddev(running, 1m)", [math.sqrt(2), 0, 0], [3.640055, 0]),
    ("p50(running, 1m)", [3, 10, 2], [7.5, 2]),
    ("p90(running, 1m)", [4.6, 10, 2], [10, 2]),
    ("p99(waiting, 1m)", [19.6, 0, 69.6], [19.1, 69.6]),
    ("quantile(running, 0.25, 1m)", [2, 10, 2], [3.25, 2]),
    ("fraction(running > 3, 1m)", [0.4, 1, 0], [0.7, 0]),
    ("fraction(kv_usage_pct >= 30 and waiting > 0, 1m)", [0.6, 0, 0], [0.3, 0]),
    ("samples(1m)", [5, 5, 5], [10, 5]),
    ("samples(1 sample)", [1, 1, 1], [2, 1]),
    ("avg(running, 3 * interval())", [4, 10, 2], [7, 2]),
    ("avg(running / fact('max_num_seqs'), 1m)", [3 / 8, 10 / 8, 2 / 16], [65 / 80, 2 / 16]),
    ("fraction(running >= max(running, 1m), 1m)", [0.2, 1, 1], [0.5, 1]),
    # events: kv_expired at 15 s (engine 0) and 35 s (engine 1); nixl_failure at 38 s without
    # an engine (counted for the endpoint, not an engine of it); an undated oom
    ("count_events('kv_expired', 20s)", [0, 1, 0], [1, 0]),
    ("count_events('kv_expired')", [1, 1, 0], [2, 0]),
    ("count_events('nixl_failure', 5s)", [0, 0, 0], [1, 0]),
    ("count_events('oom')", [0, 0, 0], [1, 0]),
    ("count_events('oom', 1h)", [0, 0, 0], [0, 0]),
    # the newest event of a kind: kv_expired at 15 s (engine 0) and 35 s (engine 1); none on p
    ("since_event('kv_expired')", [25, 5, None], [5, None]),
    ("coalesce(since_event('nixl_failure'), -1)", [-1, -1, -1], [2, -1]),
    # its events' reasons, commonest first (these have none)
    ("top_reason('kv_expired')", ["none logged"] * 3, ["none logged"] * 2),
    # outside a finding's texts there is no episode: unknown
    ("episode()", [None, None, None], [None, None]),
    ("count_matching('kv_expired', '^$', 20s)", [0, 1, 0], [1, 0]),  # the events' text is ""
    ("count_matching('oom', '^$')", [0, 0, 0], [1, 0]),
    ("count_matching('kv_expired', 'x')", [0, 0, 0], [0, 0]),
    # order: one log per endpoint, so line order decides (kv_expired lines 10000-10001, then
    # nixl_failure 10002, then the undated oom 10003); an event without an engine counts for
    # every engine of its endpoint; p has none of them
    ("before('kv_expired', 'nixl_failure')", [1, 1, 0], [1, 0]),
    ("before('nixl_failure', 'kv_expired')", [0, 0, 0], [0, 0]),
    ("before('oom', 'kv_expired')", [0, 0, 0], [0, 0]),
    ("before('kv_expired', 'oom')", [1, 1, 0], [1, 0]),
    ("before('kv_expired', 'kv_load_failure')", [1, 1, 0], [1, 0]),  # a but never b
    # facts and scope
    ("fact('max_num_seqs')", [8, 8, 16], [8, 16]),
    ("fact('max_concurrency')", [12.5, 12.5, None], [12.5, None]),
    ("fact('concurrency')", [64, 64, 64], [64, 64]),  # deployment fact seen from an endpoint
    ("fact('hybrid') == true", [1, 1, None], [1, None]),
    ("has_fact('max_concurrency')", [1, 1, 0], [1, 0]),
    ("max_capture_size()", [16, 16, 0], [16, 0]),  # default min(2*8, 512); None = no graphs
    ("interval()", [10, 10, 10], [10, 10]),
    ("engines()", [2, 2, 1], [2, 1]),
    ("since_first()", [40, 40, 40], [40, 40]),
    ("since_last()", [0, 0, 0], [0, 0]),
    ("role() == 'decode'", [1, 1, 0], [1, 0]),
    ("endpoint() == 'p'", [0, 0, 1], [0, 1]),
    ("fact('kv_role') == 'kv_consumer'", [1, 1, None], [1, None]),
    # elementwise and three-valued logic
    ("abs(0 - last(running))", [5, 10, 2], [10, 2]),
    ("least(last(running), 4)", [4, 4, 2], [4, 2]),
    ("greatest(last(running), 4)", [5, 10, 4], [10, 4]),
    ("coalesce(fact('max_concurrency'), -1)", [12.5, 12.5, -1], [12.5, -1]),
    ("avg(coalesce(waiting, 0) * 2, 1m)", [14, 0, 100], [7, 100]),
    ("fact('max_concurrency') > 1 and false", [0, 0, 0], [0, 0]),
    ("fact('max_concurrency') > 1 and true", [1, 1, None], [1, None]),
    ("fact('max_concurrency') > 1 or true", [1, 1, 1], [1, 1]),
    ("not (fact('max_concurrency') > 1)", [0, 0, None], [0, None]),
    ("last(running) / (last(waiting) - last(waiting))", [None, None, None], [None, None]),
    # other endpoints (the same for every instance)
    ("peer_max('decode', avg(running, 1m))", [6.5, 6.5, 6.5], [6.5, 6.5]),
    ("peer_min('*', avg(running, 1m))", [2, 2, 2], [2, 2]),
    ("peer_sum('*', samples(1m))", [15, 15, 15], [15, 15]),
    ("peer_avg('prefill', last(waiting))", [70, 70, 70], [70, 70]),
    ("peer_count('decode')", [1, 1, 1], [1, 1]),
    ("peer_count('frontend')", [0, 0, 0], [0, 0]),
    ("peer_any('prefill', avg(waiting, 1m) > 40)", [1, 1, 1], [1, 1]),
    ("peer_all('*', avg(waiting, 1m) > 40)", [0, 0, 0], [0, 0]),
    ("peer_all('frontend', true)", [None, None, None], [None, None]),  # nobody: unknown
    ("peer_max('decode', fact('max_concurrency')) > 0", [1, 1, 1], [1, 1]),
])
def test_function_values(text, engine_scope, endpoint_scope):
    for scope, want in (("engine", engine_scope), ("endpoint", endpoint_scope)):
        got = value(text, V, 40, scope)
        assert len(got) == len(want), (scope, got)
        for g, w in zip(got, want):
            if w is None:
                assert g is None, (scope, got, want)
            else:
                assert g == pytest.approx(w, rel=1e-6), (scope, got, want)


def test_every_function_is_covered():
    names = set(FUNCTIONS)
    tested = {n for n in names if any(f"{n}(" in p.values[0] for p in _params())}
    tested |= {"engine", "role", "endpoint", "fact"}  # engine(): see test_engine_function
    assert names - tested == set()


def _params():
    mark = next(m for m in test_function_values.pytestmark if m.name == "parametrize")
    return [pytest.param(*a) for a in mark.args[1]]


def test_engine_function():
    assert value("engine()", V, 40, "engine") == [0, 1, 0]


def test_only_lines_up_to_now():
    assert value("last(running)", V, 20, "engine") == [3, 10, 2]
    assert value("samples(1h)", V, 20, "engine") == [3, 3, 3]
    assert value("count_events('kv_expired')", V, 20, "endpoint") == [1, 0]
    assert value("since_first()", V, 20, "endpoint") == [20, 20]
    assert value("avg(running, 1m)", V, -5, "endpoint") == [None, None]  # before any data


def test_stale_data_is_unknown():
    # last(x) looks back 3 samples: a minute after the last line it knows nothing.
    assert value("last(running)", V, 100, "engine") == [None, None, None]
    assert value("since_last()", V, 100, "endpoint") == [60, 60]


def test_samples_follow_the_interval():
    one_s = deployment("1s")
    assert value("avg(running, 2 samples)", one_s, 4, "engine") == value("avg(running, 2 samples)", V, 40, "engine")
    assert value("interval()", one_s, 4, "endpoint") == [1, 1]
    assert value("3 samples", one_s, 4, "endpoint") == [3, 3]
    assert value("3 samples", V, 40, "endpoint") == [30, 30]


def test_interval_is_measured_when_the_fact_is_missing():
    v = view([{"name": "x", "facts": {"stats_interval_s": None},
               "engines": {0: {"running": "1x5"}, 1: {"running": "1x5"}}}], interval="5s")
    assert value("interval()", v, 25, "engine") == [5, 5]
    assert value("interval()", v, 25, "endpoint") == [5]
    lone = view([{"name": "x", "facts": {"stats_interval_s": None}, "engines": {0: {"running": "1"}}}])
    assert value("interval()", lone, 0, "endpoint") == [10]  # vLLM's default


def test_deployment_scope():
    assert value("peer_sum('*', engines())", V, 40, "deployment") == [3]
    assert value("fact('concurrency') / peer_sum('decode', engines())", V, 40, "deployment") == [32]
    assert value("count_events('kv_expired', 1m)", V, 40, "deployment") == [2]
    assert value("interval()", V, 40, "deployment") == [10]


def test_empty_deployment():
    empty = view([])
    assert value("peer_max('*', avg(running, 1m))", empty, 0, "deployment") == [None]
    assert value("avg(running, 1m)", empty, 0, "endpoint") == []
