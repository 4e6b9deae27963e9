"""The dashboard leads with what is wrong (issue 17): the footer's keys per focused panel, the
t toggle, grouped findings that expand, the log opened from evidence (a local file in the job log
view, a file over ssh in the single-file viewer through the stand-in ssh), the help at 80x24, the 60x16 degradation."""

from __future__ import annotations

import asyncio
import math
import shutil
from pathlib import Path


from pdwatch.session.live import LiveSession
from pdwatch.sources.window import read_window
from pdwatch.views.tui.app import PdwatchApp
from pdwatch.views.tui.screens.finding_detail import EvidenceLine, FindingDetail
from pdwatch.views.tui.screens.help import HelpScreen
from pdwatch.views.tui.screens.job_log import JobLogScreen
from pdwatch.views.tui.screens.log_viewer import LogViewerScreen
from pdwatch.views.tui.widgets.endpoint_pane import EndpointPane
from pdwatch.views.tui.widgets.endpoints_table import EndpointsTable
from pdwatch.views.tui.widgets.findings_table import FindingsTable
from pdwatch.views.tui.widgets.keybar import KeyBar
from tests.sources.conftest import fake_ssh  # noqa: F401  (the stand-in ssh fixture)
from tests.tui.pilot_helpers import plain, wait_for

REPO = Path(__file__).resolve().parents[2]
PREFILL_BOUND = REPO / "samples" / "prefill-bound"
KV_EXHAUSTED = REPO / "samples" / "kv-exhausted"


def screen_text(app) -> str:
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(segment.text for segment in strip) for strip in strips)


def _app(folder: Path = PREFILL_BOUND, **kw) -> PdwatchApp:
    return PdwatchApp(LiveSession([str(folder)], mode="replay", speed=math.inf, **kw), refresh=0.1)


def _done(app) -> bool:
    return app.snapshot is not None and app.snapshot.done and all(p.is_mounted for p in app.panes.values()) \
        and len(app.panes) == len(app.snapshot.endpoints)


def test_footer_lists_the_focused_panels_keys_and_t_toggles_the_view():
    async def go():
        app = _app()
        async with app.run_test(size=(80, 24)) as pilot:
            assert await wait_for(pilot, lambda: _done(app))
            await pilot.pause(0.3)
            keys = app.query_one(KeyBar)
            assert isinstance(app.focused, EndpointsTable) and app._shown_view == "table"
            bar = plain(keys)
            for entry in ("⏎ detail", "d detail", "t panes", "tab next panel", "n/p finding", "space pause",
                          "s step", "+/- speed", "g go to", "e export", "? help", "q quit"):
                assert entry in bar, (entry, bar)
            assert bar.count("\n") == 1  # two lines at 80 columns
            await pilot.press("tab")  # to the findings table: its keys first
            assert await wait_for(pilot, lambda: isinstance(app.focused, FindingsTable))
            bar = plain(keys)
            assert bar.lstrip().startswith("⏎ open") and "x expand" in bar and "d endpoint" in bar
            assert "? help" in bar and "q quit" in bar
            await pilot.press("t")  # panes instead of the table (like htop's views)
            assert await wait_for(pilot, lambda: app._shown_view == "panes")
            app.panes["prefill_w0"].focus()
            assert await wait_for(pilot, lambda: "t table" in plain(keys))
            assert not app.query_one(EndpointsTable).display or app.query_one(EndpointsTable).has_class("-hidden")
            await pilot.press("t")
            assert await wait_for(pilot, lambda: app._shown_view == "table")
    asyncio.run(go())


def test_watch_footer_has_no_replay_keys():
    from pdwatch.views.tui.widgets.keybar import key_entries, keybar_text
    watch = keybar_text(key_entries("endpoints", replay=False), 80).plain
    assert "space" not in watch and "step" not in watch and "? help" in watch and "tab next panel" in watch
    narrow = keybar_text(key_entries("findings", replay=True), 40).plain
    assert narrow.count("\n") <= 1 and "? help" in narrow and "q quit" in narrow  # never cut: help and quit


def test_grouped_findings_expand_and_d_opens_the_top_findings_endpoint():
    async def go():
        app = _app()
        async with app.run_test(size=(80, 24)) as pilot:
            assert await wait_for(pilot, lambda: _done(app))
            table = app.query_one(FindingsTable)
            assert table.row_count == 1 and len(table.findings) == 4
            assert "prefill_w0–w3 (4)" in plain_row(table, 0)
            table.focus()
            await pilot.press("x")
            assert await wait_for(pilot, lambda: table.row_count == 5)
            assert [plain_row(table, r).split()[0] for r in range(1, 5)] == ["└"] * 4
            await pilot.press("x")
            assert await wait_for(pilot, lambda: table.row_count == 1)
            await pilot.press("enter")  # the group's detail: every endpoint listed, why and fix once
            assert await wait_for(pilot, lambda: isinstance(app.screen, FindingDetail))
            members = plain(app.screen.query_one("#detail-members"))
            for name in ("prefill_w0", "prefill_w1", "prefill_w2", "prefill_w3"):
                assert name in members
            assert "(4 endpoints)" in plain(app.screen.query_one("#detail-title"))
            await pilot.press("escape")
            assert await wait_for(pilot, lambda: not isinstance(app.screen, FindingDetail))
            app.query_one(EndpointsTable).focus()
            app.query_one(EndpointsTable).move_cursor(row=0)
            await pilot.press("d")  # the top row: the endpoint in trouble
            from pdwatch.views.tui.screens.endpoint_detail import EndpointDetailScreen
            assert await wait_for(pilot, lambda: isinstance(app.screen, EndpointDetailScreen))
            assert app.screen.endpoint == "prefill_w0"
    asyncio.run(go())


def plain_row(table, row: int) -> str:
    return " ".join(str(getattr(c, "plain", c)) for c in table.get_row_at(row))


def test_panes_worst_first_with_severity_borders_and_marked_engines():
    async def go():
        app = _app(KV_EXHAUSTED)
        async with app.run_test(size=(200, 50)) as pilot:
            assert await wait_for(pilot, lambda: _done(app))
            # ten panes do not fit above the wide screen's charts: the table first, t shows the panes
            await pilot.pause(0.3)
            if app._shown_view != "panes":
                await pilot.press("t")
            assert await wait_for(pilot, lambda: app._shown_view == "panes")
            await pilot.pause(0.3)
            decode = app.panes["decode_w0"]
            assert decode.has_class("-critical") and not app.panes["prefill_w0"].has_class("-critical")
            scroll = app.query_one("#endpoints")
            assert scroll.children[0].id == "title-decode"  # the decode group (critical) first
            engines = plain(decode.query_one(".engines"))
            assert engines.count("!e") == 8  # kv_exhausted names the 8 engines
            for line in engines.splitlines():  # whole entries per line: every line starts an entry
                assert line.startswith("!e") and line.rstrip().endswith("%")
            spark = plain(decode.query_one("Spark"))
            assert spark.rstrip().endswith("tok/s") and "0–" in spark  # zero-based, labelled
            tops = {plain(p.query_one("Spark")).split()[-2] for p in app.panes.values() if p.role == "prefill"}
            assert len(tops) == 1  # one scale for the role
    asyncio.run(go())


def test_60x16_keeps_the_clock_and_the_verdict():
    async def go():
        app = _app(KV_EXHAUSTED)
        async with app.run_test(size=(60, 16)) as pilot:
            assert await wait_for(pilot, lambda: _done(app))
            app.query_one(EndpointsTable).move_cursor(row=0)
            await pilot.pause(0.4)
            lines = screen_text(app).splitlines()
            assert len(lines) == 16 and all(len(line) <= 60 for line in lines)
            assert lines[0].lstrip().startswith("TPS/GPU")
            assert "Bottleneck: decode KV cache" in lines[1]
            assert "14:03:20" in lines[3] and "replay max ended" in lines[3]  # the clock kept
            row = next(line for line in lines[4:] if "decode_w0" in line and "99.9%" in line)
            assert "kv_exhausted" in row  # the endpoint in trouble with its KV % and its finding
            assert "? help" in lines[-1] and "q quit" in lines[-1]
    asyncio.run(go())


def test_help_fits_80x24_and_says_how_to_close():
    async def go():
        app = _app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("question_mark")
            assert await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
            await pilot.pause(0.2)
            box = app.screen.query_one("VerticalScroll")
            assert box.outer_size.height <= 24 and box.outer_size.width <= 80
            assert box.max_scroll_y == 0 and box.max_scroll_x == 0  # all of it visible, nothing to scroll
            text = plain(app.screen.query_one("#help-text"))
            assert "Esc, q or ? closes this" in text.splitlines()[0]
            for key in ("tab", "enter", "d", "t", "x", "n / p", "space", "s", "+ / -", "g", "e", "?", "q"):
                assert key in text
            await pilot.press("escape")
            assert await wait_for(pilot, lambda: not isinstance(app.screen, HelpScreen))
    asyncio.run(go())


HOSTILE = "[bold]x[/] [@click=app.quit]q[/] \x1b]0;owned\x07"


def _hostile_copy(tmp: Path) -> Path:
    folder = tmp / "logs"
    shutil.copytree(PREFILL_BOUND, folder)
    (folder / "metrics").exists() and shutil.rmtree(folder / "metrics")
    path = folder / "gb200-n001_prefill_w0.out"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(line.rstrip("\n") + f" {HOSTILE}\n" if "Avg prompt throughput" in line else line
                            for line in lines), encoding="utf-8")
    return folder


def test_enter_on_evidence_opens_the_log_at_its_line_searchable(tmp_path):
    """A local log opens in the job log view (the job's files interleaved), at the evidence line."""
    folder = _hostile_copy(tmp_path)

    async def go():
        app = _app(folder)
        async with app.run_test(size=(120, 40)) as pilot:
            assert await wait_for(pilot, lambda: _done(app))
            table = app.query_one(FindingsTable)
            table.focus()
            await pilot.press("enter")
            assert await wait_for(pilot, lambda: isinstance(app.screen, FindingDetail))
            first = app.screen.query(EvidenceLine).first()
            assert app.screen.focused is first
            assert "[bold]x[/]" in plain(first)  # the log text as text, marked values in bold
            evidence = first.evidence
            await pilot.press("enter")
            assert await wait_for(pilot, lambda: isinstance(app.screen, JobLogScreen))
            viewer = app.screen
            assert await wait_for(pilot, lambda: viewer.window is not None and viewer.window.lines)
            anchor = viewer.window.lines[viewer.window.anchor]
            assert (anchor.source, anchor.line_no) == (evidence.source, evidence.line_no)
            target = plain(viewer.query_one("#job-lines")).splitlines()[viewer.window.anchor]
            assert "Avg prompt throughput" in target
            assert "[bold]x[/] [@click=app.quit]q[/]" in target and "\x1b" not in target and "\x07" not in target
            await pilot.press("slash", *"ENGINE", "enter")  # case-insensitive
            assert await wait_for(pilot, lambda: " of " in plain(viewer.query_one("#job-status")))
            status = plain(viewer.query_one("#job-status"))
            assert status.startswith("“ENGINE”: match ") and len(viewer.matches) > 10, status
            assert "Engine" in viewer.window.lines[viewer.matches[viewer.current]].text
            first_match = viewer.current
            await pilot.press("n")
            assert viewer.current == (first_match + 1) % len(viewer.matches)
            await pilot.click("#job-body", offset=(30, 5))  # clicking the text runs nothing
            await pilot.pause(0.2)
            assert app.is_running and isinstance(app.screen, JobLogScreen)
            await pilot.press("escape")
            assert await wait_for(pilot, lambda: isinstance(app.screen, FindingDetail))
    asyncio.run(go())


def test_log_window_is_bounded_around_the_line(tmp_path):
    path = tmp_path / "big.log"
    with open(path, "w") as f:
        for i in range(1, 20001):
            f.write(f"line {i}\n")
    w = read_window(str(path), 10_000, before=5, after=5)
    assert (w.first, w.last, w.lines[5], w.at_end) == (9_995, 10_005, "line 10000", False)
    w = read_window(str(path), 3, before=10, after=2)
    assert (w.first, w.last) == (1, 5)
    w = read_window(str(path), 19_999, before=1, after=10)
    assert w.lines == ["line 19998", "line 19999", "line 20000"] and w.at_end
    assert read_window(str(tmp_path / "missing.log"), 1).error


def test_log_window_over_ssh_cuts_the_file_on_its_host(tmp_path, fake_ssh):  # noqa: F811
    remote = tmp_path / "remote" / "job"
    remote.mkdir(parents=True)
    log = remote / "n1_decode_w0.out"
    log.write_text("".join(f"remote {i} {HOSTILE}\n" for i in range(1, 501)))
    source = f"node7:{log}"
    w = read_window(source, 250, before=3, after=3, ssh_args=[f"ssh://node7{remote}/*.out"])
    assert w.error is None, w.error
    assert (w.first, w.last) == (247, 253) and w.lines[3].startswith("remote 250 ")
    call = fake_ssh.calls()[-1]
    assert call["argv"][-2] == "node7" and "sed -n " in call["argv"][-1] and "247,253p;254q" in call["argv"][-1]
    assert call["stdin_devnull"]


def test_log_viewer_over_ssh_in_the_dashboard(tmp_path, fake_ssh):  # noqa: F811
    remote = tmp_path / "remote"
    shutil.copytree(PREFILL_BOUND, remote)
    (remote / "metrics").exists() and shutil.rmtree(remote / "metrics")

    async def go():
        app = PdwatchApp(LiveSession([f"ssh://node7{remote}/*.out"], mode="replay", speed=math.inf), refresh=0.1)
        async with app.run_test(size=(120, 40)) as pilot:
            assert await wait_for(pilot, lambda: _done(app) and len(app.panes) >= 5, timeout=60)
            app.query_one(FindingsTable).focus()
            await pilot.press("enter")
            assert await wait_for(pilot, lambda: isinstance(app.screen, FindingDetail))
            evidence = app.screen.query(EvidenceLine).first().evidence
            assert evidence.source.startswith("node7:/")
            await pilot.press("enter")
            assert await wait_for(pilot, lambda: isinstance(app.screen, LogViewerScreen))
            viewer = app.screen
            assert await wait_for(pilot, lambda: viewer.window is not None, timeout=30)
            assert viewer.window.error is None, viewer.window.error
            lines = plain(viewer.query_one("#log-lines")).splitlines()
            assert "Avg prompt throughput" in lines[evidence.line_no - viewer.window.first]
    asyncio.run(go())


def test_table_cells_are_text_never_markup(tmp_path):
    from pdwatch.session.snapshot import EndpointRow
    from pdwatch.views.tui.widgets.endpoints_table import endpoint_cells
    row = EndpointRow(name="[bold]x[/] [@click=app.quit]q", role="decode", engines=(0,), gpus=1, prompt_tps=0.0,
                      gen_tps=1.0, running=1.0, waiting=0.0, kv_usage_pct=96.0, last_seen=None, stale_for_s=None,
                      interval_s=10.0, history=(1.0,), engine_rows=(), sources=())
    cells = endpoint_cells(row, None)
    assert cells[0].plain == "[bold]x[/] [@click=app.quit]q"
    assert "red" in str(cells[6].style)  # KV >= 95%: red
    assert isinstance(EndpointPane, type)
