"""Pilot tests of the dashboard (Textual): panes, findings, detail, help, hostile log text."""

from __future__ import annotations

import asyncio
import math
import shutil
from pathlib import Path

import pytest

from pdwatch.session.live import LiveSession
from pdwatch.session.times import parse_start
from pdwatch.views.tui.app import PdwatchApp
from pdwatch.views.tui.widgets.findings_table import FindingsTable
from pdwatch.views.tui.screens.finding_detail import FindingDetail
from pdwatch.views.tui.screens.help import HelpScreen
from tests.tui.pilot_helpers import plain, wait_for

REPO = Path(__file__).resolve().parents[2]
PREFILL_BOUND = REPO / "samples" / "prefill-bound"
HOSTILE = "[bold]x[/] [@click=app.quit]q[/]"
SIZES = [(80, 24), (160, 48)]


def _run(coro):
    return asyncio.run(coro)


@pytest.mark.parametrize("size", SIZES)
def test_panes_per_endpoint_with_roles(size):
    async def go():
        session = LiveSession([str(PREFILL_BOUND)], mode="replay", speed=math.inf)
        app = PdwatchApp(session, refresh=0.1)
        async with app.run_test(size=size) as pilot:
            assert await wait_for(pilot, lambda: len(app.panes) == 6
                                   and all(p.is_mounted for p in app.panes.values()))
            roles = {name: p.role for name, p in app.panes.items()}
            assert roles == {"prefill_w0": "prefill", "prefill_w1": "prefill", "prefill_w2": "prefill",
                             "prefill_w3": "prefill", "decode_w0": "decode", "frontend_0": "frontend"}
            for pane in app.panes.values():
                expected = {"prefill": "#group-prefill", "decode": "#group-decode"}.get(pane.role, "#group-other")
                assert pane.parent is app.query_one(expected)
            header = plain(app.query_one("#header"))
            assert "4 prefill" in header and "1 decode" in header and "TPS/GPU" in header
    _run(go())


@pytest.mark.parametrize("size", SIZES)
def test_finding_appears_when_clock_passes_its_start_then_enter_shows_evidence(size):
    async def go():
        session = LiveSession([str(PREFILL_BOUND)], mode="replay", speed=20.0,
                              start=parse_start("2026-05-29T14:01:20Z"))
        session.paused = True  # hold the clock before the findings' start, whatever the machine's load
        app = PdwatchApp(session, refresh=0.1)
        async with app.run_test(size=size) as pilot:
            table = app.query_one(FindingsTable)
            assert await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.clock is not None)
            assert app.snapshot.clock.isoformat() < "2026-05-29T14:01:31.25"
            await pilot.pause(0.3)
            assert table.row_count == 0  # before its start: nothing in the panel
            session.paused = False
            # the four identical findings (one per prefill endpoint) are one group row (issue 17)
            assert await wait_for(pilot, lambda: len(table.findings) == 4 and table.row_count == 1)
            assert app.snapshot.clock.isoformat() >= "2026-05-29T14:01:31.250470"
            assert {f.rule for f in table.findings} == {"prefill_bound"}
            table.focus()
            await pilot.press("enter")
            assert await wait_for(pilot, lambda: isinstance(app.screen, FindingDetail))
            finding = app.screen.finding
            evidence = app.screen.query(".evidence")
            assert len(evidence) == len(finding.evidence) > 0
            assert "Avg prompt throughput" in plain(evidence.first())
            await pilot.press("escape")
            assert await wait_for(pilot, lambda: not isinstance(app.screen, FindingDetail))
    _run(go())


def test_help_screen_and_replay_keys():
    async def go():
        session = LiveSession([str(PREFILL_BOUND)], mode="replay", speed=4.0)
        app = PdwatchApp(session, refresh=0.1)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("question_mark")
            assert await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
            text = plain(app.screen.query_one("#help-text"))
            for key in ("?", "q", "enter", "space", "+ / -", "n", "p", "s", "g", "d", "e", "tab"):
                assert key in text
            await pilot.press("escape")
            assert await wait_for(pilot, lambda: not isinstance(app.screen, HelpScreen))
            await pilot.press("plus")
            assert session.speed == 8.0
            await pilot.press("minus", "minus")
            assert session.speed == 2.0
            await pilot.press("space")
            assert session.paused
            await pilot.press("space")
            assert not session.paused
    _run(go())


def _hostile_copy(tmp: Path) -> Path:
    """prefill-bound with a hostile prefill file name and hostile text on each stats line of it."""
    folder = tmp / "logs"
    shutil.copytree(PREFILL_BOUND, folder)
    (folder / "metrics").exists() and shutil.rmtree(folder / "metrics")
    src = folder / "gb200-n001_prefill_w0.out"
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    hostile = [line.rstrip("\n") + f" {HOSTILE}\n" if "Avg prompt throughput" in line else line for line in lines]
    src.unlink()
    (folder / "[bold]x [@click=app.quit]q prefill.out").write_text("".join(hostile), encoding="utf-8")
    return folder


def test_hostile_text_renders_literally_and_does_not_quit(tmp_path):
    folder = _hostile_copy(tmp_path)

    async def go():
        session = LiveSession([str(folder)], mode="replay", speed=math.inf)
        app = PdwatchApp(session, refresh=0.1)
        async with app.run_test(size=(160, 48)) as pilot:
            assert await wait_for(pilot, lambda: len(app.query_one(FindingsTable).findings) >= 4
                                   and len(app.panes) == 6 and all(p.is_mounted for p in app.panes.values()))
            panes = app.panes
            name = "[bold]x [@click=app.quit]q prefill"
            assert name in panes and panes[name].role == "prefill"
            title = panes[name].query_one(".title")
            # The title is filled on the next tick: wait for it rather than for a fixed time.
            assert await wait_for(pilot, lambda: name in plain(title))
            await pilot.click(title, offset=(len("[bold]x [@click=app.quit]"), 0))
            await pilot.pause(0.2)
            assert app.is_running
            table = app.query_one(FindingsTable)
            table.focus()
            await pilot.press("x")  # expand the group of four into a row per endpoint (issue 17)
            assert await wait_for(pilot, lambda: table.row_count == 5)
            row = next(r for r, (_, i) in enumerate(table.items) if i is not None and table.findings[i].endpoint == name)
            table.move_cursor(row=row)
            await pilot.press("enter")
            assert await wait_for(pilot, lambda: isinstance(app.screen, FindingDetail))
            texts = [plain(w) for w in app.screen.query(".evidence")]
            assert any(HOSTILE in t for t in texts), texts
            for w in app.screen.query(".evidence"):
                await pilot.click(w, offset=(10, 0))
            await pilot.pause(0.2)
            assert app.is_running and isinstance(app.screen, FindingDetail)
    _run(go())


def test_export_key_writes_the_markdown_report(tmp_path):
    target = tmp_path / "live.md"

    async def go():
        session = LiveSession([str(PREFILL_BOUND)], mode="replay", speed=math.inf)
        app = PdwatchApp(session, refresh=0.1, export_path=str(target))
        async with app.run_test(size=(80, 24)) as pilot:
            assert await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.done)
            await pilot.press("e")
            assert await wait_for(pilot, target.exists)
    _run(go())
    text = target.read_text(encoding="utf-8")
    assert text.startswith("# pdwatch report") and "prefill_bound" in text
