"""The job log view (``l``) on a replay of the real Dynamo capture agg_kv_pressure (a frontend
log and a worker log): both files' lines in time order, the endpoint and level filters, the
search, and Enter on a finding's evidence line landing on that line."""

from __future__ import annotations

import asyncio
import math

import pytest

from pdwatch.session.live import LiveSession
from pdwatch.views.tui.app import PdwatchApp
from pdwatch.views.tui.screens.finding_detail import EvidenceLine, FindingDetail
from pdwatch.views.tui.screens.job_log import JobLogScreen
from pdwatch.views.tui.screens.help import help_text
from pdwatch.views.tui.widgets.findings_table import FindingsTable
from pdwatch.views.tui.widgets.keybar import KeyBar
from tests.conftest import REPO
from tests.tui.pilot_helpers import plain, wait_for

CAPTURE = REPO / "tests" / "data" / "real" / "dynamo" / "agg_kv_pressure"
SIZES = [(80, 24), (200, 50)]


def _app() -> PdwatchApp:
    return PdwatchApp(LiveSession([str(CAPTURE)], mode="replay", speed=math.inf), refresh=0.1)


def _done(app) -> bool:
    return app.snapshot is not None and app.snapshot.done


async def _open_job_log(app, pilot) -> JobLogScreen:
    assert await wait_for(pilot, lambda: _done(app), timeout=60)
    assert " l logs" in plain(app.query_one(KeyBar))  # the key is offered at 80 columns too
    await pilot.press("l")
    assert await wait_for(pilot, lambda: isinstance(app.screen, JobLogScreen))
    view = app.screen
    assert await wait_for(pilot, lambda: view.window is not None and view.window.lines)
    return view


async def _reloaded(pilot, view, key: str) -> None:
    before = view.window
    await pilot.press(key)
    assert await wait_for(pilot, lambda: view.window is not before and view.window is not None)


def _shown(view) -> list[str]:
    return plain(view.query_one("#job-lines")).splitlines()


@pytest.mark.parametrize("size", SIZES)
def test_l_opens_both_logs_in_time_order_and_the_filters_apply(size):
    async def go():
        app = _app()
        async with app.run_test(size=size) as pilot:
            view = await _open_job_log(app, pilot)
            await _reloaded(pilot, view, "g")  # the job's start: the frontend starts 12 s before the worker
            assert view.window.at_start
            lines = view.window.lines
            assert {line.endpoint for line in lines} == {"agg_kv_pressure.frontend", "agg_kv_pressure.worker"}
            for a, b in zip(lines, lines[1:]):
                if a.source != b.source:
                    assert a.key <= b.key
            shown = _shown(view)
            assert len(shown) == len(lines)
            assert shown[0].split()[:2] == ["frontend", "INFO"] and "router_args" in shown[0]
            worker_rows = [row for row in shown if row.startswith("worker ")]
            assert worker_rows and all("\x1b" not in row for row in shown)
            assert "ERR " in " ".join(worker_rows)  # the worker's 503s while it starts, level ERROR
            await _reloaded(pilot, view, "e")  # one endpoint: the frontend
            assert view.endpoint == "agg_kv_pressure.frontend"
            assert {line.endpoint for line in view.window.lines} == {"agg_kv_pressure.frontend"}
            assert all(row.startswith("frontend ") for row in _shown(view))
            await _reloaded(pilot, view, "e")
            assert {line.endpoint for line in view.window.lines} == {"agg_kv_pressure.worker"}
            await _reloaded(pilot, view, "e")  # back to all
            assert view.endpoint is None and len({line.endpoint for line in view.window.lines}) == 2
            await _reloaded(pilot, view, "v")  # INFO and above
            await _reloaded(pilot, view, "v")  # WARNING and above: no INFO line left
            assert view.min_level == "WARNING" and view.window.lines
            assert {line.record_level for line in view.window.lines} <= {"WARNING", "ERROR"}
            assert not any(row.split()[1] == "INFO" for row in _shown(view))
            assert "WARNING and above" in plain(view.query_one("#job-title"))
            await pilot.press("escape")
            assert await wait_for(pilot, lambda: not isinstance(app.screen, JobLogScreen))
    asyncio.run(go())


@pytest.mark.parametrize("size", SIZES)
def test_search_moves_to_a_matching_line(size):
    async def go():
        app = _app()
        async with app.run_test(size=size) as pilot:
            view = await _open_job_log(app, pilot)
            await _reloaded(pilot, view, "g")
            await pilot.press("slash", *"service unavailable", "enter")  # case blind
            assert await wait_for(pilot, lambda: " of " in plain(view.query_one("#job-status")))
            assert len(view.matches) > 3
            line = view.window.lines[view.matches[view.current]]
            assert "Service Unavailable" in line.text and line.endpoint == "agg_kv_pressure.worker"
            first = view.current
            await pilot.press("n")
            assert view.current == (first + 1) % len(view.matches)
            assert f"line {view.window.lines[view.matches[view.current]].line_no}" in \
                plain(view.query_one("#job-status"))
            body = view.query_one("#job-body")
            index = view.matches[view.current]
            assert body.scroll_y <= index < body.scroll_y + body.size.height  # the match is in view
            await pilot.press("N")
            assert view.current == first
    asyncio.run(go())


@pytest.mark.parametrize("size", SIZES)
def test_enter_on_evidence_opens_the_job_log_at_that_line(size):
    async def go():
        app = _app()
        async with app.run_test(size=size) as pilot:
            assert await wait_for(pilot, lambda: _done(app), timeout=60)
            await pilot.press("space")  # pause, then go back into the 40 s the KV cache was full
            await pilot.press("g", *"16:21:15", "enter")
            table = app.query_one(FindingsTable)
            assert await wait_for(pilot, lambda: any(f.rule == "kv_exhausted" for f in table.findings))
            table.focus()
            row = next(r for r in range(len(table.items)) if table.move_cursor(row=r) is None
                       and table.selected() is not None and table.selected().rule == "kv_exhausted")
            assert table.selected().rule == "kv_exhausted", row
            await pilot.press("enter")
            assert await wait_for(pilot, lambda: isinstance(app.screen, FindingDetail))
            evidence = app.screen.query(EvidenceLine).first().evidence
            assert evidence.source.endswith("agg_kv_pressure.worker.log")
            await pilot.press("enter")
            assert await wait_for(pilot, lambda: isinstance(app.screen, JobLogScreen))
            view = app.screen
            assert await wait_for(pilot, lambda: view.window is not None and view.window.lines)
            target = view.window.lines[view.window.anchor]
            assert (target.source, target.line_no) == (evidence.source, evidence.line_no)
            assert target.text == evidence.text
            assert {line.endpoint for line in view.window.lines} == {"agg_kv_pressure.frontend",
                                                                      "agg_kv_pressure.worker"}
            body = view.query_one("#job-body")
            assert await wait_for(pilot, lambda: body.scroll_y <= view.window.anchor < body.scroll_y + body.size.height)
            row = _shown(view)[view.window.anchor]
            assert row.startswith("worker ") and "KV cache usage" in row
            await pilot.press("escape")
            assert await wait_for(pilot, lambda: isinstance(app.screen, FindingDetail))
    asyncio.run(go())


def test_help_lists_the_job_log_keys():
    text = help_text().plain
    assert "l  the job's logs interleaved by time" in text
    assert "e / v  in the job's logs: one endpoint at a time / minimum level" in text
