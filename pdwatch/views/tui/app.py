"""The dashboard: header (TPS/GPU, the verdict, the clock), the endpoints worst first (a compact
table, or panes when they all fit; ``t`` toggles), the Dynamo frontends in a line or two each, the
findings grouped across endpoints, and a footer with the focused panel's keys; a worker thread ingests.

Threads: the ingest worker only calls ``LiveSession.ingest`` (which hands events over under
a lock) and talks to the app with ``post_message``; the UI thread ticks the session every
``refresh`` seconds (``set_interval``) and renders the immutable snapshot. Replay controls
(pause, step, seek, next/previous finding) call the session on the UI thread too: the store
and the rule engine have one owner.
"""

from __future__ import annotations

import os
import threading
import time
import traceback

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, Static

from pdwatch.events.job_log import JobLog
from pdwatch.rules.findings import severity_rank
from pdwatch.session.live import LiveSession
from pdwatch.session.snapshot import EndpointRow, Snapshot

from .messages import IngestFailed, LinesArrived, SourcesRead
from .screens.endpoint_detail import EndpointDetailScreen
from .screens.finding_detail import FindingDetail
from .screens.help import HelpScreen
from .screens.job_log import JobLogScreen
from .screens.log_viewer import LogViewerScreen
from .screens.seek import SeekScreen
from .widgets.endpoint_pane import EndpointPane
from .widgets.endpoints_table import EndpointsTable
from .widgets.findings_table import FindingsTable
from .widgets.format import clock_text, time_text
from .widgets.frontend_strip import FrontendStrip
from .widgets.header import DeploymentHeader
from .widgets.keybar import KeyBar
from .widgets.short_names import short_names
from .widgets.run_charts import RunCharts, chart_specs
from .widgets.timeline import Timeline, run_range

GROUPS = (("prefill", "Prefill"), ("decode", "Decode"), ("other", "Other"))


def group_of(role: str) -> str:
    return role if role in ("prefill", "decode") else "other"


def has_pane(row: EndpointRow) -> bool:
    """A frontend with requests or /metrics to show is in the frontend strip, not in a pane."""
    return row.frontend_summary is None


class PdwatchApp(App):
    TITLE = "pdwatch"
    ENABLE_COMMAND_PALETTE = False  # every action has a key (see ?); the footer needs the room
    TICK_BUDGET_S = 0.2  # a long replay jump evaluates the rules for at most this long per tick
    CSS = """
    #endpoints { height: 1fr; }
    #endpoints.-hidden, #endpoints-table.-hidden { display: none; }
    #endpoints-table { height: 1fr; }
    .group-title { height: 1; text-style: bold; background: $panel; padding: 0 1; }
    .group { height: auto; }
    Screen.-wide .group { layout: grid; grid-size: 2; grid-rows: auto; grid-gutter: 0 1; }
    #findings-title { height: 1; text-style: bold; background: $panel; padding: 0 1; }
    /* as tall as the findings (at most 40%): the panes get the rest */
    #findings-box { height: auto; max-height: 40%; min-height: 4; }
    #status { height: 1; color: $text-muted; padding: 0 1; }
    #charts { display: none; }
    /* wide, with series to draw: the charts take the room the endpoints leave */
    Screen.-charts #charts { display: block; }
    Screen.-charts #endpoints, Screen.-charts #endpoints-table { height: auto; max-height: 45%; }
    Screen.-wide #timeline { height: 2; }  /* the rules' names and the clock's time under the strip */
    Screen.-short #timeline { display: none; }  /* under 20 rows: the endpoints and findings need them */
    """
    # The footer (KeyBar) lists the focused panel's keys; ? lists every key.
    BINDINGS = [
        Binding("q", "quit", "quit"),
        # Ctrl-C stops the dashboard as a SIGINT would (status 130), wherever the focus is (a text box
        # would take it for copy), instead of Textual's "press q to quit" notice: the raw terminal makes
        # it a key, and pdwatch's docs and the demo's first lines promise that it stops.
        Binding("ctrl+c", "interrupt", show=False, priority=True),
        Binding("question_mark", "help", "help", key_display="?"),
        Binding("d", "endpoint_detail", "endpoint"),
        Binding("t", "toggle_view", "table/panes", show=False),
        Binding("space", "pause", "pause"),
        Binding("s", "step", "step", show=False),
        Binding("plus,equals_sign", "faster", "faster", key_display="+", show=False),
        Binding("minus", "slower", "slower", key_display="-", show=False),
        Binding("n", "next_finding", "next"),
        Binding("p", "previous_finding", "prev"),
        Binding("g", "seek", "go to"),
        Binding("f", "first_trouble", "first trouble", show=False),
        Binding("h", "toggle_resolved", "hide cleared", show=False),
        Binding("l", "job_log", "logs", show=False),  # the key bar and ? list it
        Binding("e", "export", "export", show=False),
    ]

    def __init__(self, session: LiveSession, refresh: float = 0.5, export_path: str = "pdwatch-live-report.md",
                 banner: str | None = None) -> None:
        super().__init__()
        self.banner = banner  # said in the header and the status line (pdwatch demo: a simulation, where its logs are)
        self.session = session
        session.tick_budget_s = self.TICK_BUDGET_S
        self.refresh_s = refresh
        self.export_path = export_path
        self.snapshot: Snapshot | None = None
        self.nothing_to_judge: str | None = None  # set when a replay read only junk: the app exits
        self._panes: dict[str, EndpointPane] = {}
        self._stop = threading.Event()
        self._lines_pending = threading.Event()  # a LinesArrived message is on its way
        self._last_tick = 0.0
        self._early_tick_set = False
        self._status = ""
        self._select_next_fired = False  # after n: put the cursor on the finding that stops the replay
        self.main = None  # the main screen, set on mount
        self.view = "auto"  # "auto": the panes when they all fit, else the table; "table" / "panes": chosen with t
        self._shown_view: str | None = None
        self._role_order: list[str] = []
        self._label_names: tuple[str, ...] | None = None
        self._charts_key: tuple | None = None  # what the charts show (store generation, range, endpoints)
        self._charts_at = 0.0
        self._short: dict[str, str] = {}
        self._touched = False  # a key or a click: the focus is the user's, not kept on the worst endpoint
        self._auto_focused: EndpointPane | None = None  # the pane the dashboard itself gave the focus last
        self.failure: BaseException | None = None  # what failed inside the app and ended it
        self.show_resolved = True  # the findings that cleared stay in the table (h hides them)
        self._offered_first_trouble = False  # replay: the first trouble's time was said once

    REPLAY_ONLY = {"pause", "step", "faster", "slower", "seek", "first_trouble"}

    def check_action(self, action: str, parameters) -> bool | None:
        """Watch mode has no clock to move: its footer does not offer the replay keys."""
        if action in self.REPLAY_ONLY and self.session.mode != "replay":
            return False
        return True

    @property
    def panes(self) -> dict[str, EndpointPane]:
        """The pane of each endpoint (a pane being moved to its role's group is not in it)."""
        return dict(self._panes)

    # -- layout --------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield DeploymentHeader(id="header")
        yield EndpointsTable(id="endpoints-table")
        with VerticalScroll(id="endpoints", can_focus=False):
            for key, title in GROUPS:
                yield Static(title, classes="group-title", id=f"title-{key}", markup=False)
                yield Vertical(classes="group", id=f"group-{key}")
        yield FrontendStrip(id="frontends", classes="-empty")  # after the serving endpoints, in either view
        yield RunCharts(id="charts")  # wide: the run's KV, queue, tokens/s and latency over time
        yield Timeline(id="timeline", classes="-empty")
        with Vertical(id="findings-box"):
            yield Static("Findings (enter: details, x: expand a group)", id="findings-title", markup=False)
            yield FindingsTable(id="findings")
        yield Static("", id="status", markup=False)
        yield KeyBar(id="keys")

    def on_mount(self) -> None:
        if self._stop.is_set():  # told to stop while starting (a signal): its widgets may never be mounted
            return
        self.main = self.screen  # ticks render here even while a detail or help screen is on top
        self.main.set_class(self.size.width >= 140, "-wide")
        self.main.set_class(self.size.height < 20, "-short")
        for key, _ in GROUPS:
            self.main.query_one(f"#title-{key}").display = False
        self.main.query_one("#endpoints").add_class("-hidden")
        self.main.query_one(EndpointsTable).focus()
        self._show_keys()
        if self.banner:
            self.main.query_one(DeploymentHeader).tag = "SIMULATION"
            self.set_status(self.banner)
        self.run_worker(self._ingest, thread=True, exclusive=True, group="ingest", exit_on_error=False)
        self.set_interval(self.refresh_s, self.tick)
        self.call_after_refresh(self.tick)

    async def action_quit(self) -> None:
        self._stop.set()
        await super().action_quit()

    def action_interrupt(self) -> None:
        self.stop(130)

    def stop(self, status: int) -> None:
        """End the dashboard as q does, with this exit status (a stop signal's: 128 + its number)."""
        self._stop.set()
        self.exit(return_code=status)

    def _handle_exception(self, error: Exception) -> None:
        # Textual's hook for an exception nothing caught: it ends the app and restores the terminal.
        # Kept so the command can say in one line what failed.
        if self.failure is None:
            self.failure = error
        super()._handle_exception(error)

    def on_resize(self, event) -> None:
        if self.main is not None:
            self.main.set_class(event.size.width >= 140, "-wide")
            self.main.set_class(event.size.height < 20, "-short")
            if self.snapshot is not None:
                self._apply_view(self.snapshot)

    def on_key(self, _event) -> None:
        self._touched = True

    def on_mouse_down(self, _event) -> None:
        # A click focuses what it hits: the next refresh must not move the focus back to the worst endpoint.
        self._touched = True

    def _user_moved_focus(self) -> bool:
        """A pane has the focus that the dashboard did not give it: a click, which the refresh may
        see before the click's own event reaches the app."""
        focused = self.focused
        return isinstance(focused, EndpointPane) and self._auto_focused is not None and focused is not self._auto_focused

    def on_descendant_focus(self, _event) -> None:
        self._show_keys()

    def _panel(self) -> str:
        focused = self.focused
        if isinstance(focused, FindingsTable):
            return "findings"
        if isinstance(focused, EndpointPane):
            return "panes"
        return "endpoints" if self._shown_view != "panes" else "panes"

    def _show_keys(self) -> None:
        if self.main is not None and self.main.is_attached:
            try:
                self.main.query_one(KeyBar).show(self._panel(), self.session.mode == "replay")
            except NoMatches:
                pass

    def on_unmount(self) -> None:
        self._stop.set()
        self.session.stop()

    # -- the worker thread -----------------------------------------------------------------------
    def _ingest(self) -> None:
        try:
            while not self._stop.is_set():
                n = self.session.ingest(500)
                if self.session.source_done:
                    self.post_message(SourcesRead())
                    return
                if n == 0:
                    self._stop.wait(0.1)
                elif self.session.mode == "watch" and not self._lines_pending.is_set():
                    self._lines_pending.set()  # one message per update, however many lines came in
                    self.post_message(LinesArrived())
        except Exception:  # noqa: BLE001 - shown in the status line, the UI keeps the data it has
            self.post_message(IngestFailed(traceback.format_exc(limit=3)))

    def on_sources_read(self, _: SourcesRead) -> None:
        self.tick()

    def on_lines_arrived(self, _: LinesArrived) -> None:
        """New lines while watching: update now, or half a refresh after the last update, so a
        line shows within about half a refresh rather than a whole one."""
        wait = self._last_tick + self.refresh_s / 2 - time.monotonic()
        if wait <= 0:
            self.tick()
        elif not self._early_tick_set:
            self._early_tick_set = True
            self.set_timer(wait, self._early_tick)

    def _early_tick(self) -> None:
        self._early_tick_set = False
        self.tick()

    def on_ingest_failed(self, message: IngestFailed) -> None:
        self.set_status("reading the logs failed: " + message.error.strip().splitlines()[-1])

    # -- ticking ---------------------------------------------------------------------------------
    def tick(self) -> None:
        if self._stop.is_set() or self.main is None or not self.main.is_attached:
            return  # shutting down: the widgets are going away
        self._lines_pending.clear()
        self._last_tick = time.monotonic()
        snap = self.session.tick()
        self.snapshot = snap
        if snap.nothing_to_judge is not None:  # junk in: no dashboard around nothing; the command says why
            self.nothing_to_judge = snap.nothing_to_judge
            self._stop.set()
            self.exit()
            return
        try:
            self.render_snapshot(snap)
            if self._select_next_fired and not self.session.finding_hunt_active:
                self._select_next_fired = False
                if snap.paused and snap.all_findings:  # stopped on a new finding: the newest start
                    newest = max(snap.all_findings, key=lambda f: f.start)
                    self._select_finding(newest.start)
                    self.set_status(f"next finding: {newest.rule} on {newest.endpoint or 'the deployment'} "
                                    f"at {clock_text(newest.start)} (paused)")
                else:
                    self.set_status("no new finding up to the end of the logs")
            if isinstance(self.screen, EndpointDetailScreen):
                detail = self.session.endpoint_detail(self.screen.endpoint)
                if detail is not None:  # None: a rewind to before its first line; keep the last view
                    self.screen.show(detail, snap)
        except NoMatches:  # a tick racing the app's shutdown
            pass

    def render_snapshot(self, snap: Snapshot) -> None:
        main = self.main
        main.query_one(DeploymentHeader).show(snap)
        names = {row.name for row in snap.endpoints if has_pane(row)}
        # gone: a rewind to before its first line; a frontend's first rows (it moves to the frontend strip)
        for name in [n for n in self._panes if n not in names]:
            self._panes.pop(name).remove()
        rows = worst_first(snap)
        severity = snap.diagnosis.endpoint_severity if snap.diagnosis is not None else {}
        tops = role_scales(snap)
        labels = self._labels(snap)
        main.query_one(FrontendStrip).show(rows, severity, labels)
        main.query_one(Timeline).show(snap)
        self._update_charts(snap, rows, labels)
        paned = [row for row in rows if has_pane(row)]
        for row in paned:
            pane = self._panes.get(row.name)
            if pane is not None and pane.role != row.role:  # the role became known: move the pane
                pane.remove()
                del self._panes[row.name]
                pane = None
            marks = snap.diagnosis.engine_severity.get(row.name, {}) if snap.diagnosis is not None else {}
            top = tops.get(row.role)
            if pane is None:
                pane = self._panes[row.name] = EndpointPane(row)
                pane.show(row, top, severity.get(row.name), marks, labels.get(row.name))
                main.query_one(f"#group-{group_of(row.role)}").mount(pane)
            else:
                pane.show(row, top, severity.get(row.name), marks, labels.get(row.name))
        self._order_panes(paned, severity)
        for key, _ in GROUPS:
            main.query_one(f"#title-{key}").display = any(group_of(p.role) == key for p in self._panes.values())
        main.query_one(EndpointsTable).show(rows, snap.findings, labels)
        listed = {f.key for f in snap.findings}  # (the end of a replay lists the run's, cleared ones too)
        resolved = tuple(f for f in snap.all_findings if f.end is not None and f.key not in listed) \
            if self.show_resolved else ()
        main.query_one(FindingsTable).show(snap.findings, snap.groups, labels, resolved)
        self._apply_view(snap)
        self._touched = self._touched or self._user_moved_focus()
        if not self._touched and self._shown_view == "panes" and paned and paned[0].name in self._panes \
                and not isinstance(self.focused, FindingsTable) and self.focused is not self._panes[paned[0].name]:
            self._focus_pane(self._panes[paned[0].name])  # until a key is pressed, the worst endpoint has the focus
        elif self._shown_view == "table" and (self.focused is None or isinstance(self.focused, EndpointPane)) \
                and self.screen is main:
            main.query_one(EndpointsTable).focus()  # a hidden pane lost it (the table replaced the panes)
        if snap.notices:
            self.set_status(snap.notices[-1])
        if snap.mode == "replay" and not self._offered_first_trouble and snap.first_trouble is not None \
                and snap.clock is not None and snap.clock < snap.first_trouble:
            self._offered_first_trouble = True  # the replay opens at the start; the trouble is a key away
            first = min((f for f in snap.run_findings if f.start == snap.first_trouble), key=lambda f: severity_rank(f.severity))
            where = labels.get(first.endpoint, first.endpoint) if first.endpoint else "the deployment"
            self.set_status(f"f jumps to the first trouble: {first.severity} {first.rule} on {where} "
                            f"at {time_text(first.start)}")

    CHARTS_EVERY_S = 2.0  # while the data moves, the charts are drawn again at most this often
    CHARTS_MIN_ROWS = 12

    def _update_charts(self, snap: Snapshot, rows: list[EndpointRow], labels: dict[str, str]) -> None:
        """Wide: the charts of the worst endpoints over the timeline's range, drawn again when the
        store changed (its generation), at most every CHARTS_EVERY_S while it plays: a plot takes
        tens of ms, a tick must not."""
        main = self.main
        found = run_range(snap, main.query_one(Timeline).first_seen) if self.size.width >= 140 else None
        if found is None:
            self._charts_key = None
            main.set_class(False, "-charts")
            return
        key = (self.session.generation, found, tuple(r.name for r in rows), tuple(sorted(labels.items())))
        if key == self._charts_key:
            return
        now = time.monotonic()
        moving = not (snap.paused or snap.done) and self._charts_key is not None
        if moving and now - self._charts_at < self.CHARTS_EVERY_S:
            return
        self._charts_key, self._charts_at = key, now
        specs = chart_specs(rows, self.session.endpoint_series, labels)
        main.query_one(RunCharts).show(specs, *found)
        main.set_class(bool(specs), "-charts")

    def _labels(self, snap: Snapshot) -> dict[str, str]:
        """Each endpoint's short name (the job's shared name dropped), worked out again only when
        the endpoints change."""
        names = tuple(row.name for row in snap.endpoints)
        # with the run history's endpoints too: a replay names the worker of its first trouble before the clock reaches it
        names += tuple(sorted({f.endpoint for f in snap.run_findings if f.endpoint is not None} - set(names)))
        if names != self._label_names:
            self._label_names, self._short = names, short_names(names)
        return self._short

    def _order_panes(self, rows, severity: dict[str, str]) -> None:
        """Worst first: the role groups by their worst finding, and the panes within each group."""
        main = self.main
        worst: dict[str, int] = {}
        for r in rows:
            g = group_of(r.role)
            worst[g] = min(worst.get(g, 9), severity_rank(severity.get(r.name)))
        keys = sorted((k for k, _ in GROUPS), key=lambda k: (worst.get(k, 9), [g for g, _ in GROUPS].index(k)))
        if keys != self._role_order:
            self._role_order = keys
            scroll = main.query_one("#endpoints")
            for k in reversed(keys):  # each title and group to the top, the worst last
                scroll.move_child(main.query_one(f"#group-{k}"), before=0)
                scroll.move_child(main.query_one(f"#title-{k}"), before=0)
        for key, _ in GROUPS:
            container = main.query_one(f"#group-{key}")
            wanted = [self._panes[r.name] for r in rows if r.name in self._panes and group_of(r.role) == key
                      and self._panes[r.name].parent is container]
            current = [c for c in container.children if isinstance(c, EndpointPane)]
            if current != wanted and len(current) == len(wanted):
                for i, pane in enumerate(wanted):
                    if container.children[i] is not pane:
                        container.move_child(pane, before=i)

    def _apply_view(self, snap: Snapshot) -> None:
        """The panes when the user chose them or when they all fit; the compact table otherwise."""
        view = self.view if self.view != "auto" else ("panes" if self._panes_fit(snap) else "table")
        if view == self._shown_view:
            return
        self._shown_view = view
        main = self.main
        table, scroll = main.query_one(EndpointsTable), main.query_one("#endpoints")
        table.set_class(view != "table", "-hidden")
        scroll.set_class(view != "panes", "-hidden")
        focused = self.focused
        if view == "panes" and not isinstance(focused, FindingsTable):
            panes = [self._panes[r.name] for r in worst_first(snap) if r.name in self._panes]
            if panes:  # the worst endpoint's pane (after the layout: hiding the table moved the focus on)
                self.call_after_refresh(self._focus_pane, panes[0])
        elif view == "table" and not isinstance(focused, FindingsTable):
            table.focus()
        self._show_keys()

    def _focus_pane(self, pane: EndpointPane) -> None:
        if self._shown_view == "panes" and pane.is_attached and not isinstance(self.focused, FindingsTable) \
                and not self._user_moved_focus():
            self._auto_focused = pane
            pane.focus()

    def _panes_fit(self, snap: Snapshot) -> bool:
        """Do all the panes fit in the room the endpoints have, without scrolling?"""
        width, height = self.size
        findings = self.main.query_one("#findings-box")
        room = height - self.main.query_one(DeploymentHeader).outer_size.height - findings.outer_size.height \
            - self.main.query_one(KeyBar).outer_size.height - self.main.query_one(FrontendStrip).outer_size.height \
            - self.main.query_one(Timeline).outer_size.height - 1
        if self.main.has_class("-charts"):
            room -= self.CHARTS_MIN_ROWS
        columns = 2 if width >= 140 else 1
        inner = (width // columns) - 4
        need = 0
        for key, _ in GROUPS:
            rows = [r for r in snap.endpoints if group_of(r.role) == key and has_pane(r)]
            if not rows:
                continue
            heights = []
            for r in rows:
                engines = len(r.engine_rows)
                lines = 0 if engines <= 1 else -(-engines * 24 // max(inner, 24))
                heights.append(2 + 2 + (1 if r.history else 0) + lines)
            heights.sort(reverse=True)
            need += 1 + sum(heights[::columns])
        return need <= room

    def set_status(self, text: str) -> None:
        self._status = text
        self.main.query_one("#status", Static).update(Text(text))

    # -- actions ---------------------------------------------------------------------------------
    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        table = self.main.query_one(FindingsTable)
        if event.data_table is not table:
            return
        finding = table.selected()
        if finding is not None:
            group = table.selected_group()
            members = [table.findings[i] for i in group.members] if group is not None else None
            self.push_screen(FindingDetail(finding, members, group.label if group is not None else None))

    def on_evidence_line_open(self, message) -> None:
        e = message.evidence
        if not e.source or e.line_no is None:
            self.set_status("that line has no source:line to open")
            return
        if e.source in self._local_logs():
            self.push_screen(JobLogScreen(self._job_log(), at_line=(e.source, e.line_no)))
        else:  # a log read over ssh: its own window, cut on its host
            self.push_screen(LogViewerScreen(e.source, e.line_no, [p for p in self.session.paths]))

    def _local_logs(self) -> list[str]:
        return [p for p in self.session.sources.local_files if os.path.isfile(p)]

    def _job_log(self) -> JobLog:
        """The job's local logs, each with the endpoint the store placed it in, times read as the session reads them."""
        endpoints = {source: ep.name for ep in self.session.store.endpoints() for source in ep.sources}
        return JobLog(self._local_logs(), endpoints, year=self.session.year, tz=self.session.tz)

    def action_job_log(self) -> None:
        """l: the job's logs interleaved by time, at the clock (a replay's) or at their end (watch)."""
        if isinstance(self.screen, JobLogScreen):
            return
        if not self._local_logs():
            self.set_status("no local log to show (a log over ssh opens from a finding's evidence)")
            return
        clock = self.snapshot.clock if self.snapshot is not None and self.session.mode == "replay" else None
        self.push_screen(JobLogScreen(self._job_log(), at_time=clock))

    def on_endpoints_table_open(self, message: EndpointsTable.Open) -> None:
        self._open_endpoint(message.endpoint)

    def action_toggle_view(self) -> None:
        """t: the endpoints as a table (one line each) or as panes, like htop's views."""
        current = self._shown_view or "table"
        self.view = "panes" if current == "table" else "table"
        if self.snapshot is not None:
            self._apply_view(self.snapshot)
        self.set_status(f"endpoints as {'panes' if self.view == 'panes' else 'a table'} (t to switch)")

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_pause(self) -> None:
        if self.session.mode == "replay":
            paused = self.session.toggle_pause()
            self.set_status("paused" if paused else "playing")
            self.tick()

    def action_faster(self) -> None:
        if self.session.mode == "replay":
            self.set_status(f"speed {_speed(self.session.faster())}")

    def action_slower(self) -> None:
        if self.session.mode == "replay":
            self.set_status(f"speed {_speed(self.session.slower())}")

    def _replay_only(self, what: str) -> bool:
        if self.session.mode != "replay":
            self.set_status(f"{what}: only a replay can do that")
            return False
        if not self.session.seekable:
            self.set_status(f"{what}: the logs are still being read")
            return False
        return True

    def action_step(self) -> None:
        if self._replay_only("step"):
            self.session.step(self.refresh_s)
            self.tick()
            self.set_status(f"paused; stepped to {clock_text(self.snapshot.clock if self.snapshot else None)}")

    def action_next_finding(self) -> None:
        table = self.main.query_one(FindingsTable)
        table.focus()
        if self.session.mode != "replay":
            if table.items and table.cursor_row < len(table.items) - 1:
                table.move_cursor(row=table.cursor_row + 1)
            return
        if self.snapshot and self.snapshot.done:
            self.set_status("the replay has ended: no finding after this one (g or p to go back)")
            return
        self.session.seek_next_finding()
        self._select_next_fired = True
        self.set_status("playing on to the next finding…")

    def action_previous_finding(self) -> None:
        table = self.main.query_one(FindingsTable)
        table.focus()
        if self.session.mode != "replay":
            if table.findings and table.cursor_row > 0:
                table.move_cursor(row=table.cursor_row - 1)
            return
        if not self._replay_only("previous finding"):
            return
        start = self.session.previous_finding_start()
        if start is None:
            self.set_status("no finding started before the clock")
            return
        self.session.paused = True  # stay on it
        self._go_to(start, f"back to the previous finding, at {clock_text(start.to_pydatetime())} (paused)")
        self._select_finding(start.to_pydatetime())

    def _select_finding(self, start) -> None:
        table = self.main.query_one(FindingsTable)
        for r in range(len(table.items)):
            table.move_cursor(row=r)
            if table.selected() is not None and table.selected().start == start:
                return

    def action_first_trouble(self) -> None:
        """f: to the run's first warning-or-worse finding, paused there, its row selected."""
        if not self._replay_only("first trouble"):
            return
        first = self.session.first_trouble()
        if first is None:
            history = self.session.run_history
            self.set_status("the run is still being judged…" if history.started and not history.ready
                            else "the run had no warning or critical finding")
            return
        self.session.paused = True
        self._go_to(first, f"the run's first trouble, at {clock_text(first.to_pydatetime())} (paused)")
        self._select_finding(first.to_pydatetime())

    def action_toggle_resolved(self) -> None:
        """h: hide or show the findings that cleared (the run's history)."""
        self.show_resolved = not self.show_resolved
        self.set_status("findings that cleared: " + ("shown, greyed" if self.show_resolved else "hidden (h shows them)"))
        if self.snapshot is not None:
            self.render_snapshot(self.snapshot)

    def action_seek(self) -> None:
        if self._replay_only("go to a time"):
            self.push_screen(SeekScreen(self.session), self._seek_chosen)

    def _seek_chosen(self, target) -> None:
        if target is not None:
            self._go_to(target, f"going to {clock_text(target.to_pydatetime())}")

    def _go_to(self, target, message: str) -> None:
        reached = self.session.seek(target)
        if reached is not None and reached != target:
            message += f" (the logs end at {clock_text(reached.to_pydatetime())}; went there)" \
                if reached < target else f" (the logs start at {clock_text(reached.to_pydatetime())}; went there)"
        self.set_status(message)
        self.tick()

    def action_endpoint_detail(self) -> None:
        name = self._chosen_endpoint()
        if name is None:
            self.set_status("no endpoint yet")
        else:
            self._open_endpoint(name)

    def on_endpoint_pane_open(self, message: EndpointPane.Open) -> None:
        self._open_endpoint(message.endpoint)

    def _chosen_endpoint(self) -> str | None:
        """The focused pane's or table row's endpoint, else the selected (or top) finding's, else the worst endpoint."""
        focused = self.focused
        if isinstance(focused, EndpointPane):
            return focused.endpoint
        if isinstance(focused, EndpointsTable) and focused.selected() is not None:
            return focused.selected()
        table = self.main.query_one(FindingsTable)
        finding = table.selected()
        if finding is None and table.findings:
            finding = table.findings[0]
        names = self.main.query_one(EndpointsTable).names  # every endpoint (a frontend in the strip has no pane)
        if finding is not None and finding.endpoint in names:
            return finding.endpoint
        return names[0] if names else None

    def _open_endpoint(self, name: str) -> None:
        detail = self.session.endpoint_detail(name)
        if detail is None:
            self.set_status(f"{name}: nothing from it in the logs up to the clock")
            return
        self.push_screen(EndpointDetailScreen(detail, self.snapshot))

    def action_export(self) -> None:
        from pdwatch.views.report import data, markdown
        from pdwatch.views.report.output import write_atomically
        try:
            text = markdown.render(data.build(self.session.analysis()))
            inputs = self.session.paths + [s for ep in self.session.store.endpoints() for s in ep.sources]
            write_atomically(self.export_path, text, inputs)
        except Exception as exc:  # noqa: BLE001
            self.set_status(f"export failed: {exc}")
            return
        self.set_status(f"report written to {self.export_path}")


def _speed(value: float) -> str:
    return "max" if value == float("inf") else f"{value:g}x"


def role_scales(snap: Snapshot) -> dict[str, float]:
    """One sparkline scale per role: the largest counted tokens/s any endpoint of it drew."""
    tops: dict[str, float] = {}
    for row in snap.endpoints:
        if row.history:
            tops[row.role] = max(tops.get(row.role, 0.0), max(row.history))
    return tops


def worst_first(snap: Snapshot) -> list[EndpointRow]:
    """The snapshot's endpoints in the order of its diagnosis (worst first)."""
    if snap.diagnosis is None:
        return list(snap.endpoints)
    rank = {name: i for i, name in enumerate(snap.diagnosis.endpoint_order)}
    return sorted(snap.endpoints, key=lambda r: rank.get(r.name, len(rank)))
