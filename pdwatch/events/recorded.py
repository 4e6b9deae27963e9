"""Recorded ``/metrics`` scrape files -> the ``stats`` events of ``exposition``.

A recorded file holds scrapes one after another, each after a header line
``# ===== <free text> t=EPOCH (ISO) port=N =====`` (``port=`` optional); this is what the
real-scrape recorder, the simulator (``pdwatch.sim.metrics.banner``) and ``pdwatch record``
write. Text before the first header is ignored.

API:

- ``split_scrapes(text) -> list[RecordedScrape]``: the scrapes (header line number, time, port, body).
- ``read_recorded_text(text, source, state=None) -> (events, errors)``: events in file order
  (scrape by scrape, engines ascending); a scrape prometheus_client cannot parse is skipped
  and described in ``errors``.
- ``read_recorded(path, source=None) -> (events, errors)``: the same for a file.
- ``read_scrape_file(path) -> (events, errors, ports)``: a ``*.metrics.txt`` or srt-slurm's
  ``raw_prometheus.jsonl[.gz]`` (``pdwatch.events.raw_prometheus``), by its name.

Event ``source``: the path (or ``source``) when the file holds one port; when it holds scrapes
of several servers (the real s10b file: ports 8421 and 8422) each port's events get
``f"{source}#port={port}"`` so that their counters and endpoints stay apart.
``line_no`` is the 1-based line of the scrape's header, ``ts`` its ``t=`` time (UTC).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime


from pdwatch.parsers import Event

from pdwatch.parsers.exposition import CounterState, ExpositionError, events_from_exposition

from pdwatch.parsers.recorded_header import HEADER, parse_header  # noqa: F401  (HEADER: pdwatch record's)


@dataclass(frozen=True)
class RecordedScrape:
    line_no: int  # 1-based line of the header
    ts: datetime
    port: int | None
    header: str
    body: str


def split_scrapes(text: str) -> list[RecordedScrape]:
    scrapes: list[RecordedScrape] = []
    current: tuple[int, datetime, int | None, str] | None = None
    body: list[str] = []
    for no, line in enumerate(text.splitlines(), 1):
        header = parse_header(line)
        if header is None:
            if current is not None:
                body.append(line)
            continue
        if current is not None:
            scrapes.append(RecordedScrape(*current, "\n".join(body) + "\n"))
        current = (no, *header, line.strip())
        body = []
    if current is not None:
        scrapes.append(RecordedScrape(*current, "\n".join(body) + "\n"))
    return scrapes


def read_recorded_text(text: str, source: str, state: CounterState | None = None) -> tuple[list[Event], list[str]]:
    state = state if state is not None else CounterState()
    scrapes = split_scrapes(text)
    several = len({s.port for s in scrapes}) > 1
    events: list[Event] = []
    errors: list[str] = []
    for scrape in scrapes:
        src = f"{source}#port={scrape.port}" if several and scrape.port is not None else source
        try:
            events.extend(events_from_exposition(scrape.body, source=src, ts=scrape.ts, line_no=scrape.line_no,
                                                 state=state, header=scrape.header))
        except ExpositionError as exc:
            errors.append(f"{source}:{scrape.line_no}: scrape skipped: {exc}")
    return events, errors


def read_recorded(path: str | os.PathLike[str], source: str | None = None) -> tuple[list[Event], list[str]]:
    events, errors, _ = read_recorded_with_ports(path, source)
    return events, errors


def read_recorded_with_ports(path: str | os.PathLike[str], source: str | None = None
                             ) -> tuple[list[Event], list[str], dict[str, int]]:
    """``read_recorded``, and the server port of each event source (from the scrapes' headers)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    name = source if source is not None else os.fspath(path)
    events, errors = read_recorded_text(text, name)
    ports = {s.port for s in split_scrapes(text) if s.port is not None}
    by_source = {name: next(iter(ports))} if len(ports) == 1 else {f"{name}#port={p}": p for p in ports}
    return events, errors, by_source


def read_scrape_file(path: str | os.PathLike[str], source: str | None = None
                     ) -> tuple[list[Event], list[str], dict[str, int]]:
    """A recorded scrape file of either shape: srt-slurm's ``raw_prometheus.jsonl[.gz]`` (one JSON
    record a line, ``pdwatch.events.raw_prometheus``) or a ``*.metrics.txt`` (``read_recorded_with_ports``)."""
    from pdwatch.sources.discovery import is_raw_prometheus
    if is_raw_prometheus(path):
        from pdwatch.events.raw_prometheus import read_raw_prometheus
        return read_raw_prometheus(path, source)
    return read_recorded_with_ports(path, source)
