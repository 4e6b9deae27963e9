"""The live session behind ``pdwatch watch`` and ``pdwatch replay`` (no Textual here).

A :class:`LiveSession` owns the sources, the event stream, the store and the rule engine.
Two methods, meant for two threads:

- ``ingest(max_items)`` (a worker thread) reads what the sources have, parses it into
  events and queues them; it never touches the store;
- ``tick(wall)`` (the UI thread, or the headless loop) moves the queued events into the
  store, advances the clock, evaluates the rules and returns an immutable
  :class:`Snapshot` for a UI to render.

Watch mode follows the files; its clock is the newest log timestamp plus the wall time
elapsed since it arrived (the wall clock itself for logs written now; logs of another
time zone or a past run still get a clock that moves while they are silent).

Replay mode reads the files first, then plays them on a clock driven by their own
timestamps (``speed`` x wall time, or ``max``): only events with ``ts <= clock`` are in
the store, and the rules are evaluated on a fixed grid (the stats interval, from the
first timestamp) like the post-mortem ``analysis``, so a finding has the same start
whatever the speed.
"""

from __future__ import annotations

import bisect
import json
import math
import re
import threading
import time
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone, tzinfo
from statistics import median
from typing import Any, Callable, Iterator

import numpy as np
import pandas as pd

from pdwatch.parsers import Event
from pdwatch.model.deployment import DeploymentModel, EndpointSpec
from pdwatch.events.stream import EventStream
from pdwatch.sources import READ_FAILURES, LineBlock, SourceNotice, SourceSet, is_url
from pdwatch.model.store import Store
from pdwatch.model.throughput import COUNTED
from pdwatch.rules import Finding, Rule, RuleEngine, load_rules

STALE_INTERVALS = 3  # an endpoint silent for more than 3 stats intervals is stale
DEFAULT_INTERVAL_S = 10.0
HISTORY_POINTS = 40
WATCH_IDLE_EVAL_S = 2.0  # watch: with no new lines, the rules are evaluated at most this often
RECENT_PAST_S = 600.0  # watch: the log time before the newest line judged at start (logs already there)
_WATCH_MAX_STEPS = 600  # watch: a catch-up is evaluated on a coarser grid beyond this many steps
_MAX_STEPS = 3000  # as analysis: a days-long replay at max speed is evaluated on a coarser grid
SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_US = timedelta(microseconds=1)
_NO_TS = -(1 << 62)  # lines with no timestamp before the first one of their file


# --- the snapshot: what a UI renders ----------------------------------------------------------

@dataclass(frozen=True)
class Headline:
    total_tps: float | None
    prompt_tps: float | None
    gen_tps: float | None
    tps_per_gpu: float | None
    gpus: int | None


@dataclass(frozen=True)
class EngineRow:
    engine: int
    prompt_tps: float | None
    gen_tps: float | None
    running: float | None
    waiting: float | None
    kv_usage_pct: float | None
    last_ts: datetime | None


@dataclass(frozen=True)
class EndpointRow:
    name: str
    role: str
    engines: tuple[int, ...]
    gpus: int | None
    prompt_tps: float | None
    gen_tps: float | None
    running: float | None
    waiting: float | None
    kv_usage_pct: float | None
    last_seen: datetime | None
    stale_for_s: float | None  # seconds of silence, when more than STALE_INTERVALS intervals
    interval_s: float
    history: tuple[float, ...]  # counted tokens/s per stats interval, oldest first
    engine_rows: tuple[EngineRow, ...]
    sources: tuple[str, ...]
    stats_silence: str | None = None  # why it prints no stats lines, when its start-up lines say
    frontend: tuple[tuple[str, float], ...] = ()  # a Dynamo frontend's latest /metrics figures (ttft_s, ...)

    @property
    def counted_tps(self) -> float | None:
        """The tokens/s this endpoint adds to the deployment's total (prompt on prefill, ...)."""
        fields = COUNTED.get(self.role, ())
        values = [getattr(self, f) for f in fields if getattr(self, f) is not None]
        return sum(values) if values else None


@dataclass(frozen=True)
class Evidence:
    source: str | None
    line_no: int | None
    text: str


@dataclass(frozen=True)
class FindingRow:
    rule: str
    severity: str
    endpoint: str | None
    engines: tuple[int, ...]
    start: datetime
    end: datetime | None
    summary: str
    explanation: str
    recommendation: str
    evidence: tuple[Evidence, ...]
    summary_at_start: str = ""  # what it said when it fired
    engines_at_start: tuple[int, ...] = ()

    @property
    def at_firing(self) -> "FindingRow":
        """The row as it read when it fired: still firing, its first summary and engines."""
        return replace(self, end=None, summary=self.summary_at_start or self.summary,
                       engines=self.engines_at_start or self.engines)

    @property
    def key(self) -> tuple[str, str | None, datetime]:
        return (self.rule, self.endpoint, self.start)

    @property
    def since(self) -> datetime:
        return self.start


@dataclass(frozen=True)
class Change:
    state: str  # "firing" or "resolved"
    at: datetime
    finding: FindingRow

    def to_json_dict(self) -> dict[str, Any]:
        f = self.finding
        return {"rule": f.rule, "severity": f.severity, "endpoint": f.endpoint, "engines": list(f.engines),
                "start": _iso(f.start), "end": _iso(f.end), "summary": f.summary,
                "recommendation": f.recommendation, "state": self.state, "at": _iso(self.at)}

    def to_line(self) -> str:
        f = self.finding
        engines = f" engines {','.join(map(str, f.engines))}" if f.engines else ""
        return (f"{_iso(self.at)} {self.state.upper():8} {f.severity:8} {f.rule} "
                f"{f.endpoint or '(deployment)'}{engines}: {f.summary}")


@dataclass(frozen=True)
class EndpointSeries:
    """One endpoint's stats over the whole run so far, engines combined per stats interval, oldest first
    (tokens/s, running and waiting summed over the engines, KV usage their mean, in %)."""
    times: tuple[datetime, ...] = ()
    prompt_tps: tuple[float, ...] = ()
    gen_tps: tuple[float, ...] = ()
    running: tuple[float, ...] = ()
    waiting: tuple[float, ...] = ()
    kv_usage_pct: tuple[float, ...] = ()


@dataclass(frozen=True)
class StartupFacts:
    """What an endpoint's servers said at start-up (per engine: one GPU's memory)."""
    version: str | None = None
    model: str | None = None
    weights_gib: float | None = None  # "Model loading took X GiB"
    kv_memory_gib: float | None = None  # "Available KV cache memory"
    cudagraph_gib: float | None = None  # the largest engine's graph pool, measured, else the estimate
    cudagraph_measured: bool = False
    kv_capacity_tokens: int | None = None
    max_concurrency: float | None = None
    max_concurrency_tokens: int | None = None  # tokens per request behind max_concurrency
    capture_sizes: tuple[int, ...] = ()
    max_capture_size: int | None = None
    non_default_args: tuple[tuple[str, str], ...] = ()  # (name, value as text), in logged order


@dataclass(frozen=True)
class EndpointDetail:
    row: EndpointRow
    series: EndpointSeries
    startup: StartupFacts
    recent_lines: tuple[Evidence, ...]  # the endpoint's newest stats and event lines in the store, oldest first


@dataclass(frozen=True)
class Snapshot:
    mode: str  # "watch" or "replay"
    clock: datetime | None
    speed: float | None  # replay: x wall time, math.inf for max; None in watch mode
    paused: bool
    loading: bool  # replay: still reading the files
    done: bool  # replay: the clock reached the end of the logs (watch: never)
    headline: Headline
    endpoints: tuple[EndpointRow, ...]
    findings: tuple[FindingRow, ...]  # firing now, most severe first
    all_findings: tuple[FindingRow, ...]  # every firing period so far, in start order
    changes: tuple[Change, ...]  # fired / resolved since the previous tick
    notices: tuple[str, ...]  # source notices since the previous tick
    start: datetime | None = None  # replay: the logs' first and last timestamps
    end: datetime | None = None
    seeking_to: datetime | None = None  # replay: a seek still being played towards this time

    def severity_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for f in self.findings:
            out[f.severity] = out.get(f.severity, 0) + 1
        return out

    def roles(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for e in self.endpoints:
            out[e.role] = out.get(e.role, 0) + 1
        return out


# --- speed / time arguments -------------------------------------------------------------------

def parse_speed(text: str) -> float:
    """``10x``, ``10``, ``0.5x`` or ``max`` -> a factor (math.inf for max)."""
    value = text.strip().lower()
    if value in {"max", "inf", "fast"}:
        return math.inf
    if value.endswith("x"):
        value = value[:-1]
    try:
        speed = float(value)
    except ValueError:
        raise ValueError(f"--speed {text!r}: expected e.g. 1x, 10x, 0.5x or max") from None
    if not speed > 0 or math.isinf(speed) or math.isnan(speed):
        raise ValueError(f"--speed {text!r}: expected a positive factor or max")
    return speed


TIME_FORMS = "an ISO 8601 time (2026-05-29T14:01:00Z), HH:MM[:SS], or an offset like +5m, -90s, +1h30m"
_OFFSET = re.compile(r"^([+-])\s*(?=\d)(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s)?$")


def parse_start(text: str, tz: tzinfo | None = None) -> pd.Timestamp | pd.Timedelta | str:
    """An absolute time (ISO 8601; naive = in ``tz``, default UTC), an offset (``+5m``: from the
    first timestamp of the logs, ``-2m``: from the last one), or a bare HH:MM[:SS] kept as text
    (resolved against the logs' days once they are read)."""
    return parse_time(text, tz, what="--start")


def parse_time(text: str, tz: tzinfo | None = None, what: str = "time") -> pd.Timestamp | pd.Timedelta | str:
    """See :func:`parse_start`; ``what`` names the input in the error message."""
    value = text.strip()
    if _is_time_of_day(value):
        return value
    offset = parse_offset(value)
    if offset is not None:
        return offset
    try:
        ts = pd.Timestamp(value)
    except (ValueError, TypeError, OverflowError):
        raise ValueError(f"{what} {text!r}: expected {TIME_FORMS}") from None
    if ts is pd.NaT or not value:
        raise ValueError(f"{what} {text!r}: not a time; expected {TIME_FORMS}")
    if ts.tzinfo is None:
        ts = ts.tz_localize(tz or timezone.utc)
    return ts.tz_convert("UTC")


def parse_offset(value: str) -> pd.Timedelta | None:
    """``+5m``, ``-90s``, ``+1h30m``, ``+0.5h`` -> a signed Timedelta; None when not an offset."""
    m = _OFFSET.match(value.strip().lower())
    if m is None or not any(m.group(i) for i in (2, 3, 4)):
        return None
    hours, minutes, seconds = (float(m.group(i) or 0) for i in (2, 3, 4))
    delta = pd.Timedelta(hours=hours, minutes=minutes, seconds=seconds)
    return -delta if m.group(1) == "-" else delta


def _is_time_of_day(value: str) -> bool:
    parts = value.split(":")
    if len(parts) not in (2, 3):
        return False
    try:
        return all(p.replace(".", "", 1).isdigit() for p in parts) and int(parts[0]) < 24
    except ValueError:
        return False


# --- the session ------------------------------------------------------------------------------

class LiveSession:
    def __init__(self, paths: list[str], *, mode: str = "watch", specs: list[EndpointSpec] | tuple = (),
                 rules: list[Rule] | None = None, year: int | None = None, tz: tzinfo | None = None,
                 speed: float = 10.0, start: pd.Timestamp | pd.Timedelta | str | None = None,
                 sources: SourceSet | None = None, poll_interval: float = 0.2,
                 wall: Callable[[], float] = time.monotonic,
                 wall_utc: Callable[[], datetime] = lambda: datetime.now(timezone.utc)) -> None:
        if mode not in ("watch", "replay"):
            raise ValueError(f"mode {mode!r}: expected watch or replay")
        self.mode = mode
        self.paths = list(paths)
        self.sources = sources or SourceSet(self.paths, follow=(mode == "watch"), poll_interval=poll_interval)
        self.stream = EventStream(self.sources, year=year, tz=tz)
        self._specs = tuple(specs)
        self.store = Store(DeploymentModel(self._specs))
        self._log_stats_endpoints: set[str] = set()  # endpoints whose own stats lines arrived
        self.rules = rules if rules is not None else load_rules()
        self.engine = RuleEngine(self.rules)
        # Bumped whenever the store changes (events added, or rebuilt by a backwards seek): what is
        # derived from the store alone is computed again only when it moves.
        self.generation = 0
        self._derived: dict[tuple, Any] = {}
        self._args_by_source: dict[str, dict[str, Any]] = {}  # the non-default args line of each file
        self._graph_gib: dict[tuple[str, int | None], float] = {}  # measured CUDA-graph pool per engine
        self._tz = tz
        self._wall = wall
        self._wall_utc = wall_utc
        # worker -> tick hand-over
        self._lock = threading.Lock()
        self._incoming: list[Event] = []
        self._incoming_notices: list[SourceNotice] = []
        self.read_failures = 0  # notices of inputs that could not be read (a replay then exits 2)
        self._source_done = False
        self._items: Iterator | None = None
        # clock
        self.speed = speed
        self.paused = False
        self.exporter = None  # a pdwatch.views.exporter.PdwatchExporter, fed every tick when set
        self._start_arg = start
        self._clock: pd.Timestamp | None = None
        self._display_clock: pd.Timestamp | None = None  # watch: the wall clock until logs bring a time
        self._last_wall: float | None = None
        self._last_eval: pd.Timestamp | None = None
        # watch clock: newest timestamp seen, and when (wall) it arrived
        self._newest: pd.Timestamp | None = None
        self._newest_wall: float | None = None
        # replay buffer: every event, sorted by its effective time, released up to the clock
        self._buffer: list[Event] = []
        self._buffer_keys: list[int] = []  # microseconds since the epoch
        self._released = 0
        self._loaded = False
        self._told_unmatched = False
        self._data_start: pd.Timestamp | None = None
        self._data_end: pd.Timestamp | None = None
        self._step = pd.Timedelta(seconds=DEFAULT_INTERVAL_S)
        # findings already announced
        self._told_firing: set[tuple] = set()
        self._told_resolved: set[tuple] = set()
        self._findings: list[Finding] = []
        self._seek_target: tuple | None = None  # "next finding": run at max until a new one fires
        self._seek_to: pd.Timestamp | None = None  # a seek (or a forward jump) still being played
        # Replay: at most this many seconds of rule evaluation per tick (None: no limit), so that a
        # long jump keeps a dashboard responsive; the clock shows how far it got.
        self.tick_budget_s: float | None = None

    # -- worker side -------------------------------------------------------------------------
    @property
    def source_done(self) -> bool:
        return self._source_done

    def ingest(self, max_items: int = 200) -> int:
        """Read up to ``max_items`` blocks/notices the sources have now; queue their events.

        Non-blocking in watch mode. Returns how many items were read (0: nothing new, or the
        replay sources are exhausted; see ``source_done``).
        """
        if self._source_done:
            return 0
        events: list[Event] = []
        notices: list[SourceNotice] = []
        count = 0
        if self.mode == "watch":
            for item in self.sources.poll():
                count += 1
                self._take(item, events, notices)
        else:
            if self._items is None:
                self._items = self.sources.blocks()
            try:
                while count < max_items:
                    item = next(self._items)
                    count += 1
                    self._take(item, events, notices)
            except StopIteration:
                events.extend(self.stream.finish())
                with self._lock:
                    self._incoming.extend(events)
                    self._incoming_notices.extend(notices)
                    self._source_done = True
                return count
        with self._lock:
            self._incoming.extend(events)
            self._incoming_notices.extend(notices)
        return count

    def _take(self, item: LineBlock | SourceNotice, events: list[Event], notices: list[SourceNotice]) -> None:
        if isinstance(item, SourceNotice):
            notices.append(item)
            if item.kind in READ_FAILURES:
                self.read_failures += 1
        else:
            events.extend(self.stream.events_of(item))

    def run_ingest(self, stop: threading.Event, idle: float = 0.1, max_items: int = 200) -> None:
        """The worker loop: ingest until ``stop`` is set (or the replay sources are exhausted)."""
        while not stop.is_set():
            n = self.ingest(max_items)
            if self._source_done:
                return
            if n == 0:
                stop.wait(idle)

    def stop(self) -> None:
        self.sources.stop()

    def close(self) -> None:
        self.sources.stop()
        self.sources.close()

    # -- replay controls -----------------------------------------------------------------------
    def toggle_pause(self) -> bool:
        self.paused = not self.paused
        return self.paused

    def faster(self) -> float:
        if not math.isinf(self.speed):
            self.speed = min(self.speed * 2, 1e6)
        return self.speed

    def slower(self) -> float:
        self.speed = 1e6 / 2 if math.isinf(self.speed) else max(self.speed / 2, 0.125)
        return self.speed

    def seek_next_finding(self) -> None:
        """Replay: run at full speed until a finding fires that has not fired yet."""
        self._seek_to = None
        self._seek_target = tuple((f.rule, f.endpoint, f.start) for f in self._findings)  # those of the clock
        self.paused = False

    @property
    def finding_hunt_active(self) -> bool:
        """``seek_next_finding`` is still playing on (no new finding yet)."""
        return self._seek_target is not None

    @property
    def time_range(self) -> tuple[pd.Timestamp | None, pd.Timestamp | None]:
        """Replay: the logs' first and last timestamps (None until the files are read)."""
        return self._data_start, self._data_end

    @property
    def seekable(self) -> bool:
        """Replay with the files read and timestamps in them: the clock can be moved."""
        return self.mode == "replay" and self._loaded and self._data_start is not None and self._clock is not None

    def previous_finding_start(self) -> pd.Timestamp | None:
        """The start of the newest finding that started before the clock (None: there is none)."""
        if not self.seekable:
            return None
        starts = [pd.Timestamp(f.start) for f in self._findings if pd.Timestamp(f.start) < self._clock]
        return max(starts) if starts else None

    def step(self, wall_seconds: float) -> None:
        """Replay: pause, then move the clock as one refresh of ``wall_seconds`` would at this speed
        (one evaluation step at max speed)."""
        if not self.seekable:
            return
        self.paused = True
        step = self._step if math.isinf(self.speed) else pd.Timedelta(seconds=wall_seconds * self.speed)
        self.seek(self._clock + step)

    def resolve_time(self, text: str) -> pd.Timestamp:
        """A time typed by the user (see :func:`parse_time`; an offset is from the clock), as a time
        in the logs' range. ValueError says what is wrong."""
        if not self.seekable:
            raise ValueError("the logs are still being read" if self.mode == "replay" else "only a replay can seek")
        return self._resolve(parse_time(text, self._tz, what="seek"), anchor=self._clock)

    def seek(self, target: pd.Timestamp) -> pd.Timestamp | None:
        """Replay: move the clock to ``target`` (clamped to the logs' range); returns the target.

        Forward, the rules are evaluated on their grid up to it, as if played. Backward, the rule
        engine cannot go back in time: a fresh store and rule engine get the buffered events
        again up to the target, so findings and charts are always those of the clock.
        """
        if not self.seekable:
            return None
        assert self._data_start is not None and self._data_end is not None and self._clock is not None
        target = min(max(pd.Timestamp(target).tz_convert("UTC"), self._data_start), self._data_end)
        self._seek_target = None
        if target < self._clock:
            self._rebuild()
            self._clock = self._data_start
        self._seek_to = target
        self._advance(target)
        return target

    def _rebuild(self) -> None:
        self.store = Store(DeploymentModel(self._specs))
        self._log_stats_endpoints.clear()
        self.engine = RuleEngine(self.rules)
        self._args_by_source.clear()
        self._graph_gib.clear()
        self._released = 0
        self._last_eval = None
        self._findings = []
        self.generation += 1
        # The told sets stay: a finding that fires again at the same start after a rewind is not news.

    def _resolve(self, spec: pd.Timestamp | pd.Timedelta | str, anchor: pd.Timestamp | None) -> pd.Timestamp:
        """A parsed time in the logs' range: an offset from ``anchor`` (None: +N from the first
        timestamp, -N from the last), HH:MM[:SS] on the day of the logs it falls in."""
        assert self._data_start is not None and self._data_end is not None
        if isinstance(spec, pd.Timedelta):
            base = anchor if anchor is not None else self._data_start if spec >= pd.Timedelta(0) else self._data_end
            return base + spec
        if isinstance(spec, str):
            parts = [float(p) for p in spec.split(":")] + [0.0]
            tz = self._tz or timezone.utc
            first_day = self._data_start.tz_convert(tz).normalize()
            days = (self._data_end.tz_convert(tz).normalize() - first_day).days
            candidates = [(first_day + pd.Timedelta(days=d, hours=parts[0], minutes=parts[1], seconds=parts[2]))
                          .tz_convert("UTC") for d in range(days + 1)]
            # the first day on which that time is not before the minute the logs start
            return next((c for c in candidates if c + pd.Timedelta(minutes=1) > self._data_start), candidates[0])
        return spec

    # -- UI side -------------------------------------------------------------------------------
    def tick(self, wall: float | None = None) -> Snapshot:
        """Flush, advance the clock, evaluate the rules; return what to render.

        ``wall`` is a monotonic wall time in seconds (default ``time.monotonic()``): the
        replay clock moves by ``speed`` x the wall time since the previous tick.
        """
        wall = self._wall() if wall is None else wall
        with self._lock:
            incoming, self._incoming = self._incoming, []
            notices, self._incoming_notices = self._incoming_notices, []
            source_done = self._source_done
        if self.mode == "watch":
            self._tick_watch(incoming, wall)
        else:
            self._tick_replay(incoming, source_done, wall)
        if self.exporter is not None:  # the thread that owns the store hands the exporter a snapshot
            self.exporter.update(self.store, self._findings, sources_up=self.sources.sources_up)
        if not self._told_unmatched:  # once: the topology endpoints no source matches
            self._told_unmatched = True
            from pdwatch.model.topology_file import unmatched_notices
            notices = notices + unmatched_notices(self._specs, list(self.sources.sources))
        return self._snapshot(notices)

    def _tick_watch(self, incoming: list[Event], wall: float) -> None:
        if incoming:
            self._add_to_store(incoming)
            newest = max((e.ts for e in incoming if e.ts is not None), default=None)
            if newest is not None and (self._newest is None or pd.Timestamp(newest) > self._newest):
                self._newest, self._newest_wall = pd.Timestamp(newest).tz_convert("UTC"), wall
        if self._newest is None:  # nothing timestamped yet: show the wall clock, evaluate nothing
            self.store.flush()     # (logs of the past may still arrive: the engine's clock never goes back)
            self._display_clock = pd.Timestamp(self._wall_utc())
            return
        else:
            clock = self._newest + pd.Timedelta(seconds=max(0.0, wall - (wall if self._newest_wall is None else self._newest_wall)))
        if self._clock is not None and clock < self._clock:
            clock = self._clock
        self._clock = self._display_clock = clock
        self.store.flush()
        # Nothing new: evaluating again only lets time-based rules (silence, holds) see the clock move,
        # which a few seconds' resolution serves; evaluating every refresh kept an idle dashboard busy.
        due = self._last_eval is None or (clock > self._last_eval and (
            bool(incoming) or clock - self._last_eval >= pd.Timedelta(seconds=WATCH_IDLE_EVAL_S)))
        if due:
            view = self.store.view()
            for now in self._watch_steps(clock):
                self.engine.evaluate(view, now.floor("us").to_pydatetime())
            self._last_eval = clock
        self._findings = self.engine.findings()

    def _watch_steps(self, clock: pd.Timestamp) -> list[pd.Timestamp]:
        """The times to evaluate at, up to ``clock``: the rule clock steps through what came in
        since the last evaluation at the stats interval, as a replay does, so a ``for:`` hold
        can be met by lines that arrived at once. On the first evaluation that is the recent
        past of logs that were already there (at most RECENT_PAST_S of log time): watching
        a job in trouble shows the trouble at once."""
        start = self._last_eval
        if start is None:
            first = self._first_ts()
            if first is None:
                return [clock]
            start = max(first, clock - pd.Timedelta(seconds=RECENT_PAST_S))
        intervals = [e.facts["stats_interval_s"] for e in self.store.endpoints() if e.facts.get("stats_interval_s")]
        step = pd.Timedelta(seconds=min(intervals) if intervals else DEFAULT_INTERVAL_S)
        if clock - start <= step:
            return [clock]
        step = max(step, (clock - start) / _WATCH_MAX_STEPS)
        times = list(pd.date_range(start + step, clock, freq=step)) if self._last_eval is not None else \
            list(pd.date_range(start, clock, freq=step))
        return times if times and times[-1] == clock else times + [clock]

    def _first_ts(self) -> pd.Timestamp | None:
        firsts = [frame["ts"].min() for e in self.store.endpoints()
                  for frame in (self.store.stats(e.name), self.store.events(e.name)) if not frame.empty]
        firsts = [t for t in firsts if t == t]
        return min(firsts) if firsts else None

    def _tick_replay(self, incoming: list[Event], source_done: bool, wall: float) -> None:
        if incoming:
            self._buffer.extend(incoming)
        if not self._loaded:
            if not source_done:
                return
            self._load()
        if self._data_start is None:  # no timestamps at all: show everything at once
            if self._released < len(self._buffer):
                self._add_to_store(self._buffer[self._released:])
                self._released = len(self._buffer)
                self.store.flush()
            return
        assert self._data_end is not None
        if self._clock is None:
            self._clock = self._initial_clock()
            self._last_wall = wall
            target = self._clock
        else:
            elapsed = 0.0 if self._last_wall is None else max(0.0, wall - self._last_wall)
            self._last_wall = wall
            target = self._clock
            if self._seek_target is not None:
                target = self._data_end
            elif self._seek_to is not None:
                target = self._seek_to
            elif self.paused:
                pass
            elif math.isinf(self.speed):
                target = self._data_end
            else:
                target = self._clock + pd.Timedelta(seconds=elapsed * self.speed)
        target = min(target, self._data_end)
        self._advance(target)

    def _initial_clock(self) -> pd.Timestamp:
        assert self._data_start is not None and self._data_end is not None
        start = None if self._start_arg is None else self._resolve(self._start_arg, anchor=None)
        if start is None or start < self._data_start:
            return self._data_start
        return min(start, self._data_end)

    def _load(self) -> None:
        """All files read: order the events by time, find the evaluation grid."""
        last: dict[str, int] = {}
        keys: list[int] = []
        for e in self._buffer:  # lines with no timestamp go with the previous line of their file
            if e.ts is not None:
                key = (e.ts - _EPOCH) // _US
                last[e.source] = key
            else:
                key = last.get(e.source, _NO_TS)
            keys.append(key)
        order = sorted(range(len(self._buffer)), key=keys.__getitem__)
        self._buffer = [self._buffer[i] for i in order]
        self._buffer_keys = [keys[i] for i in order]
        stamped = [k for k in self._buffer_keys if k != _NO_TS]
        if stamped:
            self._data_start = pd.Timestamp(stamped[0], unit="us", tz="UTC")
            self._data_end = pd.Timestamp(stamped[-1], unit="us", tz="UTC")
            self._step = self._grid_step()
        self._loaded = True

    def _grid_step(self) -> pd.Timedelta:
        gaps: dict[tuple[str, int | None], list[float]] = {}
        prev: dict[tuple[str, int | None], float] = {}
        for e, key in zip(self._buffer, self._buffer_keys):
            if e.kind != "stats" or e.ts is None:
                continue
            k = (e.source, e.engine)
            if k in prev and key > prev[k]:
                gaps.setdefault(k, []).append((key - prev[k]) / 1e6)
            prev[k] = key
        step = min((median(g) for g in gaps.values() if g), default=DEFAULT_INTERVAL_S)
        assert self._data_start is not None and self._data_end is not None
        span = (self._data_end - self._data_start).total_seconds()
        return pd.Timedelta(seconds=max(step, span / _MAX_STEPS, 0.5))

    def _release(self, upto: pd.Timestamp) -> None:
        end = bisect.bisect_right(self._buffer_keys, upto.value // 1000, lo=self._released)
        if end > self._released:
            self._add_to_store(self._buffer[self._released:end])
            self._released = end

    def _add_to_store(self, events: list[Event]) -> None:
        self.store.add(self._without_shadowed_scrapes(events))
        self.generation += 1
        for e in events:  # start-up values the store keeps only as text
            if e.kind == "args" and isinstance(e.values.get("args"), dict):
                self._args_by_source[e.source] = e.values["args"]
            elif e.kind == "cudagraph_memory" and e.values.get("actual_gib") is not None:
                self._graph_gib[(e.source, e.engine)] = float(e.values["actual_gib"])

    def _without_shadowed_scrapes(self, events: list[Event]) -> list[Event]:
        """An endpoint watched through both its log and its /metrics URL is counted once: its
        stats lines win (as in ``pdwatch report``); the scrapes fill in only until they come, and
        the rows they filled in are dropped then, so the series has one source and one cadence
        (scrapes every 2 s among lines every 1 s made its "6 samples" windows 12 s wide)."""
        endpoint_of = self.store.model.endpoint_of
        for event in events:
            if event.kind == "stats" and not is_url(event.source):
                endpoint = endpoint_of(event.source)
                if endpoint.name not in self._log_stats_endpoints:
                    self._log_stats_endpoints.add(endpoint.name)
                    endpoint.facts.pop("stats_from_metrics", None)
                    self.store.drop_stats_from(endpoint.name, [s for s in endpoint.sources if is_url(s)])
        kept: list[Event] = []
        for event in events:
            if event.kind == "stats" and is_url(event.source):
                endpoint = endpoint_of(event.source)
                if endpoint.name in self._log_stats_endpoints:
                    continue
                endpoint.facts["stats_from_metrics"] = True
            kept.append(event)
        return kept

    def _advance(self, target: pd.Timestamp) -> None:
        """Evaluate at every grid time up to ``target`` (and at the end of the logs)."""
        assert self._data_start is not None and self._data_end is not None and self._clock is not None
        times: list[pd.Timestamp] = []
        nxt = self._data_start if self._last_eval is None else self._last_eval + self._step
        if self._last_eval is not None:  # back on the grid anchored at the first timestamp
            n = math.ceil((self._last_eval - self._data_start) / self._step + 1e-9)
            nxt = self._data_start + n * self._step
        while nxt <= target:
            times.append(nxt)
            nxt = nxt + self._step
        if target >= self._data_end and (not times or times[-1] < self._data_end) and \
                (self._last_eval is None or self._last_eval < self._data_end):
            times.append(self._data_end)
        deadline = None if self.tick_budget_s is None else time.monotonic() + self.tick_budget_s
        for now in times:
            if deadline is not None and time.monotonic() > deadline and self._last_eval is not None:
                target = self._last_eval  # out of time: the clock stops where the rules are
                break
            self._release(now)
            self.engine.evaluate(self.store.view(), now.floor("us").to_pydatetime())
            self._last_eval = now
            if self._seek_target is not None:
                fired = {(f.rule, f.endpoint, f.start) for f in self.engine.findings()}
                if fired - set(self._seek_target):
                    self._seek_target = None
                    self.paused = True
                    target = now
                    break
        if self._seek_target is not None and target >= self._data_end:
            self._seek_target = None
        if self._seek_to is not None and target >= self._seek_to:
            self._seek_to = None
        self._release(target)
        self.store.flush()
        self._clock = max(self._clock, target)
        self._findings = self.engine.findings()

    # -- the snapshot ---------------------------------------------------------------------------
    @property
    def clock(self) -> pd.Timestamp | None:
        return self._clock

    @property
    def done(self) -> bool:
        if self.mode != "replay" or not self._loaded:
            return False
        if self._data_end is None:
            return True
        return self._clock is not None and self._clock >= self._data_end and self._last_eval is not None \
            and self._last_eval >= self._data_end

    def _snapshot(self, notices: list[SourceNotice]) -> Snapshot:
        clock = self._clock if self.mode == "replay" else self._display_clock
        rows = tuple(self._endpoint_row(ep, clock) for ep in self.store.endpoints())
        all_rows = tuple(self._finding_row(f) for f in self._findings)
        firing = tuple(sorted((f for f in all_rows if f.end is None),
                              key=lambda f: (SEVERITY_ORDER.get(f.severity, 9), f.start, f.rule, f.endpoint or "")))
        changes: list[Change] = []
        for f in all_rows:
            if f.key not in self._told_firing:
                self._told_firing.add(f.key)
                # as live printed it at that moment, even when this tick also saw it end
                changes.append(Change("firing", f.start, f.at_firing))
            if f.end is not None and f.key not in self._told_resolved:
                self._told_resolved.add(f.key)
                changes.append(Change("resolved", f.end, f))
        changes.sort(key=lambda c: (c.at, c.state != "firing", c.finding.rule, c.finding.endpoint or ""))
        return Snapshot(
            mode=self.mode, clock=_dt(clock),
            speed=self.speed if self.mode == "replay" else None, paused=self.paused,
            loading=self.mode == "replay" and not self._loaded, done=self.done,
            headline=_headline(rows), endpoints=rows, findings=firing, all_findings=all_rows,
            changes=tuple(changes),
            notices=tuple(n.message for n in notices if n.kind != "opened"),
            start=_dt(self._data_start), end=_dt(self._data_end), seeking_to=_dt(self._seek_to))

    def _memo(self, key: tuple, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per store generation (a tick with nothing new recomputes nothing)."""
        full = (self.generation, *key)
        if full not in self._derived:
            if self._derived and next(iter(self._derived))[0] != self.generation:
                self._derived.clear()
            self._derived[full] = compute()
        return self._derived[full]

    def _endpoint_row(self, ep: Any, clock: pd.Timestamp | None) -> EndpointRow:
        row: EndpointRow = self._memo(("row", ep.name), lambda: self._endpoint_row_of_store(ep))
        stale = None
        last_seen = self.store.last_seen(ep.name)
        if clock is not None and last_seen is not None and row.engine_rows:
            silent = (clock - last_seen).total_seconds()
            if silent > STALE_INTERVALS * row.interval_s:
                stale = silent
        return row if stale is None else replace(row, stale_for_s=stale)

    def _endpoint_row_of_store(self, ep: Any) -> EndpointRow:
        stats = self.store.stats(ep.name)
        interval = float(ep.facts.get("stats_interval_s") or DEFAULT_INTERVAL_S)
        last_seen = self.store.last_seen(ep.name)
        stale = None
        engines: list[EngineRow] = []
        history: tuple[float, ...] = ()
        if not stats.empty:
            engines = _latest_engine_rows(stats, interval)
            history = _history(stats, ep.role, interval)
        kv = [e.kv_usage_pct for e in engines if e.kv_usage_pct is not None]
        return EndpointRow(
            name=ep.name, role=ep.role, engines=tuple(sorted(ep.engines)), gpus=ep.gpus,
            prompt_tps=_sum(e.prompt_tps for e in engines), gen_tps=_sum(e.gen_tps for e in engines),
            running=_sum(e.running for e in engines), waiting=_sum(e.waiting for e in engines),
            kv_usage_pct=sum(kv) / len(kv) if kv else None,
            last_seen=_dt(last_seen), stale_for_s=stale,
            interval_s=interval, history=history, engine_rows=tuple(engines), sources=tuple(ep.sources),
            stats_silence=ep.stats_silence, frontend=_frontend_figures(stats) if ep.role == "frontend" else ())

    def _finding_row(self, f: Finding) -> FindingRow:
        evidence = tuple(Evidence(**self.store.quote(q)) for q in f.evidence)
        return FindingRow(f.rule, f.severity, f.endpoint, tuple(f.engines), f.start, f.end, f.summary,
                          f.explanation, f.recommendation, evidence, f.summary_at_start, tuple(f.engines_at_start))

    # -- one endpoint in detail ---------------------------------------------------------------------
    def endpoint_detail(self, name: str, max_lines: int = 40) -> EndpointDetail | None:
        """The endpoint's series over the run so far, its start-up facts and its newest lines
        (None when the store does not know it, e.g. after a rewind to before its first line)."""
        ep = self.store.model.endpoints.get(name)
        if ep is None or name not in {e.name for e in self.store.endpoints()}:
            return None
        clock = self._clock if self.mode == "replay" else self._display_clock
        row = self._endpoint_row(ep, clock)
        series = self._memo(("series", name), lambda: _series(self.store.stats(name), row.interval_s))
        startup = self._memo(("startup", name), lambda: self._startup(ep))
        lines = self._memo(("lines", name, max_lines), lambda: self._recent_lines(name, max_lines))
        return EndpointDetail(row, series, startup, lines)

    def _startup(self, ep: Any) -> StartupFacts:
        facts = ep.facts
        args: dict[str, Any] = {}
        for source in ep.sources:  # an endpoint spanning several nodes: one args line per file
            args.update(self._args_by_source.get(source, {}))
        graphs = [gib for (source, _), gib in self._graph_gib.items() if source in ep.sources]
        graph = max(graphs) if graphs else facts.get("cudagraph_estimate_gib")
        return StartupFacts(
            version=_text_or_none(facts.get("version")), model=_text_or_none(facts.get("model") or args.get("model")),
            weights_gib=_val(facts.get("weights_gib")), kv_memory_gib=_val(facts.get("kv_memory_gib")),
            cudagraph_gib=_val(graph), cudagraph_measured=bool(graphs),
            kv_capacity_tokens=_int_or_none(facts.get("kv_capacity_tokens")),
            max_concurrency=_val(facts.get("max_concurrency")),
            max_concurrency_tokens=_int_or_none(facts.get("max_concurrency_tokens")),
            capture_sizes=tuple(int(x) for x in facts.get("capture_sizes") or () if isinstance(x, (int, float))),
            max_capture_size=_int_or_none(facts.get("max_capture_size")),
            non_default_args=tuple((str(k), _arg_text(v)) for k, v in args.items()))

    def _recent_lines(self, name: str, max_lines: int) -> tuple[Evidence, ...]:
        columns = ["ts", "source", "line_no", "text"]
        frames = [f[columns].iloc[-max_lines:] for f in (self.store.stats(name), self.store.events(name)) if not f.empty]
        if not frames:
            return ()
        merged = pd.concat(frames, ignore_index=True).sort_values(["ts", "source", "line_no"], kind="stable")
        return tuple(Evidence(str(r.source), int(r.line_no), str(r.text))
                     for r in merged.iloc[-max_lines:].itertuples(index=False))

    # -- export ----------------------------------------------------------------------------------
    def analysis(self) -> Any:
        """The session so far as a post-mortem ``Analysis`` (for the report writers)."""
        from pdwatch.session.analysis import Analysis
        from pdwatch.model.throughput import headline
        self.store.flush()
        endpoints = self.store.endpoints()
        result = headline(endpoints, {e.name: self.store.stats(e.name) for e in endpoints})
        clock = self.store.time_range()
        return Analysis(self.paths, self.store, result, self.engine.findings(), self.rules, [],
                        self.sources.metrics_files, clock)


def _latest_engine_rows(stats: pd.DataFrame, interval: float) -> list[EngineRow]:
    """Each engine's latest stats line, engines that stopped printing left out. Only the
    frame's tail since the stale horizon can hold them (it is sorted by time): numpy on that
    tail, not a groupby of the whole run on every tick."""
    stamps = stats["ts"]
    # A measured interval (between /metrics scrapes) has nanoseconds; the frame may be in
    # microseconds and pandas' searchsorted refuses to round. Rounded up, so "ts >= horizon" holds as before.
    unit = stamps.dt.unit
    horizon = (stamps.iloc[-1] - pd.Timedelta(seconds=STALE_INTERVALS * interval)).ceil(unit).as_unit(unit)
    tail = stats.iloc[int(stamps.searchsorted(horizon, side="left")):]
    engines = tail["engine"].to_numpy()
    ids, from_end = np.unique(engines[::-1], return_index=True)
    rows = len(engines) - 1 - from_end
    columns = {name: tail[name].to_numpy() for name in ("prompt_tps", "gen_tps", "running", "waiting", "kv_usage_pct")}
    stamps = tail["ts"]
    return [EngineRow(int(engine), *(_val(columns[name][i]) for name in columns), _dt(stamps.iloc[i]))
            for engine, i in zip(ids.tolist(), rows.tolist())]


def _history(stats: pd.DataFrame, role: str, interval: float) -> tuple[float, ...]:
    """Counted tokens/s per stats interval, engines summed (each engine's last value in the
    interval), the last HISTORY_POINTS intervals. In numpy: it runs for every endpoint that
    got a line, on every tick."""
    fields = list(COUNTED.get(role, ("prompt_tps", "gen_tps")))
    recent = stats.iloc[-(HISTORY_POINTS * 16):]
    step = max(round(interval), 1) * 1_000_000_000
    stamps = recent["ts"].dt.tz_convert(None).to_numpy().astype("datetime64[ns]").astype(np.int64)
    buckets = stamps // step * step
    values = recent[fields].to_numpy(dtype=np.float64)
    known = ~np.isnan(values)
    counted = np.where(known.any(axis=1), np.where(known, values, 0.0).sum(axis=1), np.nan)
    engines = recent["engine"].to_numpy()
    every_bucket = np.unique(buckets)
    totals = np.zeros(len(every_bucket))
    ok = ~np.isnan(counted)
    if ok.any():
        b, e, c = buckets[ok], engines[ok], counted[ok]
        order = np.lexsort((np.arange(len(b)), e, b))  # by bucket, engine, then arrival
        b, e, c = b[order], e[order], c[order]
        last = np.ones(len(b), dtype=bool)
        last[:-1] = (b[1:] != b[:-1]) | (e[1:] != e[:-1])  # the last line of each (bucket, engine)
        np.add.at(totals, np.searchsorted(every_bucket, b[last]), c[last])
    return tuple(float(v) for v in totals[-HISTORY_POINTS:])


_SERIES_POINTS = 2000  # a terminal chart is at most a few hundred cells wide


def _series(stats: pd.DataFrame, interval: float) -> EndpointSeries:
    """Engines combined per stats interval over the whole frame, in at most ~_SERIES_POINTS buckets."""
    if stats.empty:
        return EndpointSeries()
    span = (stats["ts"].iloc[-1] - stats["ts"].iloc[0]).total_seconds()
    seconds = max(round(interval), 1, math.ceil(span / _SERIES_POINTS))
    keyed = stats.assign(bucket=stats["ts"].dt.floor(f"{seconds}s"))
    last = keyed.groupby(["bucket", "engine"])[["prompt_tps", "gen_tps", "running", "waiting", "kv_usage_pct"]].last()
    per = last.groupby(level="bucket")
    summed = per[["prompt_tps", "gen_tps", "running", "waiting"]].sum(min_count=1)
    kv = per["kv_usage_pct"].mean()

    def column(values: pd.Series) -> tuple[float, ...]:
        return tuple(0.0 if v != v else float(v) for v in values.tolist())

    return EndpointSeries(
        times=tuple(_dt(t) for t in summed.index), prompt_tps=column(summed["prompt_tps"]),
        gen_tps=column(summed["gen_tps"]), running=column(summed["running"]), waiting=column(summed["waiting"]),
        kv_usage_pct=column(kv))


def _arg_text(value: Any) -> str:
    if isinstance(value, (dict, list, tuple)):
        try:
            return json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


def _text_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _int_or_none(value: Any) -> int | None:
    v = _val(value)
    return None if v is None else int(v)


def _headline(rows: tuple[EndpointRow, ...]) -> Headline:
    serving = [r for r in rows if r.role in COUNTED]
    if not serving or all(r.counted_tps is None for r in serving):
        gpus = [r.gpus for r in serving]
        return Headline(None, None, None, None, sum(gpus) if gpus and all(gpus) else None)  # type: ignore[arg-type]
    prompt = gen = 0.0
    for r in serving:
        fields = COUNTED[r.role]
        prompt += (r.prompt_tps or 0.0) if "prompt_tps" in fields and r.stale_for_s is None else 0.0
        gen += (r.gen_tps or 0.0) if "gen_tps" in fields and r.stale_for_s is None else 0.0
    gpus_list = [r.gpus for r in serving]
    gpus = sum(g for g in gpus_list if g) if all(gpus_list) else None
    total = prompt + gen
    return Headline(total, prompt, gen, total / gpus if gpus else None, gpus)


def _val(value: Any) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return None if v != v else v


_FRONTEND_FIELDS = ("ttft_s", "itl_s", "frontend_inflight", "frontend_queued", "request_rate")


def _frontend_figures(stats: pd.DataFrame) -> tuple[tuple[str, float], ...]:
    """The newest value of each Dynamo frontend field in the last few rows (a latency needs a
    request to have ended in the scrape interval, so the newest row may lack one)."""
    if stats.empty:
        return ()
    tail = stats.tail(5)
    out = []
    for name in _FRONTEND_FIELDS:
        if name in tail.columns:
            values = tail[name].dropna()
            if len(values):
                out.append((name, float(values.iloc[-1])))
    return tuple(out)


def _sum(values: Any) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) if vals else None


def _dt(value: pd.Timestamp | None) -> datetime | None:
    return None if value is None else pd.Timestamp(value).floor("us").to_pydatetime()


def _iso(value: datetime | pd.Timestamp | None) -> str | None:
    if value is None:
        return None
    return pd.Timestamp(value).isoformat()


def fmt_rate(value: float | None) -> str:
    """Tokens/s for a narrow column: 1,234 / 12.3k / 1.23M."""
    if value is None:
        return "?"
    a = abs(value)
    if a >= 1e6:
        return f"{value / 1e6:.2f}M"
    if a >= 1e4:
        return f"{value / 1e3:.1f}k"
    return f"{value:,.0f}"


def fmt_age(seconds: float | None) -> str:
    if seconds is None:
        return ""
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m{s % 60:02d}s"
    return str(timedelta(seconds=s))
