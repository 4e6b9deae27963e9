"""The top line: endpoints by role, total tokens/s, TPS/GPU, findings by severity, the clock."""

from __future__ import annotations

import math

from rich.text import Text
from textual.widgets import Static

from pdwatch.session.snapshot import Snapshot

from .format import ROLE_STYLE, SEVERITY_STYLE, clock_text, rate


class DeploymentHeader(Static):
    DEFAULT_CSS = """
    DeploymentHeader { height: auto; max-height: 4; background: $boost; padding: 0 1; }
    """

    _shown: Text | None = None

    def show(self, snap: Snapshot) -> None:
        text = render_header(snap)
        if text != self._shown:  # only when the text changed; a layout only when its length did
            same_shape = self._shown is not None and len(text.plain) == len(self._shown.plain)
            self._shown = text
            self.update(text, layout=not same_shape)


def render_header(snap: Snapshot) -> Text:
    line = Text("pdwatch ", style="bold")
    roles = snap.roles()
    if roles:
        line.append_text(Text("  ").join(Text(f"{n} {role}", style=ROLE_STYLE.get(role, "bold"))
                                         for role, n in roles.items()))
    else:
        line.append("no endpoints yet", style="dim")
    h = snap.headline
    line.append("  │ total ")
    line.append(f"{rate(h.total_tps)} tok/s", style="bold")
    line.append(f" (prompt {rate(h.prompt_tps)}, gen {rate(h.gen_tps)})")
    line.append("  │ TPS/GPU ")
    line.append(rate(h.tps_per_gpu), style="bold")
    if h.gpus:
        line.append(f" on {h.gpus} GPU{'' if h.gpus == 1 else 's'}")
    second = Text("findings: ")
    counts = snap.severity_counts()
    if counts:
        for sev in ("critical", "warning", "info"):
            if counts.get(sev):
                second.append(f" {counts[sev]} {sev} ", style=SEVERITY_STYLE.get(sev, "bold"))
                second.append(" ")
    else:
        second.append("none firing", style="green")
    second.append("  │ ")
    second.append(clock_text(snap.clock), style="bold")
    if snap.mode == "replay":
        if snap.loading:
            second.append("  replay: reading the logs…", style="yellow")
        elif snap.seeking_to is not None:
            second.append(f"  replay: going to {clock_text(snap.seeking_to)[11:]}…", style="yellow")
        else:
            speed = "max" if snap.speed is not None and math.isinf(snap.speed) else f"{snap.speed:g}x"
            state = "ended" if snap.done else "paused" if snap.paused else "playing"
            second.append(f"  replay {speed} {state}", style="yellow" if snap.paused else "")
    else:
        second.append("  live", style="green")
    return Text("\n").join([line, second])
