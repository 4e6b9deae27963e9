"""Pilot tests of the replay controls (step, seek, previous/next finding) and the endpoint detail view."""

from __future__ import annotations

import asyncio
import math
import shutil
from pathlib import Path

from pdwatch.session.live import LiveSession
from pdwatch.session.times import parse_start
from pdwatch.views.tui.app import PdwatchApp
from pdwatch.views.tui.screens.endpoint_detail import EndpointDetailScreen
from pdwatch.views.tui.screens.seek import SeekScreen
from pdwatch.views.tui.widgets.endpoints_table import EndpointsTable
from pdwatch.views.tui.widgets.findings_table import FindingsTable
from pdwatch.views.tui.widgets.format import log_text
from tests.tui.pilot_helpers import plain, wait_for

REPO = Path(__file__).resolve().parents[2]
PREFILL_BOUND = REPO / "samples" / "prefill-bound"
FINDINGS_START = "2026-05-29T14:01:31.250470+00:00"  # the four prefill_bound findings fire together
HOSTILE = "[bold]x[/] [@click=app.quit]q[/] \x1b[31mred\x1b[0m \x1b]0;title\x07"


def _replay(folder: Path = PREFILL_BOUND, speed: float = math.inf, **kwargs) -> PdwatchApp:
    return PdwatchApp(LiveSession([str(folder)], mode="replay", speed=speed, **kwargs), refresh=0.1)


def _done(app: PdwatchApp) -> bool:
    return app.snapshot is not None and app.snapshot.done and len(app.panes) == 6 \
        and all(p.is_mounted for p in app.panes.values())


def _settled(app: PdwatchApp) -> bool:
    snap = app.snapshot
    return snap is not None and snap.clock is not None and snap.seeking_to is None and not snap.loading


def _straight_to(when: str):
    """A fresh session advanced straight to ``when``: what a seek there must show."""
    session = LiveSession([str(PREFILL_BOUND)], mode="replay", speed=1.0, start=parse_start(when))
    while session.ingest(2000):
        pass
    return session.tick(0.0)


async def _seek(pilot, text: str) -> None:
    app = pilot.app
    await pilot.press("g")
    assert await wait_for(pilot, lambda: isinstance(app.screen, SeekScreen))
    await pilot.press(*text, "enter")
    assert await wait_for(pilot, lambda: not isinstance(app.screen, SeekScreen))
    assert await wait_for(pilot, lambda: _settled(app))


def _same_view(snap, fresh) -> None:
    assert snap.clock == fresh.clock
    assert [f.key for f in snap.all_findings] == [f.key for f in fresh.all_findings]
    assert [f.key for f in snap.findings] == [f.key for f in fresh.findings]
    assert snap.endpoints == fresh.endpoints  # the panes' numbers and sparklines too
    assert all(f.start <= snap.clock for f in snap.all_findings)


def test_endpoint_detail_opens_for_the_focused_pane():
    async def go():
        app = _replay()
        async with app.run_test(size=(80, 24)) as pilot:
            assert await wait_for(pilot, lambda: _done(app))
            # 80x24 shows the endpoints table, worst first: the user walks down to decode_w0's row
            endpoints = app.query_one(EndpointsTable)
            assert app.focused is endpoints and endpoints.selected() != "decode_w0"
            for _ in range(len(app.panes)):
                if endpoints.selected() == "decode_w0":
                    break
                await pilot.press("down")
            await pilot.press("enter")
            assert await wait_for(pilot, lambda: isinstance(app.screen, EndpointDetailScreen))
            screen = app.screen
            assert screen.endpoint == "decode_w0"
            assert "decode_w0" in plain(screen.query_one("#endpoint-title"))
            assert "decode" in plain(screen.query_one("#endpoint-title"))
            startup = plain(screen.query_one("#endpoint-startup"))
            for fact in ("28.45 GiB", "132.39 GiB", "1.41 GiB", "4,626,336 tokens", "451.79 requests",
                         "51 sizes", "largest 512"):
                assert fact in startup, (fact, startup)
            args = plain(screen.query_one("#endpoint-args"))
            assert "max_num_batched_tokens = 8192" in args and "data_parallel_size = 8" in args
            assert len(screen.detail.series.times) > 10 and max(screen.detail.series.gen_tps) > 40_000
            assert "Engine 007" in plain(screen.query_one("#endpoint-lines"))
            await pilot.press("escape")
            assert await wait_for(pilot, lambda: not isinstance(app.screen, EndpointDetailScreen))
            # d on the findings table opens the selected finding's endpoint
            table = app.query_one(FindingsTable)
            table.focus()
            table.move_cursor(row=2)
            expected = table.selected().endpoint
            await pilot.press("d")
            assert await wait_for(pilot, lambda: isinstance(app.screen, EndpointDetailScreen))
            assert app.screen.endpoint == expected
            await pilot.press("q")  # q closes the screen, not the app
            assert await wait_for(pilot, lambda: not isinstance(app.screen, EndpointDetailScreen))
            assert app.is_running
    asyncio.run(go())


def test_a_clicked_pane_keeps_the_focus_across_refreshes():
    """Until the user acts, the worst endpoint's pane has the focus; a click is an act."""
    async def go():
        app = _replay()
        async with app.run_test(size=(200, 50)) as pilot:
            assert await wait_for(pilot, lambda: _done(app))
            assert await wait_for(pilot, lambda: app.focused is app.panes["prefill_w0"])
            # the panes are ordered worst first as findings come: click once they stay where they are
            layout = None
            for _ in range(40):
                now = {name: pane.region for name, pane in app.panes.items()}
                if now == layout:
                    break
                layout = now
                await pilot.pause(0.2)
            target = app.panes["decode_w0"].region
            await pilot.click(offset=(target.x + 2, target.y + 1))
            assert await wait_for(pilot, lambda: app.focused is app.panes["decode_w0"]), (app.focused, layout)
            await pilot.pause(0.5)  # several refreshes (0.1 s each)
            assert app.focused is app.panes["decode_w0"]
            await pilot.press("enter")
            assert await wait_for(pilot, lambda: isinstance(app.screen, EndpointDetailScreen))
            assert app.screen.endpoint == "decode_w0"
    asyncio.run(go())


def test_endpoint_detail_shows_raw_lines_literally(tmp_path):
    folder = tmp_path / "logs"
    shutil.copytree(PREFILL_BOUND, folder)
    (folder / "metrics").exists() and shutil.rmtree(folder / "metrics")
    path = folder / "gb200-n001_prefill_w0.out"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(line.rstrip("\n") + f" {HOSTILE}\n" if "Avg prompt throughput" in line else line
                            for line in lines), encoding="utf-8")

    async def go():
        app = _replay(folder)
        async with app.run_test(size=(80, 24)) as pilot:
            assert await wait_for(pilot, lambda: _done(app))
            app.panes["prefill_w0"].focus()
            await pilot.press("d")
            assert await wait_for(pilot, lambda: isinstance(app.screen, EndpointDetailScreen))
            text = plain(app.screen.query_one("#endpoint-lines"))
            assert "[bold]x[/] [@click=app.quit]q[/]" in text
            assert "\x1b" not in text and "\x07" not in text  # escape sequences shown, never sent
            assert "q[/] red" in text or "q[/] \\x1b[31mred" in text  # stripped by the parser, or shown
            lines = app.screen.query_one("#endpoint-lines")
            app.screen.query_one("#endpoint-body").scroll_to_widget(lines, animate=False)
            await pilot.pause(0.1)
            for y in range(3):
                await pilot.click(lines, offset=(45, y))
            await pilot.pause(0.2)
            assert app.is_running and isinstance(app.screen, EndpointDetailScreen)
    asyncio.run(go())


def test_previous_finding_rewinds_to_its_start_then_next_plays_on():
    async def go():
        app = _replay()
        async with app.run_test(size=(80, 24)) as pilot:
            assert await wait_for(pilot, lambda: _done(app))
            end = app.snapshot.clock
            await pilot.press("p")
            assert await wait_for(pilot, lambda: _settled(app) and app.snapshot.clock < end)
            snap = app.snapshot
            assert snap.clock.isoformat() == FINDINGS_START and snap.paused
            _same_view(snap, _straight_to(FINDINGS_START))
            assert len(snap.findings) == 4 and app.query_one(FindingsTable).selected() is not None
            await pilot.press("p")  # nothing started before these
            await pilot.pause(0.2)
            assert app.snapshot.clock.isoformat() == FINDINGS_START
            assert "no finding started before" in plain(app.query_one("#status"))
            await pilot.press("n")  # no new finding after them: plays on to the end
            assert await wait_for(pilot, lambda: app.snapshot.done)
            assert app.snapshot.clock == end
    asyncio.run(go())


def test_seek_backward_then_forward_matches_a_fresh_replay():
    async def go():
        app = _replay(speed=20.0, start=parse_start("2026-05-29T14:02:20Z"))
        app.session.paused = True  # the clock moves only when asked
        async with app.run_test(size=(80, 24)) as pilot:
            assert await wait_for(pilot, lambda: _settled(app) and len(app.snapshot.findings) == 4)
            await _seek(pilot, "14:01:00")  # backward: before the findings' start
            snap = app.snapshot
            assert snap.clock.isoformat() == "2026-05-29T14:01:00+00:00"
            assert not snap.findings and not snap.all_findings and app.query_one(FindingsTable).row_count == 0
            _same_view(snap, _straight_to("2026-05-29T14:01:00Z"))
            await _seek(pilot, "+45s")  # forward, as an offset from the clock
            assert app.snapshot.clock.isoformat() == "2026-05-29T14:01:45+00:00"
            _same_view(app.snapshot, _straight_to("2026-05-29T14:01:45Z"))
            # four findings, one group row (issue 17)
            assert await wait_for(pilot, lambda: len(app.query_one(FindingsTable).findings) == 4)
            await _seek(pilot, "2026-05-29T13:59:30Z")  # backward again, ISO 8601
            _same_view(app.snapshot, _straight_to("2026-05-29T13:59:30Z"))
            clock = app.snapshot.clock
            await pilot.press("s")  # one refresh step: 0.1 s at 20x
            assert await wait_for(pilot, lambda: _settled(app) and app.snapshot.clock > clock)
            assert (app.snapshot.clock - clock).total_seconds() == 2.0 and app.snapshot.paused
    asyncio.run(go())


def test_bad_seek_input_says_why_and_keeps_the_clock():
    async def go():
        app = _replay(speed=20.0, start=parse_start("14:01:00"))
        app.session.paused = True
        async with app.run_test(size=(80, 24)) as pilot:
            assert await wait_for(pilot, lambda: _settled(app))
            clock = app.snapshot.clock
            await pilot.press("g")
            assert await wait_for(pilot, lambda: isinstance(app.screen, SeekScreen))
            await pilot.press(*"5 minutes ago", "enter")
            await pilot.pause(0.1)
            assert isinstance(app.screen, SeekScreen)  # still open, with the reason
            error = plain(app.screen.query_one("#seek-error"))
            assert "5 minutes ago" in error and "+5m" in error and "HH:MM" in error
            await pilot.press("escape")
            assert await wait_for(pilot, lambda: not isinstance(app.screen, SeekScreen))
            await pilot.pause(0.2)
            assert app.snapshot.clock == clock
    asyncio.run(go())


def test_log_text_shows_control_characters_instead_of_sending_them():
    text = log_text("a \x1b[31mred\x1b[0m\r\x07 [bold]b[/]\tc")
    assert text.plain == "a \\x1b[31mred\\x1b[0m\\x0d\\x07 [bold]b[/]\tc" and not text.spans
