"""One pane per endpoint: role, engines/GPUs, throughput + sparkline, running/waiting, KV bar, stale marker."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.containers import Vertical
from textual.widgets import Sparkline, Static

from pdwatch.session.snapshot import EndpointRow

from .format import ROLE_STYLE, count, fmt_age, kv_bar, rate, time_text


class EndpointPane(Vertical, can_focus=True):
    """Focusable (tab): enter or d opens the endpoint's detail screen."""

    BINDINGS = [Binding("enter", "open", "detail", show=False)]
    DEFAULT_CSS = """
    EndpointPane { height: auto; border: round $primary-darken-2; padding: 0 1; margin: 0 0 0 0; }
    EndpointPane.stale { border: round $error; }
    EndpointPane:focus { border: double $accent; }
    EndpointPane.stale:focus { border: double $error; }
    EndpointPane > .title { height: 1; }
    EndpointPane > .numbers { height: 1; }
    EndpointPane > Sparkline { height: 1; width: 1fr; margin: 0 0; }
    EndpointPane > .engines { height: auto; color: $text-muted; }
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
        self._shown: EndpointRow | None = None

    def compose(self) -> ComposeResult:
        yield Static(classes="title")
        yield Static(classes="numbers")
        yield Sparkline([], summary_function=max)
        yield Static(classes="engines")

    def on_mount(self) -> None:
        self._fill(self._row)

    def action_open(self) -> None:
        self.post_message(self.Open(self.endpoint))

    def show(self, row: EndpointRow) -> None:
        self._row = row
        if self.is_mounted and row != self._shown:  # nothing changed: no update, no relayout
            self._fill(row)

    def _fill(self, row: EndpointRow) -> None:
        self._shown = row
        title, numbers, spark, engines = self.children
        # Title and numbers are one line each: a new text needs a repaint, not a layout of the screen
        # (a STALE counter changes every second on an idle dashboard).
        _set(title, render_title(row), layout=False)
        _set(numbers, render_numbers(row), layout=False)
        history = list(row.history)
        if spark.data != history:  # type: ignore[attr-defined]
            spark.data = history  # type: ignore[attr-defined]
        spark.display = bool(row.history)
        _set(engines, render_engines(row), layout=True)
        self.set_class(row.stale_for_s is not None, "stale")


def _set(widget, text: Text, layout: bool) -> None:
    if getattr(widget, "_pdwatch_text", None) != text:
        widget._pdwatch_text = text
        widget.update(text, layout=layout)


def render_title(row: EndpointRow) -> Text:
    out = Text(row.name, style="bold")  # the name comes from a file name: text, never markup
    out.append("  ")
    out.append(row.role, style=ROLE_STYLE.get(row.role, "bold"))
    engines = len(row.engines)
    out.append(f"  {engines} engine{'s' if engines != 1 else ''}" if engines else "  no engine seen")
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
    if row.frontend:
        return render_frontend(dict(row.frontend))
    if not row.engine_rows and not row.history:
        if row.stats_silence:  # the server said it will print none: say why, in words
            return Text(f"no stats lines: {row.stats_silence}", style="bold yellow")
        return Text("no stats lines" + (" (a frontend prints none)" if row.role == "frontend" else " yet"), style="dim")
    out = Text()
    out.append(f"prompt {rate(row.prompt_tps)}", style="cyan" if row.role == "prefill" else "")
    out.append(" │ ")
    out.append(f"gen {rate(row.gen_tps)}", style="magenta" if row.role == "decode" else "")
    out.append(" tok/s │ ")
    out.append(f"run {count(row.running)} wait {count(row.waiting)}",
               style="bold yellow" if (row.waiting or 0) > 0 else "")
    out.append(" │ ")
    out.append_text(kv_bar(row.kv_usage_pct))
    return out


def render_engines(row: EndpointRow) -> Text:
    if len(row.engine_rows) <= 1:
        return Text("")
    parts = [Text(f"e{e.engine} {rate(e.prompt_tps if row.role == 'prefill' else e.gen_tps)} "
                  f"r{count(e.running)} w{count(e.waiting)} kv{count(e.kv_usage_pct)}%")
             for e in row.engine_rows]
    return Text("  ").join(parts)
