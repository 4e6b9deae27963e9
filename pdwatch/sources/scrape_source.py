"""An ``http(s)://HOST:PORT[/metrics]`` argument as a live source: a thread scrapes it every interval.

``poll()`` never blocks: the thread queues each scrape (a ``ScrapeBlock``) or failure, and
``poll()`` turns them into items. Reachability is reported once per change of state:
``down`` ("…: unreachable (reason); retrying every 2 s") and ``up`` ("…: reachable again").
"""

from __future__ import annotations

import queue
import threading
import time
from datetime import datetime, timezone
from typing import Callable


from .records import ScrapeBlock, SourceNotice

Item = ScrapeBlock | SourceNotice
URL_SCHEMES = ("http://", "https://")
_QUEUE_SCRAPES = 32  # bounded: an unpolled source holds at most this many scrapes


def is_url(arg: str) -> bool:
    """A live HTTP source: a /metrics URL, or a Prometheus server (``prom+http://``) or one of its
    targets; their stats are scrapes, which an endpoint's own stats lines take over from."""
    return arg.lower().startswith(URL_SCHEMES + ("prom+http://", "prom+https://"))


# What a /metrics page with no series pdwatch reads is told (also for recorded scrapes).
UNREAD_PAGE = ("its /metrics page has no vllm: or dynamo_frontend_ series, the ones pdwatch reads "
               "(vLLM 0.32 started with --disable-log-stats serves none)")


class ScrapeSource:
    def __init__(self, url: str, *, interval: float = 2.0, timeout: float = 5.0,
                 fetch_text: Callable[[str, float], str] | None = None,
                 clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc)) -> None:
        self.url = url
        self.interval = interval
        self.timeout = min(timeout, max(interval, 1.0))  # a hung server must not delay the next scrape much
        self.up: bool | None = None  # None until the first attempt is known
        self._fetch = fetch_text
        self._clock = clock
        self._queue: queue.Queue[ScrapeBlock | str] = queue.Queue(_QUEUE_SCRAPES)  # str = failure reason
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._unread_page = False  # set by the scrape thread: a page with nothing pdwatch reads
        self._told_unread = False

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"pdwatch-scrape {self.url}", daemon=True)
            self._thread.start()

    def close(self) -> None:
        self._stop.set()

    def poll(self) -> list[Item]:
        self.start()
        out: list[Item] = []
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return out
            if isinstance(item, ScrapeBlock):
                if self.up is None:
                    out.append(SourceNotice(self.url, "opened", f"{self.url}: scraping every {self.interval:g} s"))
                elif not self.up:
                    out.append(SourceNotice(self.url, "up", f"{self.url}: reachable again"))
                self.up = True
                if self._unread_page and not self._told_unread:
                    self._told_unread = True
                    out.append(SourceNotice(self.url, "info", f"{self.url}: {UNREAD_PAGE}"))
                out.append(item)
            elif self.up is not False:
                self.up = False
                out.append(SourceNotice(self.url, "down",
                                        f"{self.url}: unreachable ({item}); retrying every {self.interval:g} s"))

    def _run(self) -> None:
        attempt = 0
        while not self._stop.is_set():
            began = time.monotonic()
            attempt += 1
            self._put(self._scrape(attempt))
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - began)))

    def _scrape(self, attempt: int) -> ScrapeBlock | str:
        # Imported on the first scrape: prometheus_client and urllib cost every parse of
        # plain files ~35 ms of start-up otherwise.
        from pdwatch.parsers.exposition import ExpositionError, parse_samples
        from pdwatch.sources.http import ScrapeError, fetch

        try:
            text = (self._fetch or fetch)(self.url, self.timeout)
            ts = self._clock()
            if not parse_samples(text):  # a page that is not an exposition counts as a failure, with its reason
                self._unread_page = True  # one without a series pdwatch reads is said once (poll)
        except ScrapeError as exc:
            return str(exc).removeprefix(f"{self.url}: ")
        except ExpositionError as exc:
            return str(exc)
        return ScrapeBlock(self.url, attempt, ts, text)

    def _put(self, item: ScrapeBlock | str) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.5)
                return
            except queue.Full:
                continue
