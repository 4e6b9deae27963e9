"""recorded: scrape files -> events; the real vLLM 0.32 scrapes agree with the stats lines of their logs."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pdwatch.parsers import LogScanner
from pdwatch.parsers.events import KINDS
from pdwatch.events.recorded import read_recorded, read_recorded_text, split_scrapes
from pdwatch.model.store import Store

from tests.conftest import CPU_LOGS as CPU, REPO
INTERVAL_S = 2.0  # VLLM_LOG_STATS_INTERVAL=2 in every run
SLACK_S = 1.0  # log timestamps are whole seconds

# scenario -> {port or None: log}; s10b's file holds the scrapes of two servers
SCENARIOS = {
    "s2_seqs4": {None: "s2_seqs4.log"},
    "s4_prefix_cache_on": {None: "s4_prefix_cache_on.log"},
    "s8_spec_ngram": {None: "s8_spec_ngram.log"},
    "s9b_qwen3next_hybrid_hd128": {None: "s9b_qwen3next_hybrid_hd128.log"},
    "s10b_pd_example_connector_short_prompts": {8421: "s10b_pd_example_connector_short_prompts.prefill.log",
                                                8422: "s10b_pd_example_connector_short_prompts.decode.log"},
}


def log_stats(name: str):
    path = CPU / name
    scanner = LogScanner(str(path), year=2026)
    events = scanner.feed(path.read_bytes(), 1) + scanner.finish()
    return [e for e in events if e.kind == "stats"]


def compare(scenario: str):
    """(scrape event, stats lines bracketing it, nearest stats line) for every scrape of the scenario."""
    metrics_path = CPU / f"{scenario}.metrics.txt"
    events, errors = read_recorded(metrics_path)
    assert errors == []
    logs = {port: log_stats(name) for port, name in SCENARIOS[scenario].items()}
    out = []
    for ev in events:
        port = int(ev.source.rsplit("#port=", 1)[1]) if "#port=" in ev.source else None
        lines = logs[port]
        window = timedelta(seconds=INTERVAL_S + SLACK_S)
        near = [s for s in lines if abs(s.ts - ev.ts) <= window]
        before = [s for s in lines if s.ts < ev.ts - window]
        # a quiet engine prints nothing: its last line before the window still holds, and an
        # engine that has printed no line yet has served nothing (all zero)
        start = [{"running": 0, "waiting": 0, "kv_usage_pct": 0.0}]
        bracket = [s.values for s in near] + ([before[-1].values] if before else start)
        nearest = min(lines, key=lambda s: abs(s.ts - ev.ts))
        out.append((ev, bracket, nearest))
    return out


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_real_scrape_gauges_match_stats_lines_within_one_interval(scenario):
    rows = compare(scenario)
    assert len(rows) == len(split_scrapes((CPU / f"{scenario}.metrics.txt").read_text()))
    for ev, bracket, nearest in rows:
        where = f"{ev.source}:{ev.line_no}"
        assert set(ev.values) <= set(KINDS["stats"]), where
        if "mid-load-phase" in ev.text:  # under load vLLM prints every interval
            assert abs(nearest.ts - ev.ts) <= timedelta(seconds=INTERVAL_S + SLACK_S), where
        else:  # the end of an idle phase: either a line nearby, or the all-zero line before a quiet spell
            assert bracket, where
        for key, tol in (("running", 0), ("waiting", 0), ("kv_usage_pct", 0.05)):  # the log rounds KV to 0.1 %
            seen = [values[key] for values in bracket]
            assert min(seen) - tol <= ev.values[key] <= max(seen) + tol, (where, key, ev.values[key], seen)


def scrape_sources(scenario: str):
    """(scrape events of one server, that server's stats lines), per server of the scenario."""
    events, errors = read_recorded(CPU / f"{scenario}.metrics.txt")
    assert errors == []
    by_source: dict[str, list] = {}
    for ev in events:
        by_source.setdefault(ev.source, []).append(ev)
    for source, scrapes in by_source.items():
        port = int(source.rsplit("#port=", 1)[1]) if "#port=" in source else None
        yield scrapes, log_stats(SCENARIOS[scenario][port])


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("key", ["prompt_tps", "gen_tps"])
def test_real_scrape_rates_add_up_to_the_tokens_of_the_stats_lines(scenario, key):
    """From the first scrape (end of an idle phase) to the last one (idle again), the tokens the counter
    rates account for equal the tokens the stats lines report (rate x interval, summed).

    Tolerance: 0.05 tokens/s per line (printed to one decimal) x the interval; 0.1 % because vLLM's
    interval runs a little longer than VLLM_LOG_STATS_INTERVAL (the stats call itself); and the tokens
    of the lines stamped within a second of either scrape, which may fall on either side of it (the log
    stamps whole seconds). Prompt tokens are the locally computed ones, as the log counts them since
    vLLM 0.16: ``prompt_tokens_total`` would count the 30,208 prefix-cache hits of s4 and the prompts
    s10b's decode server received from prefill.
    """
    for scrapes, lines in scrape_sources(scenario):
        first, last = scrapes[0], scrapes[-1]
        from_counters = sum(b.values[key] * (b.ts - a.ts).total_seconds() for a, b in zip(scrapes, scrapes[1:]))
        inside = [s for s in lines if first.ts < s.ts <= last.ts]
        from_lines = INTERVAL_S * sum(s.values[key] for s in inside)
        at_the_ends = [s for s in lines
                       if min(abs(s.ts - first.ts), abs(s.ts - last.ts)) <= timedelta(seconds=SLACK_S)]
        tolerance = (0.05 * INTERVAL_S * len(inside) + 0.001 * from_counters
                     + INTERVAL_S * sum(s.values[key] for s in at_the_ends))
        assert from_counters > 0
        assert abs(from_counters - from_lines) <= tolerance, (first.source, key, from_counters, from_lines, tolerance)


def test_real_scrape_figures_from_the_readme():
    events, _ = read_recorded(CPU / "s2_seqs4.metrics.txt")
    high = events[2]
    assert (high.values["running"], high.values["waiting"]) == (4, 38)
    assert high.values["kv_usage_pct"] == pytest.approx(0.2, abs=0.05)  # README: kv_cache_usage_perc 0.002
    assert high.values["gen_tps"] > 1000  # 55k output tokens in 13 s
    events, _ = read_recorded(CPU / "s9b_qwen3next_hybrid_hd128.metrics.txt")
    assert (events[2].values["running"], events[2].values["waiting"]) == (16, 16)
    assert events[2].values["kv_usage_pct"] == pytest.approx(3.4, abs=0.05)
    events, _ = read_recorded(CPU / "s10b_pd_example_connector_short_prompts.metrics.txt")
    decode_high = [e for e in events if e.source.endswith("#port=8422")][2]
    assert decode_high.values["running"] == 15 and decode_high.line_no == 3030


def test_first_scrape_has_no_rate_later_ones_do():
    events, _ = read_recorded(CPU / "s2_seqs4.metrics.txt")
    assert events[0].values["prompt_tps"] is None
    assert all(e.values["prompt_tps"] is not None and e.values["prompt_tps"] >= 0 for e in events[1:])
    assert [e.line_no for e in events] == [1, 588, 1198, 1808]
    assert [e.ts.isoformat() for e in events][0] == "2026-11-29T09:01:23.362000+00:00"


def test_several_ports_get_their_own_source():
    events, _ = read_recorded(CPU / "s10b_pd_example_connector_short_prompts.metrics.txt")
    assert {e.source.rsplit("#", 1)[1] for e in events} == {"port=8421", "port=8422"}
    # each server's counters are its own: no reset (None) after the first scrape of each port
    for port in ("8421", "8422"):
        mine = [e for e in events if e.source.endswith(port)]
        assert mine[0].values["gen_tps"] is None and all(e.values["gen_tps"] is not None for e in mine[1:])


def test_simulator_samples_feed_the_store():
    store = Store()
    for path in sorted((REPO / "samples" / "prefill-bound" / "metrics").glob("*.metrics.txt")):
        events, errors = read_recorded(path, source=str(path))
        assert errors == [] and events
        store.add(events)
    view = store.view()
    names = {ep.name for ep in view.endpoints}
    assert any("decode" in n for n in names) and any("prefill" in n for n in names)
    decode = next(ep for ep in view.endpoints if "decode" in ep.name)
    assert decode.role == "decode" and len(decode.engines) == 8
    assert decode.stats["running"].max() > 0


def test_malformed_scrape_is_skipped_and_reported():
    text = ("# ===== a t=1780000000.000 (2026-05-28T20:26:40.000Z) port=1 =====\n"
            'vllm:num_requests_running{engine="0"} 1\n'
            "# ===== b t=1780000002.000 (2026-05-28T20:26:42.000Z) port=1 =====\n"
            'vllm:num_requests_running{engine="0" 1\n'
            "# ===== c t=1780000004.000 (2026-05-28T20:26:44.000Z) port=1 =====\n"
            'vllm:num_requests_running{engine="0"} 3\n')
    events, errors = read_recorded_text(text, "f.metrics.txt")
    assert [e.values["running"] for e in events] == [1, 3]
    assert [e.line_no for e in events] == [1, 5]
    assert len(errors) == 1 and errors[0].startswith("f.metrics.txt:3:")


def test_header_without_port_and_text_before_first_header():
    text = "junk\n# ===== record t=1780000000.5 (x) =====\nvllm:num_requests_waiting 2\n"
    (scrape,) = split_scrapes(text)
    assert scrape.port is None and scrape.line_no == 2 and scrape.ts.timestamp() == 1780000000.5


def test_prefix_cache_hit_rate_from_a_real_servers_scrapes():
    """vLLM 0.32 with prefix caching on: unique prompts, then prompts sharing 512 tokens. The
    scrapes' counters give each interval's hit rate; over the whole run they give the log's own
    last (cumulative) "Prefix cache hit rate"."""
    import re
    from pdwatch.parsers.exposition import parse_samples
    events, errors = read_recorded(str(CPU / "s4_prefix_cache_on.metrics.txt"))
    scrapes = [e for e in events if e.kind == "stats"]
    assert not errors
    rates = [e.values["prefix_hit_pct"] for e in scrapes]
    assert rates[0] is None and rates[1] == 0.0  # no interval yet; the unique prompts hit nothing
    assert all(r > 50 for r in rates[2:]) and len(rates) == 4  # the shared prefixes hit
    last_page = split_scrapes((CPU / "s4_prefix_cache_on.metrics.txt").read_text())[-1].body
    totals = {name: value for name, _, value in parse_samples(last_page)}
    whole_run = 100 * totals["vllm:prefix_cache_hits_total"] / totals["vllm:prefix_cache_queries_total"]
    logged = re.findall(r"Prefix cache hit rate: ([\d.]+)%", (CPU / "s4_prefix_cache_on.log").read_text())
    assert whole_run == pytest.approx(float(logged[-1]), abs=0.05)
