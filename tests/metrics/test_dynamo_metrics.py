"""A Dynamo frontend's /metrics (dynamo_frontend_*) as the frontend's stats: TTFT, ITL, ISL/OSL, load.

The pages are made by prometheus_client, the library Dynamo's Python side and vLLM use, with
the metric names of Dynamo's lib/runtime/src/metrics/prometheus_names.rs (frontend_service).
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from pdwatch.parsers.exposition import CounterState, events_from_exposition

T0 = datetime(2026, 5, 29, 14, 0, 0, tzinfo=timezone.utc)


class Frontend:
    """A Dynamo frontend's metrics, driven by hand."""

    def __init__(self) -> None:
        self.registry = r = CollectorRegistry()
        labels = ["model"]
        self.ttft = Histogram("dynamo_frontend_time_to_first_token_seconds", "TTFT", labels, registry=r,
                              buckets=[0.1, 0.5, 1, 2, 5, 10])
        self.itl = Histogram("dynamo_frontend_inter_token_latency_seconds", "ITL", labels, registry=r,
                             buckets=[0.005, 0.01, 0.02, 0.05, 0.1])
        self.isl = Histogram("dynamo_frontend_input_sequence_tokens", "ISL", labels, registry=r,
                             buckets=[1024, 4096, 8192, 16384])
        self.osl = Histogram("dynamo_frontend_output_sequence_tokens", "OSL", labels, registry=r,
                             buckets=[256, 1024, 4096])
        self.requests = Counter("dynamo_frontend_requests", "requests", ["model", "endpoint", "request_type",
                                                                         "status"], registry=r)
        self.inflight = Gauge("dynamo_frontend_inflight_requests", "in flight", labels, registry=r)
        self.queued = Gauge("dynamo_frontend_queued_requests", "queued", labels, registry=r)

    def serve(self, requests: int, ttft: float, itl: float, inflight: int, queued: int) -> None:
        for _ in range(requests):
            self.ttft.labels("m").observe(ttft)
            self.itl.labels("m").observe(itl)
            self.isl.labels("m").observe(8192)
            self.osl.labels("m").observe(1024)
            self.requests.labels("m", "chat_completions", "stream", "success").inc()
        self.inflight.labels("m").set(inflight)
        self.queued.labels("m").set(queued)

    def page(self) -> str:
        return generate_latest(self.registry).decode()


def frontend_rows(pages: list[str]) -> list[dict]:
    state = CounterState()
    out = []
    for i, page in enumerate(pages):
        events = events_from_exposition(page, source="http://fe:8000/metrics", ts=T0 + timedelta(seconds=10 * i),
                                        line_no=i + 1, state=state)
        assert [e.kind for e in events] == ["role_hint", "stats"]  # a frontend page: no vLLM engine rows
        assert events[0].values == {"role": "frontend"}
        out.append(events[1].values)
    return out


def test_latencies_are_the_means_of_each_scrape_interval():
    fe = Frontend()
    pages = []
    fe.serve(0, 0, 0, inflight=0, queued=0)
    pages.append(fe.page())
    fe.serve(20, ttft=0.4, itl=0.010, inflight=3072, queued=0)
    pages.append(fe.page())
    fe.serve(10, ttft=2.5, itl=0.030, inflight=3072, queued=400)
    pages.append(fe.page())
    first, second, third = frontend_rows(pages)
    assert "ttft_s" not in first and first.get("request_rate") is None  # no earlier scrape: no rate, no mean
    assert second["ttft_s"] == pytest.approx(0.4) and second["itl_s"] == pytest.approx(0.010)
    assert second["request_rate"] == pytest.approx(2.0) and second["frontend_inflight"] == 3072
    assert second["isl_tokens"] == pytest.approx(8192) and second["osl_tokens"] == pytest.approx(1024)
    # the third interval alone, not the run so far: TTFT up while requests queue
    assert third["ttft_s"] == pytest.approx(2.5) and third["itl_s"] == pytest.approx(0.030)
    assert third["request_rate"] == pytest.approx(1.0) and third["frontend_queued"] == 400


def test_an_interval_with_no_request_done_has_no_latency():
    fe = Frontend()
    fe.serve(5, ttft=1.0, itl=0.02, inflight=10, queued=0)
    a = fe.page()
    fe.serve(0, 0, 0, inflight=10, queued=0)
    _, row = frontend_rows([a, fe.page()])
    assert "ttft_s" not in row and row["request_rate"] == 0.0


def test_a_recorded_frontend_is_a_frontend_endpoint_in_the_report(tmp_path):
    fe = Frontend()
    text = []
    for i in range(12):
        ttft = 0.4 if i < 6 else 2.0
        fe.serve(30, ttft=ttft, itl=0.012, inflight=2048, queued=0 if i < 6 else 300)
        t = (T0 + timedelta(seconds=10 * i)).timestamp()
        text.append(f"# ===== phase=load t={t:.3f} port=8000 =====\n{fe.page()}")
    (tmp_path / "frontend.metrics.txt").write_text("".join(text))
    out = subprocess.run([sys.executable, "-m", "pdwatch", "report", str(tmp_path), "--format", "json"],
                         capture_output=True, text=True, timeout=120)
    report = json.loads(out.stdout)
    (endpoint,) = report["deployment"]["endpoints"]
    assert endpoint["role"] == "frontend"
    (summary,) = report["endpoints"]
    assert summary["frontend"]["ttft_s"]["p95"] == pytest.approx(2.0)
    assert summary["frontend"]["itl_s"]["p50"] == pytest.approx(0.012)
    assert summary["frontend"]["request_rate"]["p50"] == pytest.approx(3.0)
    assert not [f for f in report["findings"] if f["rule"] == "stats_missing"]
    md = subprocess.run([sys.executable, "-m", "pdwatch", "report", str(tmp_path)], capture_output=True, text=True,
                        timeout=120).stdout
    assert "## Frontend, as users see it (Dynamo /metrics, p50 / p95)" in md
    assert "| frontend | 3 / 3 | 2,048 / 2,048 |" in md


def test_a_page_with_nothing_pdwatch_reads_is_said_so(tmp_path):
    registry = CollectorRegistry()
    Counter("some_other_service_requests", "x", registry=registry).inc()
    page = generate_latest(registry).decode()
    t = T0.timestamp()
    (tmp_path / "other.metrics.txt").write_text(f"# ===== t={t:.3f} port=9000 =====\n{page}")
    out = subprocess.run([sys.executable, "-m", "pdwatch", "report", str(tmp_path)], capture_output=True, text=True,
                         timeout=120)
    assert "has no vllm: or dynamo_frontend_ series" in out.stderr


def test_the_dashboard_pane_of_a_frontend_shows_what_users_see():
    # watch a live frontend /metrics over real HTTP on 127.0.0.1
    import time

    from pdwatch.session.live import LiveSession
    from pdwatch.views.tui.widgets.endpoint_pane import render_numbers

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from metrics_server import serve
    from pdwatch.sources import SourceSet

    fe = Frontend()
    bodies = []
    for _ in range(40):
        fe.serve(30, ttft=0.45, itl=0.015, inflight=1024, queued=7)
        bodies.append(fe.page())
    with serve(bodies) as (base, _server):
        url = f"{base}/metrics"
        session = LiveSession([url], mode="watch", sources=SourceSet([url], follow=True, scrape_interval=0.2))
        row, deadline = None, time.monotonic() + 20
        try:
            while time.monotonic() < deadline:
                session.ingest(10_000)
                rows = [r for r in session.tick().endpoints if r.frontend and "ttft_s" in dict(r.frontend)]
                if rows:
                    row = rows[0]
                    break
                time.sleep(0.1)
        finally:
            session.close()
    assert row is not None and row.role == "frontend"
    shown = render_numbers(row).plain
    assert shown.startswith("TTFT 0.45 s │ ITL 15.0 ms │ in flight 1,024 │ queued 7 │ ")
    assert shown.endswith(" req/s")
