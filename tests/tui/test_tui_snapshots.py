"""Snapshot tests of the dashboard's first screen (pytest-textual-snapshot) at 80x24 and 200x50,
with plain assertions on the screen's text: the endpoint in trouble, its KV %, the verdict line
and its finding are on it without a keypress (issue 17). At 80x24 the endpoints are the compact
table (the panes do not all fit); at 200x50 they are panes, worst first, when they fit above the
charts of the run (else the table), with the timeline under the charts.

The replay runs to the end of the sample at full speed, so every number on screen comes from
the logs and the picture is the same on every run. Update snapshots only after looking at the
SVGs (``pytest --snapshot-update``, then open the files in ``__snapshots__``).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from pdwatch.session.live import LiveSession
from pdwatch.views.tui.app import PdwatchApp
from pdwatch.views.tui.screens.endpoint_detail import EndpointDetailScreen
from pdwatch.views.tui.widgets.endpoints_table import EndpointsTable
from pdwatch.views.tui.widgets.findings_table import FindingsTable

SAMPLES = Path(__file__).resolve().parents[2] / "samples"

# what must be on the first screen: (the verdict's start, the endpoint in trouble, its KV %, its finding)
FIRST_SCREEN = {
    "kv-exhausted": ("Bottleneck: decode KV cache", "decode_w0", "99.9%", "kv_exhausted"),
    "prefill-bound": ("Bottleneck: prefill", "prefill_w0", "0.6%", "prefill_bound"),
}


def _app(sample: str) -> PdwatchApp:
    return PdwatchApp(LiveSession([str(SAMPLES / sample)], mode="replay", speed=math.inf), refresh=0.1)


def screen_text(app) -> str:
    """The characters on the terminal, line by line (what a person reads)."""
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(segment.text for segment in strip) for strip in strips)


async def _until_done(pilot) -> None:
    app = pilot.app
    for _ in range(600):
        if app.snapshot is not None and app.snapshot.done and all(p.is_mounted for p in app.panes.values()):
            break
        await pilot.pause(0.05)
    # Where the tables' cursors sit depends on which tick each finding arrived in (the replay
    # runs at full speed): put them on the first row so the picture is the same on every run.
    app.query_one(FindingsTable).move_cursor(row=0)
    app.query_one(EndpointsTable).move_cursor(row=0)
    await pilot.pause(0.4)


def _first_screen_check(sample: str, size: tuple[int, int]):
    async def run_before(pilot) -> None:
        await _until_done(pilot)
        text = screen_text(pilot.app)
        verdict, endpoint, kv, rule = FIRST_SCREEN[sample]
        lines = text.splitlines()
        assert len(lines) == size[1]
        assert lines[0].lstrip().startswith("TPS/GPU"), lines[0]  # the headline leads the first line
        assert verdict in lines[1], lines[1]  # the verdict line, second
        assert "replay max ended" in text  # the clock line
        # the endpoint in trouble, first of the endpoints, its KV % on its line (table) or the next (pane)
        at = next(i for i, line in enumerate(lines) if i > 2 and endpoint in line)
        row = lines[at]
        assert kv in row or kv in lines[at + 1], text
        if size[0] == 80:  # the compact table: its finding on its own line, first of the endpoints
            assert rule in row, row
            assert lines.index(row) == next(i for i, line in enumerate(lines) if line.lstrip().startswith("endpoint ")) + 1
        assert rule in text.split("Findings", 1)[1]  # and in the findings table
        assert "? help" in lines[-1] and "q quit" in lines[-1]
    return run_before


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
@pytest.mark.parametrize("sample", ["prefill-bound", "kv-exhausted"])
def test_dashboard_snapshot(snap_compare, sample, size):
    assert snap_compare(_app(sample), terminal_size=size, run_before=_first_screen_check(sample, size))


async def _decode_detail(pilot) -> None:
    await _until_done(pilot)
    pilot.app.panes["decode_w0"].focus()
    await pilot.press("d")
    for _ in range(100):
        if isinstance(pilot.app.screen, EndpointDetailScreen):
            break
        await pilot.pause(0.05)
    await pilot.pause(0.3)
    text = screen_text(pilot.app)
    assert "KV cache usage %" in text and "(scale from 0)" in text
    # each chart has a time axis: its first and last stats intervals' times under it, ticks between
    assert re.search(r"^ +14:00:10 +(\d\d:\d\d:\d\d +)+14:03:20 *$", text, re.M), text


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_endpoint_detail_snapshot(snap_compare, size):
    assert snap_compare(_app("kv-exhausted"), terminal_size=size, run_before=_decode_detail)


async def _story(pilot) -> None:
    from tests.tui.test_tui_story import _paused_in_kv_exhausted
    await _paused_in_kv_exhausted(pilot)
    app = pilot.app
    app.query_one(EndpointsTable).move_cursor(row=0)
    await pilot.pause(0.3)
    text = screen_text(app)
    assert "kv_exhausted" in text.split("Findings", 1)[1]
    if app.size.width >= 140:  # wide: the charts, the timeline's two rows
        assert "KV cache %" in text and "▲" in text


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
def test_real_kv_pressure_paused_in_its_finding_snapshot(snap_compare, size):
    """The real Dynamo capture whose KV cache filled, paused in kv_exhausted: short names, the
    timeline, and wide, the charts (look at the SVGs before updating them)."""
    from tests.tui.test_tui_story import CAPTURE
    app = PdwatchApp(LiveSession([str(CAPTURE)], mode="replay", speed=math.inf), refresh=0.1)
    assert snap_compare(app, terminal_size=size, run_before=_story)
