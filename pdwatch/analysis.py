"""Post-mortem analysis: read finished logs, build the store, replay the rule clock.

The rules are evaluated at every stats interval from the first to the last timestamp
of the run, the same loop the live dashboard runs tick by tick, so a finding has the
start and end it would have had live.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import tzinfo
from typing import Iterable

import pandas as pd

from parsers import Event
from pdwatch import capacity_view
from pdwatch.capacity import ModelSpec
from pdwatch.deployment import DeploymentModel, EndpointSpec
from pdwatch.errors import require_inputs
from pdwatch.event_stream import EventStream
from pdwatch.metrics.recorded import read_recorded
from pdwatch.sources import SourceNotice, SourceSet
from pdwatch.store import Store
from pdwatch.throughput import Headline, headline
from rules import Finding, Rule, RuleEngine, load_rules

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
    capacity: capacity_view.CapacityView = field(default_factory=capacity_view.CapacityView)

    @property
    def failed_sources(self) -> list[SourceNotice]:
        return [n for n in self.notices if n.kind in {"missing", "error", "not_a_file"}]


def analyse(paths: list[str], *, specs: Iterable[EndpointSpec] = (), rule_paths: list[str] | None = None,
            year: int | None = None, tz: tzinfo | None = None, rules: list[Rule] | None = None,
            model: ModelSpec | None = None) -> Analysis:
    rules = rules if rules is not None else load_rules(rule_paths)
    sources = SourceSet(paths, follow=False)
    require_inputs(sources, paths)
    store = Store(DeploymentModel(specs))
    notices: list[SourceNotice] = []
    batch: list[Event] = []
    for item in EventStream(sources, year=year, tz=tz):
        if isinstance(item, SourceNotice):
            notices.append(item)
            continue
        batch.append(item)
        if len(batch) >= _BATCH:
            store.add(batch)
            batch = []
    store.add(batch)
    store.flush()
    notices += _add_recorded_metrics(store, sources.metrics_files)

    capacity = capacity_view.compute(store, model)  # before the rules: they read planned_concurrency
    endpoints = store.endpoints()
    result = headline(endpoints, {e.name: store.stats(e.name) for e in endpoints})
    engine = RuleEngine(rules)
    clock = _time_range(store)
    if clock is not None:
        view = store.view()
        for now in evaluation_times(store, *clock):
            engine.evaluate(view, now.floor("us").to_pydatetime())
    # A user regex that timed out (rules.userregex): "rules.yaml:12: ..." on stderr and in the report.
    notices += [SourceNotice(m.split(":", 1)[0], "rules", m) for m in engine.notices]
    return Analysis(list(paths), store, result, engine.findings(), rules, notices,
                    sources.metrics_files, clock, capacity)


def _add_recorded_metrics(store: Store, paths: list[str]) -> list[SourceNotice]:
    """Recorded /metrics scrapes fill the gap of endpoints whose logs print no stats lines.

    An endpoint given both its log and its scrapes stays one endpoint (``x.log`` and
    ``x.metrics.txt`` name the same one); its log's stats lines win, the scrapes are not
    added twice over them.
    """
    notices: list[SourceNotice] = []
    for path in paths:
        events, errors = read_recorded(path)
        notices += [SourceNotice(path, "error", f"{path}: {e}") for e in errors]
        by_source: dict[str, list[Event]] = {}
        for event in events:
            by_source.setdefault(event.source, []).append(event)
        for source, group in by_source.items():
            endpoint = store.model.endpoint_of(source)
            if not store.stats(endpoint.name).empty and any(s != source for s in endpoint.sources):
                notices.append(SourceNotice(source, "opened", f"{source}: {endpoint.name} has stats lines; "
                                                             "its recorded scrapes are not used"))
                continue
            endpoint.facts["stats_from_metrics"] = True
            store.add(group)
    store.flush()
    return notices


def evaluation_times(store: Store, start: pd.Timestamp, end: pd.Timestamp) -> list[pd.Timestamp]:
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
