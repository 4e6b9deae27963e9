"""Post-mortem analysis: read finished logs, build the store, replay the rule clock.

The rules are evaluated at every stats interval from the first to the last timestamp
of the run, the clock the live dashboard steps through tick by tick, so a finding has the
start and end it would have had live; all the evaluations are made in one sweep over the
whole clock (``RuleEngine.evaluate_series``), which gives what the steps give.

The files are read on every core when there is enough to read (``_read_on_every_core``):
the same store, notices and findings as the sequential read, which stays for small runs,
one core, stdin and remote sources. ``start_reading`` starts that read before anything heavy
is imported (pandas, the rules, the capacity arithmetic: ~0.5 s that the workers' reading now
hides): this module imports them only when it needs them.

A Prometheus server (``prom+http://``) is read after the logs, chunk by chunk into the
store (``_add_prometheus``), the way recorded scrapes are: an endpoint whose log has stats
lines keeps them, and its series only fill the preemptions the lines do not print.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import tzinfo
from functools import cached_property
from typing import TYPE_CHECKING, Any, Iterable

import numpy  # noqa: F401, E402  (before the workers fork: they count newlines with it, and share it)

from pdwatch.parsers import Event
from pdwatch.events import parallel_scan
from pdwatch.model.deployment import DeploymentModel, EndpointSpec
from pdwatch.errors import NothingToJudge, UsageError, require_inputs, require_one_existing
from pdwatch.events.recognition import nothing_to_judge, unrecognised_notices
from pdwatch.events.stream import EventStream
from pdwatch.sources import READ_FAILURES, FileTail, PrometheusSource, PromOptions, SampleBlock, SourceNotice, \
    SourceSet, is_prom, is_ssh, is_url
from pdwatch.model.partial import UNSTORED_KINDS, Partial, fold_events, renumber
from pdwatch.session.heap import give_back_freed_memory

if TYPE_CHECKING:  # imported where used: the workers start reading before the parent has them
    import pandas as pd

    from pdwatch.capacity import ModelSpec
    from pdwatch.capacity import view as capacity_view
    from pdwatch.diagnosis import Diagnosis
    from pdwatch.model.store import Store
    from pdwatch.model.throughput import Headline
    from pdwatch.rules import Finding, Rule

_BATCH = 20_000
_MAX_STEPS = 3000  # a days-long run at 1 s is evaluated at a coarser step, not 86,400 times


@dataclass
class Analysis:
    paths: list[str]
    store: Store
    headline: Headline
    findings: list[Finding]
    rules: list[Rule]
    notices: list[SourceNotice] = field(default_factory=list)
    metrics_files: list[str] = field(default_factory=list)
    clock: tuple[pd.Timestamp, pd.Timestamp] | None = None
    capacity: capacity_view.CapacityView = field(default_factory=lambda: _capacity_view().CapacityView())
    # Inputs read with no vLLM or Dynamo server in them: what the commands say instead of a result.
    nothing_to_judge: NothingToJudge | None = None

    @property
    def failed_sources(self) -> list[SourceNotice]:
        return [n for n in self.notices if n.kind in READ_FAILURES]

    @cached_property
    def diagnosis(self) -> "Diagnosis":
        """The run's diagnosis (every firing period of it, the numbers up to its end), made once."""
        from pdwatch.diagnosis import diagnose
        return diagnose(self.store, self.findings, self.clock[1] if self.clock else None)


def _capacity_view():
    from pdwatch.capacity import view
    return view


class Reading:
    """The logs being read: on every core (the workers started by ``start_reading``), or here
    when ``into`` is called. ``close`` stops the workers of a read that will not be used."""

    def __init__(self, paths: list[str], year: int | None, tz: tzinfo | None) -> None:
        # A Prometheus server is no log to read here: ``analyse`` reads it after the logs.
        self.paths = [p for p in paths if not is_prom(p)]
        self.year, self.tz = year, tz
        self.sources = SourceSet(self.paths, follow=False)
        self.metrics_files: list[str] = []
        self._started: _OnEveryCore | None = None
        self.error: UsageError | None = None  # raised when the read is used: after the other arguments' errors
        try:
            try:
                if self.paths or len(self.paths) == len(paths):  # only servers: nothing local to require
                    require_inputs(self.sources, self.paths or list(paths))
                    require_one_existing(self.sources)
            except UsageError as exc:
                self.error = exc
                return
            self.metrics_files = self.sources.metrics_files
            files = _parallel_files(self.paths, self.sources)
            if files is not None:
                self.sources.close()
                self._started = _OnEveryCore(files, self.metrics_files, year, tz)
        except BaseException:
            self.close()
            raise

    def into(self, store: Store) -> list[SourceNotice]:
        """Read (or finish reading) into ``store``; the notices, in the sequential read's order."""
        if self.error is not None:
            raise self.error
        if self._started is None:
            return _read_here(store, self.sources, self.year, self.tz)
        started, self._started = self._started, None
        return started.into(store)

    def close(self) -> None:
        if self._started is not None:
            self._started.close()
            self._started = None
        self.sources.close()


def start_reading(paths: list[str], *, year: int | None = None, tz: tzinfo | None = None) -> Reading:
    """Start reading ``paths`` (on every core when they are big enough) before the rest of the
    analysis is even imported. A missing input is ``analyse``'s UsageError, raised there (after
    the rules' errors, as before)."""
    return Reading(paths, year, tz)


def import_the_rest() -> None:
    """Import what ``analyse`` and ``judge`` import when they need it (pandas, the store, the rules,
    the capacity arithmetic, the diagnosis): a command that holds Ctrl-C meanwhile calls it while
    the workers read."""
    from pdwatch.capacity import view  # noqa: F401
    from pdwatch.diagnosis import diagnose  # noqa: F401
    from pdwatch.model import store, throughput, topology_file  # noqa: F401
    from pdwatch.rules import RuleEngine  # noqa: F401


def analyse(paths: list[str], *, specs: Iterable[EndpointSpec] = (), rule_paths: list[str] | None = None,
            year: int | None = None, tz: tzinfo | None = None, rules: list[Rule] | None = None,
            model: ModelSpec | None = None, prom: PromOptions | None = None,
            reading: Reading | None = None) -> Analysis:
    """``prom``: the time range and step of the ``prom+http://`` paths (``--since``/``--until``/``--step``);
    ``reading``: the read ``start_reading`` started for these paths (else it starts here)."""
    reading = reading if reading is not None else start_reading(paths, year=year, tz=tz)
    try:
        from pdwatch.model.store import Store, searched_kinds
        from pdwatch.rules import load_rules

        rules = rules if rules is not None else load_rules(rule_paths)
        # Opening a server asks it for the range's series: unreachable, a bad selector or nothing
        # there ends the command now, with one line, before the logs are used.
        proms = [PrometheusSource(p, follow=False, options=prom) for p in dict.fromkeys(p for p in paths if is_prom(p))]
        if reading.error is not None:
            raise reading.error
        store = Store(DeploymentModel(specs), searched_kinds(rules))
        notices = reading.into(store)
    finally:
        reading.close()
    return judge(store, reading.sources, notices, rules=rules, paths=paths, model=model, proms=proms)


def judge(store: Store, sources: SourceSet, notices: list[SourceNotice], *, rules: list[Rule],
          paths: Iterable[str], model: ModelSpec | None = None,
          proms: list[PrometheusSource] = ()) -> Analysis:
    """The run read into ``store`` (its logs only), judged: recorded scrapes and Prometheus series
    added, capacity, the headline and every evaluation of the rule clock. ``analyse`` calls it on
    the files it read; a replay on the events it buffered, so that its end is the report's."""
    from pdwatch.capacity import view as capacity_view
    from pdwatch.model.throughput import headline
    from pdwatch.model.topology_file import unmatched_notices
    from pdwatch.rules import RuleEngine

    notices = list(notices)
    store.flush()
    # What the read freed (the workers' shipped rows, once merged into frames) lies in the heap
    # between live objects, resident; returned, the rules' sweep below does not stack on top of it
    # (the 24 h NVL72 run of bench_shapes.py --long: peak RSS 544-551 -> 427-464 MB, the trim 13 ms).
    give_back_freed_memory()
    notices += _add_recorded_metrics(store, sources.metrics_files)
    notices += _add_prometheus(store, list(proms))
    read = list(sources.sources) + list(sources.metrics_files) + [t for p in proms for t in p.targets]
    notices += unmatched_notices(store.model.specs, read, {s: l for p in proms for s, l in p.target_labels.items()})
    notices += [SourceNotice(src, "info", f"{src}: no vLLM or Dynamo server lines (only tracebacks or access "
                                            "lines): not an endpoint")
                for e in store.not_servers() for src in e.sources]
    unjudged = _nothing_to_judge(store, sources, notices)
    if unjudged is None:
        failed = {n.source for n in notices if n.kind in READ_FAILURES}
        notices += unrecognised_notices(sources.local_files, store.model.placed_sources(), failed)

    capacity = capacity_view.compute(store, model)  # before the rules: they read planned_concurrency
    endpoints = store.endpoints()
    result = headline(endpoints, {e.name: store.stats(e.name) for e in endpoints})
    engine = RuleEngine(rules)
    clock = _time_range(store)
    if clock is not None:
        # Every evaluation of the clock at once (rules.sweep): what stepping through them gives.
        from pdwatch.session.clock import rule_times
        engine.evaluate_series(store.view(), rule_times(evaluation_times(store, *clock)))
    # A user regex that timed out (rules.userregex): "rules.yaml:12: ..." on stderr and in the report.
    notices += [SourceNotice(m.split(":", 1)[0], "rules", m) for m in engine.notices]
    return Analysis(list(paths), store, result, engine.findings(), rules, notices,
                    sources.metrics_files, clock, capacity, unjudged)


def _nothing_to_judge(store: Store, sources: SourceSet, notices: list[SourceNotice]) -> NothingToJudge | None:
    """What to say when every input was read and none shows a vLLM or Dynamo server (None: there
    is something to judge, or an input could not be read: that is exit status 2's to say)."""
    if store.endpoints() or any(n.kind in READ_FAILURES for n in notices):
        return None
    read = list(sources.sources) + list(sources.metrics_files)
    return nothing_to_judge(read, not_servers=bool(store.not_servers()))


def _progress(message: str) -> None:
    """A long read (remote files over ssh) says how far it is, on stderr."""
    print(f"pdwatch: {message}", file=sys.stderr, flush=True)


def _read_here(store: Store, sources: SourceSet, year: int | None, tz: tzinfo | None) -> list[SourceNotice]:
    """The sequential read: one ``EventStream`` over every source, events in batches."""
    notices: list[SourceNotice] = []
    batch: list[Event] = []
    for item in EventStream(sources, year=year, tz=tz, skip_kinds=UNSTORED_KINDS, progress=_progress):
        if isinstance(item, SourceNotice):
            notices.append(item)
            continue
        batch.append(item)
        if len(batch) >= _BATCH:
            store.add(batch)
            batch = []
    store.add(batch)
    return notices


# --- the same read on every core ------------------------------------------------------------
#
# The sequential read takes the files one after the other, each to its end, and the
# scanners' ``finish`` events after all files. The store depends on the order of the
# events only within that sequence; each worker folds its file (or a piece of a big file,
# ``parallel_scan``) into ``store.Partial``s, shipped back instead of the events, and the
# parent merges them in the sequential order: the same store, the same notices.

MIN_PARALLEL_BYTES = 8 << 20  # below this, starting workers (~50 ms) costs more than it saves
SPLIT_MIN_BYTES = 8 << 20  # a file is scanned in pieces over this and over a quarter of a core's share
_MIN_PIECE_BYTES = 4 << 20

_WORKER: dict[str, Any] = {}


def _parallel_files(paths: list[str], sources: SourceSet) -> list[str] | None:
    """The files to read on every core, in the sequential order; None to read them here."""
    if any(is_url(p) or is_ssh(p) for p in paths) or parallel_scan.worker_count() < 2:
        return None
    files = sources.sources  # a replay of local paths: its files, sorted as they are read
    if not files or "-" in files or sum(map(_size, files)) < MIN_PARALLEL_BYTES:
        return None
    return files


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _read_on_every_core(store: Store, files: list[str], metrics_files: list[str], year: int | None,
                        tz: tzinfo | None) -> list[SourceNotice]:
    return _OnEveryCore(files, metrics_files, year, tz).into(store)


class _OnEveryCore:
    """The files read on every core: started on creation (the workers take the other files and
    the first pieces of the big ones at once), merged into a store, in the sequential order, by
    ``into``."""

    def __init__(self, files: list[str], metrics_files: list[str], year: int | None, tz: tzinfo | None) -> None:
        self.files = files
        workers = parallel_scan.worker_count()
        sizes = {path: _size(path) for path in files}
        share = sum(sizes.values()) // workers
        # The notices the sequential read gives first: each recorded scrape skipped as a log.
        self.notices = [n for n in SourceSet(metrics_files, follow=False).blocks() if isinstance(n, SourceNotice)]
        context = multiprocessing.get_context("fork")  # workers inherit the loaded parsers
        parallel_scan.tune_allocator()
        self.pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_init_worker,
                                        initargs=(year, tz))
        try:
            big = [path for path in files if sizes[path] >= max(SPLIT_MIN_BYTES, share // 4)]
            # The other files first, largest first: the workers start on them while this process
            # checks the big ones can be split (it reads their first megabyte); a big one that
            # cannot be goes to a worker whole at the end.
            self.wholes = {path: self.pool.submit(_read_file, path)
                           for path in sorted((p for p in files if p not in big), key=sizes.__getitem__, reverse=True)}
            self.scans: dict[str, tuple[list[SourceNotice], parallel_scan.FileScan]] = {}
            for path in big:
                started = _start_scan(path, self.pool, workers, year, tz)
                if started is None:
                    self.wholes[path] = self.pool.submit(_read_file, path)
                else:
                    self.scans[path] = started
        except BaseException:
            self.close()
            raise

    def into(self, store: Store) -> list[SourceNotice]:
        notices = self.notices
        try:
            finishes: list[Partial] = []
            ended: list[SourceNotice] = []  # what each file's reading found, after every file as the stream says it
            for path in self.files:
                if path in self.scans:
                    opened, scan = self.scans.pop(path)
                    last: list[Partial] = []
                    try:
                        for parts in scan:  # each piece's parts, then the finish's (merged as they come)
                            for part in last:
                                store.merge(part)
                            last = parts
                    except parallel_scan.NotSplittable:  # wrapped: nothing merged yet; read it whole
                        self.wholes[path] = self.pool.submit(_read_file, path)
                    else:
                        notices += opened
                        finishes += last
                        ended += scan.end_notices()
                        continue
                file_notices, parts, finish, found = self.wholes.pop(path).result()
                notices += file_notices
                ended += found
                for part in parts:
                    store.merge(part)
                finishes += finish
        finally:
            self.close()
        for part in finishes:  # after every file, as EventStream.finish
            store.merge(part)
        return notices + ended

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


def _start_scan(path: str, pool: ProcessPoolExecutor, workers: int, year: int | None,
                tz: tzinfo | None) -> tuple[list[SourceNotice], parallel_scan.FileScan] | None:
    """A big file's scan in pieces, started, with the notice its sequential read gives on
    opening it; None when it must be read as a whole (``NotSplittable``, or a notice other than
    "opened", as for NUL padding, that the pieces would not give)."""
    tail = FileTail(path, follow=False, chunk_size=1)  # opens it and reads a few bytes: its notices
    try:
        opened = [item for item in tail.poll() if isinstance(item, SourceNotice)]
    finally:
        tail.close()
    if [n.kind for n in opened] != ["opened"]:
        return None
    # Two pieces a worker at least: the last pieces of a file end nearly together.
    piece_bytes = min(parallel_scan._PIECE_BYTES, max(_MIN_PIECE_BYTES, _size(path) // (2 * workers)))
    try:
        # The first piece's worker judges whether the file is terminal-wrapped (its first result
        # then raises NotSplittable, before anything is merged): not this process, before any
        # worker could start.
        scan = parallel_scan.FileScan(path, year=year, tz=tz, render=fold_events, workers=workers,
                                      skip_kinds=UNSTORED_KINDS, renumber=renumber,
                                      piece_bytes=piece_bytes, finish_apart=True, probe=False)
        scan.start(pool)  # the pieces number their lines themselves (``renumber``): nothing to count first
    except (parallel_scan.NotSplittable, OSError):
        return None
    return opened, scan


def _init_worker(year: int | None, tz: tzinfo | None) -> None:
    # Forked while the command held Ctrl-C (its imports): a worker stops on it at once, as before.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _WORKER.update(year=year, tz=tz)


def _read_file(path: str) -> tuple[list[SourceNotice], list[Partial], list[Partial], list[SourceNotice]]:
    """One whole file as the sequential read takes it: its notices, its events folded, the
    folded events of its scanner's ``finish`` and what its reading found (``EventStream.end_notices``),
    both of which the sequential read gives after all files."""
    sources = SourceSet([path], follow=False)
    stream = EventStream(sources, year=_WORKER["year"], tz=_WORKER["tz"], skip_kinds=UNSTORED_KINDS)
    notices: list[SourceNotice] = []
    parts: list[Partial] = []
    batch: list[Event] = []
    for item in sources.blocks():
        if isinstance(item, SourceNotice):
            notices.append(item)
            continue
        batch += stream.events_of(item)
        if len(batch) >= _BATCH:
            parts += fold_events(batch)
            batch = []
    parts += fold_events(batch)
    return notices, parts, fold_events(stream.finish()), stream.end_notices()


def _add_recorded_metrics(store: Store, paths: list[str]) -> list[SourceNotice]:
    """Recorded /metrics scrapes fill the gap of endpoints whose logs print no stats lines.

    An endpoint given both its log and its scrapes stays one endpoint (``x.log`` and
    ``x.metrics.txt`` name the same one); its log's stats lines win, the scrapes are not
    added twice over them.
    """
    if not paths:
        return []
    from pdwatch.events.recorded import read_scrape_file  # prometheus_client: only for scrapes
    from pdwatch.sources.scrape_source import UNREAD_PAGE
    notices: list[SourceNotice] = []
    from pdwatch.sources.discovery import is_raw_prometheus
    for path in paths:
        try:
            events, errors, ports = read_scrape_file(path)
        except OSError as exc:
            notices.append(SourceNotice(path, "error", f"{path}: cannot be read: {exc.strerror or exc}"))
            continue
        if is_raw_prometheus(path):
            # a record skipped (a job killed mid-write cuts its last line) is told; the others are read
            notices += [SourceNotice(path, "info", e) for e in errors]
        else:
            notices += [SourceNotice(path, "error", f"{path}: {e}") for e in errors]
        if not events and not errors:
            notices.append(SourceNotice(path, "info", f"{path}: {UNREAD_PAGE}"))
        by_source: dict[str, list[Event]] = {}
        for event in events:
            by_source.setdefault(event.source, []).append(event)
        homes = _raw_record_homes(store, list(by_source), notices) if is_raw_prometheus(path) else {}
        for source, group in by_source.items():
            # A raw_prometheus record names its endpoint (role and worker index or node): the log it names.
            named = homes.get(source)
            # A scrape names its server's port; a log names the port its server listens on.
            port = ports.get(source)
            served = store.model.serving_port(port) if named is None else None
            if named is not None and source not in named.sources:
                store.model.attach(source, named)
                notices.append(SourceNotice(source, "info", f"{source}: the /metrics of {named.name} "
                                                             f"(its records' role and worker_id)"))
            elif served is not None and source not in served.sources:
                store.model.attach(source, served)
                notices.append(SourceNotice(source, "info", f"{source}: the /metrics of {served.name} "
                                                             f"(port {port}, as its log's args say)"))
            endpoint = store.model.endpoint_of(source)
            # A frontend's scrapes say what its log does not (TTFT, ITL, queued): both are kept.
            if endpoint.role != "frontend" and not store.stats(endpoint.name).empty and \
                    any(s != source for s in endpoint.sources):
                filled = _preemptions_from_scrapes(store, endpoint.name, group)
                told = f"; their preemption counts fill {filled} stats lines that print none" if filled else ""
                notices.append(SourceNotice(source, "info", f"{source}: {endpoint.name} has stats lines, which "
                                                             f"are used{told}"))
                continue
            endpoint.facts["stats_from_metrics"] = True
            store.add(group)
    store.flush()
    return notices


def _raw_record_homes(store: Store, sources: list[str], notices: list[SourceNotice]) -> dict[str, Any]:
    """The endpoint of each raw_prometheus record source (``FILE#decode_w0``, ``FILE#decode@node1:8081``)
    whose log was read: the one log it names; two workers of a role on one node (srt-slurm names a
    worker by its node) in the order of their ports, lowest to ``w0``, when as many ports as logs."""
    homes: dict[str, Any] = {}
    shared: dict[tuple[str, ...], list[str]] = {}  # the candidates' names -> the sources they could be
    for source in sources:
        found = store.model.raw_record_candidates(source)
        if len(found) == 1:
            homes[source] = found[0]
        elif len(found) > 1:
            shared.setdefault(tuple(sorted(e.name for e in found)), []).append(source)
    for names, group in shared.items():
        ports = sorted(group, key=lambda src: int(src.rsplit(":", 1)[1]) if src.rsplit(":", 1)[1].isdigit() else -1)
        if len(ports) != len(names):
            notices.append(SourceNotice(group[0], "info", f"{', '.join(group)}: {len(names)} logs of that role on "
                                                          f"that node ({', '.join(names)}), which is which is not known: "
                                                          f"endpoints of their own"))
            continue
        ordered = sorted(names, key=_worker_order)
        for source, name in zip(ports, ordered):
            homes[source] = store.model.endpoints[name]
        notices.append(SourceNotice(group[0], "info", f"{', '.join(ports)}: the /metrics of {', '.join(ordered)}, "
                                                      f"taken in the order of their ports (one node, the same role)"))
    return homes


def _worker_order(name: str) -> tuple[int, str]:
    index = name.rsplit("_w", 1)[-1]
    return (int(index) if index.isdigit() else 1 << 30, name)


def _add_prometheus(store: Store, proms: list[PrometheusSource]) -> list[SourceNotice]:
    """Each server's range, chunk by chunk into the store (what a chunk gave is folded before the
    next is asked for). As with recorded scrapes: an endpoint that has stats lines of its own
    keeps them, its series fill only the preemptions the lines leave unknown; the others are
    judged from the series (``stats_from_metrics``)."""
    notices: list[SourceNotice] = []
    if not proms:
        return notices
    with_lines = {e.name for e in store.endpoints() if not store.stats(e.name).empty}
    stream = EventStream(None)
    shadowed: dict[str, list[Event]] = {}  # endpoint -> its series' stats events (preemptions only)
    told: set[str] = set()
    clock = time.monotonic
    for prom in proms:
        told_at = clock()
        batch: list[Event] = []
        while True:
            items = prom.poll()
            for item in items:
                if isinstance(item, SourceNotice):
                    notices.append(item)
                    continue
                assert isinstance(item, SampleBlock)
                for event in stream.events_of(item):
                    endpoint = store.model.endpoint_of(event.source, event.labels)
                    if event.kind == "stats" and endpoint.name in with_lines:
                        if event.source not in told:
                            told.add(event.source)
                            notices.append(SourceNotice(event.source, "info", f"{event.source}: {endpoint.name} has "
                                                                              f"stats lines, which are used"))
                        shadowed.setdefault(endpoint.name, []).append(event)
                        continue
                    if event.kind == "stats":
                        endpoint.facts["stats_from_metrics"] = True
                    batch.append(event)
            if len(batch) >= _BATCH or prom.at_eof:
                store.add(batch)
                batch = []
                store.flush()  # a chunk's rows as frames: tuples of a 6 h range would be several times larger
            if clock() - told_at >= 5.0 and prom.progress():
                told_at = clock()
                _progress(prom.progress() or "")
            if prom.at_eof:
                break
    for name, events in shadowed.items():
        filled = _preemptions_from_scrapes(store, name, events)
        if filled:
            notices.append(SourceNotice(name, "info", f"{name}: its Prometheus series' preemption counts fill "
                                                      f"{filled} stats lines that print none"))
    store.flush()
    return notices


def _preemptions_from_scrapes(store: Store, name: str, scrapes: list[Event]) -> int:
    """The scrapes' preemption counts go to the log's stats lines that print none (preemption_fill)."""
    from pdwatch.session.preemption_fill import PreemptionFill
    return PreemptionFill().feed(store, name, scrapes)


def evaluation_times(store: Store, start: pd.Timestamp, end: pd.Timestamp) -> list[pd.Timestamp]:
    import pandas as pd

    intervals = [e.facts["stats_interval_s"] for e in store.endpoints() if e.facts.get("stats_interval_s")]
    step = min(intervals) if intervals else 10.0
    span = (end - start).total_seconds()
    step = max(step, span / _MAX_STEPS, 0.5)
    times = list(pd.date_range(start, end, freq=pd.Timedelta(seconds=step)))
    if not times or times[-1] < end:
        times.append(end)
    return times


def _time_range(store: Store) -> tuple[pd.Timestamp, pd.Timestamp] | None:
    stamps: list[pd.Timestamp] = []
    for endpoint in store.endpoints():
        for frame in (store.stats(endpoint.name), store.events(endpoint.name)):
            if not frame.empty:
                ts = frame["ts"].dropna()
                if not ts.empty:
                    stamps.extend((ts.min(), ts.max()))
    return (min(stamps), max(stamps)) if stamps else None
