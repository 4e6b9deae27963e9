"""Snapshot tests of the dashboard (pytest-textual-snapshot) at 80x24 and 160x48.

The replay runs to the end of the prefill-bound sample at full speed, so every number on
screen comes from the logs and the picture is the same on every run. Update snapshots
only after looking at the SVGs (``pytest --snapshot-update``, then open the files in
``__snapshots__``).
"""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pytest

from pdwatch.session.live import LiveSession
from pdwatch.views.tui.app import PdwatchApp
from pdwatch.views.tui.screens.endpoint_detail import EndpointDetailScreen
from pdwatch.views.tui.widgets.findings_table import FindingsTable

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def _app(sample: str) -> PdwatchApp:
    return PdwatchApp(LiveSession([str(SAMPLES / sample)], mode="replay", speed=math.inf), refresh=0.1)


async def _until_done(pilot) -> None:
    app = pilot.app
    for _ in range(600):
        if app.snapshot is not None and app.snapshot.done and all(p.is_mounted for p in app.panes.values()):
            break
        await pilot.pause(0.05)
    # Where the table's cursor sits depends on which tick each finding arrived in (the replay
    # runs at full speed): put it on the first row so the picture is the same on every run.
    app.query_one(FindingsTable).move_cursor(row=0)
    await pilot.pause(0.3)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
@pytest.mark.parametrize("sample", ["prefill-bound", "kv-exhausted"])
def test_dashboard_snapshot(snap_compare, sample, size):
    assert snap_compare(_app(sample), terminal_size=size, run_before=_until_done)


async def _decode_detail(pilot) -> None:
    await _until_done(pilot)
    pilot.app.panes["decode_w0"].focus()
    await pilot.press("d")
    for _ in range(100):
        if isinstance(pilot.app.screen, EndpointDetailScreen):
            break
        await pilot.pause(0.05)
    await pilot.pause(0.3)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_endpoint_detail_snapshot(snap_compare, size):
    assert snap_compare(_app("kv-exhausted"), terminal_size=size, run_before=_decode_detail)
