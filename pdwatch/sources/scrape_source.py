"""An ``http(s)://HOST:PORT[/metrics]`` argument as a live source: a thread scrapes it every interval.

``poll()`` never blocks: the thread queues each scrape (a ``ScrapeBlock``) or failure (a
``ScrapeError``), and ``poll()`` turns them into items. A failure is told once per cause, with
that cause (``down``: "…: scrape failed: HTTP 500 Internal Server Error; retrying every 2 s"):
a new cause (refused, then HTTP 500) is told again, the same one never twice in a row; the
recovery once (``up``: "…: reachable again").

A page counts as scraped only when it parses as an exposition (the parser's check, in this
thread: the layers allow sources to call parsers, and the up/down state lives here); one
that does not is a failure named by what it looks like (``page_shape.not_exposition``).
"""

from __future__ import annotations

import queue
import threading
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Callable


from .records import ScrapeBlock, SourceNotice

if TYPE_CHECKING:
    from .http import ScrapeError

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


def scrape_failed(url: str, reason: str, interval: float) -> str:
    """The line that tells a failure of a /metrics URL (watch's notice, record's stderr)."""
    return f"{url}: scrape failed: {reason}; retrying every {interval:g} s"


def reachable_again(url: str) -> str:
    return f"{url}: reachable again"


class ScrapeSource:
    def __init__(self, url: str, *, interval: float = 2.0, timeout: float = 5.0,
                 fetch_text: Callable[[str, float], str] | None = None,
                 clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc)) -> None:
        self.url = url
        self.interval = interval
        self.timeout = min(timeout, max(interval, 1.0))  # a hung server must not delay the next scrape much
        self.up: bool | None = None  # None until the first attempt is known
        self.cause: str | None = None  # the cause of the failure told last, while down
        self._fetch = fetch_text
        self._clock = clock
        self._queue: queue.Queue[ScrapeBlock | ScrapeError] = queue.Queue(_QUEUE_SCRAPES)
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
                    out.append(SourceNotice(self.url, "up", reachable_again(self.url)))
                self.up, self.cause = True, None
                if self._unread_page and not self._told_unread:
                    self._told_unread = True
                    out.append(SourceNotice(self.url, "info", f"{self.url}: {UNREAD_PAGE}"))
                out.append(item)
            elif self.up is not False or item.cause != self.cause:  # down, or down for another reason
                self.up, self.cause = False, item.cause
                out.append(SourceNotice(self.url, "down", scrape_failed(self.url, item.reason, self.interval)))

    def _run(self) -> None:
        attempt = 0
        while not self._stop.is_set():
            began = time.monotonic()
            attempt += 1
            self._put(self._scrape(attempt))
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - began)))

    def _scrape(self, attempt: int) -> ScrapeBlock | ScrapeError:
        # Imported on the first scrape: prometheus_client and urllib cost every parse of
        # plain files ~35 ms of start-up otherwise.
        from pdwatch.parsers.exposition import ExpositionError, parse_samples
        from pdwatch.sources.http import ScrapeError, fetch
        from pdwatch.sources.http_failures import Failure
        from pdwatch.sources.page_shape import not_exposition
        from pdwatch.sources.shown import escaped

        try:
            text = (self._fetch or fetch)(self.url, self.timeout)
            ts = self._clock()
            if not parse_samples(text):  # a page that is not an exposition counts as a failure, with its reason
                self._unread_page = True  # one without a series pdwatch reads is said once (poll)
        except ScrapeError as exc:
            return exc
        except ExpositionError as exc:
            return ScrapeError(self.url, not_exposition(text, str(exc)))
        except Exception as exc:  # noqa: BLE001 (a thread that died would never tell anything again)
            return ScrapeError(self.url, Failure("error", f"{type(exc).__name__}: {escaped(str(exc), 200)}"))
        return ScrapeBlock(self.url, attempt, ts, text)

    def _put(self, item: ScrapeBlock | ScrapeError) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.5)
                return
            except queue.Full:
                continue
