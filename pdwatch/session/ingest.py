"""The worker side of a live session: read the sources, parse, hand the events over.

``Ingest.read`` runs on a worker thread (the dashboard's, or the headless loop's): it takes
what the sources have, turns it into events and queues them under a lock. ``Ingest.take``,
on the thread that owns the store, empties the queue. The worker never touches the store.
"""

from __future__ import annotations

import threading
from typing import Iterator

from pdwatch.model.partial import without_text
from pdwatch.events.stream import EventStream
from pdwatch.parsers import Event
from pdwatch.sources import READ_FAILURES, LineBlock, SourceNotice, SourceSet


class Ingest:
    def __init__(self, sources: SourceSet, stream: EventStream, *, follow: bool) -> None:
        self.sources = sources
        self.stream = stream
        self.follow = follow
        self.read_failures = 0  # notices of inputs that could not be read (a replay then exits 2)
        self._lock = threading.Lock()
        self._events: list[Event] = []
        self._notices: list[SourceNotice] = []
        self._done = False
        self._items: Iterator | None = None

    @property
    def done(self) -> bool:
        """Replay: every source has been read to its end (follow mode: never)."""
        return self._done

    def read(self, max_items: int = 200) -> int:
        """Read up to ``max_items`` blocks/notices the sources have now; queue their events.

        Non-blocking when following. Returns how many items were read (0: nothing new, or the
        replay sources are exhausted; see ``done``).
        """
        if self._done:
            return 0
        events: list[Event] = []
        notices: list[SourceNotice] = []
        count = 0
        done = False
        if self.follow:
            for item in self.sources.poll():
                count += 1
                self._add(item, events, notices)
        else:
            if self._items is None:
                self._items = self.sources.blocks()
            try:
                while count < max_items:
                    item = next(self._items)
                    count += 1
                    self._add(item, events, notices)
            except StopIteration:
                events.extend(self.stream.finish())
                notices.extend(self.stream.end_notices())
                done = True
        with self._lock:
            self._events.extend(events)
            self._notices.extend(notices)
            self._done = self._done or done
        return count

    def run(self, stop: threading.Event, idle: float = 0.1, max_items: int = 200) -> None:
        """The worker loop: read until ``stop`` is set (or the replay sources are exhausted)."""
        while not stop.is_set():
            n = self.read(max_items)
            if self._done:
                return
            if n == 0:
                stop.wait(idle)

    def take(self) -> tuple[list[Event], list[SourceNotice], bool]:
        """The events and notices queued since the last call, and whether the sources are done."""
        with self._lock:
            events, self._events = self._events, []
            notices, self._notices = self._notices, []
            return events, notices, self._done

    def _add(self, item: LineBlock | SourceNotice, events: list[Event], notices: list[SourceNotice]) -> None:
        if isinstance(item, SourceNotice):
            notices.append(item)
            if item.kind in READ_FAILURES:
                self.read_failures += 1
        elif self.follow:
            events.extend(self.stream.events_of(item))
        else:  # a replay holds every event of its run, read well ahead of its clock: stats lines without their text
            events.extend(map(without_text, self.stream.events_of(item)))
