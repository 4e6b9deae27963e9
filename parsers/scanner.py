"""Scan blocks of complete log lines into events, one scanner per source.

Speed comes from not looking at lines that cannot match: one byte-level search for
every family's needles runs over the whole block in C, and only the lines it hits
are decoded, cleaned and parsed; the hottest of those (stats, KV-transfer, spec-decode,
router, access and request-completed lines) are read whole in one match on their bytes
(``fastlane``), falling back to the general path. Two situations need every line instead, and only
while they last: an open Python traceback (its frames carry no needle), and a file
that a terminal hard-wrapped (pieces must be rejoined before parsing).
"""

from __future__ import annotations

import functools

import orjson
import regex as re
from dataclasses import dataclass, replace
from datetime import datetime, tzinfo
from re import Match  # the lanes match with Python's re (fastlane)
from typing import Iterable

from .cleaning import clean_raw, undecodable_lines
from .envelope import Envelope, engine_from_proc, normalise_level, split_envelope, split_raw
from .events import Event
from .families import FAMILIES, LOGO_MODEL_KIND, STATS_ENGINE_KEY, Family
from .fastlane import (COLOURED_FIELD, DYNAMO_HEADER_GROUPS, DYNAMO_TARGET_CLOSE, KV_TRANSFER_JSON_LANE, KV_TRANSFER_LANE,
                       REQUEST_COMPLETED, REQUEST_COMPLETED_JSON, SELECTED_MEMBERS, SPEC_DECODE_JSON_LANE, SPEC_DECODE_LANE, STATS_JSON_LANE, STATS_LANE,
                       UVICORN_ACCESS, UVICORN_ACCESS_JSON, VLLM_HEADER_GROUPS, WORKER_SELECTED_JSON_LANE,
                       WORKER_SELECTED_LANE, JsonLane, MessageLane, match_stats, request_completed_values, stats_values)
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


@functools.lru_cache(maxsize=8)
def _search_without(skip_kinds: frozenset[str]) -> tuple[Prefilter, dict[bytes, list[Family]]]:
    """The prefilter and needle map without the families whose every kind is skipped: their
    lines are then never even decoded (a Dynamo frontend's router lines, for a report)."""
    if not skip_kinds:
        return _PREFILTER, _BY_NEEDLE
    kept = [f for f in FAMILIES
            if not f.samples or not all(kind in skip_kinds for s in f.samples for kind, _ in s.expect)]
    by_needle = _needle_map(kept)
    return Prefilter([*by_needle, _TRACEBACK_NEEDLE]), by_needle


@functools.lru_cache(maxsize=8)
def _first_line_needles(unseen: frozenset[str]) -> frozenset[bytes]:
    """The needles of the families that give a kind of ``unseen``: the lines where a skipped
    kind's first event may come, after which the scanner searches without it."""
    return frozenset(needle for f in FAMILIES
                     if any(kind in unseen for s in f.samples for kind, _ in s.expect) for needle in f.needles)


@functools.lru_cache(maxsize=1024)
def _engine_of_proc(proc: bytes | None) -> int | None:
    return engine_from_proc(proc.decode()) if proc else None


@functools.lru_cache(maxsize=64)
def _level_of(printed: bytes) -> str | None:
    """``b" WARN"`` -> ``"WARNING"``: a level as a lane matched it, as the envelope gives it."""
    return normalise_level(printed.strip().decode())


@functools.lru_cache(maxsize=64)
def _level_json(printed: bytes) -> bytes:
    """``_level_of`` as its JSON value (``b" WARN"`` -> ``b'"WARNING"'``)."""
    return orjson.dumps(_level_of(printed))


# The levels ``VLLM_HEADER`` matches, as JSON values.
_VLLM_LEVEL_JSON = {level: b'"%s"' % level for level in (b"INFO", b"DEBUG", b"WARNING")}


def _engine_json(engine: int | None) -> bytes:
    return b"null" if engine is None else b"%d" % engine


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
                 mtime: float | None = None, now: datetime | None = None,
                 skip_kinds: frozenset[str] = frozenset(), json_lines: bool = False) -> None:
        """``skip_kinds``: event kinds the caller has no use for (never ``stats``). Of each, the
        source's first event is given (it shows the source is there: a frontend whose every
        line is a router line is still an endpoint); after it, that kind's lines are passed
        over without being decoded.

        ``json_lines`` (``pdwatch parse``): ``feed`` and ``finish`` give, in place of the event
        of a line that a direct lane reads (see ``fastlane.JsonLane``), that event's JSON line as
        ``pdwatch parse`` writes it (bytes, newline included); every other event is an ``Event``,
        in its place among them."""
        if "stats" in skip_kinds:
            raise ValueError("stats events cannot be skipped")
        self.source = source
        self._skip = frozenset(skip_kinds)
        self._skip_unseen = self._skip  # skipped kinds whose first event is still to come
        self._prefilter, self._by_needle = _PREFILTER, _BY_NEEDLE
        self._first_needles = _first_line_needles(self._skip_unseen)
        self.times = TimeResolver(year=year, tz=tz, mtime=mtime, now=now)
        self.parse_errors = 0
        self._year_scanned = False
        self._wrap = WrapDetector()
        self._held: tuple[str, int, int, int] | None = None  # wrapped record: text, first, last line, last piece len
        self.rejoined_lines = 0  # physical lines read as the continuation of the line before (a terminal's cut)
        self.undecodable_lines = 0  # lines not valid UTF-8 (read with U+FFFD), since the entry (``mark_entry``)
        self._tracebacks: dict[tuple[str | None, int | None], _OpenTraceback] = {}
        self._last_stats_engine: int | None = None
        self._seen_stats = False
        # For a piece of a file scanned apart (``pdwatch.events.parallel_scan``): whether the stats
        # state it started from was still in force when a KV-transfer / spec-decode line used it.
        self._stats_from_entry = True
        self.entry_stats_used = False
        self.skip_met: set[str] = set()  # skipped kinds whose lines came since ``mark_entry``
        self._pending_logo: Event | None = None
        self._json_lanes: dict | None = None
        self._json_heads: dict[str, bytes] = {}
        if json_lines and not self._skip:
            try:
                quoted_source = orjson.dumps(source)
            except orjson.JSONEncodeError:  # a file name that is not UTF-8: the Event path writes it
                quoted_source = None
            if quoted_source is not None:
                self._json_lanes = _JSON_LINE_LANES
                self._json_heads = {kind: b'{"kind":"%s","source":%s,"line_no":' % (kind.encode(), quoted_source)
                                    for kind in _JSON_KINDS}
                self._router_json = (self._json_heads["worker_selected"].replace(b"%", b"%%")
                                     + _ROUTER_JSON_TAIL)

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
        self.undecodable_lines += undecodable_lines(data)
        pos, line_no, n = 0, first_line_no, len(data)
        # ``pdwatch parse`` of a block of router lines (a Dynamo frontend at INFO): see ``_router_lines``.
        dense = self._json_lanes is not None and _router_dense(data)
        while pos < n:
            if self._slow():
                pos, line_no = self._every_line(data, pos, line_no, out)
            elif dense:
                pos, line_no = self._router_lines(data, pos, line_no, out)
            else:
                pos, line_no = self._hit_lines(data, pos, line_no, out)
        return out

    def _hit_lines(self, data: bytes, pos: int, line_no: int, out: list[Event]) -> tuple[int, int]:
        """Only the lines the prefilter hits, until a traceback opens (then: where to go on)."""
        tracebacks, first_line_no, read_hit = self._tracebacks, line_no, self._read_hit
        prefilter = self._prefilter
        # While a skipped kind's first line is to come, the search stops at the first line that may
        # be one (the search changes there), and goes on from the next if it was not.
        spans, searched_to = prefilter.lines_until(data, pos, self._first_needles)
        for start, end, needles, newlines_before in spans:
            line_no = first_line_no + newlines_before
            read_hit(data[start:end], line_no, needles, out)
            if tracebacks:  # only the general path opens one
                return end + 1, line_no + 1
            if self._prefilter is not prefilter:
                # A skipped kind's first line was just read: search the rest without its needles
                # (a decode log's first block is ~20k access lines read in full otherwise).
                return end + 1, line_no + 1
        if searched_to < len(data):
            return searched_to + 1, line_no + 1
        return len(data), line_no

    def _router_lines(self, data: bytes, pos: int, line_no: int, out: list) -> tuple[int, int]:
        """``_hit_lines`` for a block of router lines (``json_lines``), until a traceback opens.

        There, each line is a hit of the search (a Python callback and a span) on its way to its
        lane. Here the search looks only for the other needles; their lines, few, are read as
        ``_hit_lines`` reads them, with the needles the whole search gives them. Between them, a
        line that holds the router needle holds it alone, as in ``_hit_lines``: one in the common
        shape is written here (``_router_json_line``), any other takes the router lane there.
        Same lines, same order, about a fifth less CPU (a 16 MB piece: 0.37 -> 0.31 s)."""
        fullmatch, router_line = WORKER_SELECTED_JSON_LANE.dynamo_line.fullmatch, self._router_json_line
        append, tracebacks = out.append, self._tracebacks
        first_line_no = line_no
        for start, end, _, newlines_before in [*_OTHER_THAN_ROUTER.lines(data, pos), (len(data), 0, (), -1)]:
            lines = data[pos:start].split(b"\n") if start > pos else []
            if lines and not lines[-1]:
                lines.pop()  # the newline before ``start``, or the block's last one
            for raw in lines:
                line = fullmatch(raw)
                if line is not None and self._pending_logo is None:
                    append(router_line(line, line_no))
                elif _ROUTER_NEEDLE in raw:
                    self._read_hit(raw, line_no, (_ROUTER_NEEDLE,), out)
                    if tracebacks:
                        return pos + len(raw) + 1, line_no + 1
                pos += len(raw) + 1
                line_no += 1
            if newlines_before < 0:
                return len(data), line_no
            raw, line_no = data[start:end], first_line_no + newlines_before
            (_, _, needles, _), = self._prefilter.lines(raw)
            self._read_hit(raw, line_no, needles, out)
            pos, line_no = end + 1, line_no + 1
            if tracebacks:
                return pos, line_no
        raise AssertionError("the loop ends at its last entry")  # pragma: no cover

    def _read_hit(self, raw: bytes, line_no: int, needles: tuple[bytes, ...], out: list) -> None:
        """A line that holds ``needles``: its lane, else the general path."""
        lane = (self._json_lanes or _LINE_LANES).get(needles)
        if lane is None or not lane[0](self, raw, line_no, out, lane[1]):
            text, env = split_raw(raw)
            self._record(raw, text, line_no, None, out, needles, env)

    def _every_line(self, data: bytes, pos: int, line_no: int, out: list[Event]) -> tuple[int, int]:
        """Every line, until the open traceback closes (or for the whole of a wrapped file)."""
        n = len(data)
        while pos < n and self._slow():
            end = data.find(b"\n", pos)
            end = n if end < 0 else end
            self._physical(data[pos:end], line_no, out)
            pos, line_no = end + 1, line_no + 1
        return pos, line_no

    # --- state at a block boundary (parallel scanning of one file by pieces) ---------------

    def boundary_state(self) -> tuple:
        """Everything that carries from one line to the next: two scanners with equal states,
        fed the same following lines, give the same events."""
        return (self.times.state(), self._last_stats_engine, self._seen_stats, dict(self._tracebacks),
                self._pending_logo, self._held, self._wrap.widths, self._year_scanned, self._skip_unseen)

    @staticmethod
    def renumbered(state: tuple, delta: int) -> tuple:
        """A ``boundary_state`` with its line numbers moved by ``delta``: the state of a piece
        scanned with provisional line numbers, once its first line's true number is known."""
        if not delta:
            return state
        times, last_engine, seen, tracebacks, logo, held, widths, year_scanned, unseen = state
        tracebacks = {key: replace(tb, line_no=tb.line_no + delta, last_line_no=tb.last_line_no + delta)
                      for key, tb in tracebacks.items()}
        if logo is not None:
            logo = logo.moved(delta)
        if held is not None:
            text, first, last, length = held
            held = (text, first + delta, last + delta, length)
        return times, last_engine, seen, tracebacks, logo, held, widths, year_scanned, unseen

    def restore(self, state: tuple) -> None:
        """Continue from another scanner's ``boundary_state`` (the wrap decision is taken as made)."""
        times, self._last_stats_engine, self._seen_stats, tracebacks, self._pending_logo, self._held, \
            widths, self._year_scanned, unseen = state
        self._skipped_once(unseen)
        self.times.restore(times)
        self._tracebacks = dict(tracebacks)
        self._wrap.decide(widths)

    def _skipped_once(self, unseen: frozenset[str]) -> None:
        """Only ``unseen`` skipped kinds are still to be read once; the others leave the search."""
        self._skip_unseen = unseen
        self._prefilter, self._by_needle = _search_without(self._skip - unseen)
        self._first_needles = _first_line_needles(unseen)

    def _drop(self, kind: str) -> bool:
        """Whether an event of ``kind`` is dropped (a skipped kind after its first event)."""
        if kind not in self._skip:
            return False
        self.skip_met.add(kind)
        if kind in self._skip_unseen:
            self._skipped_once(self._skip_unseen - {kind})
            return False
        return True

    def mark_entry(self) -> None:
        """From here on, note whether the stats state in force now gets used (see ``entry_stats_used``);
        the lines read so far (a piece's warm-up: the previous piece's) are not counted as undecodable."""
        self._stats_from_entry, self.entry_stats_used = True, False
        self.skip_met = set()
        self.undecodable_lines = 0

    @property
    def stats_set_since_entry(self) -> bool:
        return not self._stats_from_entry

    def start_mid_file(self, year_hint: tuple[int, int] | None) -> None:
        """Scan from the middle of a file whose start was already judged: no wrap, this year hint."""
        self._year_scanned = True
        if year_hint:
            self.times.observe_year(*year_hint)
        self._wrap.decide(frozenset())

    @property
    def wrapped(self) -> bool:
        return bool(self._wrap.widths)

    @property
    def wrap_widths(self) -> tuple[int, ...]:
        """The widths a terminal cut this source's lines at (none for an ordinary log)."""
        return tuple(sorted(self._wrap.widths))

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
                self.rejoined_lines += 1
                return
            self._flush_held(out)
        if self._wrap.widths and match_stats(raw) is None:  # a whole stats line is never the piece of one
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

        if key in self._tracebacks and self._traceback_continues(key, env, line_no, text, out):
            pass  # frames are part of the open traceback, but may still hold a family (OOM text)
        elif _TRACEBACK_NEEDLE in raw and env.msg.lstrip().startswith("Traceback (most recent call last)"):
            self._tracebacks[key] = _OpenTraceback(line_no, line_no, ts, env.level, proc_engine, text[:_EVIDENCE_CHARS])

        if needles is None:
            needles = self._prefilter.needles_in(raw)
        if not needles:
            return
        families: list[Family] = []
        for needle in needles:
            for fam in self._by_needle.get(needle, ()):
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

    # --- line lanes: a whole hot line in one match (see ``fastlane``), else False ----------------

    def _stats_lane(self, raw: bytes, line_no: int, out: list[Event], _: None) -> bool:
        if raw[0] == 0x1B:  # ESC: a Dynamo-wrapped stats line (no vLLM header starts so)
            return self._message_lane(raw, line_no, out, STATS_LANE)
        groups = match_stats(raw)
        if groups is None:
            return False
        proc, _pid, level, month_day, hms, frac = groups[:6]
        self._emit_lane("stats", stats_values(groups), self._vllm_time(month_day, hms, frac),
                        _engine_of_proc(proc), level.decode(), line_no, raw.decode(), out)
        return True

    def _message_lane(self, raw: bytes, line_no: int, out: list[Event], lane: MessageLane) -> bool:
        if raw[0] == 0x1B:  # ESC: a coloured Dynamo line
            line = lane.dynamo_line.fullmatch(raw)
            if line is None:
                return False
            groups = line.groups()
            iso, gap, level, gap2, target = groups[:DYNAMO_HEADER_GROUPS]
            message = raw[line.end(DYNAMO_HEADER_GROUPS) + DYNAMO_TARGET_CLOSE:]  # from its leading space
            text = b"".join((iso, gap, level, gap2, target, b":", message)).decode()
            self._emit_lane(lane.kind, lane.values(groups[DYNAMO_HEADER_GROUPS:]), self.times.utc_iso(iso.decode()),
                            None, _level_of(level), line_no, text, out)
            return True
        line = lane.vllm_line.fullmatch(raw)
        if line is None:
            return False
        groups = line.groups()
        proc, _pid, level, month_day, hms, frac = groups[:VLLM_HEADER_GROUPS]
        self._emit_lane(lane.kind, lane.values(groups[VLLM_HEADER_GROUPS:]), self._vllm_time(month_day, hms, frac),
                        _engine_of_proc(proc), level.decode(), line_no, raw.decode(), out)
        return True

    def _http_access_lane(self, raw: bytes, line_no: int, out: list[Event], _: None) -> bool:
        m = UVICORN_ACCESS.fullmatch(raw)
        if m is None:
            return False
        proc, _pid, level, client, _port, method, path, status = m.groups()
        values = {"client": client.decode(), "method": method.decode(), "path": path.decode(), "status": int(status)}
        self._emit_lane("http_access", values, None, _engine_of_proc(proc), level.decode(), line_no, raw.decode(), out)
        return True

    def _request_completed_lane(self, raw: bytes, line_no: int, out: list[Event], _: None) -> bool:
        m = REQUEST_COMPLETED.fullmatch(raw)
        if m is None:
            return False
        iso, gap, level, gap2, span, target, field_text = m.groups()
        pairs = COLOURED_FIELD.findall(field_text)
        fields = {key.decode(): value.decode() for key, value in pairs}
        # The text as cleaning leaves it: the general path reads the span and target as one target.
        text = (iso + gap + level + gap2 + (span + b":" if span else b"") + target + b": request completed"
                + b"".join(b" " + key + b"=" + value for key, value in pairs)).decode()
        self._emit_lane("request_completed", request_completed_values(fields), self.times.utc_iso(iso.decode()), None,
                        _level_of(level), line_no, text, out)
        return True

    # --- direct JSON lanes (``json_lines``): the line's JSON from the match, else the lane above -----

    def _message_json_lane(self, raw: bytes, line_no: int, out: list, lane: JsonLane) -> bool:
        if raw[0] == 0x1B:  # ESC: a coloured Dynamo line
            line = lane.dynamo_line.fullmatch(raw)
            if line is None:
                return self._message_lane(raw, line_no, out, lane.events)
            groups = line.groups()
            ts, level, proc_engine = self.times.utc_iso_json(groups[0]), _level_json(groups[2]), None
            body = groups[DYNAMO_HEADER_GROUPS:]
        else:
            line = lane.vllm_line.fullmatch(raw)
            if line is None:
                return self._message_lane(raw, line_no, out, lane.events)
            groups = line.groups()
            ts = self.times.vllm_json(groups[3], groups[4], groups[5])
            level, proc_engine = _VLLM_LEVEL_JSON[groups[2]], _engine_of_proc(groups[0])
            body = groups[VLLM_HEADER_GROUPS:]
        kind = lane.kind
        named = int(body[0]) if kind == "stats" and body[0] is not None else None
        engine = self._engine_for(kind, named, proc_engine)
        if self._pending_logo is not None:
            self._flush_logo(out)
        out.append(b'%s%d,"ts":%s,"engine":%s,"level":%s,%s}\n'
                   % (self._json_heads[kind], line_no, ts, b"null" if engine is None else b"%d" % engine, level,
                      lane.values(body)))
        return True

    def _router_json_lane(self, raw: bytes, line_no: int, out: list, lane: JsonLane) -> bool:
        """``_message_json_lane`` for a Dynamo frontend's router line, the whole of an event-dense log,
        in one format: its engine is always null (no process prefix, not a stats line)."""
        line = lane.dynamo_line.fullmatch(raw) if raw[0] == 0x1B else None
        if line is None:
            return self._message_json_lane(raw, line_no, out, lane)
        if self._pending_logo is not None:
            self._flush_logo(out)
        out.append(self._router_json_line(line, line_no))
        return True

    def _router_json_line(self, line: Match, line_no: int) -> bytes:
        """The JSON line of a router line's ``dynamo_line`` match (its groups are never empty)."""
        iso, _, level, _, _, worker_type, worker_id, dp_rank, logit, cached, tree, total = line.groups(b"null")
        return self._router_json % (line_no, self.times.utc_iso_json(iso), _level_json(level), worker_type,
                                    worker_id, dp_rank, logit, cached, tree, total)

    def _http_access_json_lane(self, raw: bytes, line_no: int, out: list, _: None) -> bool:
        m = UVICORN_ACCESS_JSON.fullmatch(raw)
        if m is None:
            return self._http_access_lane(raw, line_no, out, None)
        proc, _pid, level, client, _port, method, path, status = m.groups()
        if self._pending_logo is not None:
            self._flush_logo(out)
        out.append(b'%s%d,"ts":null,"engine":%s,"level":"%s","client":"%s","method":"%s","path":"%s","status":%s}\n'
                   % (self._json_heads["http_access"], line_no, _engine_json(_engine_of_proc(proc)), level, client,
                      method, path, status))
        return True

    def _request_completed_json_lane(self, raw: bytes, line_no: int, out: list, _: None) -> bool:
        m = REQUEST_COMPLETED_JSON.fullmatch(raw)
        if m is None:
            return self._request_completed_lane(raw, line_no, out, None)
        iso, _gap, level, _gap2, _span, _target, status, latency = m.groups()
        if self._pending_logo is not None:
            self._flush_logo(out)
        out.append(b'%s%d,"ts":%s,"engine":null,"level":%s,"status":"%s","latency_ms":%s.0,"ttft_ms":null,'
                   b'"fields":{"status":"%s","latency_ms":"%s"}}\n'
                   % (self._json_heads["request_completed"], line_no, self.times.utc_iso_json(iso), _level_json(level),
                      status, latency, status, latency))
        return True

    def _vllm_time(self, month_day: bytes, hms: bytes, frac: bytes | None) -> datetime | None:
        clock = hms.decode() + "." + frac.decode() if frac else hms.decode()
        return self.times.vllm(month_day.decode(), clock)

    def _engine_for(self, kind: str, named: int | None, fallback: int | None) -> int | None:
        """An event's engine, and the stats state it moves: a stats line's is the engine it
        names (else ``fallback``, its process's); a KV-transfer or spec-decode line takes the
        last stats line's (it follows it in vLLM's logger); any other keeps ``fallback``."""
        if kind == "stats":
            engine = named if named is not None else fallback
            self._last_stats_engine, self._seen_stats, self._stats_from_entry = engine, True, False
            return engine
        if kind in _FOLLOWS_STATS:
            self.entry_stats_used |= self._stats_from_entry
            if self._seen_stats:
                return self._last_stats_engine
        return fallback

    def _emit_lane(self, kind: str, values: dict, ts: datetime | None, proc_engine: int | None, level: str | None,
                   line_no: int, text: str, out: list[Event]) -> None:
        """``_emit`` for a lane's line: its message never starts with ``Engine `` (the stats
        line names its engine in ``values``) and it is no logo line."""
        if self._skip and self._drop(kind):
            return
        engine = self._engine_for(kind, values.pop(STATS_ENGINE_KEY) if kind == "stats" else None, proc_engine)
        if self._pending_logo is not None:
            self._flush_logo(out)
        out.append(Event(kind, self.source, line_no, ts, engine, level, values, None, text[:_EVIDENCE_CHARS]))

    def _emit(self, kind: str, values: dict, env: Envelope, ts: datetime | None, proc_engine: int | None,
              line_no: int, end_line_no: int | None, text: str, out: list[Event]) -> None:
        if self._skip and self._drop(kind):
            return
        engine = proc_engine
        if env.msg.startswith("Engine ") and kind != "stats":
            named = _ENGINE_PREFIX.match(env.msg)
            engine = int(named[1]) if named else engine
        engine = self._engine_for(kind, values.pop(STATS_ENGINE_KEY, None) if kind == "stats" else None, engine)
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

    def _traceback_continues(self, key, env: Envelope, line_no: int, text: str, out: list[Event]) -> bool:
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
            tb.text = text[:_EVIDENCE_CHARS]  # the line a report quotes: the exception, which names the cause
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


# The prefilter's needles of a line -> the lane that reads such a line whole, and its argument.
# Each needle belongs to this one family alone (a test checks), so the lane's event is the line's only one.
_LINE_LANES: dict[tuple[bytes, ...], tuple] = {
    (b"Running: ",): (LogScanner._stats_lane, None),
    (b"SpecDecoding metrics: ",): (LogScanner._message_lane, SPEC_DECODE_LANE),
    (b"KV Transfer metrics: ",): (LogScanner._message_lane, KV_TRANSFER_LANE),
    (b"Selected worker: ",): (LogScanner._message_lane, WORKER_SELECTED_LANE),
    (b"HTTP/1.",): (LogScanner._http_access_lane, None),
    (b"HTTP/2",): (LogScanner._http_access_lane, None),
    (b"request completed",): (LogScanner._request_completed_lane, None),
}

# ``json_lines``: the lanes that write their line's JSON directly, the others as above.
_JSON_LINE_LANES: dict[tuple[bytes, ...], tuple] = {
    **_LINE_LANES,
    (b"Running: ",): (LogScanner._message_json_lane, STATS_JSON_LANE),
    (b"SpecDecoding metrics: ",): (LogScanner._message_json_lane, SPEC_DECODE_JSON_LANE),
    (b"KV Transfer metrics: ",): (LogScanner._message_json_lane, KV_TRANSFER_JSON_LANE),
    (b"Selected worker: ",): (LogScanner._router_json_lane, WORKER_SELECTED_JSON_LANE),
    (b"HTTP/1.",): (LogScanner._http_access_json_lane, None),
    (b"HTTP/2",): (LogScanner._http_access_json_lane, None),
    (b"request completed",): (LogScanner._request_completed_json_lane, None),
}
_ROUTER_NEEDLE = b"Selected worker: "
assert [f.name for f in _BY_NEEDLE[_ROUTER_NEEDLE]] == ["worker_selected"]
# Every needle but the router line's: the search of a block of router lines (``_router_lines``).
_OTHER_THAN_ROUTER = Prefilter([needle for needle in _PREFILTER.needles if needle != _ROUTER_NEEDLE])


def _router_dense(data: bytes) -> bool:
    """Whether ``data`` (64 KB or more) is a block of router lines: at least 3 lines in 4 of its
    first 64 KB hold the router needle (counting the whole block cost ~0.8 ns a byte). Either
    way is exact; the other lines of a block misjudged just cost more."""
    sample = 1 << 16
    return (len(data) >= sample
            and data.count(_ROUTER_NEEDLE, 0, sample) * 4 >= data.count(b"\n", 0, sample) * 3)


# ``_router_json_lane``'s line after the kind and source.
_ROUTER_JSON_TAIL = b'%d,"ts":%s,"engine":null,"level":%s,' + SELECTED_MEMBERS + b'}\n'
_JSON_KINDS = ("stats", "spec_decode", "kv_transfer", "worker_selected", "http_access", "request_completed")
