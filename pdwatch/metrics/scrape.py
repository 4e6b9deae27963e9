"""Poll vLLM ``http://HOST:PORT/metrics`` endpoints and turn each scrape into ``stats`` events.

API:

- ``fetch(url, timeout=5.0) -> str``: one GET (urllib), the exposition text; raises ``ScrapeError``.
- ``MetricsScraper(urls, interval=2.0, timeout=5.0, clock=None)``:
  - ``poll() -> list[Event]``: scrape every URL once, now (events of all URLs, in URL order);
    an unreachable URL or an unparsable body yields no events, is recorded in
    ``status[url]`` (``SourceStatus``: ``up``, ``error``, ``last_ts``, ``scrapes``) and the rest go on.
  - ``poll_texts()``: the same, but returns ``[(url, ts, text)]`` of the successful scrapes too
    (``pdwatch record`` saves those).
  - ``run(on_events, stop=threading.Event(), duration=None)``: poll every ``interval`` seconds
    until ``stop`` is set or ``duration`` seconds have passed; ``on_events(list[Event])`` gets each poll's events.
- Events have ``source=url``, ``line_no`` = the 1-based number of the attempt to scrape that URL, ``ts`` = the
  time the response arrived (UTC). Counter rates are per URL (``CounterState``).

URLs without a path get ``/metrics``; only http and https are accepted.
"""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable, Iterable

from parsers import Event

from .exposition import CounterState, ExpositionError, events_from_exposition
from .urls import normalize_url

_MAX_BYTES = 64 << 20  # a /metrics page is a few hundred KiB; refuse anything absurd


class ScrapeError(OSError):
    """The endpoint could not be scraped (connection, HTTP status, size, decoding)."""


def fetch(url: str, timeout: float = 5.0) -> str:
    request = urllib.request.Request(url, headers={"Accept": "text/plain;version=0.0.4", "User-Agent": "pdwatch"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (http/https only)
            body = response.read(_MAX_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise ScrapeError(f"{url}: HTTP {exc.code}") from exc
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ScrapeError(f"{url}: {reason}") from exc
    if len(body) > _MAX_BYTES:
        raise ScrapeError(f"{url}: response larger than {_MAX_BYTES} bytes")
    return body.decode("utf-8", errors="replace")


@dataclass
class SourceStatus:
    up: bool = False
    error: str | None = None
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
            except (ScrapeError, ExpositionError) as exc:
                status.up, status.error = False, str(exc)
                continue
            status.up, status.error, status.last_ts = True, None, ts
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
