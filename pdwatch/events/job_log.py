"""A job's local logs interleaved by time, for the dashboard's job log view (``l``).

Each line comes with its file, line number, timestamp (None when it has none), level
(ERROR/WARNING/INFO/DEBUG, None when it has none), endpoint (from the mapping the caller gives:
the session's store knows it, this module does not) and its text with ANSI escapes and control
characters stripped (``parsers.envelope.split_raw``, as the scanner reads it). A line without a
timestamp sorts with its file's previous timestamped line (a traceback's frames, a wrapped
message); for the level filter it takes the level of the record it continues.

Memory stays bounded whatever the logs' size: ``window_at_line`` / ``window_at_time`` read a few
hundred lines of each file around a position (found by line number, or by a binary search on
time over the file's bytes), and ``lines`` merges whole files lazily (``heapq.merge`` of per-file
readers). Nothing is kept between calls but each file's line-number marks (``LineReader``).
"""

from __future__ import annotations

import heapq
import math
import os
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import Callable, Iterator, Mapping

from pdwatch.parsers.envelope import split_raw
from pdwatch.parsers.timeinfo import TimeResolver, year_hint_from_bytes
from pdwatch.sources.line_reader import LineReader, RawLine

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")  # lowest first: a minimum level keeps it and those after it
_LEVEL_OF = {"TRACE": "DEBUG", "DEBUG": "DEBUG", "INFO": "INFO", "WARNING": "WARNING", "WARN": "WARNING",
             "ERROR": "ERROR", "CRITICAL": "ERROR", "FATAL": "ERROR"}
_RANK = {level: i for i, level in enumerate(LEVELS)}
_TRACEBACK = "Traceback (most recent call last)"
SEED_LINES = 64  # lines read before a window's first to learn its time and record level
# A filtered window stops looking for matching lines after this much of each file, each way.
MAX_SCAN_LINES = 100_000
MAX_SCAN_BYTES = 32 << 20
BATCH = 512
_PROBE_LINES = 200  # a time probe reads this many lines for a timestamp before giving up


@dataclass(frozen=True, slots=True)
class JobLine:
    source: str
    line_no: int
    ts: datetime | None
    level: str | None  # the line's own level
    endpoint: str | None
    text: str
    key: float  # sort key: its time (epoch seconds), else its file's previous timestamped line's
    record_level: str | None  # its level, else the level of the record it continues (the filter reads it)


@dataclass
class JobWindow:
    lines: list[JobLine] = field(default_factory=list)
    anchor: int | None = None  # index of the line asked for (or of the first at or after the time)
    at_start: bool = False  # no line of the job (as filtered) before the window
    at_end: bool = False  # no line after it
    problems: list[str] = field(default_factory=list)  # files that could not be read


def level_passes(line: JobLine, min_level: str | None) -> bool:
    """Whether ``line`` shows at ``min_level`` (None: every line)."""
    if min_level is None:
        return True
    return line.record_level is not None and _RANK[line.record_level] >= _RANK[min_level]


@dataclass
class _Parsed:
    raw: RawLine
    text: str
    ts: datetime | None
    level: str | None


class _File:
    """One log: its reader, its endpoint, and how its year-less (vLLM) stamps get their year."""

    def __init__(self, path: str, endpoint: str | None, year: int | None, tz: tzinfo | None) -> None:
        self.path = path
        self.endpoint = endpoint
        self.reader = LineReader(path)
        self._year, self._tz = year, tz
        self._hint: tuple[int, int] | None = None
        self._mtime: float | None = None
        self._looked = False

    def _resolver(self) -> TimeResolver:
        # A new resolver per read: it follows the months of the lines it is given in order,
        # and a window read backwards must not move its year.
        if not self._looked:
            self._looked = True
            try:
                self._mtime = os.stat(self.path).st_mtime
                with open(self.path, "rb") as f:
                    self._hint = year_hint_from_bytes(f.read(1 << 20))  # as the scanner's first block
            except OSError:
                pass
        times = TimeResolver(year=self._year, tz=self._tz, mtime=self._mtime)
        if self._hint:
            times.observe_year(*self._hint)
        return times

    def parse(self, raws: list[RawLine]) -> list[_Parsed]:
        times = self._resolver()
        out = []
        for raw in raws:
            text, env = split_raw(raw.data)
            ts = None
            if env.iso is not None:
                ts = times.iso(env.iso)
            elif env.month_day is not None and env.clock is not None:
                ts = times.vllm(env.month_day, env.clock)
            out.append(_Parsed(raw, text, ts, _LEVEL_OF.get(env.level) if env.level else None))
        return out

    def lines(self, parsed: list[_Parsed], key: float | None, record_level: str | None) -> list[JobLine]:
        """``parsed`` as ``JobLine``s; ``key`` and ``record_level``: those of the line before the
        first (None: not known; the first lines then take the first time that follows)."""
        out: list[JobLine] = []
        for p in parsed:
            if p.ts is not None:
                stamp = p.ts.timestamp()
                # A whole-second stamp (vLLM's) means somewhere in that second: after the previous
                # line of its file when that one is in the same second, not before it.
                if key is None or not (p.ts.microsecond == 0 and 0 < key - stamp < 1):
                    key = stamp
            if p.level is not None:
                record_level = p.level
            elif p.text.lstrip().startswith(_TRACEBACK):
                record_level = "ERROR"  # a bare traceback printed to stderr: the error is what follows
            out.append(JobLine(self.path, p.raw.line_no, p.ts, p.level, self.endpoint, p.text,
                               math.nan if key is None else key, record_level))
        if out and math.isnan(out[0].key):  # the file's first lines, before any stamp: with the first stamp
            first = next((line.key for line in out if not math.isnan(line.key)), -math.inf)
            out = [line if not math.isnan(line.key) else _with_key(line, first) for line in out]
        return out


def _with_key(line: JobLine, key: float) -> JobLine:
    return JobLine(line.source, line.line_no, line.ts, line.level, line.endpoint, line.text, key, line.record_level)


class JobLog:
    """The local log files of a job. ``endpoints``: each file's endpoint name (the store's)."""

    def __init__(self, files: list[str], endpoints: Mapping[str, str] | None = None, *,
                 year: int | None = None, tz: tzinfo | None = None) -> None:
        endpoints = endpoints or {}
        self.files = [_File(path, endpoints.get(path), year, tz) for path in files]

    @property
    def endpoints(self) -> list[str]:
        """The endpoints of the files, each once, in file order."""
        return list(dict.fromkeys(f.endpoint for f in self.files if f.endpoint))

    def _chosen(self, endpoint: str | None) -> list[_File]:
        return [f for f in self.files if endpoint is None or f.endpoint == endpoint]

    # -- everything, in time order (lazily) -----------------------------------------------------
    def lines(self, endpoint: str | None = None, min_level: str | None = None) -> Iterator[JobLine]:
        """Every line of the job (of ``endpoint``, at ``min_level`` or above) in time order, read
        a batch at a time from each file."""
        merged = heapq.merge(*(self._file_lines(f) for f in self._chosen(endpoint)), key=lambda line: line.key)
        return (line for line in merged if level_passes(line, min_level))

    def _file_lines(self, f: _File) -> Iterator[JobLine]:
        offset, line_no = 0, 1
        key: float | None = None
        record_level: str | None = None
        pending: list[_Parsed] = []  # the first lines before any stamp: held until one comes
        while True:
            try:
                raws = f.reader.forward(offset, line_no, BATCH)
            except OSError:
                return
            if not raws:
                break
            parsed = f.parse(raws)
            if key is None:
                pending += parsed
                if not any(p.ts is not None for p in pending) and len(pending) < MAX_SCAN_LINES:
                    offset, line_no = raws[-1].end, raws[-1].line_no + 1
                    continue
                parsed, pending = pending, []
            lines = f.lines(parsed, key, record_level)
            yield from lines
            key, record_level = lines[-1].key, lines[-1].record_level
            offset, line_no = raws[-1].end, raws[-1].line_no + 1
        if pending:
            yield from f.lines(pending, None, None)

    # -- a window around a position ------------------------------------------------------------
    def window_at_line(self, source: str, line_no: int, *, before: int = 200, after: int = 200,
                       endpoint: str | None = None, min_level: str | None = None) -> JobWindow:
        """The lines around line ``line_no`` of ``source`` (which is shown whatever the filters),
        the other files' lines of the same time interleaved."""
        target = next((f for f in self.files if f.path == source), None)
        if target is None:
            return JobWindow(problems=[f"{source}: not one of the job's local files"])
        try:
            offset = target.reader.offset_of_line(line_no)
        except OSError as exc:
            return JobWindow(problems=[f"{source}: {exc.strerror or exc}"])
        if offset is None:
            return JobWindow(problems=[f"{source} has no line {line_no:,}"])
        head = _read_after(target, offset, line_no, 1, lambda _: True)
        key = head.lines[0].key if head.lines else math.inf
        files = self._chosen(endpoint)
        if target not in files:
            files = [*files, target]

        def keep(line: JobLine) -> bool:
            return (line.source == source and line.line_no == line_no) or \
                (level_passes(line, min_level) and (endpoint is None or line.endpoint == endpoint))
        window = self._window(files, key, before, after, keep, {target.path: (offset, line_no)})
        window.anchor = next((i for i, line in enumerate(window.lines)
                              if line.source == source and line.line_no == line_no), window.anchor)
        return window

    def window_at_time(self, when: datetime | float | None, *, before: int = 200, after: int = 200,
                       endpoint: str | None = None, min_level: str | None = None) -> JobWindow:
        """The lines around ``when`` (None or +inf: the end of the job; -inf: its start); the
        anchor is the first line at or after it."""
        key = math.inf if when is None else when.timestamp() if isinstance(when, datetime) else float(when)
        return self._window(self._chosen(endpoint), key, before, after, lambda line: level_passes(line, min_level), {})

    def _window(self, files: list[_File], key: float, before: int, after: int,
                keep: Callable[[JobLine], bool], starts: dict[str, tuple[int, int]]) -> JobWindow:
        window = JobWindow()
        befores, afters = [], []
        at_start = at_end = True
        for f in files:
            try:
                if f.path in starts:
                    offset, line_no = starts[f.path]
                else:
                    offset = _offset_at_time(f, key)
                    line_no = f.reader.line_no_at(offset)
                back = _read_before(f, offset, line_no, before, keep)
                ahead = _read_after(f, offset, line_no, after, keep, back.last_key, back.last_level)
            except OSError as exc:
                window.problems.append(f"{f.path}: {exc.strerror or exc}")
                continue
            befores.append(back.lines)
            afters.append(ahead.lines)
            at_start &= back.at_edge
            at_end &= ahead.at_edge
        early = list(heapq.merge(*befores, key=lambda line: line.key))
        late = list(heapq.merge(*afters, key=lambda line: line.key))
        window.at_start = at_start and len(early) <= before
        window.at_end = at_end and len(late) <= after
        window.lines = early[-before:] + late[:after] if before > 0 else late[:after]
        window.anchor = min(len(early), before) if late else None
        return window


@dataclass
class _Read:
    lines: list[JobLine]
    at_edge: bool  # the file's start (reading back) or end (reading on) was reached
    last_key: float | None = None  # the key and record level of the last line read (kept or not)
    last_level: str | None = None


def _read_after(f: _File, offset: int, line_no: int, count: int, keep: Callable[[JobLine], bool],
                key: float | None = None, record_level: str | None = None) -> _Read:
    """Up to ``count`` kept lines from ``offset`` on (``key``/``record_level``: the line before's)."""
    if key is None:
        seed = f.lines(f.parse(f.reader.backward(offset, line_no, SEED_LINES)), None, None)
        if seed:
            key, record_level = seed[-1].key, seed[-1].record_level
    out: list[JobLine] = []
    scanned = scanned_bytes = 0
    while len(out) < count and scanned < MAX_SCAN_LINES and scanned_bytes < MAX_SCAN_BYTES:
        raws = f.reader.forward(offset, line_no, max(BATCH, count))
        if not raws:
            return _Read(out, True, key, record_level)
        lines = f.lines(f.parse(raws), key, record_level)
        key, record_level = lines[-1].key, lines[-1].record_level
        out += [line for line in lines if keep(line)]
        scanned += len(raws)
        scanned_bytes += raws[-1].end - offset
        offset, line_no = raws[-1].end, raws[-1].line_no + 1
    return _Read(out[:count], False, key, record_level)


def _read_before(f: _File, offset: int, line_no: int, count: int, keep: Callable[[JobLine], bool]) -> _Read:
    """Up to ``count`` kept lines before ``offset``, in file order, with the key and record level
    of the last line before ``offset``."""
    raws: list[RawLine] = []
    want = count + SEED_LINES
    while True:
        first_offset, first_no = (raws[0].offset, raws[0].line_no) if raws else (offset, line_no)
        more = f.reader.backward(first_offset, first_no, want - len(raws))
        raws = more + raws
        at_start = not raws or raws[0].offset == 0
        lines = f.lines(f.parse(raws), None, None)
        if not at_start:  # the first lines' time and record are not known: they only seed the rest
            known = next((i for i, line in enumerate(lines) if line.ts is not None), len(lines))
            lines = lines[known:]
        kept = [line for line in lines if keep(line)]
        if len(kept) >= count or at_start or not more or len(raws) >= MAX_SCAN_LINES \
                or offset - raws[0].offset >= MAX_SCAN_BYTES:
            last = lines[-1] if lines else None
            return _Read(kept[-count:] if count > 0 else [], at_start and len(kept) <= count,
                         last.key if last else None, last.record_level if last else None)
        want = min(MAX_SCAN_LINES, len(raws) * 4)


def _offset_at_time(f: _File, key: float) -> int:
    """The start of the file's first timestamped line at or after ``key`` (the file's size if
    none): a binary search over its bytes, then a short read forward. Assumes time goes
    forward in a file, as it does in a log (a line out of order only moves the cut a little)."""
    size = f.reader.size()
    if key == -math.inf or size == 0:
        return 0
    if key == math.inf:
        return size
    lo, hi = 0, size  # the answer is a line start in [lo, hi]
    while hi - lo > (64 << 10):
        mid = f.reader.line_start((lo + hi) // 2)
        if mid <= lo:
            break
        stamp = _first_stamp(f, mid)
        if stamp is None or stamp[1] >= key:
            hi = mid
        else:
            lo = mid
    at, line_no = lo, None
    while True:
        raws = f.reader.forward(at, line_no or 0, BATCH)
        if not raws:
            return size
        for p in f.parse(raws):
            if p.ts is not None and p.ts.timestamp() >= key:
                return p.raw.offset
        at = raws[-1].end


def _first_stamp(f: _File, offset: int) -> tuple[int, float] | None:
    """(start, time) of the first timestamped line from the line start ``offset`` on."""
    for p in f.parse(f.reader.forward(offset, 0, _PROBE_LINES)):
        if p.ts is not None:
            return p.raw.offset, p.ts.timestamp()
    return None
