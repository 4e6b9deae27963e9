"""The live session behind ``pdwatch watch`` and ``pdwatch replay`` (no Textual here).

``LiveSession`` is the composition the dashboard and the headless mode drive; each part has
one job:

- ``ingest.Ingest`` (a worker thread calls ``ingest``): sources -> events, queued;
- ``clock.WatchClock`` / ``clock.ReplayClock``: where the clock is and when the rules run;
- ``replay_buffer.ReplayBuffer`` (replay): every event, ordered, released up to the clock;
- the store and the rule engine, fed here (``_add_to_store``, ``_evaluate``);
- ``rows.SnapshotBuilder`` and ``findings_feed.FindingsFeed``: the immutable ``Snapshot``
  a UI renders, with the findings that fired or resolved since the previous tick.

``tick(wall)`` (the UI thread, or the headless loop) moves the queued events into the store,
advances the clock, evaluates the rules and returns the snapshot.
"""

from __future__ import annotations

import math
import os
import threading
import time
from datetime import datetime, timezone, tzinfo
from typing import Any, Callable

import pandas as pd

from pdwatch.events.recognition import LOOKED_FOR, nothing_to_judge, unrecognised_notices, what_was_read
from pdwatch.events.stream import EventStream
from pdwatch.model.deployment import DeploymentModel, EndpointSpec
from pdwatch.model.partial import GENERIC_KINDS
from pdwatch.model.retention import Retention
from pdwatch.model.store import Store, searched_kinds
from pdwatch.parsers import Event
from pdwatch.rules import Finding, Rule, RuleEngine, load_rules
from pdwatch.rules.findings import severity_rank
from pdwatch.sources import SourceNotice, SourceSet, is_url
from pdwatch.sources.discovery import split_source

from .clock import ReplayClock, WatchClock
from .findings_feed import FindingsFeed, firing_now
from .heap import give_back_freed_memory
from .ingest import Ingest
from .replay_buffer import ReplayBuffer
from .preemption_fill import PreemptionFill
from .replay_rules import ReplayRules
from .replay_scrapes import replay_scrapes
from .rows import SnapshotBuilder, headline, to_datetime
from .run_history import TROUBLE, RunHistory, first_trouble
from .sweep_point import SweepPointTracker
from .snapshot import EndpointDetail, EndpointSeries, PastTrouble, Snapshot
from .times import parse_time


HISTORY_WAIT_S = 3.0  # replay: seconds the clock waits, once, for the run history (report's grid)
WAITING_TOLD_AFTER_S = 5.0  # watch: wall seconds of reading with nothing recognised before it is said


class LiveSession:
    def __init__(self, paths: list[str], *, mode: str = "watch", specs: list[EndpointSpec] | tuple = (),
                 rules: list[Rule] | None = None, year: int | None = None, tz: tzinfo | None = None,
                 speed: float = 10.0, start: pd.Timestamp | pd.Timedelta | str | None = None,
                 sources: SourceSet | None = None, poll_interval: float = 0.2, keep_full_s: float | None = None,
                 wall: Callable[[], float] = time.monotonic,
                 wall_utc: Callable[[], datetime] = lambda: datetime.now(timezone.utc)) -> None:
        if mode not in ("watch", "replay"):
            raise ValueError(f"mode {mode!r}: expected watch or replay")
        self.mode = mode
        self.year, self.tz = year, tz  # the job log view reads the logs' times as the scanners do
        self.paths = list(paths)
        self.sources = sources or SourceSet(self.paths, follow=(mode == "watch"), poll_interval=poll_interval)
        self._ingest = Ingest(self.sources, EventStream(self.sources, year=year, tz=tz), follow=(mode == "watch"))
        self._specs = tuple(specs)
        self.rules = rules if rules is not None else load_rules()
        self.store = Store(DeploymentModel(self._specs), searched_kinds(self.rules))
        if mode == "watch":  # a watch may run for a week: rows older than the rules read are folded
            self.store.retention = Retention.for_rules(self.rules, keep_full_s)
        self.engine = RuleEngine(self.rules)
        self._rows = SnapshotBuilder(self.store)
        self._rows.rule_fields = {r.finding: tuple(r.quoted_fields()) for r in self.rules}
        self._feed = FindingsFeed()
        self._findings: list[Finding] = []
        self._log_stats_endpoints: set[str] = set()  # endpoints whose own stats lines arrived
        self._preemption_fill = PreemptionFill()  # watch: a scrape's preemptions to its log's lines
        self._wall = wall
        self._tz = tz
        self._watch = WatchClock(wall_utc)
        self._replay = ReplayClock(speed, start, tz)
        self._buffer = ReplayBuffer()
        self._grid = ReplayRules()
        self._history = RunHistory(self._rows_for)  # replay: the whole run, judged as report judges it
        self._told_unmatched = False
        self._told_history: set[str] = set()
        self._aligned = False  # replay: its grid is report's (or judged too slow to wait for)
        self.history_wait_s = HISTORY_WAIT_S
        self._sweep_point = SweepPointTracker(self.paths)  # a sweep job: the point the clock is in
        self._scrape_homes: dict[str, str] = {}  # replay: recorded scrape source -> its endpoint
        self._unjudged: str | None = None  # replay: the inputs hold no vLLM or Dynamo server line
        self._said: list[SourceNotice] = []  # notices of the session's own, for the next snapshot
        self._watch_since = wall()  # watch: when it began (a while with nothing recognised is said)
        self._told_unrecognised = False
        self.exporter = None  # a pdwatch.views.exporter.PdwatchExporter, fed every tick when set
        # Replay: at most this many seconds of rule evaluation per tick (None: no limit), so that a
        # long jump keeps a dashboard responsive; the clock shows how far it got.
        self.tick_budget_s: float | None = None

    # -- worker side -------------------------------------------------------------------------
    @property
    def source_done(self) -> bool:
        return self._ingest.done

    @property
    def read_failures(self) -> int:
        """Notices of inputs that could not be read (a replay then exits 2)."""
        return self._ingest.read_failures

    def ingest(self, max_items: int = 200) -> int:
        """Read what the sources have now (non-blocking in watch mode); see ``Ingest.read``."""
        return self._ingest.read(max_items)

    def run_ingest(self, stop: threading.Event, idle: float = 0.1, max_items: int = 200) -> None:
        self._ingest.run(stop, idle, max_items)

    def stop(self) -> None:
        self.sources.stop()

    def close(self) -> None:
        self.sources.stop()
        self.sources.close()

    # -- replay controls -----------------------------------------------------------------------
    @property
    def speed(self) -> float:
        return self._replay.speed

    @speed.setter
    def speed(self, value: float) -> None:
        self._replay.speed = value

    @property
    def paused(self) -> bool:
        return self._replay.paused

    @paused.setter
    def paused(self, value: bool) -> None:
        self._replay.paused = value

    def toggle_pause(self) -> bool:
        return self._replay.toggle_pause()

    def faster(self) -> float:
        return self._replay.faster()

    def slower(self) -> float:
        return self._replay.slower()

    def seek_next_finding(self) -> None:
        """Replay: run at full speed until a finding fires that has not fired yet."""
        self._replay.seek_to = None
        self._replay.hunt = tuple((f.rule, f.endpoint, f.start) for f in self._findings)  # those of the clock
        self._replay.paused = False

    @property
    def finding_hunt_active(self) -> bool:
        """``seek_next_finding`` is still playing on (no new finding yet)."""
        return self._replay.hunt is not None

    @property
    def time_range(self) -> tuple[pd.Timestamp | None, pd.Timestamp | None]:
        """Replay: the logs' first and last timestamps (None until the files are read)."""
        return self._buffer.start, self._buffer.end

    @property
    def seekable(self) -> bool:
        """Replay with the files read and timestamps in them: the clock can be moved."""
        return self.mode == "replay" and self._buffer.loaded and self._buffer.start is not None \
            and self._replay.now is not None

    def previous_finding_start(self) -> pd.Timestamp | None:
        """The start of the newest finding that started before the clock (None: there is none)."""
        if not self.seekable:
            return None
        starts = [pd.Timestamp(f.start) for f in self._findings if pd.Timestamp(f.start) < self._replay.now]
        return max(starts) if starts else None

    def step(self, wall_seconds: float) -> None:
        """Replay: pause, then move the clock as one refresh of ``wall_seconds`` would at this speed
        (one evaluation step at max speed)."""
        if not self.seekable:
            return
        self._replay.paused = True
        step = self._buffer.step if math.isinf(self.speed) else pd.Timedelta(seconds=wall_seconds * self.speed)
        self.seek(self._replay.now + step)

    def resolve_time(self, text: str) -> pd.Timestamp:
        """A time typed by the user (see :func:`parse_time`; an offset is from the clock), as a time
        in the logs' range. ValueError says what is wrong."""
        if not self.seekable:
            raise ValueError("the logs are still being read" if self.mode == "replay" else "only a replay can seek")
        return self._replay.resolve(parse_time(text, self._tz, what="seek"), self._replay.now,
                                    self._buffer.start, self._buffer.end)

    def seek(self, target: pd.Timestamp) -> pd.Timestamp | None:
        """Replay: move the clock to ``target`` (clamped to the logs' range); returns the target.

        Forward, the rules are evaluated on their grid up to it, as if played. Backward, the rule
        engine cannot go back in time: a fresh store and rule engine get the buffered events
        again up to the target, so findings and charts are always those of the clock.
        """
        if not self.seekable:
            return None
        start, end = self._buffer.start, self._buffer.end
        target = min(max(pd.Timestamp(target).tz_convert("UTC"), start), end)
        self._replay.hunt = None
        if target < self._replay.now:
            self._rebuild()
            self._replay.now = start
        self._replay.seek_to = target
        self._advance(target)
        # A seek back drops a store and builds another; its frames were garbage scattered in the
        # heap among the buffer's events, which glibc kept: returned, a replay of a day-long run
        # stays flat however often it is sought (bench/bench_replay_seek.py).
        give_back_freed_memory()
        return target

    def _rebuild(self) -> None:
        """A fresh store and rule engine, the buffer rewound (the announced findings stay
        announced: one that fires again at the same start after a rewind is not news)."""
        self.store = Store(DeploymentModel(self._specs), searched_kinds(self.rules))
        self.store.scrape_sources = frozenset(self._scrape_homes)
        self._log_stats_endpoints.clear()
        self._preemption_fill = PreemptionFill()
        self.engine = RuleEngine(self.rules)
        self._grid.reset()
        self._rows.reset(self.store)
        self._buffer.rewind()
        self._replay.last_eval = None
        self._findings = []

    # -- UI side -------------------------------------------------------------------------------
    @property
    def generation(self) -> int:
        """Bumped whenever the store changes: what is derived from it alone is recomputed then."""
        return self._rows.generation

    @property
    def clock(self) -> pd.Timestamp | None:
        return self._replay.now if self.mode == "replay" else self._watch.now

    @property
    def done(self) -> bool:
        if self.mode != "replay" or not self._buffer.loaded:
            return False
        if self._buffer.end is None:
            return True
        return self._replay.now is not None and self._replay.now >= self._buffer.end \
            and self._replay.last_eval is not None and self._replay.last_eval >= self._buffer.end

    def tick(self, wall: float | None = None) -> Snapshot:
        """Flush, advance the clock, evaluate the rules; return what to render.

        ``wall`` is a monotonic wall time in seconds (default ``time.monotonic()``): the
        replay clock moves by ``speed`` x the wall time since the previous tick.
        """
        wall = self._wall() if wall is None else wall
        incoming, notices, source_done = self._ingest.take()
        if self.mode == "watch":
            self._tick_watch(incoming, wall)
        else:
            self._tick_replay(incoming, source_done, wall)
        if self.exporter is not None:  # the thread that owns the store hands the exporter a snapshot
            self.exporter.update(self.store, self._findings, sources_up=self.sources.sources_up)
        if not self._told_unmatched:  # once: the topology endpoints no source matches
            self._told_unmatched = True
            from pdwatch.model.topology_file import unmatched_notices
            notices = notices + unmatched_notices(self._specs, list(self.sources.sources),
                                                        self.sources.target_labels)
        if self.mode == "watch" and not self._told_unrecognised and wall - self._watch_since >= WAITING_TOLD_AFTER_S:
            self._told_unrecognised = True
            self._say_if_nothing_recognised()
        if self._said:
            notices, self._said = notices + self._said, []
        return self._snapshot(notices)

    def _tick_watch(self, incoming: list[Event], wall: float) -> None:
        if incoming:
            self._add_to_store(incoming)
        clock = self._watch.advance(incoming, wall)
        folds = self.store.folds
        self.store.flush()
        if self.store.folds != folds:  # old rows were folded: the frames they were in are free now
            give_back_freed_memory()
        if clock is None:  # nothing timestamped yet: evaluate nothing
            return
        if self._watch.due(clock, bool(incoming)):
            view = self.store.view()
            intervals = [e.facts["stats_interval_s"] for e in self.store.endpoints() if e.facts.get("stats_interval_s")]
            for now in self._watch.steps(clock, self._first_ts, min(intervals) if intervals else None):
                self.engine.evaluate(view, now.floor("us").to_pydatetime())
            self._watch.last_eval = clock
        self._findings = self.engine.findings()

    def _first_ts(self) -> pd.Timestamp | None:
        firsts = [frame["ts"].min() for e in self.store.endpoints()
                  for frame in (self.store.stats(e.name), self.store.events(e.name)) if not frame.empty]
        firsts = [t for t in firsts if t == t]
        return min(firsts) if firsts else None

    def _tick_replay(self, incoming: list[Event], source_done: bool, wall: float) -> None:
        if incoming:
            self._buffer.extend(incoming)
        if not self._buffer.loaded:
            if not source_done:
                return
            as_read = self._buffer.events_as_read()
            self._buffer.load()
            self._unjudged = self._nothing_to_judge()
            if self._unjudged is None:  # a folder only partly recognised names its other files
                self._said += unrecognised_notices(self.sources.local_files, self._ingest.stream.recognised)
                self._history.start(as_read, self.sources, rules=self.rules, specs=self._specs, paths=self.paths)
        if not self._aligned and self._history.started:
            # The replay's rules run on report's grid, so that a finding starts where the report
            # says: the clock waits for the run history once, a few seconds at most (a run that
            # takes longer to judge starts on its own grid; its end is still the report's).
            self._history.wait(self.history_wait_s)
            self._aligned = True
            if self._history.analysis is not None and self._replay.last_eval is None:
                self._take_history_inputs(self._history.analysis)
        if self._aligned and self._history.analysis is not None:
            # Its store has served (the grid, the scrapes) or came too late to; its findings and
            # diagnosis stay. Let go, the whole run is not held twice while the clock builds its own.
            self._history.forget_store()
            give_back_freed_memory()
        if self._buffer.start is None:  # no timestamps at all: show everything at once
            events = self._buffer.release_all()
            if events:
                self._add_to_store(events)
                self.store.flush()
            return
        self._advance(self._replay.target(wall, self._buffer.start, self._buffer.end))

    def _advance(self, target: pd.Timestamp) -> None:
        """Evaluate at every grid time up to ``target`` (and at the end of the logs)."""
        replay, buffer = self._replay, self._buffer
        times = replay.grid(target, buffer.grid_start, buffer.end, buffer.step)
        deadline = None if self.tick_budget_s is None else time.monotonic() + self.tick_budget_s
        if replay.hunt is None:  # stretches of the grid in one sweep each (replay_rules)
            done = self._grid.run(self.store, self.engine, buffer, self._add_to_store, times, deadline,
                                  replay.last_eval is not None)
            if done:
                replay.last_eval = times[done - 1]
            if done < len(times):
                target = replay.last_eval  # out of time: the clock stops where the rules are
            times = []
        for now in times:  # the hunt for the next finding stops at the step where one fires
            if deadline is not None and time.monotonic() > deadline and replay.last_eval is not None:
                target = replay.last_eval  # out of time: the clock stops where the rules are
                break
            self._add_to_store(buffer.release(now))
            self.engine.evaluate(self.store.view(), now.floor("us").to_pydatetime())
            replay.last_eval = now
            fired = {(f.rule, f.endpoint, f.start) for f in self.engine.findings()}
            if fired - set(replay.hunt):
                replay.hunt = None
                replay.paused = True
                target = now
                break
        if replay.hunt is not None and target >= buffer.end:
            replay.hunt = None
        if replay.seek_to is not None and target >= replay.seek_to:
            replay.seek_to = None
        self._add_to_store(buffer.release(target))
        self.store.flush()
        replay.now = max(replay.now, target)
        self._findings = self.engine.findings()

    def _add_to_store(self, events: list[Event]) -> None:
        if not events:
            return
        if self._scrape_homes:
            self._home_scrapes(events)
        shadowed: dict[str, list[Event]] = {}
        self.store.add(self._without_shadowed_scrapes(events, shadowed))
        for name, scrapes in shadowed.items():  # their preemptions go to the log's lines, as in report
            self._preemption_fill.feed(self.store, name, scrapes)
        self._rows.note(events)

    def _home_scrapes(self, events: list[Event]) -> None:
        """Recorded scrapes go to the endpoint report gave them (a scrape names its server's port,
        which report matched to the log that listens on it), and mark it as judged from them."""
        model = self.store.model
        for event in events:
            home = self._scrape_homes.get(event.source)
            if home is None:
                continue
            if model.known(event.source) is None and home in model.endpoints:
                model.attach(event.source, model.endpoints[home])
            model.endpoint_of(event.source).facts["stats_from_metrics"] = True

    def _without_shadowed_scrapes(self, events: list[Event], shadowed: dict[str, list[Event]]) -> list[Event]:
        """An endpoint watched through both its log and its /metrics URL is counted once: its
        stats lines win (as in ``pdwatch report``); the scrapes fill in only until they come, and
        the rows they filled in are dropped then, so the series has one source and one cadence
        (scrapes every 2 s among lines every 1 s made its "6 samples" windows 12 s wide)."""
        endpoint_of = self.store.model.endpoint_of
        for event in events:
            if event.kind == "stats" and not self._is_scrape(event.source):
                endpoint = endpoint_of(event.source)
                if endpoint.name not in self._log_stats_endpoints:
                    self._log_stats_endpoints.add(endpoint.name)
                    endpoint.facts.pop("stats_from_metrics", None)
                    self.store.drop_stats_from(endpoint.name, [s for s in endpoint.sources if self._is_scrape(s)])
        kept: list[Event] = []
        for event in events:
            if event.kind == "stats" and self._is_scrape(event.source):
                endpoint = endpoint_of(event.source, event.labels)
                if endpoint.name in self._log_stats_endpoints:
                    if endpoint.role != "frontend":
                        shadowed.setdefault(endpoint.name, []).append(event)  # (``shadowed``: their preemptions)
                    continue
                endpoint.facts["stats_from_metrics"] = True
            kept.append(event)
        return kept

    def _is_scrape(self, source: str) -> bool:
        """A /metrics URL, or a recorded scrape file followed by a watch (``path``, ``path#port=N``, or
        ``path#decode_w0`` for a record of srt-slurm's raw_prometheus.jsonl)."""
        if is_url(source) or self.mode != "watch":
            return is_url(source)
        path = split_source(source)[0]  # a raw_prometheus.jsonl record's: FILE#decode_w0
        return source.split("#port=", 1)[0] in self.sources.metrics_files or path in self.sources.metrics_files

    def _say_if_nothing_recognised(self) -> None:
        """Watch: files there for a while with no line recognised are said once (a wrong folder or
        glob shows at once), while the watch goes on waiting for lines."""
        files = [p for p in self.sources.local_files if os.path.isfile(p)]
        if files and not self._ingest.stream.recognised:
            self._said.append(SourceNotice(files[0], "info", f"nothing recognised yet: read {what_was_read(files)} "
                                                             f"with no vLLM or Dynamo line; waiting for one "
                                                             f"(pdwatch looks for {LOOKED_FOR})"))

    def _nothing_to_judge(self) -> str | None:
        """A replay whose inputs, all read, hold no vLLM or Dynamo server line (as ``report`` says)."""
        if self.read_failures or self._buffer.has_kind_but(GENERIC_KINDS):
            return None
        read = list(self.sources.sources) + list(self.sources.metrics_files)
        return str(nothing_to_judge(read, not_servers=bool(self._ingest.stream.recognised)))

    def _take_history_inputs(self, analysis: Any) -> None:
        """Before the clock starts: report's grid, and the recorded scrapes as report used them."""
        grid = self._history.grid()
        if grid is not None:
            self._buffer.align_grid(*grid)
        scrapes = replay_scrapes(analysis)
        known = analysis.store.model.known

        def patch(event: Event) -> Event:
            endpoint = known(event.source) if event.kind == "stats" else None
            return event if endpoint is None else scrapes.patch(event, endpoint.name)

        self._buffer.merge(scrapes.events, patch if scrapes.preemptions else None)
        self._scrape_homes = scrapes.homes
        self.store.scrape_sources = frozenset(scrapes.homes)

    def _rows_for(self, store: Store) -> Callable[[list[Finding]], tuple]:
        """The finding rows of another store's findings (the run history's), quoted from that store."""
        builder = SnapshotBuilder(store)
        builder.rule_fields = self._rows.rule_fields
        return builder.finding_rows

    @property
    def run_history(self) -> RunHistory:
        return self._history

    def first_trouble(self) -> pd.Timestamp | None:
        """Replay: when the run's first warning-or-worse finding starts (None: not known, or none)."""
        first = self._history.first_trouble
        return None if first is None else pd.Timestamp(first)

    def seek_first_trouble(self) -> pd.Timestamp | None:
        """Replay: move the clock to the run's first warning-or-worse finding (where it fires)."""
        first = self.first_trouble()
        return None if first is None else self.seek(first)

    # -- the snapshot ---------------------------------------------------------------------------
    def _shown_clock(self) -> pd.Timestamp | None:
        return self._replay.now if self.mode == "replay" else self._watch.display

    def _snapshot(self, notices: list[SourceNotice]) -> Snapshot:
        rows = self._rows.endpoint_rows(self._shown_clock())
        all_rows = self._rows.finding_rows(self._findings)
        firing = firing_now(all_rows)
        diagnosis = self._rows.diagnosis(firing, self._shown_clock())
        run_rows, run_diagnosis = self._run_view(all_rows)
        changes = self._feed.changes(all_rows, to_datetime(self._shown_clock()))
        was = self._was(all_rows, diagnosis)
        if self.done and run_diagnosis is not None:
            # The end of a replay is the report: the run's findings, figures and verdict (the clock's
            # own may differ by a step in when a finding started; what was announced stays as it was).
            # ``findings`` is then every finding of the run, as the report lists them (its groups index it).
            all_rows, firing, diagnosis = run_rows, tuple(run_diagnosis.findings), run_diagnosis
        if self._history.error and self._history.error not in self._told_history:
            self._told_history.add(self._history.error)
            notices = notices + [SourceNotice("", "error", self._history.error)]
        return Snapshot(
            mode=self.mode, clock=to_datetime(self._shown_clock()),
            speed=self.speed if self.mode == "replay" else None, paused=self.paused,
            loading=self._loading, done=self.done,
            headline=headline(rows), endpoints=rows, findings=firing, all_findings=all_rows,
            changes=changes,
            notices=tuple(n.message for n in notices if n.kind != "opened"),
            start=to_datetime(self._buffer.start), end=to_datetime(self._buffer.end),
            seeking_to=to_datetime(self._replay.seek_to), diagnosis=diagnosis, nothing_to_judge=self._unjudged,
            run_findings=run_rows, run_diagnosis=run_diagnosis, first_trouble=first_trouble(run_rows),
            was=None if self.done and run_diagnosis is not None else was,
            sweep_point=self._sweep_point.label(self._shown_clock()))

    def _was(self, rows: tuple, now: Any) -> PastTrouble | None:
        """What the run had, when the findings firing now are less severe than one that cleared."""
        current = now.verdict.severity if now is not None and now.verdict is not None else None
        cleared = tuple(f for f in rows if f.end is not None and severity_rank(f.severity) <= severity_rank(TROUBLE)
                        and severity_rank(f.severity) < severity_rank(current))
        if not cleared:
            return None
        past = self._rows.diagnosis(cleared, self._shown_clock())
        if past.verdict is None or past.verdict.severity is None:
            return None
        deciding = [f for f in cleared if f.rule == past.verdict.rule] or list(cleared)
        return PastTrouble(past.verdict, min(f.start for f in deciding), max(f.end for f in deciding))

    @property
    def _loading(self) -> bool:
        """Replay: the files are being read."""
        return self.mode == "replay" and not self._buffer.loaded

    def _run_view(self, all_rows: tuple) -> tuple[tuple, Any]:
        """The run's findings and their diagnosis: a replay's from its run history (the report's,
        ahead of the clock too), once computed; a watch's, every firing period so far."""
        if self.mode == "replay":
            if not self._history.ready:
                return (), None
            return self._history.findings, self._history.diagnosis
        if not all_rows:
            return (), None
        return all_rows, self._rows.diagnosis(all_rows, self._shown_clock())

    def endpoint_detail(self, name: str, max_lines: int = 40) -> EndpointDetail | None:
        """The endpoint's series over the run so far, its start-up facts and its newest lines
        (None when the store does not know it, e.g. after a rewind to before its first line)."""
        return self._rows.endpoint_detail(name, self._shown_clock(), max_lines)

    def endpoint_series(self, name: str) -> EndpointSeries | None:
        """The endpoint's series over the run so far (None when the store does not know it): what
        ``endpoint_detail`` has of it, without its rows and lines; once per store generation."""
        return self._rows.endpoint_series(name)

    # -- export ----------------------------------------------------------------------------------
    def analysis(self) -> Any:
        """The session so far as a post-mortem ``Analysis`` (for the report writers)."""
        from pdwatch.model.throughput import headline as run_headline
        from pdwatch.session.analysis import Analysis
        self.store.flush()
        store = self.store.with_history()  # a long watch's folded minutes too: the whole run
        endpoints = store.endpoints()
        result = run_headline(endpoints, {e.name: store.stats(e.name) for e in endpoints})
        return Analysis(self.paths, store, result, self.engine.findings(), self.rules, [],
                        self.sources.metrics_files, store.time_range())

