"""Text helpers: everything from the logs goes through ``Text``, never through markup."""

from __future__ import annotations

from datetime import datetime

from rich.text import Text

from pdwatch.units import fmt_age, fmt_count as count, fmt_datetime, fmt_short
from pdwatch.units import fmt_clock as time_text

SEVERITY_STYLE = {"critical": "bold white on red", "warning": "bold black on yellow", "info": "bold white on blue"}
ROLE_STYLE = {"prefill": "bold cyan", "decode": "bold magenta", "aggregated": "bold green", "frontend": "bold",
              "unknown": "bold"}
KV_WARN, KV_CRIT = 80.0, 95.0  # KV usage thresholds of the bar (%)


def fmt_rate(value: float | None) -> str:
    """Tokens/s for a narrow column: 1,234 / 12.3k / 1.23M."""
    return fmt_short(value, "column")


def clock_text(value: datetime | None) -> str:
    return fmt_datetime(value, unknown="--:--:--")


_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x09), *range(0x0a, 0x20), *range(0x7f, 0xa0))}


def log_text(line: str, style: str = "") -> Text:
    """A raw log line as literal text: no markup, and control characters (an escape sequence, a
    carriage return) shown as ``\\x1b`` instead of reaching the terminal."""
    return Text(line.translate(_CONTROL), style=style, no_wrap=False)


def severity(sev: str) -> Text:
    return Text(f" {sev.upper()} ", style=SEVERITY_STYLE.get(sev, "bold"))


def kv_bar(pct: float | None, width: int = 12) -> Text:
    if pct is None:
        return Text("KV " + "·" * width + "    ?", style="dim")
    filled = max(0, min(width, round(pct / 100 * width)))
    style = "red" if pct >= KV_CRIT else "yellow" if pct >= KV_WARN else "green"
    out = Text("KV ")
    out.append("█" * filled, style=style)
    out.append("░" * (width - filled), style="dim")
    out.append(f" {pct:5.1f}%", style=style)
    return out


def kv_style(pct: float | None) -> str:
    return "dim" if pct is None else "bold red" if pct >= KV_CRIT else "yellow" if pct >= KV_WARN else "green"


def kv_text(pct: float | None) -> Text:
    """A KV % coloured like the bar: green, yellow at 80%, red at 95%."""
    return Text("?" if pct is None else f"{pct:.1f}%", style=kv_style(pct))


SEVERITY_SHORT = {"critical": "CRIT", "warning": "WARN", "info": "INFO"}
SEVERITY_FG = {"critical": "bold red", "warning": "bold yellow", "info": "bold blue"}


def severity_short(sev: str) -> Text:
    return Text(SEVERITY_SHORT.get(sev, sev[:4].upper()), style=SEVERITY_FG.get(sev, "bold"))


def rate(value: float | None) -> str:
    return fmt_rate(value)


__all__ = ["clock_text", "time_text", "log_text", "severity", "kv_bar", "rate", "count", "fmt_age", "ROLE_STYLE",
           "kv_text", "kv_style", "severity_short", "SEVERITY_SHORT", "SEVERITY_FG"]
