"""Sources -> parsers: one ``LogScanner`` per log source, events in arrival order.

This is the only place that joins the two stages; parse, report and watch all
read events from here. A ``/metrics`` scrape (``ScrapeBlock``) becomes ``stats`` events
through ``pdwatch.parsers.exposition``, with one ``CounterState`` per URL for the rates.
"""

from __future__ import annotations

import os
from datetime import tzinfo
from typing import Any, Callable, Iterator

from pdwatch.parsers import Event, LogScanner
from pdwatch.sources import LineBlock, ScrapeBlock, SourceNotice, SourceSet


class EventStream:
    def __init__(self, sources: SourceSet, *, year: int | None = None, tz: tzinfo | None = None,
                 skip_kinds: frozenset[str] = frozenset(), progress: Callable[[str], None] | None = None) -> None:
        """``skip_kinds``: event kinds the reader has no use for (see ``LogScanner``); ``progress``
        hears how far the remote sources are (``SourceSet.blocks``)."""
        self._sources = sources
        self._progress = progress
        self._skip_kinds = frozenset(skip_kinds)
        self._year = year
        self._tz = tz
        self._scanners: dict[str, tuple[int, LogScanner]] = {}
        self._counters: dict[str, Any] = {}  # per URL: the previous scrape's counters (CounterState)

    def __iter__(self) -> Iterator[Event | SourceNotice]:
        for item in self._sources.blocks(progress=self._progress):
            if isinstance(item, SourceNotice):
                yield item
                continue
            yield from self.events_of(item)
        yield from self.finish()

    def events_of(self, block: LineBlock | ScrapeBlock) -> list[Event]:
        if isinstance(block, ScrapeBlock):
            return self._scrape_events(block)
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

    def finish(self) -> list[Event]:
        out: list[Event] = []
        for _, scanner in self._scanners.values():
            out.extend(scanner.finish())
        return out

    def _new_scanner(self, source: str) -> LogScanner:
        mtime = None
        if source != "-":
            try:
                mtime = os.stat(source).st_mtime
            except OSError:
                mtime = None
        return LogScanner(source, year=self._year, tz=self._tz, mtime=mtime, skip_kinds=self._skip_kinds)
