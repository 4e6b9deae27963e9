"""The report's frontend section on real Dynamo 1.6.1 captures (tests/data/real/dynamo): a frontend's
requests over the run and the steady state, counted from its log, its failures by HTTP status and
Dynamo error type, its TTFT and ITL from its /metrics; and the CPU headline.

Every expected number is counted here from the capture's own files with plain regexes, not
through pdwatch: the frontend's ``http response sent`` lines, its recorded histogram buckets.
"""

from __future__ import annotations

import copy
import html
import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from datetime import datetime, timedelta
from functools import lru_cache

import pytest

from pdwatch.session.analysis import analyse
from pdwatch.views.report import data, html as html_report, markdown
from tests.conftest import REAL_LOGS

DYNAMO = REAL_LOGS / "dynamo"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# An inference response of a Dynamo frontend: "http response sent status=503 latency_ms=0 method=POST uri=/v1/..."
RESPONSE = re.compile(r"^(\S+)\s.*\bhttp response sent status=(\d{3})\b.*\bmethod=POST uri=/v1/")
PERIOD_KEYS = {"start", "end", "seconds", "requests_ok", "requests_failed", "requests_per_s", "failed_pct",
               "latency_s", "by_status", "by_error_type", "ttft_mean_s", "ttft_p99_s", "itl_mean_s", "itl_p99_s",
               "inflight_mean", "inflight_max", "queued_mean", "queued_max"}


@lru_cache(maxsize=None)
def report(folder: str) -> dict:
    return data.build(analyse([folder]))


def capture(name: str) -> dict:
    return report(str(DYNAMO / name))


def frontend_of(rep: dict) -> dict:
    (endpoint,) = [ep for ep in rep["endpoints"] if ep.get("frontend")]
    return endpoint


def responses(name: str) -> list[tuple[datetime, int]]:
    """(time, HTTP status) of every inference response line of the capture's frontend log."""
    out = []
    for line in (DYNAMO / name / f"{name}.frontend.log").read_text(errors="replace").splitlines():
        m = RESPONSE.search(ANSI.sub("", line))
        if m:
            out.append((datetime.fromisoformat(m[1].replace("Z", "+00:00")), int(m[2])))
    return out


def test_agg_worker_killed_counts_every_failed_response_of_the_log():
    name = "agg_worker_killed"
    lines = responses(name)
    failed = Counter(status for _, status in lines if status >= 400)
    ok = sum(1 for _, status in lines if status < 400)
    assert failed == {503: 544, 404: 456} and ok == 33  # the README's client table: 544 + 448 + 8 404s
    run = frontend_of(capture(name))["frontend"]["run"]
    assert set(run) == PERIOD_KEYS
    assert run["requests_failed"] == sum(failed.values()) and run["requests_ok"] == ok
    assert run["failed_pct"] == pytest.approx(100 * 1000 / 1033, abs=0.001)
    first, last = min(t for t, _ in lines), max(t for t, _ in lines)
    # the run: from the start of the first second with a response to the end of the last
    assert run["start"] == first.replace(microsecond=0).isoformat()
    assert datetime.fromisoformat(run["end"]) == last.replace(microsecond=0) + timedelta(seconds=1, microseconds=-1)
    assert run["requests_per_s"] == pytest.approx(1033 / run["seconds"], abs=0.001)
    # the outcomes name 503 and 404; each second's count shared among its kept lines' statuses: the
    # estimates add up to the failed count, each within one transition second of the truth (5%)
    by_status = {r["status"]: r for r in run["by_status"]}
    assert set(by_status) == {"503", "404"}
    assert sum(r["requests"] for r in by_status.values()) == 1000
    for status, n in failed.items():
        assert abs(by_status[str(status)]["requests"] - n) <= 0.05 * 1000, (status, by_status)
        assert 0 < by_status[str(status)]["lines"] <= n
    assert [r["error_type"] for r in run["by_error_type"]] == ["unavailable", "not_found"]


def test_the_steady_state_is_the_headlines_window_and_within_the_run():
    name = "agg_worker_killed"
    rep = capture(name)
    frontend = frontend_of(rep)["frontend"]
    steady, run, window = frontend["steady"], frontend["run"], rep["summary"]["window"]
    assert (steady["start"], steady["end"]) == (window["start"], window["end"])
    start, end = (datetime.fromisoformat(window[k]) for k in ("start", "end"))
    # the log's responses in the window's seconds, counted here
    inside = [s for t, s in responses(name) if start <= t.replace(microsecond=0) <= end]
    assert steady["requests_ok"] == sum(1 for s in inside if s < 400)
    assert steady["requests_failed"] == sum(1 for s in inside if s >= 400)
    assert steady["requests_ok"] <= run["requests_ok"] and steady["requests_failed"] <= run["requests_failed"]
    assert steady["seconds"] == pytest.approx((end - start).total_seconds(), abs=0.001)
    # the KV-full high phase: every request in flight, most queued, TTFT seconds long
    assert steady["inflight_max"] == 32 and steady["queued_max"] >= 25
    assert steady["ttft_mean_s"] > 1 and steady["ttft_mean_s"] <= steady["ttft_p99_s"]


def _buckets(name: str, histogram: str) -> list[tuple[float, dict[float, float]]]:
    """Each scrape of the frontend's /metrics: (time, upper bound -> cumulative count, label sets summed)."""
    scrapes: list[tuple[float, dict[float, float]]] = []
    sample = re.compile(rf"^{histogram}_bucket\{{(.*)\}} (\S+)$")
    for line in (DYNAMO / name / f"{name}.frontend.metrics.txt").read_text().splitlines():
        if line.startswith("# ====="):
            scrapes.append((float(re.search(r"\bt=([\d.]+)", line)[1]), {}))
            continue
        m = sample.match(line)
        if m and scrapes:
            bound = float(re.search(r'le="([^"]+)"', m[1])[1])
            scrapes[-1][1][bound] = scrapes[-1][1].get(bound, 0.0) + float(m[2])
    return scrapes


def _p99_buckets(name: str, histogram: str, start: float, end: float) -> list[tuple[float, float]]:
    """The bucket (lower, upper bound) holding the 99th percentile of each scrape interval ending in
    (start, end] that had an observation (a series absent from the previous scrape counts from 0)."""
    scrapes = _buckets(name, histogram)
    out = []
    for (_, before), (t, after) in zip(scrapes, scrapes[1:]):
        if not start < t <= end:
            continue
        increase = {b: after[b] - before.get(b, 0.0) for b in after}
        bounds = sorted(increase)
        if not bounds or increase[bounds[-1]] <= 0:
            continue
        rank, lower = 0.99 * increase[bounds[-1]], 0.0
        for bound in bounds:
            if increase[bound] >= rank:
                out.append((lower, lower if bound == float("inf") else bound))  # +Inf: the last finite bound
                break
            lower = bound
    return out


@pytest.mark.parametrize("name", ["agg_kv_pressure", "agg_worker_killed", "disagg_prefill_killed"])
@pytest.mark.parametrize("metric, histogram", [
    ("ttft", "dynamo_frontend_time_to_first_token_seconds"),
    ("itl", "dynamo_frontend_inter_token_latency_seconds")])
def test_the_p99_is_within_the_histograms_bucket_bounds(name, metric, histogram):
    """The p99 of a period is the highest p99 of its scrape intervals: it lies in the bucket of one of
    them, and no interval's bucket lies wholly above it."""
    frontend = frontend_of(capture(name))["frontend"]
    assert frontend["scraped"]
    for period in (frontend["run"], frontend["steady"]):
        start, end = (datetime.fromisoformat(period[k]).timestamp() for k in ("start", "end"))
        buckets = _p99_buckets(name, histogram, start, end + 1e-6)
        p99 = period[f"{metric}_p99_s"]
        assert buckets and p99 is not None
        assert any(lower - 1e-6 <= p99 <= upper + 1e-6 for lower, upper in buckets), (p99, buckets)
        assert p99 >= max(lower for lower, _ in buckets) - 1e-6, (p99, buckets)
        assert period[f"{metric}_mean_s"] <= p99


def test_markdown_frontend_section(tmp_path):
    text = markdown.render(capture("agg_worker_killed"))
    section = text.split("## Frontend requests", 1)[1].split("\n## Capacity", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| agg_worker_killed.frontend | ")]
    assert [r.split(" | ")[1].split(",")[0] for r in rows[:2]] == ["run", "steady state"]
    assert "| 33 | 1,000 | 96.8% |" in rows[0]
    assert "503 ≈" in section and "404 ≈" in section and "unavailable (4 lines)" in section
    assert "## Frontend, as users see it (Dynamo /metrics, p50 / p95)" in section  # the steady-state table stays
    # the CPU headline, and no GPU headline anywhere
    assert "tokens/s per worker** (CPU, 1 worker)" in text and "TPS/GPU" not in text and "TPS per GPU" not in text
    # the logs alone: no /metrics, so the latencies are said not scraped, not "?"
    for log in (DYNAMO / "agg_worker_killed").glob("*.log"):
        shutil.copy(log, tmp_path / log.name)
    logs_only = report(str(tmp_path))
    assert frontend_of(logs_only)["frontend"]["scraped"] is False
    text = markdown.render(logs_only)
    run_row = next(line for line in text.splitlines() if line.startswith("| agg_worker_killed.frontend | run"))
    assert run_row.endswith("| not scraped | not scraped | not scraped | not scraped |"), run_row
    assert "## Frontend, as users see it (Dynamo /metrics" not in text


def _charts_of(page: str, endpoint: str) -> list[str]:
    """The chart titles of an endpoint's block in the HTML page."""
    block = page.split(f"<h3>{html.escape(endpoint)} <span class=\"role\">", 1)[1].split('<div class="ep-', 1)[0]
    return re.findall(r'<figcaption><strong>([^<]*)</strong>', block)


def test_html_frontend_section_charts_and_cpu_headline(tmp_path):
    rep = capture("agg_worker_killed")
    page = html_report.render(rep)
    assert 'id="frontend"' in page and '<a href="#frontend">Frontend</a>' in page
    assert _charts_of(page, "agg_worker_killed.frontend") == ["requests/s (its log)", "TTFT s", "ITL s",
                                                              "requests at the frontend"]
    series = rep["series"]["agg_worker_killed.frontend"]
    assert max(v for v in series["requests_failed_per_s"] if v is not None) > 30  # the 503s and 404s after the kill
    assert any(v is not None for v in series["ttft_p99_s"])
    assert "tokens/s per worker (CPU)" in page and "workers (CPU)" in page
    assert "TPS/GPU" not in page and "TPS per GPU" not in page and "tokens/s per GPU" not in page
    for log in (DYNAMO / "agg_worker_killed").glob("*.log"):  # not scraped: requests and the log's latency
        shutil.copy(log, tmp_path / log.name)
    page = html_report.render(report(str(tmp_path)))
    assert _charts_of(page, "agg_worker_killed.frontend") == ["requests/s (its log)",
                                                              "mean latency s (its log, successful requests)"]


def test_log_text_in_the_frontend_section_is_escaped():
    rep = copy.deepcopy(capture("agg_worker_killed"))
    run = frontend_of(rep)["frontend"]["run"]
    run["by_status"][0]["status"] = "<script>alert(1)</script>|`x`"
    run["by_error_type"][0]["error_type"] = "[bold]<img src=x>"
    page = html_report.render(rep)
    assert "<script>alert(1)" not in page and "<img src=x>" not in page
    assert html.escape("<script>alert(1)</script>|`x`") in page and html.escape("[bold]<img src=x>") in page
    text = markdown.render(rep)
    assert "<script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;\\|\\`x\\`" in text


def test_json_carries_the_frontend_figures():
    out = subprocess.run([sys.executable, "-m", "pdwatch", "report", str(DYNAMO / "disagg_prefill_killed"),
                          "--format", "json"], capture_output=True, text=True, timeout=300)
    rep = json.loads(out.stdout)
    frontend = frontend_of(rep)["frontend"]
    assert set(frontend) >= {"request_rate", "ttft_s", "itl_s", "scraped", "run", "steady"}
    run = frontend["run"]
    failed = Counter(s for _, s in responses("disagg_prefill_killed") if s >= 400)
    assert run["requests_failed"] == sum(failed.values()) == 248
    assert run["by_status"] == [{"status": "503", "requests": 248, "lines": run["by_status"][0]["lines"]}]
    assert rep["summary"]["device"] == "CPU" and rep["summary"]["tps_per_gpu"] is None
