"""The compact endpoints view: one line per endpoint, worst first (like htop's list view).

name, role, engines, prompt / gen tok/s, running / waiting, KV % (coloured), its worst finding.
Enter or d opens the endpoint's detail. Cells are Text, never markup.
"""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable

from pdwatch.session.snapshot import EndpointRow, FindingRow

from .format import SEVERITY_FG, SEVERITY_SHORT, count, kv_text, log_text, rate

ROLE_SHORT = {"prefill": "pre", "decode": "dec", "aggregated": "agg", "frontend": "fe", "unknown": "?"}
ROLE_COLOUR = {"prefill": "cyan", "decode": "magenta", "aggregated": "green"}


class EndpointsTable(DataTable):
    BINDINGS = [Binding("enter", "open", "detail", show=False)]
    DEFAULT_CSS = """
    EndpointsTable { height: 1fr; overflow-x: hidden; scrollbar-size-vertical: 1; }
    """

    class Open(Message):
        def __init__(self, endpoint: str) -> None:
            super().__init__()
            self.endpoint = endpoint

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.names: list[str] = []
        self._shown: list | None = None
        self._last: tuple | None = None
        self.narrow = False

    NARROW = 76  # below this width: endpoint, tok/s (what the role adds), run/wait, KV, finding

    def on_mount(self) -> None:
        self._columns(self.size.width < self.NARROW if self.size.width else False)

    def _labels(self) -> tuple[str, ...]:
        return ("endpoint", "tok/s", "run/wait", "KV", "finding") if self.narrow else \
            ("endpoint", "role", "eng", "prompt", "gen", "run/wait", "KV", "finding")

    def _columns(self, narrow: bool, cells: list[list[Text]] | None = None) -> None:
        """(Re)make the columns, each as wide as its label and what it shows now (explicit widths:
        the auto widths grew with the widest value of the run and were not always updated in time)."""
        self.narrow = narrow
        labels = self._labels()
        widths = [max([len(label)] + [c[i].cell_len for c in cells or []]) for i, label in enumerate(labels)]
        self.clear(columns=True)
        for label, width in zip(labels, widths):
            self.add_column(label, width=width)
        self._shown = None

    def on_resize(self, event) -> None:
        narrow = event.size.width < self.NARROW
        if narrow != getattr(self, "narrow", None):
            self._columns(narrow)
            if self._last is not None:
                self.show(*self._last)

    def show(self, rows: list[EndpointRow], findings: tuple[FindingRow, ...],
             labels: dict[str, str] | None = None) -> None:
        """``labels``: endpoint -> its short name (the full name when it has none)."""
        self._last = (rows, findings, labels)
        labels = labels or {}
        worst: dict[str, FindingRow] = {}
        for f in findings:  # most severe first already
            if f.endpoint is not None and f.endpoint not in worst:
                worst[f.endpoint] = f
        cells = [endpoint_cells(r, worst.get(r.name), self.narrow, labels.get(r.name)) for r in rows]
        key = [(r.name, [c.plain for c in cs], [str(c.style) for c in cs]) for r, cs in zip(rows, cells)]
        if key == self._shown:
            return
        self._shown = key
        selected = self.selected()
        at_top = self.cursor_row == 0  # the worst endpoint stays under the cursor until one moves it
        self.names = [r.name for r in rows]
        self._columns(self.narrow, cells)  # widths fit what is shown now, not the widest value of the run so far
        self._shown = key
        for r, cs in zip(rows, cells):
            self.add_row(*cs, key=r.name)
        if selected in self.names and not at_top:
            self.move_cursor(row=self.names.index(selected))

    def selected(self) -> str | None:
        if not self.names or self.cursor_row is None or not 0 <= self.cursor_row < len(self.names):
            return None
        return self.names[self.cursor_row]

    def action_open(self) -> None:
        name = self.selected()
        if name is not None:
            self.post_message(self.Open(name))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open()


def endpoint_cells(row: EndpointRow, finding: FindingRow | None, narrow: bool = False,
                   label: str | None = None) -> list[Text]:
    name = log_text(label or row.name, style="bold")
    name.overflow, name.no_wrap = "ellipsis", True
    if finding is not None:
        name = Text("● ", style=SEVERITY_FG.get(finding.severity, "bold")) + name
    role = Text(ROLE_SHORT.get(row.role, row.role[:3]), style=ROLE_COLOUR.get(row.role, ""))
    engines = Text(str(len(row.engines)) if row.engines else "-", justify="right")
    if row.frontend or row.frontend_summary is not None or (not row.engine_rows and not row.history):
        # a frontend's figures are in the frontend strip under the table
        quiet = "frontend" if row.frontend or row.frontend_summary is not None else "no stats"
        cells = [Text(quiet, style="dim"), Text(""), Text(""), Text("")]
    else:
        cells = [Text(rate(row.prompt_tps), justify="right", style="cyan" if row.role == "prefill" else ""),
                 Text(rate(row.gen_tps), justify="right", style="magenta" if row.role == "decode" else ""),
                 Text(f"{count(row.running)}/{count(row.waiting)}", justify="right",
                      style="bold yellow" if (row.waiting or 0) > 0 else ""),
                 kv_text(row.kv_usage_pct)]
    if row.stale_for_s is not None:
        what = Text("STALE", style="bold red")
    elif finding is not None:
        what = Text(SEVERITY_SHORT.get(finding.severity, "") + " ", style=SEVERITY_FG.get(finding.severity, "bold"))
        what.append(finding.rule)
    else:
        what = Text("ok", style="green")
    if narrow:  # the tokens/s the endpoint adds to the headline (prompt on prefill, generated on decode)
        counted = row.counted_tps
        tps = Text("" if not cells[0].plain or cells[0].plain in ("no stats", "frontend") else rate(counted),
                   justify="right")
        if cells[0].plain in ("no stats", "frontend"):
            tps = cells[0]
        if finding is not None and row.stale_for_s is None:  # the name's dot has the severity: the rule alone
            what = Text(finding.rule, style=SEVERITY_FG.get(finding.severity, "bold"))
        return [name, tps, cells[2], cells[3], what]
    return [name, role, engines, *cells, what]
