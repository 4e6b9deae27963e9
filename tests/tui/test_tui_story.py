"""One story in every view (issue 32): on a replay of a real Dynamo job whose KV cache filled
(tests/data/real/dynamo/agg_kv_pressure), paused in its kv_exhausted finding: short names keep the
findings table's since column on an 80-column screen, the timeline draws the finding's span and the
clock's mark, and a 200x50 screen puts time-axis charts in the width and the rows the panes leave."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pandas as pd

from pdwatch.session.live import LiveSession
from pdwatch.views.tui.app import PdwatchApp
from pdwatch.views.tui.widgets.findings_table import FindingsTable
from pdwatch.views.tui.widgets.format import time_text
from pdwatch.views.tui.widgets.run_charts import RunCharts
from pdwatch.views.tui.widgets.time_chart import TimeChart
from pdwatch.views.tui.widgets.timeline import CLOCK, GLYPH, LABEL, Timeline, column
from tests.tui.pilot_helpers import wait_for

CAPTURE = Path(__file__).resolve().parents[1] / "data" / "real" / "dynamo" / "agg_kv_pressure"


def screen_text(app) -> str:
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(segment.text for segment in strip) for strip in strips)


async def _paused_in_kv_exhausted(pilot):
    """Play the capture to its end, then go back to the middle of its kv_exhausted finding, paused."""
    app = pilot.app
    assert await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.done, timeout=60)
    kv = next(f for f in (app.snapshot.run_findings or app.snapshot.all_findings) if f.rule == "kv_exhausted")
    assert kv.end is not None and (kv.end - kv.start).total_seconds() > 30  # the capture's ~40 s of full KV cache
    middle = kv.start + (kv.end - kv.start) / 2
    app.session.paused = True
    app._go_to(pd.Timestamp(middle), "test: into the kv_exhausted finding")
    assert await wait_for(pilot, lambda: app.snapshot.clock == middle and any(
        f.rule == "kv_exhausted" for f in app.snapshot.findings))
    app.query_one(FindingsTable).move_cursor(row=0)
    await pilot.pause(0.5)
    return kv, middle


def _timeline_row(app) -> str:
    timeline = app.query_one(Timeline)
    lines = screen_text(app).splitlines()
    return lines[timeline.region.y][timeline.content_region.x:timeline.content_region.right]


def _assert_the_span_and_the_clock(app, kv, clock) -> None:
    timeline = app.query_one(Timeline)
    snap = app.snapshot
    row = _timeline_row(app)
    start, end = snap.start, snap.end
    assert row.startswith(time_text(start) + " ") and row.endswith(" " + time_text(end)), row
    strip = row[LABEL + 1:-(LABEL + 1)]
    assert len(strip) == timeline.content_region.width - 2 * (LABEL + 1)
    width = len(strip)
    # the clock's mark where the clock is, and nowhere else
    assert strip.index(CLOCK) == column(clock, start, end, width) and strip.count(CLOCK) == 1, strip
    # the kv_exhausted span, critical, from its start to the clock (the clock's cell is its mark)
    first = column(kv.start, start, end, width)
    last = column(kv.end if snap.run_findings else clock, start, end, width)
    assert last - first >= 5, (first, last, strip)
    cells = strip[first:last + 1].replace(CLOCK, "")
    assert cells == GLYPH["critical"] * len(cells), strip
    # before the first finding (capacity, info, starts a few seconds earlier): nothing fired
    earliest = min(f.start for f in (snap.run_findings or snap.all_findings))
    assert set(strip[:column(earliest, start, end, width)]) == {"─"}, strip


def test_80x24_short_names_keep_the_since_column_and_the_timeline_has_the_span_and_the_clock():
    async def go():
        app = PdwatchApp(LiveSession([str(CAPTURE)], mode="replay", speed=math.inf), refresh=0.1)
        async with app.run_test(size=(80, 24)) as pilot:
            kv, clock = await _paused_in_kv_exhausted(pilot)
            lines = screen_text(app).splitlines()
            assert len(lines) == 24 and all(len(line) <= 80 for line in lines)
            # the findings table: kv_exhausted on "worker" (the job's name dropped), since its start
            at = next(i for i, line in enumerate(lines) if "Findings" in line)
            header = lines[at + 1]
            assert header.split() == ["severity", "rule", "endpoint", "since", "summary"], header
            row = next(line for line in lines[at + 2:] if "kv_exhausted" in line)
            assert " worker " in row and kv.endpoint == "agg_kv_pressure.worker" and kv.endpoint not in row
            assert time_text(kv.start) in row, row
            assert header.index("since") == row.index(time_text(kv.start)), (header, row)
            # the timeline: one row, between the endpoints and the findings
            timeline = app.query_one(Timeline)
            assert timeline.display and timeline.region.height == 1 and timeline.region.y < at
            _assert_the_span_and_the_clock(app, kv, clock)
            # narrow: no chart takes the findings' rows
            assert not app.query_one(RunCharts).display or app.query_one(RunCharts).region.height == 0
    asyncio.run(go())


def test_200x50_charts_use_the_width_and_the_rows_and_do_not_redraw_when_nothing_changed():
    async def go():
        app = PdwatchApp(LiveSession([str(CAPTURE)], mode="replay", speed=math.inf), refresh=0.1)
        async with app.run_test(size=(200, 50)) as pilot:
            kv, clock = await _paused_in_kv_exhausted(pilot)
            charts = app.query_one(RunCharts)
            assert await wait_for(pilot, lambda: charts.region.height >= 12)
            await pilot.pause(0.3)
            assert charts.region.width > 150, charts.region
            shown = [c for c in charts.query(TimeChart) if c.display and c.region.height > 0]
            ids = {c.id for c in shown}
            # the worker's KV, queue and tokens/s, and the frontend's logged latency (no /metrics in a replay)
            assert {"chart-kv", "chart-running", "chart-waiting", "chart-tps", "chart-latency"} == ids, ids
            for chart in shown:
                assert chart.lines and all(line.values for line in chart.lines)  # no empty chart
            kv_chart = app.query_one("#chart-kv", TimeChart)
            (line,) = kv_chart.lines
            assert line.label == "worker" and max(line.values) >= 95  # the full KV cache, under its short name
            text = screen_text(app)
            lines = text.splitlines()
            assert len(lines) == 50
            assert "KV cache %" in text and time_text(app.snapshot.start) in lines[kv_chart.region.bottom - 1]
            blank = [i for i, line in enumerate(lines) if not line.strip()]
            assert len(blank) <= 3, (blank, text)
            # the timeline has its second row: the rule's name under its span, the clock's time under the mark
            timeline = app.query_one(Timeline)
            assert timeline.region.height == 2
            _assert_the_span_and_the_clock(app, kv, clock)
            labels = lines[timeline.region.y + 1]
            assert "kv_exhausted" in labels and "▲" + time_text(clock) in labels, labels
            # paused: ticks come and go, the charts are not built again
            builds = [c.builds for c in shown]
            assert all(builds)
            await pilot.pause(1.0)  # ~10 ticks at refresh 0.1
            assert [c.builds for c in shown] == builds
    asyncio.run(go())


def test_charts_ask_only_for_the_worst_endpoints_series():
    """samples/kv-exhausted has 9 serving endpoints: the charts draw the 6 worst (decode_w0, in
    trouble, first and in red) and ask the session for those series only (and the frontend's)."""
    from pdwatch.views.tui.app import worst_first
    from pdwatch.views.tui.widgets.run_charts import LINES, chart_specs

    session = LiveSession([str(CAPTURE.parents[3].parent / "samples" / "kv-exhausted")], mode="replay",
                          speed=math.inf)
    snap = session.tick()
    for _ in range(2000):
        session.ingest(5000)
        snap = session.tick()
        if snap.done:
            break
    assert snap.done
    asked: list[str] = []

    def series_of(name):
        asked.append(name)
        return session.endpoint_series(name)

    rows = worst_first(snap)
    serving = [r for r in rows if r.role in ("prefill", "decode")]
    assert len(serving) > LINES
    specs = chart_specs(rows, series_of, {})
    frontends = [r.name for r in rows if r.role == "frontend"]
    # the 6 worst serving endpoints, then the frontend (for its latency), each once per chart build
    assert asked == [r.name for r in serving[:LINES]] + frontends
    kv = next(s for s in specs if s.id == "kv")
    assert [line.label for line in kv.lines] == asked[:LINES] and kv.lines[0].label == "decode_w0"
    assert kv.lines[0].color == "red" and f"{LINES} worst of {len(serving)} endpoints" in kv.title
    assert max(kv.lines[0].values) > 99  # its KV cache full
    assert all(len(line.times) == len(line.values) > 0 for s in specs for line in s.lines)
