"""One simulated run seen twice: through its logs, and through /metrics scraped over HTTP.

The simulator writes the logs of a kv-exhausted run and, at the same ticks, the expositions
each endpoint would serve (``LogOptions.metrics_interval``). A real HTTP server on 127.0.0.1
per endpoint serves those expositions one scrape after another; ``MetricsScraper`` scrapes
them and ``pdwatch record``'s ``record_once`` saves them, named after each endpoint's log.
``analyse`` then reads (a) the logs as written, and (b) the same logs with every stats line
removed plus the recording, the way a deployment with stats logging off is diagnosed. The
per-engine series and the findings of (b) must equal those of (a).

Stats lines and scrapes share one grid (every second, at the same simulated ticks), so a
scrape's counter rate covers exactly the interval the log line averages over. What is left
are the roundings, hence the tolerances:
- running, waiting: exact (the same integers of the same state);
- KV usage: 0.05 points (the log prints one decimal of a percent);
- prompt/generation tokens/s: 0.05 (one printed decimal) + 1 token / interval (vLLM's
  counters hold whole tokens, so each counter of the simulator's fluid model is floored, and a
  difference of two floored counts is off by less than one token).

Two accidents of real scraping are added to the served expositions: decode_w0's server
restarts (its ``_total`` counters start again from zero: that scrape has no rate, never a
negative one, and the next one is exact again), and one prefill_w0 scrape lacks
``vllm:kv_cache_usage_perc`` (that row has no KV value; the others are unaffected).
"""

from __future__ import annotations

import math
import shutil
from contextlib import ExitStack
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest
import regex

from pdwatch.session.analysis import Analysis, analyse
from pdwatch.commands.record import record_once
from pdwatch.events.recorded import read_recorded_text, split_scrapes
from pdwatch.events.scraper import MetricsScraper
from pdwatch.sim import LogOptions, run
from pdwatch.sim.scenarios import SCENARIOS, START
from tests.metrics.metrics_server import serve

SCENARIO = SCENARIOS["kv-exhausted"]  # fires kv_exhausted (critical) and capacity (info) on decode
INTERVAL_S = 1.0  # VLLM_LOG_STATS_INTERVAL and the scrape interval: one grid
RESTARTED = ("decode_w0", 150)  # endpoint, index of the first scrape after its server restarted
KV_GAUGE_MISSING = ("prefill_w0", 120)  # endpoint, index of the scrape without the KV gauge
KV_TOLERANCE = 0.05
RATE_TOLERANCE = 0.05 + 1.0 / INTERVAL_S
STATS_LINE = "Avg prompt throughput:"
_COUNTER_SAMPLE = regex.compile(r"^(?P<series>vllm:\w+_total(?:\{[^}]*\})?) (?P<value>\S+)$", regex.M)


# --- the run, served and scraped -------------------------------------------------------------------


def endpoint_name(path: Path) -> str:
    """``gb200-n005_decode_w0.metrics.txt`` -> ``decode_w0`` (srt-slurm names)."""
    return "_".join(path.name.split(".")[0].split("_")[-2:])


def counters(body: str) -> dict[str, float]:
    return {m["series"]: float(m["value"]) for m in _COUNTER_SAMPLE.finditer(body)}


def restarted(body: str, baseline: dict[str, float]) -> str:
    """The exposition of a server restarted when its counters stood at ``baseline``: they count from zero."""
    def since_restart(m: regex.Match) -> str:
        return f"{m['series']} {float(m['value']) - baseline.get(m['series'], 0.0)}"
    return _COUNTER_SAMPLE.sub(since_restart, body)


def without_kv_gauge(body: str) -> str:
    return "".join(line for line in body.splitlines(keepends=True) if "vllm:kv_cache_usage_perc" not in line)


def served_bodies(endpoint: str, scrapes: list) -> list[str]:
    bodies = [s.body for s in scrapes]
    if endpoint == RESTARTED[0]:
        at = RESTARTED[1]
        baseline = counters(bodies[at - 1])
        bodies[at:] = [restarted(b, baseline) for b in bodies[at:]]
    if endpoint == KV_GAUGE_MISSING[0]:
        bodies[KV_GAUGE_MISSING[1]] = without_kv_gauge(bodies[KV_GAUGE_MISSING[1]])
    return bodies


def scrape_over_http(sim_metrics: Path, record_dir: Path) -> None:
    """Serve each endpoint's expositions on 127.0.0.1, scrape them all every round, record them."""
    files = sorted(sim_metrics.glob("*.metrics.txt"))
    scrapes = {path: split_scrapes(path.read_text()) for path in files}
    times = [s.ts for s in scrapes[files[0]]]
    assert all([s.ts for s in rows] == times for rows in scrapes.values())  # every endpoint lives all run
    scrape_time: list[datetime] = [times[0]]
    with ExitStack() as stack:
        urls = {path: stack.enter_context(serve(served_bodies(endpoint_name(path), scrapes[path])))[0]
                for path in files}
        # The simulation ran fast-forward: each scrape is stamped with its simulated time.
        scraper = MetricsScraper(list(urls.values()), timeout=5, clock=lambda: scrape_time[0])
        record_files = {url + "/metrics": record_dir / path.name for path, url in urls.items()}
        for when in times:
            scrape_time[0] = when
            record_once(scraper, record_files)
        assert all(status.up and status.scrapes == len(times) for status in scraper.status.values())


@pytest.fixture(scope="module")
def two_views(tmp_path_factory) -> tuple[Analysis, Analysis]:
    logs = tmp_path_factory.mktemp("simulated")
    run(SCENARIO.config, logs, LogOptions(style=SCENARIO.style, noise="quiet", interval=INTERVAL_S, start=START,
                                           metrics_interval=INTERVAL_S, scenario=SCENARIO.name))
    metrics_view = tmp_path_factory.mktemp("stats_from_metrics")
    for log in logs.glob("*.out"):  # the same logs, as a server with stats logging off writes them
        kept = [line for line in log.read_text().splitlines(keepends=True) if STATS_LINE not in line]
        (metrics_view / log.name).write_text("".join(kept))
    scrape_over_http(logs / "metrics", metrics_view)
    shutil.rmtree(logs / "metrics")  # view (a) is the logs alone
    return analyse([str(logs)]), analyse([str(metrics_view)])


# --- series ------------------------------------------------------------------------------------------


def paired_rows(from_logs: Analysis, from_metrics: Analysis, endpoint: str) -> pd.DataFrame:
    """Each log stats line next to the scrape of the same engine at the same tick (``_m`` columns)."""
    log = from_logs.store.stats(endpoint).sort_values("ts")
    scraped = from_metrics.store.stats(endpoint).sort_values("ts")
    # Dynamo stamps an engine's line a few microseconds after the tick (one burst per endpoint).
    return pd.merge_asof(log, scraped, on="ts", by="engine", suffixes=("", "_m"),
                         tolerance=pd.Timedelta(milliseconds=100), direction="nearest")


def stats_endpoints(analysis: Analysis) -> list[str]:
    return [e.name for e in analysis.store.endpoints() if e.role in ("prefill", "decode")]


def test_both_views_see_the_same_endpoints_and_engines(two_views):
    from_logs, from_metrics = two_views
    assert stats_endpoints(from_logs) == stats_endpoints(from_metrics) and len(stats_endpoints(from_logs)) == 9
    for name in stats_endpoints(from_logs):
        assert from_metrics.store.model.endpoints[name].facts.get("stats_from_metrics") is True
        assert "stats_from_metrics" not in from_logs.store.model.endpoints[name].facts
        assert set(from_logs.store.stats(name)["engine"]) == set(from_metrics.store.stats(name)["engine"])


@pytest.mark.parametrize("field,tolerance", [("running", 0.0), ("waiting", 0.0), ("kv_usage_pct", KV_TOLERANCE),
                                             ("prompt_tps", RATE_TOLERANCE), ("gen_tps", RATE_TOLERANCE)])
def test_every_stats_line_equals_the_scrape_of_its_tick(two_views, field, tolerance):
    from_logs, from_metrics = two_views
    compared = 0
    for endpoint in stats_endpoints(from_logs):
        rows = paired_rows(from_logs, from_metrics, endpoint)
        assert rows["source_m"].notna().all(), f"{endpoint}: a stats line without a scrape at its tick"
        known = rows[rows[field + "_m"].notna()]
        # no value: the first scrape's rates, the rates after the restart, the scrape without the KV gauge
        assert len(rows) - len(known) <= 2 * rows["engine"].nunique()
        diff = (known[field] - known[field + "_m"]).abs()
        worst = known.loc[diff.idxmax()] if len(diff) else None
        assert diff.max() <= tolerance + 1e-9, (endpoint, field, worst[["ts", "engine", field, field + "_m"]].to_dict())
        compared += len(known)
    assert compared > 4000  # 24 engines x 200 s


def test_decode_prompt_throughput_is_local_compute_as_in_the_log(two_views):
    """Since vLLM 0.16 the log counts locally computed prompt tokens only (on this decode endpoint: the
    prompts it recomputes after preemptions), while ``prompt_tokens_total`` also counts the prompts
    received from prefill; the scrape's ``prompt_tokens_by_source_total{source="local_compute"}`` is
    what matches the log (the equality itself is checked above)."""
    from_logs, from_metrics = two_views
    (recording,) = (s for s in from_metrics.metrics_files if s.endswith("_decode_w0.metrics.txt"))
    text = Path(recording).read_text()
    without_by_source = "".join(line for line in text.splitlines(keepends=True)
                                if "prompt_tokens_by_source" not in line)
    every_prompt_token, _ = read_recorded_text(without_by_source, "decode")
    all_prompts = sum(e.values["prompt_tps"] or 0.0 for e in every_prompt_token)
    computed_here = from_logs.store.stats("decode_w0")["prompt_tps"].sum()
    assert computed_here > 0 and all_prompts > 2 * computed_here


def test_a_restart_costs_one_rate_and_a_missing_gauge_one_value(two_views):
    _, from_metrics = two_views
    decode = from_metrics.store.stats("decode_w0").sort_values(["ts", "engine"])
    by_tick = [frame for _, frame in decode.groupby("ts")]
    after_restart = by_tick[RESTARTED[1]]
    assert after_restart["gen_tps"].isna().all() and after_restart["running"].notna().all()
    assert (by_tick[RESTARTED[1] + 1]["gen_tps"] > 0).all()  # the new baseline gives the next rate
    assert (decode["gen_tps"].dropna() >= 0).all()
    prefill = from_metrics.store.stats("prefill_w0")
    by_tick = [frame for _, frame in prefill.groupby("ts")]
    assert by_tick[KV_GAUGE_MISSING[1]]["kv_usage_pct"].isna().all()
    assert by_tick[KV_GAUGE_MISSING[1]]["running"].notna().all()
    assert prefill["kv_usage_pct"].isna().sum() == len(by_tick[0])


# --- findings ----------------------------------------------------------------------------------------


def finding_keys(analysis: Analysis) -> list[tuple]:
    return [(f.rule, f.endpoint, tuple(f.engines), f.severity, f.start, f.end) for f in analysis.findings]


def test_findings_are_the_same(two_views):
    from_logs, from_metrics = two_views
    assert {"kv_exhausted", "capacity"} <= {f.rule for f in from_logs.findings}
    assert finding_keys(from_metrics) == finding_keys(from_logs)
    for seen_in_logs, seen_in_metrics in zip(from_logs.findings, from_metrics.findings):
        if seen_in_logs.value is not None:  # the value is read from the stats: same within the tolerances
            assert math.isclose(seen_in_logs.value, seen_in_metrics.value, rel_tol=1e-3, abs_tol=RATE_TOLERANCE)
