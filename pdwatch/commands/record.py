"""``pdwatch record URL... --out DIR``: save timestamped ``/metrics`` scrapes in the recorded format.

Each URL gets ``DIR/<host>_<port>.metrics.txt``; each scrape is appended as one block, the header
``# ===== record t=EPOCH (ISO) port=N =====`` then the exposition, in a single ``write`` on an
``O_APPEND`` descriptor (a reader never sees half a header; a crash loses at most the scrape in
flight). ``pdwatch.events.recorded.read_recorded`` (and ``report`` once wired) reads the files back into the
same events a live scrape gives. Only scrapes prometheus_client can parse are saved; a URL that
cannot be scraped is told on stderr with its cause (refused, HTTP 500, not exposition text, ...),
once per change of cause, and when it is back; it is polled again every interval.

``record_once(scraper, files)`` and ``scrape_block(ts, port, text)`` are the reusable pieces.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlsplit

import regex

from pdwatch.commands import SUMMARIES
from pdwatch.parsers import Event
from pdwatch.errors import UsageError
from pdwatch.events.recorded import HEADER
from pdwatch.events.scraper import MetricsScraper
from pdwatch.sources.scrape_source import reachable_again, scrape_failed
from pdwatch.sources.urls import normalize_url

_UNSAFE = regex.compile(r"[^A-Za-z0-9.\-]+")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "record",
        help=SUMMARIES["record"],
        description="Scrape each URL (http://HOST:PORT/metrics; HOST:PORT is enough) every --interval seconds "
                    "and append each scrape, after a '# ===== record t=EPOCH (ISO) port=N =====' line, to "
                    "DIR/HOST_PORT.metrics.txt. Stops after --duration, or on Ctrl-C.")
    parser.add_argument("urls", nargs="+", metavar="URL", help="a vLLM /metrics endpoint")
    parser.add_argument("--out", required=True, metavar="DIR", help="directory for the *.metrics.txt files")
    parser.add_argument("--interval", type=float, default=5.0, metavar="S", help="seconds between scrapes (default 5)")
    parser.add_argument("--duration", default=None, metavar="S",
                        help="stop after this long: seconds, or 90s, 15m, 1h (default: until Ctrl-C)")
    parser.add_argument("--timeout", type=float, default=5.0, metavar="S", help="HTTP timeout per scrape (default 5)")
    parser.set_defaults(run=run)


def file_name(url: str) -> str:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    stem = f"{parts.hostname or 'host'}_{port}"
    if parts.path.rstrip("/") not in ("", "/metrics"):
        stem += "_" + parts.path.strip("/")
    return _UNSAFE.sub("_", stem).strip("_") + ".metrics.txt"


def url_port(url: str) -> int:
    parts = urlsplit(url)
    return parts.port or (443 if parts.scheme == "https" else 80)


def scrape_block(ts: datetime, port: int, text: str) -> bytes:
    """Header line + exposition, newline-terminated; a body line that looks like a header is neutralised."""
    ts = ts.astimezone(timezone.utc)
    iso = ts.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond // 1000:03d}Z"
    lines = [f"# ===== record t={ts.timestamp():.3f} ({iso}) port={port} ====="]
    lines += [("# " + line if HEADER.match(line) else line) for line in text.splitlines()]
    return ("\n".join(lines) + "\n").encode("utf-8")


def append_block(path: Path, block: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        view = memoryview(block)
        while view:
            written = os.write(fd, view)
            view = view[written:]
    finally:
        os.close(fd)


def record_once(scraper: MetricsScraper, files: dict[str, Path]) -> list[Event]:
    """Scrape every URL once, append each successful scrape to ``files[url]``; returns the live events."""
    events, texts = scraper.poll_texts()
    for url, ts, text in texts:
        append_block(files[url], scrape_block(ts, url_port(url), text))
    return events


def run(args: argparse.Namespace) -> int:
    from pdwatch.commands.simulate import parse_duration

    try:
        urls = [normalize_url(u) for u in args.urls]
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if args.interval <= 0 or args.timeout <= 0:
        raise UsageError("--interval and --timeout must be more than zero")
    duration = parse_duration(args.duration) if args.duration is not None else None
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {args.out}: {exc.strerror or exc}") from exc
    files: dict[str, Path] = {}
    for url in dict.fromkeys(urls):
        name, n = file_name(url), 2
        while out / name in files.values():
            name, n = file_name(url).replace(".metrics.txt", f"_{n}.metrics.txt"), n + 1
        files[url] = out / name
    scraper = MetricsScraper(list(files), interval=args.interval, timeout=args.timeout)
    told: dict[str, str | None] = {url: None for url in files}  # the cause told last
    stop = threading.Event()

    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        start = time.monotonic()
        while not stop.is_set():
            began = time.monotonic()
            record_once(scraper, files)
            for url, status in scraper.status.items():
                if status.cause != told[url]:
                    said = reachable_again(url) if status.error is None else \
                        scrape_failed(url, status.error, args.interval)
                    print(f"pdwatch record: {said}", file=sys.stderr)
                    told[url] = status.cause
            if duration is not None and time.monotonic() - start >= duration:
                break
            wait = args.interval - (time.monotonic() - began)
            if duration is not None:
                wait = min(wait, duration - (time.monotonic() - start))
            stop.wait(max(0.0, wait))
    except KeyboardInterrupt:
        pass
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    saved = {url: scraper.status[url].scrapes for url in files}
    for url, path in files.items():
        print(f"{path}: {saved[url]} scrape(s) of {url}", file=sys.stderr)
    return 0 if all(saved.values()) else 1
