"""One endpoint's pane: title, numbers, an honest sparkline, its engines at a glance.

The border shows the worst severity of the findings firing on it; the engines a finding names
are marked (``!``), each engine's KV % is coloured, and engine entries never wrap in the middle.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Static

from pdwatch.rules.findings import SEVERITIES
from pdwatch.session.snapshot import EndpointRow

from .format import ROLE_STYLE, SEVERITY_FG, count, fmt_age, kv_bar, kv_style, log_text, rate, time_text
from .spark import Spark



class EngineGrid(Static):
    """The engines of an endpoint, whole entries per line for the width it has."""

    DEFAULT_CSS = """
    EngineGrid { height: auto; color: $text-muted; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.row: EndpointRow | None = None
        self.marks: dict[int, str] = {}

    def set(self, row: EndpointRow, marks: dict[int, str]) -> None:
        if row is not self.row or marks != self.marks:
            self.row, self.marks = row, dict(marks)
            self.refresh(layout=True)

    def render(self) -> Text:
        return engines_text(self.row, self.marks, max(self.size.width, 1)) if self.row else Text("")

    def get_content_height(self, container, viewport, width: int) -> int:
        if self.row is None:
            return 0
        text = engines_text(self.row, self.marks, max(width, 1))
        return text.plain.count("\n") + 1 if text.plain else 0


class EndpointPane(Vertical, can_focus=True):
    """Focusable (tab): enter or d opens the endpoint's detail screen."""

    BINDINGS = [Binding("enter", "open", "detail", show=False)]
    DEFAULT_CSS = """
    EndpointPane { height: auto; border: round $primary-darken-2; padding: 0 1; margin: 0 0 0 0; }
    EndpointPane.stale { border: round $error; }
    EndpointPane.-info { border: round $primary; }
    EndpointPane.-warning { border: round $warning; }
    EndpointPane.-critical { border: heavy $error; }
    EndpointPane:focus { border: double $accent; }
    EndpointPane.-critical:focus { border: double $error; }
    EndpointPane.-warning:focus { border: double $warning; }
    EndpointPane.stale:focus { border: double $error; }
    EndpointPane > .title { height: 1; }
    EndpointPane > .numbers { height: 1; }
    EndpointPane > Spark { height: 1; width: 1fr; margin: 0 0; }
    """

    class Open(Message):
        """Open the detail screen of this endpoint."""

        def __init__(self, endpoint: str) -> None:
            super().__init__()
            self.endpoint = endpoint

    def __init__(self, row: EndpointRow) -> None:
        super().__init__()
        self.endpoint = row.name
        self.role = row.role
        self._row = row
        self._top: float | None = None
        self._severity: str | None = None
        self._marks: dict[int, str] = {}
        self._label: str | None = None
        self._shown: tuple | None = None

    def compose(self) -> ComposeResult:
        yield Static(classes="title")
        yield Static(classes="numbers")
        yield Spark(style="cyan" if self.role == "prefill" else "magenta" if self.role == "decode" else "green")
        yield EngineGrid(classes="engines")

    def on_mount(self) -> None:
        self._fill()

    def action_open(self) -> None:
        self.post_message(self.Open(self.endpoint))

    def show(self, row: EndpointRow, top: float | None = None, severity: str | None = None,
             marks: dict[int, str] | None = None, label: str | None = None) -> None:
        """``top``: the role's scale for the sparkline; ``severity``: the worst finding firing here;
        ``marks``: engine -> severity of the findings naming it; ``label``: its short name."""
        self._row, self._top, self._severity, self._marks = row, top, severity, dict(marks or {})
        self._label = label
        if self.is_mounted:
            self._fill()

    def _fill(self) -> None:
        if len(self.children) != 4:
            # removed while it mounted (a frontend whose first rows move it to the frontend strip):
            # its children are gone, and so will it be
            return
        row = self._row
        state = (row, self._top, self._severity, tuple(sorted(self._marks.items())), self._label)
        if state == self._shown:  # nothing changed: no update, no relayout
            return
        self._shown = state
        title, numbers, spark, engines = self.children
        # Title and numbers are one line each: a new text needs a repaint, not a layout of the screen
        # (a STALE counter changes every second on an idle dashboard).
        _set(title, render_title(row, self._severity, self._label), layout=False)
        _set(numbers, render_numbers(row), layout=False)
        spark.show(row.history, self._top)  # type: ignore[attr-defined]
        spark.display = bool(row.history)
        engines.set(row, self._marks)  # type: ignore[attr-defined]
        engines.display = len(row.engine_rows) > 1
        self.set_class(row.stale_for_s is not None, "stale")
        for sev in SEVERITIES:
            self.set_class(self._severity == sev, f"-{sev}")


def _set(widget, text: Text, layout: bool) -> None:
    if getattr(widget, "_pdwatch_text", None) != text:
        widget._pdwatch_text = text
        widget.update(text, layout=layout)


def render_title(row: EndpointRow, severity: str | None = None, label: str | None = None) -> Text:
    """``label``: the name to show (the dashboard's short name); the full name by default."""
    out = Text(no_wrap=True, overflow="ellipsis")
    if severity:
        out.append("● ", style=SEVERITY_FG.get(severity, "bold"))
    out.append_text(log_text(label or row.name, style="bold"))  # from a file name: text, never markup
    out.append("  ")
    out.append(row.role, style=ROLE_STYLE.get(row.role, "bold"))
    engines = len(row.engines)
    out.append(f"  {engines} engine{'s' if engines != 1 else ''}" if engines else "  no engine seen")
    if row.device == "CPU":  # vLLM's CPU backend: its KV cache in host memory, no GPU
        out.append(" / CPU")
    else:
        out.append(f" / {row.gpus} GPU{'' if row.gpus == 1 else 's'}" if row.gpus else " / GPUs ?")
    if row.stale_for_s is not None:
        out.append(f"  STALE for {fmt_age(row.stale_for_s)}", style="bold red")
    elif row.last_seen is not None:
        out.append(f"  seen {time_text(row.last_seen)}", style="dim")
    return out


def render_frontend(figures: dict[str, float]) -> Text:
    """A Dynamo frontend: what users see (its /metrics), not an engine's stats."""
    out = Text()
    parts = []
    if "ttft_s" in figures:
        parts.append(f"TTFT {figures['ttft_s']:.2f} s")
    if "itl_s" in figures:
        parts.append(f"ITL {1000 * figures['itl_s']:.1f} ms")
    if "frontend_inflight" in figures:
        parts.append(f"in flight {count(figures['frontend_inflight'])}")
    if "frontend_queued" in figures:
        parts.append(f"queued {count(figures['frontend_queued'])}")
    if "request_rate" in figures:
        parts.append(f"{rate(figures['request_rate'])} req/s")
    out.append(" │ ".join(parts))
    return out


def render_numbers(row: EndpointRow) -> Text:
    """KV first (it is what runs out), then the queue, then throughput: a narrow pane cuts the end."""
    if row.frontend:
        return render_frontend(dict(row.frontend))
    if not row.engine_rows and not row.history:
        if row.stats_silence:  # the server said it will print none: say why, in words
            return Text(f"no stats lines: {row.stats_silence}", style="bold yellow")
        return Text("no stats lines" + (" (a frontend prints none)" if row.role == "frontend" else " yet"), style="dim")
    out = Text(no_wrap=True, overflow="ellipsis")
    out.append_text(kv_bar(row.kv_usage_pct, width=8))
    out.append(" │ ")
    out.append(f"run {count(row.running)} wait {count(row.waiting)}",
               style="bold yellow" if (row.waiting or 0) > 0 else "")
    out.append(" │ ")
    out.append(f"prompt {rate(row.prompt_tps)}", style="cyan" if row.role == "prefill" else "")
    out.append(" gen ")
    out.append(rate(row.gen_tps), style="magenta" if row.role == "decode" else "")
    out.append(" tok/s")
    return out


def engines_text(row: EndpointRow, marks: dict[int, str], width: int) -> Text:
    """One entry per engine ("e3 42.3k r2 w280 kv 0.7%"), whole entries per line; an engine a
    finding names is marked "!" in its severity's colour; KV coloured like the bar."""
    if len(row.engine_rows) <= 1:
        return Text("")
    entries = []
    for e in row.engine_rows:
        entry = Text(no_wrap=True)
        sev = marks.get(e.engine)
        entry.append("!" if sev else " ", style=SEVERITY_FG.get(sev or "", ""))
        entry.append(f"e{e.engine} ", style="bold" if sev else "")
        entry.append(f"{rate(e.prompt_tps if row.role == 'prefill' else e.gen_tps)} "
                     f"r{count(e.running)} w{count(e.waiting)} ")
        entry.append("kv" + ("?" if e.kv_usage_pct is None else f"{e.kv_usage_pct:.0f}%"), style=kv_style(e.kv_usage_pct))
        entries.append(entry)
    lines: list[Text] = []
    line = Text(no_wrap=True)
    for entry in entries:
        if line.plain and len(line.plain) + 1 + len(entry.plain) > width:
            lines.append(line)
            line = Text(no_wrap=True)
        if line.plain:
            line.append(" ")
        line.append_text(entry)
    if line.plain:
        lines.append(line)
    out = Text("\n").join(lines)
    out.no_wrap = True
    out.overflow = "crop"
    return out


def render_engines(row: EndpointRow, marks: dict[int, str] | None = None, width: int = 76) -> Text:
    return engines_text(row, marks or {}, width)
