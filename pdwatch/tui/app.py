"""The dashboard: header, endpoint panes by role, findings table; a worker thread ingests.

Threads: the ingest worker only calls ``LiveSession.ingest`` (which hands events over under
a lock) and talks to the app with ``post_message``; the UI thread ticks the session every
``refresh`` seconds (``set_interval``) and renders the immutable snapshot.
"""

from __future__ import annotations

import threading
import traceback

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, Footer, Static

from pdwatch.live import LiveSession, Snapshot

from .messages import IngestFailed, SourcesRead
from .widgets.endpoint_pane import EndpointPane
from .widgets.findings_table import FindingsTable
from .widgets.header import DeploymentHeader
from .widgets.screens import FindingDetail, HelpScreen

GROUPS = (("prefill", "Prefill"), ("decode", "Decode"), ("other", "Other"))


def group_of(role: str) -> str:
    return role if role in ("prefill", "decode") else "other"


class PdwatchApp(App):
    TITLE = "pdwatch"
    CSS = """
    #endpoints { height: 2fr; }
    .group-title { height: 1; text-style: bold; background: $panel; padding: 0 1; }
    .group { height: auto; }
    Screen.-wide .group { layout: grid; grid-size: 2; grid-rows: auto; grid-gutter: 0 1; }
    #findings-title { height: 1; text-style: bold; background: $panel; padding: 0 1; }
    #findings-box { height: 1fr; min-height: 5; }
    #status { height: 1; color: $text-muted; padding: 0 1; }
    """
    BINDINGS = [
        Binding("q", "quit", "quit"),
        Binding("question_mark", "help", "help", key_display="?"),
        Binding("space", "pause", "pause"),
        Binding("plus,equals_sign", "faster", "faster", key_display="+"),
        Binding("minus", "slower", "slower", key_display="-"),
        Binding("n", "next_finding", "next"),
        Binding("p", "previous_finding", "prev"),
        Binding("e", "export", "export"),
    ]

    def __init__(self, session: LiveSession, refresh: float = 0.5, export_path: str = "pdwatch-live-report.md") -> None:
        super().__init__()
        self.session = session
        self.refresh_s = refresh
        self.export_path = export_path
        self.snapshot: Snapshot | None = None
        self._panes: dict[str, EndpointPane] = {}
        self._stop = threading.Event()
        self._status = ""
        self.main = None  # the main screen, set on mount

    @property
    def panes(self) -> dict[str, EndpointPane]:
        """The pane of each endpoint (a pane being moved to its role's group is not in it)."""
        return dict(self._panes)

    # -- layout --------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield DeploymentHeader(id="header")
        with VerticalScroll(id="endpoints"):
            for key, title in GROUPS:
                yield Static(title, classes="group-title", id=f"title-{key}", markup=False)
                yield Vertical(classes="group", id=f"group-{key}")
        with Vertical(id="findings-box"):
            yield Static("Findings (enter: details)", id="findings-title", markup=False)
            yield FindingsTable(id="findings")
        yield Static("", id="status", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.main = self.screen  # ticks render here even while a detail or help screen is on top
        self.main.set_class(self.size.width >= 140, "-wide")
        for key, _ in GROUPS:
            self.main.query_one(f"#title-{key}").display = False
        self.run_worker(self._ingest, thread=True, exclusive=True, group="ingest", exit_on_error=False)
        self.set_interval(self.refresh_s, self.tick)
        self.call_after_refresh(self.tick)

    async def action_quit(self) -> None:
        self._stop.set()
        await super().action_quit()

    def on_resize(self, event) -> None:
        if self.main is not None:
            self.main.set_class(event.size.width >= 140, "-wide")

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
        except Exception:  # noqa: BLE001 - shown in the status line, the UI keeps the data it has
            self.post_message(IngestFailed(traceback.format_exc(limit=3)))

    def on_sources_read(self, _: SourcesRead) -> None:
        self.tick()

    def on_ingest_failed(self, message: IngestFailed) -> None:
        self.set_status("reading the logs failed: " + message.error.strip().splitlines()[-1])

    # -- ticking ---------------------------------------------------------------------------------
    def tick(self) -> None:
        if self._stop.is_set() or self.main is None or not self.main.is_attached:
            return  # shutting down: the widgets are going away
        snap = self.session.tick()
        self.snapshot = snap
        try:
            self.render_snapshot(snap)
        except NoMatches:  # a tick racing the app's shutdown
            pass

    def render_snapshot(self, snap: Snapshot) -> None:
        main = self.main
        main.query_one(DeploymentHeader).show(snap)
        for row in snap.endpoints:
            pane = self._panes.get(row.name)
            if pane is not None and pane.role != row.role:  # the role became known: move the pane
                pane.remove()
                del self._panes[row.name]
                pane = None
            if pane is None:
                pane = self._panes[row.name] = EndpointPane(row)
                group = group_of(row.role)
                container = main.query_one(f"#group-{group}")
                after = [p for p in container.query(EndpointPane) if p.endpoint > row.name]
                container.mount(pane, before=after[0] if after else None)
                main.query_one(f"#title-{group}").display = True
            else:
                pane.show(row)
        main.query_one(FindingsTable).show(snap.findings)
        if snap.notices:
            self.set_status(snap.notices[-1])

    def set_status(self, text: str) -> None:
        self._status = text
        self.main.query_one("#status", Static).update(Text(text))

    # -- actions ---------------------------------------------------------------------------------
    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        finding = self.main.query_one(FindingsTable).selected()
        if finding is not None:
            self.push_screen(FindingDetail(finding))

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

    def action_next_finding(self) -> None:
        table = self.main.query_one(FindingsTable)
        if table.findings and table.cursor_row < len(table.findings) - 1:
            table.move_cursor(row=table.cursor_row + 1)
        elif self.session.mode == "replay" and not (self.snapshot and self.snapshot.done):
            self.session.seek_next_finding()
            self.set_status("playing on to the next finding…")
        table.focus()

    def action_previous_finding(self) -> None:
        table = self.main.query_one(FindingsTable)
        if table.findings and table.cursor_row > 0:
            table.move_cursor(row=table.cursor_row - 1)
        table.focus()

    def action_export(self) -> None:
        from pdwatch.report import data, markdown
        from pdwatch.report.output import write_atomically
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
