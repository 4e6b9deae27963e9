"""The top of the dashboard: TPS/GPU first, then the verdict, then the findings and the clock.

Line 1: the headline (TPS/GPU on N GPUs; tok/s per worker on vLLM's CPU backend), total tokens/s,
the endpoints by role.
Line 2 (and 3 when it needs them): the verdict, in its severity's colour.
Last line: the clock and the replay state, then the findings by severity (the clock first,
so a narrow terminal cuts the counts, never the time).
"""

from __future__ import annotations

import io
import math

from rich.console import Console
from rich.text import Text
from textual.widgets import Static

from pdwatch.rules.findings import SEVERITIES
from pdwatch.session.snapshot import Snapshot

from .format import ROLE_STYLE, SEVERITY_STYLE, clock_text, rate, time_text

VERDICT_STYLE = {"critical": "bold red", "warning": "bold yellow", "info": "bold blue"}


class DeploymentHeader(Static):
    DEFAULT_CSS = """
    DeploymentHeader { height: auto; max-height: 4; background: $boost; padding: 0 1; }
    """

    _shown: Text | None = None
    _snap: Snapshot | None = None
    tag: str | None = None  # "SIMULATION" for pdwatch demo


    def show(self, snap: Snapshot) -> None:
        self._snap = snap
        text = render_header(snap, max(self.size.width - 2, 20) if self.size.width else 78, self.tag)
        if text != self._shown:  # only when the text changed; a layout only when its line count did
            same_shape = self._shown is not None and self._shown.plain.count("\n") == text.plain.count("\n")
            self._shown = text
            self.update(text, layout=not same_shape)

    def on_resize(self, _event) -> None:
        if self._snap is not None:
            self._shown = None
            self.show(self._snap)


def _fit(line: Text, width: int) -> Text:
    line.no_wrap = True
    line.overflow = "ellipsis"
    if len(line.plain) > width:
        line.truncate(width, overflow="ellipsis")
    return line


def render_header(snap: Snapshot, width: int = 78, tag: str | None = None) -> Text:
    h = snap.headline
    if h.device == "CPU":  # vLLM's CPU backend: no GPU to divide by, never an invented one
        first = Text("tok/s per worker (CPU) ", style="bold")
        first.append(rate(h.tps_per_worker), style="bold reverse" if h.tps_per_worker is not None else "bold")
        if width >= 100:  # narrower, the roles after it count the workers
            first.append(f" on {h.workers} worker{'' if h.workers == 1 else 's'}")
    else:
        first = Text("TPS/GPU ", style="bold")
        first.append(rate(h.tps_per_gpu), style="bold reverse" if h.tps_per_gpu is not None else "bold")
        if h.gpus:
            first.append(f" on {h.gpus} GPU{'' if h.gpus == 1 else 's'}")
    first.append(" │ total ")
    first.append(f"{rate(h.total_tps)} tok/s", style="bold")
    if width >= 100:
        first.append(f" (prompt {rate(h.prompt_tps)}, gen {rate(h.gen_tps)})")
    first.append(" │ ")
    roles = snap.roles()
    if roles:
        first.append_text(Text(" ").join(Text(f"{n} {role}", style=ROLE_STYLE.get(role, "bold"))
                                         for role, n in roles.items()))
    else:
        first.append("no endpoints yet", style="dim")

    verdict = Text()
    v = snap.verdict
    if v is None:
        verdict.append("reading the logs…" if snap.loading else "no verdict yet", style="dim")
    else:
        style = VERDICT_STYLE.get(v.severity or "", "bold green")
        verdict.append("● ", style=style)
        verdict.append(v.title, style=style)
        if snap.was is not None:  # the worst has cleared: what the run had stays on screen (before the detail)
            was = snap.was
            verdict.append(" · was: ", style="dim")
            verdict.append(was.verdict.title, style=VERDICT_STYLE.get(was.verdict.severity or "", "bold"))
            verdict.append(f" {time_text(was.start)}–{time_text(was.end)}", style="dim")
        if v.detail:
            verdict.append(" — ")
            verdict.append(v.detail)
    verdict_lines = list(verdict.wrap(_CONSOLE, width)) if len(verdict.plain) > width else [verdict]
    if len(verdict_lines) > 2:  # two lines at most: the second ends with "…" where it is cut
        cut = len(verdict_lines[0].plain)
        rest = verdict[cut:]
        rest = rest[len(rest.plain) - len(rest.plain.lstrip()):]
        verdict_lines = [verdict_lines[0], _fit(rest, width)]
    last = Text(no_wrap=True)
    if tag:
        last.append(f" {tag} ", style="bold black on yellow")
        last.append(" ")
    last.append(clock_text(snap.clock) if width >= 60 and not tag else clock_text(snap.clock)[11:], style="bold")
    if snap.mode == "replay":
        if snap.loading:
            last.append("  replay: reading the logs…", style="yellow")
        elif snap.seeking_to is not None:
            last.append(f"  going to {clock_text(snap.seeking_to)[11:]}…", style="yellow")
        else:
            speed = "max" if snap.speed is not None and math.isinf(snap.speed) else f"{snap.speed:g}x"
            state = "ended" if snap.done else "paused" if snap.paused else "playing"
            last.append(f"  replay {speed} {state}", style="yellow" if snap.paused else "")
    else:
        last.append("  live", style="green")
    if snap.sweep_point:  # a sweep job: the point the clock is in
        last.append(f"  {snap.sweep_point}", style="bold cyan")
    last.append("  │ ")
    counts = snap.severity_counts()
    if counts:
        for sev in SEVERITIES:
            if counts.get(sev):
                last.append(f" {counts[sev]} {sev} ", style=SEVERITY_STYLE.get(sev, "bold"))
                last.append(" ")
        groups = len(snap.groups)
        if groups and groups < len(snap.findings):
            last.append(f"in {groups} group{'s' if groups != 1 else ''}", style="dim")
    else:
        last.append("no finding firing", style="green")
    return Text("\n").join([_fit(first, width), *verdict_lines, _fit(last, width)])


_CONSOLE = Console(file=io.StringIO(), width=400)  # only for Text.wrap: it reads the tab size
