"""When each point's measured run happened: the window its log lines and scrapes are cut to.

sa-bench's ``bench.sh`` marks every concurrency C in ``benchmark.out``: a warm-up run (not saved), then
``Running benchmark with concurrency: C``, a ``date '+%Y-%m-%d %H:%M:%S'`` line, the measured run, another
``date`` line and ``Completed benchmark with concurrency: C``. The window is the two ``date`` lines; the
warm-up, printed before the marker, is outside it. Without the markers, the result's own ``date`` (saved
at the end of the run) minus its ``duration`` is used.

Both are container-local wall-clock times with no zone written: the caller says which zone to assume
(``tz``, UTC by default) and every window carries that zone's name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pdwatch.errors import UsageError
from pdwatch.sweep.results import BenchmarkResult

# Not anchored at line start: `vllm bench serve` can end its output without a newline, gluing the
# next marker to the end of that line.
RUNNING = re.compile(r"Running benchmark with concurrency: (\d+)")
COMPLETED = re.compile(r"Completed benchmark with concurrency: (\d+)")
DATE_LINE = re.compile(r"(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})\s*$")
BENCH_DATE_FORMAT = "%Y-%m-%d %H:%M:%S"
RESULT_DATE_FORMAT = "%Y%m%d-%H%M%S"
UTC_OFFSET = re.compile(r"^(?:UTC)?([+-])(\d{1,2}):?(\d{2})?$")


@dataclass(frozen=True)
class MeasuredRun:
    """One concurrency's measured run in ``benchmark.out`` (1-based line numbers)."""

    concurrency: int
    marker_line: int  # "Running benchmark with concurrency: C"
    start_text: str | None = None  # the first date line after the marker
    start_line: int | None = None
    end_text: str | None = None  # the last date line before "Completed ..."
    end_line: int | None = None
    completed_line: int | None = None  # None: the run never finished


@dataclass(frozen=True)
class PointWindow:
    """The measured run of one point, as aware datetimes, and what they were read from."""

    start: datetime
    end: datetime
    timezone: str  # the zone assumed for the container-local times, e.g. "UTC"
    source: str  # "benchmark.out:120-161" or "results_concurrency_8_gpus_1.json: date − duration"

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds()


def parse_timezone(name: str) -> tzinfo:
    """``UTC``, an IANA name (``Europe/Berlin``) or an offset (``+02:00``, ``UTC-5``); else a UsageError."""
    if name.upper() in ("UTC", "Z"):
        return timezone.utc
    offset = UTC_OFFSET.match(name)
    if offset:
        sign, hours, minutes = offset.groups()
        delta = timedelta(hours=int(hours), minutes=int(minutes or 0))
        if delta >= timedelta(hours=24):
            raise UsageError(f"{name}: not a UTC offset (hours must be under 24)")
        return timezone(-delta if sign == "-" else delta)
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise UsageError(f"{name}: unknown time zone (give UTC, an offset such as +02:00, or a name such as Europe/Berlin)") from None


def measured_runs(benchmark_out: Path) -> dict[int, MeasuredRun]:
    """Each concurrency's measured run in ``benchmark.out``; when a concurrency ran twice, the last
    finished run. A run with a marker but no ``Completed`` line is kept only if none finished."""
    runs: dict[int, MeasuredRun] = {}
    current: dict | None = None

    def close(completed_line: int | None) -> None:
        if current is None:
            return
        run = MeasuredRun(**current, completed_line=completed_line)
        if completed_line is not None or run.concurrency not in runs:
            runs[run.concurrency] = run

    with open(benchmark_out, encoding="utf-8", errors="replace") as lines:
        for number, line in enumerate(lines, 1):
            running = RUNNING.search(line)
            if running:
                close(None)
                current = {"concurrency": int(running[1]), "marker_line": number}
                continue
            if current is None:
                continue
            completed = COMPLETED.search(line)
            if completed and int(completed[1]) == current["concurrency"]:
                close(number)
                current = None
                continue
            date = DATE_LINE.search(line)
            if date:
                key = "end" if "start_text" in current else "start"
                current[f"{key}_text"], current[f"{key}_line"] = date[1], number
    close(None)
    return runs


def run_spans(benchmark_out: Path, tz: tzinfo | str = "UTC") -> list[tuple[int, datetime, datetime | None]]:
    """Each measured run's (concurrency, start, end) as far as ``benchmark.out`` says now, in file
    order: end None while the run is still going (a live sweep). Warm-ups are not runs."""
    if isinstance(tz, str):
        tz = parse_timezone(tz)
    spans = []
    for run in sorted(measured_runs(benchmark_out).values(), key=lambda r: r.marker_line):
        if run.start_text is None:
            continue
        start = datetime.strptime(run.start_text, BENCH_DATE_FORMAT).replace(tzinfo=tz)
        end = None
        if run.end_text is not None and run.completed_line is not None:
            end = datetime.strptime(run.end_text, BENCH_DATE_FORMAT).replace(tzinfo=tz)
        spans.append((run.concurrency, start, end))
    return spans


def point_window(result: BenchmarkResult, runs: dict[int, MeasuredRun], tz: tzinfo | str = "UTC",
                 benchmark_out_name: str = "benchmark.out") -> PointWindow | None:
    """The point's window: its ``benchmark.out`` markers if they hold both dates, else the result's
    ``date`` minus ``duration``; None when neither is known. ``tz`` is the zone the container's
    clock was in (a name is checked by ``parse_timezone``)."""
    if isinstance(tz, str):
        tz = parse_timezone(tz)
    zone = _zone_name(tz)
    run = runs.get(result.concurrency) if result.concurrency is not None else None
    if run and run.start_text and run.end_text and run.completed_line is not None:
        start = datetime.strptime(run.start_text, BENCH_DATE_FORMAT).replace(tzinfo=tz)
        end = datetime.strptime(run.end_text, BENCH_DATE_FORMAT).replace(tzinfo=tz)
        if end >= start:
            return PointWindow(start, end, zone, f"{benchmark_out_name}:{run.start_line}-{run.end_line}")
    if result.date and result.duration_s is not None and result.duration_s >= 0:
        try:
            end = datetime.strptime(result.date, RESULT_DATE_FORMAT).replace(tzinfo=tz)
        except ValueError:
            return None
        return PointWindow(end - timedelta(seconds=result.duration_s), end, zone, f"{result.name}: date − duration")
    return None


def _zone_name(tz: tzinfo) -> str:
    if tz is timezone.utc:
        return "UTC"
    return str(getattr(tz, "key", None) or tz.tzname(None) or tz)
