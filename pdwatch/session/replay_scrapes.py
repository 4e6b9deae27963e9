"""Recorded ``/metrics`` scrapes in a replay, used as ``report`` uses them.

``report`` reads each recorded scrape file after the logs (``analysis._add_recorded_metrics``):
a group of scrapes whose endpoint has stats lines of its own only fills the preemption counts
those lines leave unknown; any other group (a frontend's, a server whose log prints no stats
line) is added to the endpoint's series. A replay plays the same inputs on its clock, so it
takes the same decisions, read off the run history (report's store, judged on a thread): the
added groups become buffered events, and the log's stats events get the preemptions report
gave their rows. The replay's findings then end where report's do.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from pdwatch.parsers import Event


@dataclass
class ReplayScrapes:
    events: list[Event] = field(default_factory=list)  # the scrape groups report added to the series
    homes: dict[str, str] = field(default_factory=dict)  # their source -> the endpoint report gave it
    # endpoint -> {(engine, ts): preemptions}: what report's rows got from the shadowed scrapes
    preemptions: dict[str, dict[tuple[int, Any], float]] = field(default_factory=dict)

    def patch(self, event: Event, endpoint: str) -> Event:
        """A log stats event with the preemptions report's row of it got from the scrapes."""
        filled = self.preemptions.get(endpoint)
        if not filled or event.kind != "stats" or event.values.get("preemptions") is not None:
            return event
        value = filled.get((0 if event.engine is None else event.engine, event.ts))
        return event if value is None else replace(event, values={**event.values, "preemptions": value})


def replay_scrapes(analysis: Any) -> ReplayScrapes:
    """What a replay adds and fills from the recorded scrapes of ``analysis`` (report's, judged)."""
    from pdwatch.events.recorded import read_scrape_file  # prometheus_client: only for scrapes
    out = ReplayScrapes()
    store, model = analysis.store, analysis.store.model
    for path in analysis.metrics_files:
        try:
            events, _errors, _ports = read_scrape_file(path)
        except OSError:
            continue  # report said why; the replay goes on without it
        by_source: dict[str, list[Event]] = {}
        for event in events:
            by_source.setdefault(event.source, []).append(event)
        for source, group in by_source.items():
            endpoint = model.known(source)
            if endpoint is None:
                continue
            shadowed = endpoint.role != "frontend" and not endpoint.facts.get("stats_from_metrics") and \
                any(s != source for s in endpoint.sources)
            if not shadowed:
                out.events += group
                out.homes[source] = endpoint.name
            elif endpoint.name not in out.preemptions:
                stats = store.stats(endpoint.name)
                known = stats[stats["preemptions"].notna()] if "preemptions" in stats else stats.iloc[:0]
                out.preemptions[endpoint.name] = {
                    (int(engine), ts.to_pydatetime()): float(value)
                    for engine, ts, value in zip(known["engine"], known["ts"], known["preemptions"])}
    return out
