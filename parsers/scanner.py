"""Scan blocks of complete log lines into events, one scanner per source.

Speed comes from not looking at lines that cannot match: one byte-level search for
every family's needles runs over the whole block in C, and only the lines it hits
are decoded, cleaned and parsed. Two situations need every line instead, and only
while they last: an open Python traceback (its frames carry no needle), and a file
that a terminal hard-wrapped (pieces must be rejoined before parsing).
"""

from __future__ import annotations

import functools

import regex as re
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Iterable

from .cleaning import clean_raw
from .envelope import Envelope, engine_from_proc, split_envelope, split_raw
from .events import Event
from .families import FAMILIES, LOGO_MODEL_KIND, STATS_ENGINE_KEY, Family
from .fastlane import StatsMatch, match_stats, stats_values
from .prefilter import Prefilter
from .timeinfo import TimeResolver, year_hint_from_bytes
from .wrap import WrapDetector, starts_record

_TRACEBACK_NEEDLE = b"Traceback (most recent call last)"
_EVIDENCE_CHARS = 4096
_TRACEBACK_MAX_LINES = 2000
_EXCEPTION_LINE = re.compile(r"(?P<type>[A-Za-z_][\w.]*)(?::\s?(?P<msg>.*))?$")
_ENGINE_PREFIX = re.compile(r"Engine (\d+): ")
_FOLLOWS_STATS = {"spec_decode", "kv_transfer"}
# Parse errors we tolerate from a family on mangled text; anything else is a bug and propagates.
_PARSE_ERRORS = (ValueError, IndexError, KeyError, TypeError, OverflowError, AttributeError)


def _needle_map(families: Iterable[Family]) -> dict[bytes, list[Family]]:
    by_needle: dict[bytes, list[Family]] = {}
    for fam in families:
        for needle in fam.needles:
            by_needle.setdefault(needle, []).append(fam)
    return by_needle


_BY_NEEDLE = _needle_map(FAMILIES)
_PREFILTER = Prefilter([*_BY_NEEDLE, _TRACEBACK_NEEDLE])
_STATS_ONLY = (b"Running: ",)  # the prefilter's needles for a plain stats line


@functools.lru_cache(maxsize=1024)
def _engine_of_proc(proc: bytes | None) -> int | None:
    return engine_from_proc(proc.decode()) if proc else None


@dataclass(slots=True)
class _OpenTraceback:
    line_no: int
    last_line_no: int
    ts: datetime | None
    level: str | None
    engine: int | None
    text: str
    frames: int = 0


class LogScanner:
    """Stateful per-source parser: ``feed`` blocks of complete lines in order, ``finish`` at EOF."""

    def __init__(self, source: str, *, year: int | None = None, tz: tzinfo | None = None,
                 mtime: float | None = None, now: datetime | None = None) -> None:
        self.source = source
        self.times = TimeResolver(year=year, tz=tz, mtime=mtime, now=now)
        self.parse_errors = 0
        self._year_scanned = False
        self._wrap = WrapDetector()
        self._held: tuple[str, int, int, int] | None = None  # wrapped record: text, first, last line, last piece len
        self._tracebacks: dict[tuple[str | None, int | None], _OpenTraceback] = {}
        self._last_stats_engine: int | None = None
        self._seen_stats = False
        self._pending_logo: Event | None = None

    # --- public -----------------------------------------------------------------------------

    def feed(self, data: bytes, first_line_no: int) -> list[Event]:
        out: list[Event] = []
        if not self._year_scanned:
            self._year_scanned = True
            hint = year_hint_from_bytes(data[: 1 << 20])
            if hint:
                self.times.observe_year(*hint)
        if not self._wrap.decided:
            self._wrap.observe(data)
        pos, line_no, n = 0, first_line_no, len(data)
        spans = _PREFILTER.lines(data) if not self._slow() else []
        i = 0
        while pos < n:
            if self._slow():
                # Every line, until the open traceback closes (or for the whole of a wrapped file).
                end = data.find(b"\n", pos)
                end = n if end < 0 else end
                self._physical(data[pos:end], line_no, out)
                pos, line_no = end + 1, line_no + 1
                if not self._slow():
                    spans, i = _PREFILTER.lines(data, pos), 0
                continue
            if i >= len(spans):
                break
            start, end, needles = spans[i]
            i += 1
            line_no += data.count(b"\n", pos, start)
            raw = data[start:end]
            groups = match_stats(raw) if needles == _STATS_ONLY else None
            if groups is not None:
                self._fast_stats(groups, raw, line_no, out)
            else:
                text, env = split_raw(raw)
                self._record(raw, text, line_no, None, out, needles, env)
            pos, line_no = end + 1, line_no + 1
        return out

    # --- state at a block boundary (parallel scanning of one file by pieces) ---------------

    def boundary_state(self) -> tuple:
        """Everything that carries from one line to the next: two scanners with equal states,
        fed the same following lines, give the same events."""
        return (self.times.state(), self._last_stats_engine, self._seen_stats, dict(self._tracebacks),
                self._pending_logo, self._held, self._wrap.widths, self._year_scanned)

    def restore(self, state: tuple) -> None:
        """Continue from another scanner's ``boundary_state`` (the wrap decision is taken as made)."""
        times, self._last_stats_engine, self._seen_stats, tracebacks, self._pending_logo, self._held, \
            widths, self._year_scanned = state
        self.times.restore(times)
        self._tracebacks = dict(tracebacks)
        self._wrap.decide(widths)

    def start_mid_file(self, year_hint: tuple[int, int] | None) -> None:
        """Scan from the middle of a file whose start was already judged: no wrap, this year hint."""
        self._year_scanned = True
        if year_hint:
            self.times.observe_year(*year_hint)
        self._wrap.decide(frozenset())

    @property
    def wrapped(self) -> bool:
        return bool(self._wrap.widths)

    def _slow(self) -> bool:
        return bool(self._tracebacks or self._wrap.widths or self._held)

    def finish(self) -> list[Event]:
        """End of input: emit whatever is still held (wrapped record, traceback, logo version)."""
        out: list[Event] = []
        self._flush_held(out)
        for key in list(self._tracebacks):
            self._close_traceback(key, None, None, out)
        self._flush_logo(out)
        return out

    def reset(self) -> list[Event]:
        """The file was truncated or replaced: close open state, start line logic afresh."""
        out = self.finish()
        self._seen_stats = False
        self._last_stats_engine = None
        return out

    # --- line handling ----------------------------------------------------------------------

    def _physical(self, raw: bytes, line_no: int, out: list[Event]) -> None:
        """Slow path: every physical line, rejoining terminal-wrapped pieces when the file needs it."""
        text = clean_raw(raw)
        if self._held is not None:
            held_text, first, _, piece_len = self._held
            if piece_len in self._wrap.widths and text and not starts_record(text):
                self._held = (held_text + text, first, line_no, len(text))
                return
            self._flush_held(out)
        if self._wrap.widths:
            self._held = (text, line_no, line_no, len(text))
            return
        self._record(raw, text, line_no, None, out)

    def _flush_held(self, out: list[Event]) -> None:
        if self._held is None:
            return
        text, first, last, _ = self._held
        self._held = None
        self._record(text.encode("utf-8", "replace"), text, first, last if last != first else None, out)

    def _record(self, raw: bytes, text: str, line_no: int, end_line_no: int | None, out: list[Event],
                needles: tuple[bytes, ...] | None = None, env: Envelope | None = None) -> None:
        if env is None:
            env = split_envelope(text)
        ts = self._timestamp(env)
        proc_engine = engine_from_proc(env.proc)
        key = (env.proc, env.pid)

        if key in self._tracebacks and self._traceback_continues(key, env, line_no, out):
            pass  # frames are part of the open traceback, but may still hold a family (OOM text)
        elif _TRACEBACK_NEEDLE in raw and env.msg.lstrip().startswith("Traceback (most recent call last)"):
            self._tracebacks[key] = _OpenTraceback(line_no, line_no, ts, env.level, proc_engine, text[:_EVIDENCE_CHARS])

        if needles is None:
            needles = _PREFILTER.needles_in(raw)
        if not needles:
            return
        families: list[Family] = []
        for needle in needles:
            for fam in _BY_NEEDLE.get(needle, ()):
                if fam not in families:
                    families.append(fam)
        for fam in families:
            try:
                parsed = fam.parse(env.msg)
            except _PARSE_ERRORS:
                self.parse_errors += 1
                continue
            for kind, values in parsed:
                self._emit(kind, values, env, ts, proc_engine, line_no, end_line_no, text, out)

    def _fast_stats(self, groups: StatsMatch, raw: bytes, line_no: int, out: list[Event]) -> None:
        """A common-shape stats line read in one match (see ``fastlane``): the event ``_record`` would give."""
        proc, _pid, level, month_day, hms, frac = groups[:6]
        clock = hms.decode() + "." + frac.decode() if frac else hms.decode()
        ts = self.times.vllm(month_day.decode(), clock)
        values = stats_values(groups)
        named = values.pop(STATS_ENGINE_KEY)
        engine = named if named is not None else _engine_of_proc(proc)
        self._last_stats_engine, self._seen_stats = engine, True
        self._flush_logo(out)
        out.append(Event("stats", self.source, line_no, ts, engine, level.decode(), values,
                         None, raw[:_EVIDENCE_CHARS].decode()))

    def _emit(self, kind: str, values: dict, env: Envelope, ts: datetime | None, proc_engine: int | None,
              line_no: int, end_line_no: int | None, text: str, out: list[Event]) -> None:
        engine = proc_engine
        if env.msg.startswith("Engine ") and kind != "stats":
            named = _ENGINE_PREFIX.match(env.msg)
            engine = int(named[1]) if named else engine
        if kind == "stats":
            named = values.pop(STATS_ENGINE_KEY, None)
            engine = named if named is not None else proc_engine
            self._last_stats_engine, self._seen_stats = engine, True
        elif kind in _FOLLOWS_STATS and self._seen_stats:
            engine = self._last_stats_engine
        if kind == LOGO_MODEL_KIND:
            if self._pending_logo is not None and line_no == (self._pending_logo.end_line_no or self._pending_logo.line_no) + 1:
                self._pending_logo.values["model"] = values["model"]
                self._pending_logo.end_line_no = line_no
                self._flush_logo(out)
            return
        self._flush_logo(out)
        event = Event(kind, self.source, line_no, ts, engine, env.level, values, end_line_no, text[:_EVIDENCE_CHARS])
        if kind == "version" and "model" not in values:
            values["model"] = None
            self._pending_logo = event  # the logo prints the model on the next line
            return
        out.append(event)

    def _flush_logo(self, out: list[Event]) -> None:
        if self._pending_logo is not None:
            out.append(self._pending_logo)
            self._pending_logo = None

    # --- tracebacks -------------------------------------------------------------------------

    def _traceback_continues(self, key, env: Envelope, line_no: int, out: list[Event]) -> bool:
        """Feed one line of the same process to its open traceback; True while it is part of it."""
        tb = self._tracebacks[key]
        msg = env.msg
        if line_no - tb.line_no > _TRACEBACK_MAX_LINES:
            self._close_traceback(key, None, None, out)
            return False
        if not msg or msg[0].isspace() or msg.startswith(("During handling", "The above exception")) \
                or msg.startswith("Traceback (most recent call last)"):
            if msg.lstrip().startswith("File "):
                tb.frames += 1
            tb.last_line_no = line_no
            return True
        m = _EXCEPTION_LINE.match(msg)
        if m and ("." in m["type"] or m["type"][0].isupper()):
            tb.last_line_no = line_no
            self._close_traceback(key, m["type"], (m["msg"] or "").strip(), out)
            return True
        self._close_traceback(key, None, None, out)
        return False

    def _close_traceback(self, key, exc_type: str | None, message: str | None, out: list[Event]) -> None:
        tb = self._tracebacks.pop(key)
        out.append(Event("traceback", self.source, tb.line_no, tb.ts, tb.engine, tb.level,
                         {"exception": exc_type, "message": message, "frames": tb.frames},
                         tb.last_line_no, tb.text))

    # --- time -------------------------------------------------------------------------------

    def _timestamp(self, env: Envelope) -> datetime | None:
        if env.iso is not None:
            return self.times.iso(env.iso)
        if env.month_day is not None and env.clock is not None:
            return self.times.vllm(env.month_day, env.clock)
        return None
