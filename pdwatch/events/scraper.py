"""Poll vLLM ``http://HOST:PORT/metrics`` endpoints and turn each scrape into ``stats`` events.

API:

- ``MetricsScraper(urls, interval=2.0, timeout=5.0, clock=None)``:
  - ``poll() -> list[Event]``: scrape every URL once, now (events of all URLs, in URL order);
    a URL that cannot be scraped yields no events; its failure is kept in ``status[url]``
    (``SourceStatus``: ``up``, ``cause``, ``error``, ``last_ts``, ``scrapes``) and the rest go on.
    ``cause`` is the kind of failure (``refused``, ``http 500``, ``not_exposition html``, ...),
    ``error`` says it in one line (``pdwatch.sources.http``: connection refused, DNS, timed out,
    TLS, HTTP status, not exposition text, empty, too large), both None while it is up.
  - ``poll_texts()``: the same, but returns ``[(url, ts, text)]`` of the successful scrapes too
    (``pdwatch record`` saves those).
  - ``run(on_events, stop=threading.Event(), duration=None)``: poll every ``interval`` seconds
    until ``stop`` is set or ``duration`` seconds have passed; ``on_events(list[Event])`` gets each poll's events.
- Events have ``source=url``, ``line_no`` = the 1-based number of the attempt to scrape that URL, ``ts`` = the
  time the response arrived (UTC). Counter rates are per URL (``CounterState``).

URLs without a path get ``/metrics``; only http and https are accepted. The GET itself is
``pdwatch.sources.http.fetch``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable, Iterable

from pdwatch.parsers import Event
from pdwatch.parsers.exposition import CounterState, ExpositionError, events_from_exposition
from pdwatch.sources.http import ScrapeError, fetch
from pdwatch.sources.page_shape import not_exposition
from pdwatch.sources.urls import normalize_url


@dataclass
class SourceStatus:
    up: bool = False
    cause: str | None = None  # the kind of the last failure: a change is worth telling
    error: str | None = None  # the last failure in one line, without the URL
    last_ts: datetime | None = None
    scrapes: int = 0  # successful ones


class MetricsScraper:
    def __init__(self, urls: Iterable[str], *, interval: float = 2.0, timeout: float = 5.0,
                 clock: Callable[[], datetime] | None = None) -> None:
        self.urls = [normalize_url(u) for u in urls]
        if interval <= 0 or timeout <= 0:
            raise ValueError("interval and timeout must be more than zero")
        self.interval = interval
        self.timeout = timeout
        self.clock = clock or (lambda: datetime.now(timezone.utc))
        self.state = CounterState()
        self.status = {url: SourceStatus() for url in self.urls}
        self._attempts = {url: 0 for url in self.urls}

    def poll_texts(self) -> tuple[list[Event], list[tuple[str, datetime, str]]]:
        events: list[Event] = []
        texts: list[tuple[str, datetime, str]] = []
        for url in self.urls:
            status = self.status[url]
            self._attempts[url] += 1
            try:
                text = fetch(url, self.timeout)
                ts = self.clock()
                new = events_from_exposition(text, source=url, ts=ts, line_no=self._attempts[url], state=self.state)
            except ScrapeError as exc:
                status.up, status.cause, status.error = False, exc.cause, exc.reason
                continue
            except ExpositionError as exc:
                status.up = False
                status.cause, status.error = not_exposition(text, str(exc))
                continue
            status.up, status.cause, status.error, status.last_ts = True, None, None, ts
            status.scrapes += 1
            events.extend(new)
            texts.append((url, ts, text))
        return events, texts

    def poll(self) -> list[Event]:
        return self.poll_texts()[0]

    def run(self, on_events: Callable[[list[Event]], None], stop: threading.Event | None = None,
            duration: float | None = None) -> None:
        stop = stop or threading.Event()
        start = time.monotonic()
        while not stop.is_set():
            began = time.monotonic()
            on_events(self.poll())
            if duration is not None and time.monotonic() - start >= duration:
                return
            wait = max(0.0, self.interval - (time.monotonic() - began))
            if duration is not None:
                wait = min(wait, max(0.0, duration - (time.monotonic() - start)))
            stop.wait(wait)
