"""What the store keeps of events, folded where they are read: ``Partial`` and ``fold_events``.

A worker reading a file (``pdwatch.session.reading``) folds its events into these and ships them
to the parent, which merges them into the pandas store (``Store.merge``). No pandas here: the
workers start reading before the parent has imported it (``pdwatch report``'s start-up).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable

from pdwatch.model.log_facts import FACT_KINDS
from pdwatch.parsers import Event
from pdwatch.model.line_book import can_read_back, text_crc
from pdwatch.rules.model import STATS_FIELDS, STORED_EVENT_KINDS

# Problems and facts rules may quote; the chatty kinds (access lines, router choices) stay out.
_KEPT_EVENT_KINDS = frozenset(STORED_EVENT_KINDS)
# Kinds the store only counts, which ``pdwatch report`` skips (``LogScanner(skip_kinds=...)``,
# the first of each still read so a frontend of router lines only is an endpoint): a Dynamo
# frontend logs a router line and an access line per request, most of its log, and decoding
# them cost a 1 GB report more time than all the other lines together. An endpoint's last
# seen time is then that of its last line of the other kinds.
UNSTORED_KINDS = frozenset({"http_access", "worker_selected", "request_completed", "model_registered"})
# A Dynamo frontend's inference responses: not kept one by one, but read (never skipped) and
# counted per second into the frontend's request rows (``_RequestSeconds``).
REQUEST_KINDS = frozenset({"frontend_response"})
assert not UNSTORED_KINDS & _KEPT_EVENT_KINDS
# Lines any Python process writes (a proxy, a benchmark client): a source with only these is
# not a vLLM or Dynamo server, so it is no endpoint (``Store.endpoints``; ``Store.not_servers``).
GENERIC_KINDS = frozenset({"traceback", "http_access", "shutdown", "stop_requested"})
# What DeploymentModel.observe and the facts read beyond engine numbers: Partial relies on it.
_MODEL_KINDS = FACT_KINDS | {"args", "engine_config", "role_hint", "dynamo_process", "kv_connector"}
_ENGINE_NOT_THEIRS = frozenset({"spec_decode", "kv_transfer"})  # DeploymentModel.observe: their engine is the stats line's
assert _MODEL_KINDS <= _KEPT_EVENT_KINDS, _MODEL_KINDS - _KEPT_EVENT_KINDS



@dataclass(slots=True)
class StatsColumns:
    """Stats rows column by column (``Store``'s stats frame in the making): a worker ships a
    run's stats lines as these, their numbers one float64 array, not a tuple of Python
    floats a row. On a 1 GB log's 193k lines the rows cost the workers ~2.5 us each to fold and
    the parent ~0.7 s to turn into a frame, and held ~0.9 KB each until then."""

    sources: list[str] = field(default_factory=list)
    ts: list[datetime | None] = field(default_factory=list)
    engine: list[int] = field(default_factory=list)
    # Each row's ``STATS_FIELDS`` (numbers or None) while folding; ``seal`` makes them one
    # (rows, fields) float64 array, None becoming NaN.
    values: Any = field(default_factory=list)
    line_no: list[int] = field(default_factory=list)
    # A log line's text until the store takes it: then None where the line can be read back from
    # its file (``pdwatch.model.line_book``), known again by ``crc`` (-1: not a log line, a scrape's).
    text: list[str | None] = field(default_factory=list)
    crc: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ts)

    def seal(self) -> StatsColumns:
        """The columns as numpy arrays (a worker seals what it ships): a row then costs the parent
        its numbers, not a datetime and three ints as Python objects (~140 bytes a row more,
        which stayed in the parent's heap as fragments after the frame was built)."""
        if isinstance(self.values, list):
            self.values = _float_rows(self.values)
        if isinstance(self.ts, list):
            import numpy as np  # as _float_rows

            self.ts = np.fromiter(map(_us, self.ts), dtype=np.int64, count=len(self.ts))
            self.engine = np.asarray(self.engine, dtype=np.int64)
            self.line_no = np.asarray(self.line_no, dtype=np.int64)
            self.crc = np.asarray(self.crc, dtype=np.int64)
        return self

    def without_sources(self, drop: set[str]) -> StatsColumns:
        keep = [i for i, source in enumerate(self.sources) if source not in drop]
        if len(keep) == len(self):
            return self
        self.seal()
        sources, text = ([column[i] for i in keep] for column in (self.sources, self.text))
        return StatsColumns(sources, self.ts[keep], self.engine[keep], self.values[keep], self.line_no[keep], text,
                            self.crc[keep])


@dataclass(slots=True)
class Partial:
    """Consecutive events of one source, folded as ``Store.add`` folds them; ``Store.merge`` adds them.

    What the store keeps of an event is a stats row, a kept event, or a count: so a worker
    scanning a file ships these instead of its events (the chatty kinds, most of a log's
    events, shrink to counts and engine numbers). Exact because the deployment model and
    the facts read only kept kinds (``_MODEL_KINDS``), and an engine set does not care
    about order.
    """

    source: str
    count: int = 0
    raw_counts: dict[str, int] = field(default_factory=dict)
    engines: set[int] = field(default_factory=set)
    # In order: the events the model and the facts read (``_MODEL_KINDS``), and the other kept
    # events as the store's event rows already (a tuple: no Event to ship and replay for them).
    kept: list[Event | tuple] = field(default_factory=list)
    stats: StatsColumns = field(default_factory=StatsColumns)
    last_ts: datetime | None = None  # of the last event with a time
    labels: Mapping[str, str] | None = None  # a Prometheus target's labels (its events'): the model reads them


@dataclass(slots=True)
class ReadBackStats(Event):
    """A log's stats line held without its text (a replay buffers every event of its run): the store
    keeps no text for it anyway, and quotes it by reading it back from its file (``line_book``);
    ``crc`` is the CRC of the text it had, which says it is still the same line."""

    crc: int = 0


def without_text(event: Event) -> Event:
    """``event`` as a ``ReadBackStats`` when it is a stats line of a file it can be read back from,
    else itself. ~370 bytes less a stats line (its text), a third of what a replay holds of it."""
    if event.kind != "stats" or event.level is None or event.__class__ is not Event or not can_read_back(event.source):
        return event
    return ReadBackStats(event.kind, event.source, event.line_no, event.ts, event.engine, event.level, event.values,
                         event.end_line_no, "", event.labels, text_crc(event.text))


def fold_events(events: Iterable[Event]) -> list[Partial]:
    """Events -> one ``Partial`` per run of the same source, in order."""
    parts: list[Partial] = []
    part: Partial | None = None
    source = None
    kept_kinds, stats_fields, model_kinds = _KEPT_EVENT_KINDS, STATS_FIELDS, _MODEL_KINDS
    raw: dict[str, int] = {}
    engines: set[int] = set()
    kept: list[Event] = []
    stats = StatsColumns()
    per_second: dict[tuple, int] = {}
    requests: dict[str, _RequestSeconds] = {}
    for event in events:
        if event.source != source or part is None:
            source = event.source
            part = Partial(source, labels=event.labels)
            parts.append(part)
            raw, engines, kept, stats = part.raw_counts, part.engines, part.kept, part.stats
        part.count += 1
        kind = event.kind
        raw[kind] = raw.get(kind, 0) + 1
        if event.ts is not None:
            part.last_ts = event.ts
        if kind in REQUEST_KINDS:
            if event.values.get("inference") and event.ts is not None:
                seconds = requests.get(source)
                if seconds is None:
                    seconds = requests[source] = _RequestSeconds(source, stats)
                seconds.add(event)
            continue
        if kind in kept_kinds:
            if kind in model_kinds:
                kept.append(event)  # observe() decides about its engine
                continue
            # DeploymentModel.observe and the facts do nothing else with these kinds than take the
            # engine (not spec_decode's, kv_transfer's: the stats line's): done here. A traceback
            # is quoted by its exception line (its text), so it is cited there too.
            engine = event.engine
            if engine is not None and kind not in _ENGINE_NOT_THEIRS:
                engines.add(engine)
            if kind in _PER_REQUEST:
                # A frontend losing a backend says so once per request: a few a second are evidence
                # enough (the count is in raw_counts); thousands would only fill the events table.
                second = (kind, source, event.ts.replace(microsecond=0) if event.ts is not None else None)
                per_second[second] = per_second.get(second, 0) + 1
                if per_second[second] > KEPT_PER_SECOND:
                    continue
            line_no = event.end_line_no if kind == "traceback" and event.end_line_no else event.line_no
            # A line without a time of its own (a Python traceback) happened when the line before
            # it did: so it counts, and is quoted, at that time rather than at no time at all.
            when = event.ts if event.ts is not None else part.last_ts
            kept.append((when, engine, kind, event.source, line_no, event.text, _reason(event)))
            if kind == "traceback" and event.level not in ("WARNING", "INFO", "DEBUG"):
                # an error's traceback, not one of the warnings vLLM prints while it starts
                kept.append((when, engine, "error_traceback", event.source, line_no, event.text, None))
            continue
        engine = event.engine
        if engine is not None:
            engines.add(engine)
        elif kind == "stats":
            engines.add(0)  # a stats line without "Engine N:" (no DP, V0): the one engine, 0, as stored
        if kind == "stats":
            stats.sources.append(source)
            stats.ts.append(event.ts)
            stats.engine.append(0 if engine is None else engine)  # no DP: one engine
            stats.values.append(list(map(event.values.get, stats_fields)))
            stats.line_no.append(event.line_no)
            if event.level is None:  # a /metrics scrape's row: no line to read back
                stats.text.append(event.text)
                stats.crc.append(-1)
            elif event.__class__ is ReadBackStats:  # its text already left out, its CRC kept
                stats.text.append(None)
                stats.crc.append(event.crc)
            else:  # a log line: its text only where it cannot be read back (not shipped, not kept)
                stats.text.append(None if can_read_back(source) else event.text)
                stats.crc.append(text_crc(event.text))
    for seconds in requests.values():
        seconds.close()
    for part in parts:
        part.stats.seal()
    return parts


_FIELD_AT = {name: i for i, name in enumerate(STATS_FIELDS)}


class _RequestSeconds:
    """A frontend's inference responses, one stats row per second that had any: how many
    succeeded and failed, and their mean latency. The row's time is the end of its second
    (a row describes the interval before it, as a stats line does); its line is the second's
    first failed response, else its first response: a real line to quote."""

    def __init__(self, source: str, stats: StatsColumns) -> None:
        self.source, self.stats = source, stats
        self.second: datetime | None = None
        self.counts = [0, 0, 0.0, 0]  # ok, failed, latency sum (ms), latencies
        self.line: tuple[int, str] | None = None
        self.failed_line: tuple[int, str] | None = None

    def add(self, event: Event) -> None:
        second = event.ts.replace(microsecond=0)
        if second != self.second:
            self.close()
            self.second = second
        status = event.values.get("status") or 0
        failed = status >= 400
        self.counts[1 if failed else 0] += 1
        latency = event.values.get("latency_ms")
        if latency is not None and not failed:
            self.counts[2] += latency
            self.counts[3] += 1
        if self.line is None:
            self.line = (event.line_no, event.text)
        if failed and self.failed_line is None:
            self.failed_line = (event.line_no, event.text)

    def close(self) -> None:
        if self.second is None:
            return
        ok, failed, latency_ms, n = self.counts
        row: list = [None] * len(STATS_FIELDS)
        row[_FIELD_AT["requests_ok"]] = ok
        row[_FIELD_AT["requests_failed"]] = failed
        row[_FIELD_AT["request_latency_s"]] = latency_ms / n / 1000.0 if n else None
        line_no, text = self.failed_line or self.line  # type: ignore[misc]
        stats = self.stats
        stats.sources.append(self.source)
        stats.ts.append(self.second + timedelta(seconds=1))
        stats.engine.append(0)
        stats.values.append(row)
        stats.line_no.append(line_no)
        stats.text.append(None if can_read_back(self.source) else text)
        stats.crc.append(text_crc(text))
        self.second, self.counts, self.line, self.failed_line = None, [0, 0, 0.0, 0], None, None


# Kept kinds a Dynamo frontend logs once per failed request (a dead worker: hundreds a second).
_PER_REQUEST = frozenset({"backend_error", "request_failed", "request_error", "request_plane_error"})
KEPT_PER_SECOND = 3


def _reason(event: Event) -> Any:
    """The events table's ``reason`` column: what the rules and the model read of an event
    beyond its kind (an engine death's reason; where a frontend's lost backend was)."""
    values = event.values
    kind = event.kind
    if kind == "worker_set":
        return f"{values.get('action')}:{values.get('mode')}"
    if kind == "backend_error":
        return f"{values.get('reason')}:{values.get('target') or ''}"
    if kind == "request_failed":
        return str(values.get("status"))
    if kind == "request_error":
        return values.get("error_type")
    if kind == "kv_transfer":  # "transfers:failed:avg ms" of the interval (model.kv_transfers sums them)
        m = values.get("metrics") or {}
        return f"{m.get('num_successful_transfers', '')}:{m.get('num_failed_transfers', '')}:{m.get('avg_xfer_time_ms', '')}"
    return values.get("reason")


def renumber(parts: list[Partial], delta: int) -> list[Partial]:
    """``parts`` with their line numbers moved by ``delta``: a piece of a file read with
    provisional numbers, once the lines before it are counted (``parallel_scan``)."""
    if not delta:
        return parts
    for part in parts:
        # A kept row is (ts, engine, kind, source, line_no, text, reason); the others are Events.
        part.kept = [(*row[:4], row[4] + delta, *row[5:]) if row.__class__ is tuple else row.moved(delta)
                     for row in part.kept]
        line_no = part.stats.line_no
        part.stats.line_no = [n + delta for n in line_no] if isinstance(line_no, list) else line_no + delta
    return parts


def _float_rows(rows: list[list]) -> Any:
    """Rows of numbers and None (what the parsers give a stats field) -> a (rows, fields)
    float64 array, None as NaN, in C. A value numpy cannot take is NaN, as ``_float`` has it."""
    import numpy as np  # loaded before the workers fork (pdwatch.session.analysis); a live tick has it

    shape = (len(rows), len(STATS_FIELDS))
    try:
        return np.array(rows, dtype=np.float64).reshape(shape)
    except (TypeError, ValueError):
        return np.array([[_float(x) for x in row] for row in rows], dtype=np.float64).reshape(shape)


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_NAIVE_EPOCH = datetime(1970, 1, 1)
_US = timedelta(microseconds=1)
NO_TIME = -(1 << 63)  # a row without a time (numpy's NaT as int64): the frame drops it


def _us(ts: datetime | None) -> int:
    """A stats row's time as int64 microseconds since the epoch, UTC (a naive time taken as UTC, as
    ``pd.to_datetime(utc=True)`` takes it): exact, a datetime's resolution."""
    if ts is None:
        return NO_TIME
    return (ts - (_EPOCH if ts.tzinfo is not None else _NAIVE_EPOCH)) // _US


def _float(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
