"""scrape: a real local HTTP server, several engines, a counter reset, a missing metric."""

from __future__ import annotations

import socket
import sys
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from metrics_server import serve  # noqa: E402

from pdwatch.events.recorded import split_scrapes  # noqa: E402
from pdwatch.events.scraper import MetricsScraper  # noqa: E402
from pdwatch.sources.http import ScrapeError, fetch  # noqa: E402
from pdwatch.sources.urls import normalize_url  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 11, 29, 9, 0, 0, tzinfo=timezone.utc)


def body(prompt: dict[int, float], running: dict[int, int], kv: bool = True) -> str:
    out = ["# HELP vllm:num_requests_running Number of requests in model execution batches.",
           "# TYPE vllm:num_requests_running gauge"]
    out += [f'vllm:num_requests_running{{engine="{e}",model_name="m"}} {r}' for e, r in running.items()]
    out += ["# TYPE vllm:num_requests_waiting gauge"]
    out += [f'vllm:num_requests_waiting{{engine="{e}",model_name="m"}} 1.0' for e in running]
    if kv:
        out += ["# TYPE vllm:kv_cache_usage_perc gauge"]
        out += [f'vllm:kv_cache_usage_perc{{engine="{e}",model_name="m"}} 0.5' for e in running]
    out += ["# HELP vllm:prompt_tokens_total Number of prefill tokens processed.", "# TYPE vllm:prompt_tokens_total counter"]
    out += [f'vllm:prompt_tokens_total{{engine="{e}",model_name="m"}} {v}' for e, v in prompt.items()]
    return "\n".join(out) + "\n"


class StepClock:
    def __init__(self, step: float = 2.0) -> None:
        self.t, self.step = T0 - timedelta(seconds=step), step

    def __call__(self) -> datetime:
        self.t += timedelta(seconds=self.step)
        return self.t


def test_normalize_url():
    assert normalize_url("127.0.0.1:8000") == "http://127.0.0.1:8000/metrics"
    assert normalize_url("http://h:1/") == "http://h:1/metrics"
    assert normalize_url("http://h:1/custom") == "http://h:1/custom"
    with pytest.raises(ValueError):
        normalize_url("file:///etc/passwd")


def test_scrapes_several_engines_reset_and_missing_metric():
    bodies = [body({0: 100, 1: 1000}, {0: 2, 1: 3}),
              body({0: 300, 1: 1400}, {0: 4, 1: 5}),
              body({0: 500, 1: 20}, {0: 1, 1: 0}, kv=False)]  # engine 1 restarted; kv metric gone
    with serve(bodies) as (base, server):
        scraper = MetricsScraper([base], interval=0.01, timeout=2, clock=StepClock())
        first, second, third = scraper.poll(), scraper.poll(), scraper.poll()
    url = base + "/metrics"
    assert [(e.source, e.engine, e.line_no) for e in first] == [(url, 0, 1), (url, 1, 1)]
    assert [e.values["prompt_tps"] for e in first] == [None, None]
    assert [e.values["running"] for e in second] == [4, 5]
    assert [e.values["prompt_tps"] for e in second] == [100.0, 200.0]
    assert [e.values.get("prompt_tps") for e in third] == [100.0, None]  # reset: no negative rate
    assert all("kv_usage_pct" not in e.values for e in third)
    assert second[0].values["kv_usage_pct"] == 50.0
    assert scraper.status[url].up and scraper.status[url].scrapes == 3


def test_serves_simulator_exposition():
    path = REPO / "samples" / "kv-exhausted" / "metrics" / "gb200-n005_decode_w0.metrics.txt"
    scrapes = split_scrapes(path.read_text())
    with serve([s.body for s in scrapes]) as (base, _):
        scraper = MetricsScraper([base], timeout=2, clock=StepClock(50.0))
        polls = [scraper.poll() for _ in scrapes]
    engines = {e.engine for e in polls[0]}
    assert len(engines) > 1
    assert all(e.values["prompt_tps"] is not None for e in polls[1])
    assert max(e.values["kv_usage_pct"] for e in polls[-1]) > 50  # the scenario exhausts the KV cache


def test_unreachable_and_bad_sources_are_reported_not_fatal():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/metrics"
    with serve(["this is { not prometheus\n"]) as (bad, _), serve([body({0: 1}, {0: 1})]) as (good, _):
        scraper = MetricsScraper([dead, bad, good], timeout=2)
        events = scraper.poll()
        assert [e.source for e in events] == [good + "/metrics"]
        assert not scraper.status[dead].up and scraper.status[dead].error
        assert not scraper.status[bad + "/metrics"].up and "Prometheus" in scraper.status[bad + "/metrics"].error
        with pytest.raises(ScrapeError):
            fetch(bad + "/nothing", timeout=2)


def test_run_polls_until_duration_or_stop():
    with serve([body({0: 1}, {0: 1})]) as (base, server):
        batches = []
        MetricsScraper([base], interval=0.05, timeout=2).run(batches.append, duration=0.3)
        assert 3 <= len(batches) <= 10
        stop = threading.Event()
        stopped = []
        def on_events(events):
            stopped.append(events)
            stop.set()
        MetricsScraper([base], interval=10, timeout=2).run(on_events, stop=stop)
        assert len(stopped) == 1
