"""The dashboard's frontend strip and CPU headline on real Dynamo 1.6.1 captures replayed
(tests/data/real/dynamo), at 80x24 and 200x50: the endpoint in trouble keeps its pane, the frontend
is summarised in a line or two after it, the headline counts tokens/s per worker (vLLM's CPU
backend: no GPU). Numbers on screen are checked against the log, counted here with a regex.
"""

from __future__ import annotations

import asyncio
import math
import re
from dataclasses import replace
from datetime import datetime, timedelta

import pytest
from textual.app import App, ComposeResult

from pdwatch.session.live import LiveSession
from pdwatch.session.rows import frontend_summary, headline
from pdwatch.session.snapshot import EndpointRow, FrontendSummary, Snapshot
from pdwatch.views.tui.app import PdwatchApp
from pdwatch.views.tui.widgets.frontend_strip import FrontendStrip, render_frontends
from pdwatch.views.tui.widgets.short_names import short_names
from pdwatch.views.tui.widgets.header import render_header
from tests.conftest import REAL_LOGS
from tests.tui.pilot_helpers import wait_for

DYNAMO = REAL_LOGS / "dynamo"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
RESPONSE = re.compile(r"^(\S+)\s.*\bhttp response sent status=(\d{3})\b.*\bmethod=POST uri=/v1/")


def screen_text(app) -> str:
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(segment.text for segment in strip) for strip in strips)


def _app(name: str) -> PdwatchApp:
    return PdwatchApp(LiveSession([str(DYNAMO / name)], mode="replay", speed=math.inf), refresh=0.1)


def _done(app) -> bool:
    return app.snapshot is not None and app.snapshot.done and all(p.is_mounted for p in app.panes.values())


def _responses_before(name: str, clock: datetime, window_s: float) -> tuple[int, int]:
    """(ok, failed) inference responses of the frontend log in the seconds ending in (clock - window, clock]."""
    ok = failed = 0
    for line in (DYNAMO / name / f"{name}.frontend.log").read_text(errors="replace").splitlines():
        m = RESPONSE.search(ANSI.sub("", line))
        if not m:
            continue
        second_end = datetime.fromisoformat(m[1].replace("Z", "+00:00")).replace(microsecond=0) + timedelta(seconds=1)
        if clock - timedelta(seconds=window_s) < second_end <= clock:
            ok, failed = (ok + 1, failed) if int(m[2]) < 400 else (ok, failed + 1)
    return ok, failed


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
def test_the_worker_in_trouble_keeps_its_pane_and_the_frontend_is_summarised(size):
    async def go():
        app = _app("agg_worker_killed")
        async with app.run_test(size=size) as pilot:
            assert await wait_for(pilot, lambda: _done(app), timeout=60)
            await pilot.pause(0.4)
            text = screen_text(app)
            lines = text.splitlines()
            assert len(lines) == size[1]
            # the headline: tokens/s per worker on the CPU backend, no GPU figure
            assert lines[0].lstrip().startswith("tok/s per worker (CPU)"), lines[0]
            assert "TPS/GPU" not in text and "GPU" not in lines[0]
            # the worker (killed: worker_lost) has its pane, first, with its KV and the STALE mark
            assert app._shown_view == "panes" and list(app.panes) == ["agg_worker_killed.worker"]
            # its short name: the capture's name, which every endpoint shares, dropped
            short = short_names(r.name for r in app.snapshot.endpoints)
            assert short["agg_worker_killed.worker"] == "worker"
            title = next(i for i, line in enumerate(lines) if i > 3 and " worker  aggregated" in line)
            assert "1 engine / CPU" in lines[title] and "STALE" in lines[title]
            assert "KV" in lines[title + 1] and "92.3%" in lines[title + 1]
            # then the frontend strip, before the findings: the last minute's requests from its log
            snap = app.snapshot
            (fe,) = [r for r in snap.endpoints if r.frontend_summary is not None]
            summary = fe.frontend_summary
            ok, failed = _responses_before("agg_worker_killed", snap.clock, summary.window_s)
            assert (summary.requests_ok, summary.requests_failed) == (ok, failed) and failed > 900
            assert summary.statuses[:2] in (("404", "503"), ("503", "404")) and "unavailable" in summary.error_types
            at = next(i for i, line in enumerate(lines) if i > title and line.lstrip().startswith("● frontend"))
            assert at < next(i for i, line in enumerate(lines) if "Findings" in line)
            strip = lines[at] if size[0] >= 120 else lines[at] + "\n" + lines[at + 1]
            pct = f"{100 * failed / (ok + failed):.0f}% failed"
            assert f"{(ok + failed) / summary.window_s:.1f} req/s" in strip and pct in strip, strip
            assert f"({summary.statuses[0]}" in strip
            # a replay reads the recorded scrapes beside the logs, as report does: the frontend's TTFT
            assert "TTFT" in strip and "/metrics not scraped" not in strip, strip
            assert all(len(line) <= size[0] for line in lines)
    asyncio.run(go())


def test_three_endpoints_at_80x24_the_table_and_the_frontend_strip():
    """disagg_prefill_killed: prefill, decode and frontend do not fit as panes: the table, worst first,
    and the frontend strip under it."""
    async def go():
        app = _app("disagg_prefill_killed")
        async with app.run_test(size=(80, 24)) as pilot:
            assert await wait_for(pilot, lambda: _done(app), timeout=60)
            await pilot.pause(0.4)
            lines = screen_text(app).splitlines()
            assert app._shown_view == "table"
            header = next(i for i, line in enumerate(lines) if line.lstrip().startswith("endpoint "))
            assert "● prefill " in lines[header + 1] and "STA" in lines[header + 1]  # STALE, maybe cut
            strip = next(i for i, line in enumerate(lines) if i > header + 3 and line.lstrip().startswith("● frontend"))
            assert "req/s" in lines[strip] and "failed (503" in lines[strip]
            assert lines[0].lstrip().startswith("tok/s per worker (CPU)")
    asyncio.run(go())


def _row(name: str, summary: FrontendSummary | None, role: str = "frontend", **kw) -> EndpointRow:
    return EndpointRow(name=name, role=role, engines=(), gpus=None, prompt_tps=None, gen_tps=None, running=None,
                       waiting=None, kv_usage_pct=None, last_seen=None, stale_for_s=None, interval_s=1.0,
                       history=(), engine_rows=(), sources=(), frontend_summary=summary, **kw)


SCRAPED = FrontendSummary(window_s=60.0, requests_ok=80, requests_failed=0, latency_s=9.5, scraped=True,
                          ttft_s=7.35, ttft_p99_s=9.947, itl_s=0.006033, itl_p99_s=0.0445, inflight=32.0, queued=27.0)


def test_scraped_figures_in_two_lines_at_80_columns_and_one_at_200():
    narrow = render_frontends([_row("agg.frontend", SCRAPED)], {}, 78).plain.splitlines()
    assert narrow == ["agg.frontend  last min: 1.3 req/s, 0% failed",
                      "  TTFT 7.35 s p99 9.95 s │ ITL 6.0 ms p99 44.5 ms │ in flight 32 queued 27"]
    (wide,) = render_frontends([_row("agg.frontend", SCRAPED)], {"agg.frontend": "warning"}, 198).plain.splitlines()
    # its name says frontend already: not "agg.frontend frontend"
    assert wide.startswith("● agg.frontend  last min: 1.3 req/s, 0% failed │ TTFT 7.35 s")
    (named,) = render_frontends([_row("agg.router", SCRAPED)], {}, 198).plain.splitlines()
    assert named.startswith("agg.router frontend  last min")
    # only frontends with something to say; two at most, then how many more
    rows = [_row(f"fe{i}", SCRAPED) for i in range(4)] + [_row("quiet", None), _row("w", None, role="aggregated")]
    text = render_frontends(rows, {}, 78).plain
    assert text.count("req/s") == 2 and "quiet" not in text
    assert text.splitlines()[2].endswith("0% failed  +2 more frontends (t: table)")


def test_log_text_in_the_frontend_strip_is_text_not_markup():
    hostile = FrontendSummary(window_s=60.0, requests_ok=1, requests_failed=9, statuses=("[red]503[/red]",),
                              error_types=("\x1b[31mboom[/]",))
    row = _row("[bold]fe[/bold]", hostile)
    plain = render_frontends([row], {}, 120).plain
    assert "[bold]fe[/bold]" in plain and "[red]503[/red]" in plain and "\\x1b[31mboom[/]" in plain
    assert "\x1b" not in plain

    class Strip(App):
        def compose(self) -> ComposeResult:
            yield FrontendStrip()

    async def go():
        app = Strip()
        async with app.run_test(size=(130, 5)) as pilot:
            app.query_one(FrontendStrip).show([row], {})
            await pilot.pause(0.1)
            shown = screen_text(app)
            assert "[bold]fe[/bold]" in shown and "[red]503[/red]" in shown and "\\x1b[31mboom[/]" in shown
    asyncio.run(go())


def test_cpu_headline_of_the_rows_and_the_header():
    def worker(name: str, device: str | None, gpus: int | None) -> EndpointRow:
        return replace(_row(name, None, role="aggregated", device=device), prompt_tps=300.0, gen_tps=500.0, gpus=gpus)
    rows = (worker("a", "CPU", 1), worker("b", "CPU", 1), _row("fe", SCRAPED))
    cpu = headline(rows)
    assert (cpu.device, cpu.workers, cpu.tps_per_worker, cpu.tps_per_gpu, cpu.gpus) == ("CPU", 2, 800.0, None, None)
    snap = Snapshot(mode="replay", clock=None, speed=1.0, paused=False, loading=False, done=False, headline=cpu,
                    endpoints=rows, findings=(), all_findings=(), changes=(), notices=())
    assert render_header(snap, 78).plain.splitlines()[0] == "tok/s per worker (CPU) 800 │ total 1,600 tok/s │ " \
                                                            "2 aggregated 1 frontend"
    assert render_header(snap, 120).plain.startswith("tok/s per worker (CPU) 800 on 2 workers │ total 1,600 tok/s")
    gpu = headline((worker("a", "GPU", 4), worker("b", None, 4)))
    assert gpu.device is None and gpu.tps_per_gpu == pytest.approx(200.0) and gpu.gpus == 8
    assert render_header(replace(snap, headline=gpu), 78).plain.startswith("TPS/GPU 200 on 8 GPUs")


def test_frontend_summary_of_the_store_over_its_last_minute():
    """The snapshot's figures, from a frontend's stats and events: requests summed in the window,
    the newest scrape values, statuses commonest first; nothing to say without rows."""
    import pandas as pd

    t0 = pd.Timestamp("2026-12-03T16:00:00Z")
    rows = [{"ts": t0 + pd.Timedelta(seconds=s), "requests_ok": 2.0, "requests_failed": 1.0,
             "request_latency_s": 0.5} for s in range(1, 91)]
    rows += [{"ts": t0 + pd.Timedelta(seconds=s + 0.5), "ttft_s": 0.1 * s, "frontend_inflight": float(s)}
             for s in (10, 80, 89)]
    stats = pd.DataFrame(rows).sort_values("ts", ignore_index=True)
    for column in ("requests_ok", "requests_failed", "request_latency_s", "ttft_s", "ttft_p99_s", "itl_s",
                   "itl_p99_s", "frontend_inflight", "frontend_queued"):
        stats[column] = stats.get(column, pd.Series(dtype="float64")).astype("float64")
    events = pd.DataFrame({"ts": [t0 + pd.Timedelta(seconds=s) for s in (50, 60, 70, 5)],
                           "kind": ["request_failed", "request_failed", "request_error", "request_failed"],
                           "reason": ["404", "503", "unavailable", "503"]})
    clock = t0 + pd.Timedelta(seconds=90)
    s = frontend_summary(stats, events, clock)
    assert (s.requests_ok, s.requests_failed, s.window_s) == (120, 60, 60.0)  # the seconds ending in (30, 90]
    assert s.failed_pct == pytest.approx(100 / 3) and s.requests_per_s == pytest.approx(3.0)
    assert s.statuses == ("404", "503") and s.error_types == ("unavailable",)  # the 503 at 5 s is outside
    assert s.ttft_s == pytest.approx(8.9) and s.inflight == 89 and s.scraped and s.latency_s == pytest.approx(0.5)
    assert frontend_summary(stats.iloc[0:0], events, clock) is None
    early = frontend_summary(stats, events, t0 + pd.Timedelta(seconds=20))  # 20 s of rows: not diluted over 60
    assert early.window_s == 20.0 and early.requests_per_s == pytest.approx(3.0)
