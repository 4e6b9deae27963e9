"""Numbers and times as a report shows them."""

from __future__ import annotations

import re
from typing import Any

from pdwatch.units import fmt_iso as fmt_time
from pdwatch.units import fmt_num

# A command-line flag in rule text (--max-num-batched-tokens): shown as code that does not break.
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
# A command a rule's text quotes in backticks (`dmesg -T | grep ...`): shown as code, whole.
CODE_SPAN = re.compile(r"`([^`\n]+)`")


def prose_parts(text: str) -> list[tuple[str, bool]]:
    """Rule text cut into (piece, is_code): the backtick spans its author wrote as commands, and the
    prose around them (where the writers mark flags). A lone backtick stays prose."""
    parts: list[tuple[str, bool]] = []
    pos = 0
    for m in CODE_SPAN.finditer(text):
        parts += [(text[pos:m.start()], False), (m.group(1), True)]
        pos = m.end()
    return parts + [(text[pos:], False)]


def fmt_window(window: dict[str, Any] | None) -> str:
    if not window or not window.get("start"):
        return "?"
    start, end = fmt_time(window["start"]), fmt_time(window["end"])
    if start[:10] == end[:10]:
        end = end[11:]
    return f"{start} to {end}"


def endpoints_worst_first(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The report's endpoints in the diagnosis' order (worst first: ``endpoints_order``)."""
    rank = {name: i for i, name in enumerate(report.get("endpoints_order") or [])}
    return sorted(report.get("endpoints") or [], key=lambda ep: rank.get(ep.get("name"), len(rank)))


def severity_word(severity: Any) -> str:
    """A severity as the report writes it: the word in capitals (CRITICAL), everywhere."""
    return str(severity).upper()


def severity_short(severity: Any) -> str:
    """A severity in four letters, for a link or a narrow cell: CRIT, WARN, INFO."""
    return str(severity)[:4].upper()


# The frontend section's words, shared by the Markdown and HTML writers (each escapes them its way).
FRONTEND_NOTE = ("≈: each second's count of failed requests (from the log's responses) shared among the HTTP "
                 "statuses of the lines kept for that second (the first few); lines: the log lines kept. Dynamo "
                 "logs an error type for only some of the failed requests. p99: the highest of the scrape "
                 "intervals' 99th percentiles (from the histogram buckets); mean: of the scrape intervals' means.")
NOT_SCRAPED = "not scraped"


def fmt_period(period: dict[str, Any]) -> str:
    """'16:23:39 to 16:24:31 UTC, 52 s': a frontend period (its date is the run's)."""
    start, end = fmt_time(period.get("start")), fmt_time(period.get("end"))
    start = start[11:] if len(start) > 11 else start
    end = end[11:] if len(end) > 11 else end
    if start.endswith(" UTC") and end.endswith(" UTC"):
        start = start[:-4]
    return f"{start} to {end}, {fmt_num(period.get('seconds'))} s"


def frontend_cells(period: dict[str, Any], scraped: bool) -> list[str]:
    """A frontend period's cells: requests/s, ok, failed, failed %, mean latency s, TTFT s mean / p99,
    ITL ms mean / p99, in flight mean / max, queued mean / max ("not scraped" without /metrics)."""
    failed_pct = period.get("failed_pct")
    cells = [fmt_num(period.get("requests_per_s")), fmt_num(period.get("requests_ok")),
             fmt_num(period.get("requests_failed")), "?" if failed_pct is None else f"{fmt_num(failed_pct)}%",
             fmt_num(period.get("latency_s"))]
    if not scraped:
        return cells + [NOT_SCRAPED] * 4

    def ms(value: Any) -> Any:
        return None if value is None else value * 1000.0
    return cells + [f"{fmt_num(period.get('ttft_mean_s'))} / {fmt_num(period.get('ttft_p99_s'))}",
                    f"{fmt_num(ms(period.get('itl_mean_s')))} / {fmt_num(ms(period.get('itl_p99_s')))}",
                    f"{fmt_num(period.get('inflight_mean'))} / {fmt_num(period.get('inflight_max'))}",
                    f"{fmt_num(period.get('queued_mean'))} / {fmt_num(period.get('queued_max'))}"]


def by_status_text(by_status: list[dict[str, Any]]) -> str:
    """'503 ≈576 (27 lines), 404 ≈424 (29 lines)', or 'none'."""
    return ", ".join(f"{r['status']} ≈{fmt_num(r['requests'])} ({_lines(r['lines'])})" for r in by_status) or "none"


def by_error_type_text(by_error_type: list[dict[str, Any]]) -> str:
    """'unavailable (4 lines), not_found (1 line)', or 'none logged'."""
    return ", ".join(f"{r['error_type']} ({_lines(r['lines'])})" for r in by_error_type) or "none logged"


def _lines(n: int) -> str:
    return f"{n} line{'' if n == 1 else 's'}"
