"""Numbers and times as a report shows them."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from pdwatch.session.triage import group_findings, worst_first

# A command-line flag in rule text (--max-num-batched-tokens): shown as code that does not break.
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


def fmt_num(value: Any) -> str:
    if value is None:
        return "?"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, (int, float)):
        if abs(value) >= 100 or float(value).is_integer():
            return f"{value:,.0f}"
        return f"{value:,.1f}" if abs(value) >= 10 else f"{value:,.2f}"
    return str(value)


def fmt_time(iso: str | None) -> str:
    if not iso:
        return "?"
    try:
        return datetime.fromisoformat(iso).strftime("%Y-%m-%d %H:%M:%S %Z").strip()
    except ValueError:
        return iso


def fmt_window(window: dict[str, Any] | None) -> str:
    if not window or not window.get("start"):
        return "?"
    start, end = fmt_time(window["start"]), fmt_time(window["end"])
    if start[:10] == end[:10]:
        end = end[11:]
    return f"{start} to {end}"


def ordered_groups(report: dict[str, Any]) -> list[Any]:
    """The findings of a report grouped across endpoints (the triage's one grouping), most severe first."""
    return list(group_findings(report.get("findings") or []))


def ordered_endpoints(report: dict[str, Any]) -> list[str]:
    """Endpoint names worst first (the triage's order): those with a critical finding, then warning, ..."""
    roles = {ep.get("name"): ep.get("role", "unknown") for ep in (report.get("deployment") or {}).get("endpoints") or []}
    names = [ep.get("name") for ep in report.get("endpoints") or []]
    names += [n for n in roles if n not in names]
    return worst_first([(n, roles.get(n, "unknown")) for n in names], report.get("findings") or [])
