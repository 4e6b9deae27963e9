"""exposition: vLLM /metrics text -> the stats events the logs produce."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from pdwatch.parsers.events import KINDS
from pdwatch.parsers.exposition import CounterState, ExpositionError, events_from_exposition

T0 = datetime(2026, 11, 29, 9, 0, 0, tzinfo=timezone.utc)


def expo(engines: dict[int, dict[str, float]], *, old_kv: bool = False, model: str = "m") -> str:
    lines = []
    for name, kind in (("vllm:num_requests_running", "gauge"), ("vllm:num_requests_waiting", "gauge"),
                       ("vllm:gpu_cache_usage_perc" if old_kv else "vllm:kv_cache_usage_perc", "gauge"),
                       ("vllm:prompt_tokens_total", "counter"), ("vllm:generation_tokens_total", "counter"),
                       ("vllm:num_preemptions_total", "counter")):
        short = name.removeprefix("vllm:").removesuffix("_total").replace("gpu_cache", "kv_cache")
        present = [(e, v[short]) for e, v in engines.items() if short in v]
        if not present:
            continue
        lines.append(f"# TYPE {name} {kind}")
        lines += [f'{name}{{engine="{e}",model_name="{model}"}} {x}' for e, x in present]
    return "\n".join(lines) + "\n"


def one(engines, ts=T0, state=None, **kw):
    return events_from_exposition(expo(engines, **kw), source="srv", ts=ts, line_no=7, state=state)


def test_gauges_and_envelope():
    (ev,) = one({0: {"num_requests_running": 4, "num_requests_waiting": 38, "kv_cache_usage_perc": 0.25,
                     "prompt_tokens": 100, "generation_tokens": 50, "num_preemptions": 0}})
    assert (ev.kind, ev.source, ev.line_no, ev.ts, ev.engine, ev.level) == ("stats", "srv", 7, T0, 0, None)
    assert ev.values == {"running": 4, "waiting": 38, "kv_usage_pct": 25.0, "prompt_tps": None, "gen_tps": None}
    assert set(ev.values) <= set(KINDS["stats"])


def test_rates_between_scrapes_and_preemptions():
    state = CounterState()
    one({0: {"prompt_tokens": 100, "generation_tokens": 50, "num_preemptions": 2}}, state=state)
    (ev,) = one({0: {"prompt_tokens": 1100, "generation_tokens": 250, "num_preemptions": 5}},
                ts=T0 + timedelta(seconds=4), state=state)
    assert ev.values["prompt_tps"] == pytest.approx(250.0)
    assert ev.values["gen_tps"] == pytest.approx(50.0)
    assert ev.values["preemptions"] == 3


def test_counter_reset_restarts_from_new_value_never_negative():
    state = CounterState()
    one({0: {"prompt_tokens": 5000, "generation_tokens": 900, "num_preemptions": 4}}, state=state)
    (reset,) = one({0: {"prompt_tokens": 40, "generation_tokens": 10, "num_preemptions": 0}},
                   ts=T0 + timedelta(seconds=2), state=state)
    assert reset.values["prompt_tps"] is None and reset.values["gen_tps"] is None
    assert "preemptions" not in reset.values
    (after,) = one({0: {"prompt_tokens": 240, "generation_tokens": 30, "num_preemptions": 1}},
                   ts=T0 + timedelta(seconds=4), state=state)
    assert after.values["prompt_tps"] == pytest.approx(100.0)
    assert after.values["gen_tps"] == pytest.approx(10.0)
    assert after.values["preemptions"] == 1


def test_several_engines_are_separate_series():
    state = CounterState()
    first = one({0: {"num_requests_running": 1, "prompt_tokens": 0}, 1: {"num_requests_running": 2, "prompt_tokens": 0}},
                state=state)
    assert [e.engine for e in first] == [0, 1]
    second = one({0: {"prompt_tokens": 10}, 1: {"prompt_tokens": 30}}, ts=T0 + timedelta(seconds=1), state=state)
    assert [e.values["prompt_tps"] for e in second] == [10.0, 30.0]


def test_same_counter_two_sources_do_not_mix():
    state = CounterState()
    events_from_exposition(expo({0: {"prompt_tokens": 100}}), source="a", ts=T0, state=state)
    (b,) = events_from_exposition(expo({0: {"prompt_tokens": 5}}), source="b", ts=T0 + timedelta(seconds=1), state=state)
    assert b.values["prompt_tps"] is None  # b's first scrape, not a reset of a's counter


def test_missing_metric_leaves_key_out_and_old_kv_name():
    (ev,) = one({0: {"num_requests_running": 3, "kv_cache_usage_perc": 0.5}}, old_kv=True)
    assert ev.values == {"running": 3, "kv_usage_pct": 50.0}


def test_newer_kv_name_wins_when_both_exposed():
    text = ('vllm:gpu_cache_usage_perc{engine="0"} 0.9\n'
            'vllm:kv_cache_usage_perc{engine="0"} 0.1\n')
    (ev,) = events_from_exposition(text, source="s", ts=T0)
    assert ev.values["kv_usage_pct"] == pytest.approx(10.0)


def test_no_engine_label_is_engine_none_and_unrelated_metrics_ignored():
    text = "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 2\nother_metric 5\n"
    (ev,) = events_from_exposition(text, source="s", ts=T0)
    assert ev.engine is None and ev.values == {"running": 2}
    assert events_from_exposition("other_metric 5\n", source="s", ts=T0) == []


def test_clock_not_moving_gives_no_rate_and_late_scrape_keeps_baseline():
    state = CounterState()
    one({0: {"prompt_tokens": 100}}, state=state, ts=T0 + timedelta(seconds=10))
    (same,) = one({0: {"prompt_tokens": 200}}, state=state, ts=T0 + timedelta(seconds=10))
    assert same.values["prompt_tps"] is None
    (late,) = one({0: {"prompt_tokens": 150}}, state=state, ts=T0)
    assert late.values["prompt_tps"] is None
    (nxt,) = one({0: {"prompt_tokens": 300}}, state=state, ts=T0 + timedelta(seconds=11))
    assert nxt.values["prompt_tps"] == pytest.approx(100.0)


def test_garbage_raises_exposition_error():
    with pytest.raises(ExpositionError):
        events_from_exposition('vllm:num_requests_running{engine="0" 1\n', source="s", ts=T0)


def _prefix_page(queries: float | None, hits: float | None, *, old: bool = False, also_old: tuple | None = None) -> str:
    """A page with the prefix cache's counters (tokens) of engine 0, vLLM's names or the older gpu_ ones."""
    lines = ['vllm:num_requests_running{engine="0",model_name="m"} 1']
    for prefix, pair in (("gpu_" if old else "", (queries, hits)), ("gpu_", also_old or (None, None))):
        for what, value in zip(("queries", "hits"), pair):
            if value is not None:
                lines += [f"# TYPE vllm:{prefix}prefix_cache_{what} counter",
                          f'vllm:{prefix}prefix_cache_{what}_total{{engine="0",model_name="m"}} {value}']
    return "\n".join(lines) + "\n"


def _hit_pcts(pages: list[str]) -> list:
    state = CounterState()
    return [events_from_exposition(page, source="srv", ts=T0 + timedelta(seconds=10 * i), state=state)[0]
            .values.get("prefix_hit_pct", "absent") for i, page in enumerate(pages)]


def test_prefix_cache_hit_rate_is_the_intervals_hits_over_its_queries():
    # first scrape: no interval yet; then 1000 tokens looked up, 250 hit; then none looked up
    assert _hit_pcts([_prefix_page(500, 100), _prefix_page(1500, 350), _prefix_page(1500, 350)]) == [None, 25.0, None]
    # vLLM <= 0.10 names them gpu_prefix_cache_*; when both are exposed the newer names win
    assert _hit_pcts([_prefix_page(0, 0, old=True), _prefix_page(400, 100, old=True)]) == [None, 25.0]
    assert _hit_pcts([_prefix_page(0, 0, also_old=(0, 0)), _prefix_page(400, 300, also_old=(400, 0))]) == [None, 75.0]
    # a reset (the counter went down) gives no rate; one counter of the two missing is unknown, not 0%
    assert _hit_pcts([_prefix_page(900, 90), _prefix_page(100, 10)]) == [None, None]
    assert _hit_pcts([_prefix_page(100, None), _prefix_page(500, None)]) == [None, None]
    # no prefix cache counters at all: the key is absent, as for any missing metric
    assert _hit_pcts([_prefix_page(None, None), _prefix_page(None, None)]) == ["absent", "absent"]


def test_external_prefix_cache_hit_rate_from_the_connectors_counters():
    def page(queries: int, hits: int) -> str:
        return ('vllm:num_requests_running{engine="0"} 1\n'
                f'vllm:external_prefix_cache_queries_total{{engine="0"}} {queries}\n'
                f'vllm:external_prefix_cache_hits_total{{engine="0"}} {hits}\n')
    state = CounterState()
    first, second = (events_from_exposition(p, source="srv", ts=T0 + timedelta(seconds=10 * i), state=state)[0]
                     for i, p in enumerate([page(100, 0), page(500, 100)]))
    assert first.values["external_prefix_hit_pct"] is None and second.values["external_prefix_hit_pct"] == 25.0
    assert "prefix_hit_pct" not in second.values  # the local cache's counters are not on this page
