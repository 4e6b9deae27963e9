"""The dashboard keeps the run's history (issue 32), driven with Textual's pilot on a real capture.

tests/data/real/dynamo/agg_kv_pressure is a real Dynamo 1.6.1 job whose worker's KV cache was
full for about a minute (16:20:55 to 16:21:57 UTC, report's kv_exhausted, CRITICAL) and idle
after. A replay opens at the logs' first line, before the trouble: it offers the first trouble
and ``f`` jumps there; once the finding has cleared, the findings table still shows it (greyed,
with how long it lasted; ``h`` hides it) and the verdict line says what the run *was*; at the
end of the logs the dashboard shows what ``pdwatch report`` says, finding for finding.
"""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pandas as pd
import pytest

from pdwatch.session.analysis import analyse
from pdwatch.session.live import LiveSession
from pdwatch.views.tui.app import PdwatchApp
from pdwatch.views.tui.widgets.findings_table import RESOLVED, FindingsTable
from pdwatch.views.tui.widgets.header import DeploymentHeader
from tests.tui.pilot_helpers import plain, wait_for

CAPTURE = Path(__file__).resolve().parents[2] / "tests" / "data" / "real" / "dynamo" / "agg_kv_pressure"
SIZES = [(80, 24), (200, 50)]


def _app() -> PdwatchApp:
    session = LiveSession([str(CAPTURE)], mode="replay", speed=math.inf)
    session.paused = True  # it opens at the start, as a user's replay does before they press a key
    return PdwatchApp(session, refresh=0.1)


def _findings(rows) -> set[tuple]:
    return {(f.rule, f.severity, f.endpoint, pd.Timestamp(f.start), None if f.end is None else pd.Timestamp(f.end),
             f.summary) for f in rows}


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_replay_offers_the_first_trouble_and_f_jumps_there(size):
    report = analyse([str(CAPTURE)])
    first = min(f.start for f in report.findings if f.severity in ("critical", "warning"))

    async def go():
        app = _app()
        async with app.run_test(size=size) as pilot:
            assert await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.first_trouble is not None)
            snap = app.snapshot
            assert snap.clock < snap.first_trouble == first  # opens at the start; the trouble is ahead
            assert "f jumps to the first trouble: critical kv_exhausted on worker at 16:20:55" in app._status
            await pilot.press("f")
            assert await wait_for(pilot, lambda: app.snapshot.clock == pd.Timestamp(first))
            snap = app.snapshot
            assert [f.rule for f in snap.findings][:1] == ["kv_exhausted"]
            assert "KV cache" in plain(app.query_one(DeploymentHeader))
            table = app.query_one(FindingsTable)
            assert table.selected() is not None and table.selected().rule == "kv_exhausted"
    asyncio.run(go())


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_a_cleared_finding_stays_greyed_with_its_duration_and_the_verdict_says_was(size):
    async def go():
        app = _app()
        async with app.run_test(size=size) as pilot:
            assert await wait_for(pilot, lambda: app.session.seekable)
            target = pd.Timestamp("2026-12-03T16:22:02Z")  # KV is back to 0%: the trouble cleared
            app.session.seek(target)
            assert await wait_for(pilot, lambda: app.snapshot.clock == target and app.snapshot.seeking_to is None)
            await pilot.pause(0.2)
            snap = app.snapshot
            assert "kv_exhausted" not in [f.rule for f in snap.findings]
            header = plain(app.query_one(DeploymentHeader))
            assert "No bottleneck found" in header and "was: Bottleneck: KV cache" in header, header
            table = app.query_one(FindingsTable)
            cleared = [table.resolved[mi] for gi, mi in table.items if gi == RESOLVED]
            kv = [f for f in cleared if f.rule == "kv_exhausted"]
            assert kv and kv[0].end is not None
            lasted = (kv[0].end - kv[0].start).total_seconds()
            assert 50 <= lasted <= 70  # about a minute full, as the capture's README says
            rows = [" ".join(str(c) for c in table.get_row_at(r)) for r in range(table.row_count)]
            assert any("kv_exhausted" in r and "cleared after" in r for r in rows), rows
            table.focus()
            await pilot.press("h")  # hide the history
            assert await wait_for(pilot, lambda: not any(gi == RESOLVED for gi, _ in table.items))
            await pilot.press("h")
            assert await wait_for(pilot, lambda: any(gi == RESOLVED for gi, _ in table.items))
    asyncio.run(go())


def test_the_end_of_a_replay_is_the_report():
    report = analyse([str(CAPTURE)])

    async def go():
        app = _app()
        app.session.paused = False
        async with app.run_test(size=(200, 50)) as pilot:
            assert await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.done, timeout=60)
            await pilot.pause(0.2)
            snap = app.snapshot
            assert _findings(snap.all_findings) == _findings(report.findings)
            assert snap.verdict == report.diagnosis.verdict
            header = plain(app.query_one(DeploymentHeader))
            assert report.diagnosis.verdict.title in header
    asyncio.run(go())
