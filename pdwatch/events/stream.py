"""Sources -> parsers: one ``LogScanner`` per log source, events in arrival order.

This is the only place that joins the two stages; parse, report and watch all
read events from here. A ``/metrics`` scrape (``ScrapeBlock``) becomes ``stats`` events
through ``pdwatch.parsers.exposition``, with one ``CounterState`` per URL for the rates; a
Prometheus server's scrape of a target (``SampleBlock``: the same samples, parsed) takes
the same way (``events_from_samples``), with one ``CounterState`` per target; its events
carry the target's labels (``Event.labels``), which the deployment model reads.
"""

from __future__ import annotations

import os
from datetime import tzinfo
from typing import Any, Callable, Iterator

from pdwatch.parsers import Event, LogScanner
from pdwatch.sources import LineBlock, SampleBlock, ScrapeBlock, SourceNotice, SourceSet
from pdwatch.sources.records import reading_notices


class EventStream:
    def __init__(self, sources: SourceSet | None, *, year: int | None = None, tz: tzinfo | None = None,
                 skip_kinds: frozenset[str] = frozenset(), progress: Callable[[str], None] | None = None,
                 json_lines: bool = False) -> None:
        """``skip_kinds``: event kinds the reader has no use for (see ``LogScanner``); ``progress``
        hears how far the remote sources are (``SourceSet.blocks``). ``sources`` None: a stream
        fed by ``events_of`` only. ``json_lines`` (``pdwatch parse``): the lines the scanners'
        direct lanes read come as their JSON lines (bytes), not as events (``LogScanner``)."""
        self._json_lines = json_lines
        self._sources = sources
        self._progress = progress
        self._skip_kinds = frozenset(skip_kinds)
        self._year = year
        self._tz = tz
        self._scanners: dict[str, tuple[int, LogScanner]] = {}
        self._counters: dict[str, Any] = {}  # per URL: the previous scrape's counters (CounterState)
        self.recognised: set[str] = set()  # the sources that gave at least one event

    def __iter__(self) -> Iterator[Event | SourceNotice]:
        assert self._sources is not None, "a stream without sources is fed by events_of"
        for item in self._sources.blocks(progress=self._progress):
            if isinstance(item, SourceNotice):
                yield item
                continue
            yield from self.events_of(item)
        yield from self.finish()
        yield from self.end_notices()

    def events_of(self, block: LineBlock | ScrapeBlock | SampleBlock) -> list[Event]:
        out = self._events_of(block)
        if out:
            self.recognised.add(block.source)
        return out

    def _events_of(self, block: LineBlock | ScrapeBlock | SampleBlock) -> list[Event]:
        if isinstance(block, ScrapeBlock):
            return self._scrape_events(block)
        if isinstance(block, SampleBlock):
            return self._sample_events(block)
        out: list[Event] = []
        entry = self._scanners.get(block.source)
        if entry is None:
            scanner = self._new_scanner(block.source)
        else:
            generation, scanner = entry
            if generation != block.generation:
                out.extend(scanner.reset())  # truncated or rotated: line numbers restart
        self._scanners[block.source] = (block.generation, scanner)
        out.extend(scanner.feed(block.data, block.first_line_no))
        return out

    def _scrape_events(self, block: ScrapeBlock) -> list[Event]:
        # Imported here: prometheus_client's parser is 30 ms of every parse's start otherwise.
        from pdwatch.parsers.exposition import CounterState, ExpositionError, events_from_exposition

        state = self._counters.setdefault(block.source, CounterState())
        try:
            return events_from_exposition(block.text, source=block.source, ts=block.ts,
                                          line_no=block.scrape_no, state=state)
        except ExpositionError:
            return []  # the scrape source checked it parses; nothing to add if it still does not

    def _sample_events(self, block: SampleBlock) -> list[Event]:
        from pdwatch.parsers.exposition import CounterState, events_from_samples

        state = self._counters.setdefault(block.source, CounterState())
        events = events_from_samples(block.samples, source=block.source, ts=block.ts, line_no=block.scrape_no,
                                     state=state, header=f"scrape {block.ts:%Y-%m-%dT%H:%M:%S.%f}"[:-3] + "Z")
        labels = block.labels
        for event in events:  # made here, shared with no one: the target's labels go with them
            event.labels = labels
        if block.role is not None:  # the target's labels name its role (role, which label)
            role, said = block.role
            events.insert(0, Event(kind="role_hint", source=block.source, line_no=block.scrape_no, ts=block.ts,
                                   engine=None, level=None, values={"role": role, "origin": "prometheus label"},
                                   text=f"{said}: role {role}", labels=labels))
        return events

    def finish(self) -> list[Event]:
        out: list[Event] = []
        for source, (_, scanner) in self._scanners.items():
            events = scanner.finish()
            if events:
                self.recognised.add(source)
            out.extend(events)
        return out

    def end_notices(self) -> list[SourceNotice]:
        """After ``finish``: what each log's reading found (``reading_notices``): the pieces of
        lines a terminal had cut, rejoined, and the lines that are not valid UTF-8."""
        return [notice for source, (_, scanner) in self._scanners.items()
                for notice in reading_notices(source, wrap_widths=scanner.wrap_widths, rejoined=scanner.rejoined_lines,
                                              undecodable=scanner.undecodable_lines)]

    def _new_scanner(self, source: str) -> LogScanner:
        mtime = None
        if source != "-":
            try:
                mtime = os.stat(source).st_mtime
            except OSError:
                mtime = None
        return LogScanner(source, year=self._year, tz=self._tz, mtime=mtime, skip_kinds=self._skip_kinds,
                          json_lines=self._json_lines)
