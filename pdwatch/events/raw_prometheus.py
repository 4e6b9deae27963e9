"""srt-slurm's ``logs/raw_prometheus.jsonl[.gz]`` -> the ``stats`` events of ``exposition``, per endpoint.

Each line is one scrape of one endpoint (``parsers/raw_prometheus.py``). The file is read line by
line, a ``.gz`` through ``gzip`` as it decompresses: memory holds one line and the events, never the
file (a long job's file is GBs; its events are a few per scrape).

Event ``source``: ``f"{path}#{endpoint}"`` (``logs/raw_prometheus.jsonl#decode_w0``), the endpoint
named as pdwatch names the log of the same process (``<node>_decode_w0.out`` is ``decode_w0``,
``<node>_frontend_0.out`` is ``frontend_0``), so that a record joins its worker's log as a
``x.metrics.txt`` joins ``x.out``. ``line_no`` is the record's line in the file, ``ts`` its
``timestamp_ns``. Evidence shows the file and line (``evidence_source``: the ``#endpoint`` dropped).

A line that is not a record (cut off, not JSON, a field missing) or whose exposition cannot be
parsed is skipped and told in one line each (the first ``MAX_TOLD``, then one line counting the
rest); a failed scrape (empty ``text``, the scraper's ``error``) is counted in one line.
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass, field

from pdwatch.parsers import Event
from pdwatch.parsers.exposition import CounterState, ExpositionError, events_from_exposition
from pdwatch.parsers.raw_prometheus import RawRecord, RecordError, header
from pdwatch.sources.discovery import source_of
from pdwatch.sources.jsonl import iter_lines, open_lines
from pdwatch.sources.raw_records import MAX_TOLD, Skipped, record_at  # noqa: F401  (MAX_TOLD: its tests)


@dataclass
class RawReader:
    """Turns records into events, one counter state across them (each endpoint's counters apart)."""

    path: str
    state: CounterState = field(default_factory=CounterState)
    ports: dict[str, int] = field(default_factory=dict)  # source -> the port of its endpoint_url
    failed_scrapes: int = 0
    notices: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.skipped = Skipped(self.path)

    def line(self, line_no: int, line: bytes | None) -> list[Event]:
        try:
            record = record_at(line_no, line)
        except RecordError as exc:
            self._skip(line_no, str(exc))
            return []
        return self.record(record) if record is not None else []

    def record(self, record: RawRecord) -> list[Event]:
        if not record.text.strip():
            self.failed_scrapes += 1
            return []
        source = source_of(self.path, record.endpoint)
        if record.port is not None:
            self.ports.setdefault(source, record.port)
        try:
            return events_from_exposition(record.text, source=source, ts=record.ts, line_no=record.line_no,
                                          state=self.state, header=header(record))
        except ExpositionError as exc:
            self._skip(record.line_no, str(exc))
            return []

    def _skip(self, line_no: int, why: str) -> None:
        told = self.skipped.skip(line_no, why)
        if told is not None:
            self.notices.append(told)

    def summary(self) -> list[str]:
        """The notices: each skipped line (up to ``MAX_TOLD``), the rest and the failed scrapes counted."""
        out = list(self.notices)
        untold = self.skipped.untold()
        if untold is not None:
            out.append(untold)
        if self.failed_scrapes:
            out.append(f"{self.path}: {self.failed_scrapes} failed scrape(s) (no text) skipped")
        return out


def read_raw_prometheus(path: str | os.PathLike[str], source: str | None = None
                        ) -> tuple[list[Event], list[str], dict[str, int]]:
    """Every record's events in file order, the notices, and the port of each event source.

    ``source`` names the file in sources and notices (default: the path). OSError if it cannot be
    opened; a ``.gz`` cut short or corrupt ends the read with a notice, what came before kept."""
    name = source if source is not None else os.fspath(path)
    reader = RawReader(name)
    events: list[Event] = []
    with open_lines(path) as f:
        no = 0
        try:
            for no, line in iter_lines(f):
                events += reader.line(no, line)
        except (EOFError, OSError, zlib.error) as exc:  # gzip: cut short, or not gzip at all
            reader.notices.append(f"{name}: read stopped after line {no}: {exc or type(exc).__name__}")
    return events, reader.summary(), dict(reader.ports)

