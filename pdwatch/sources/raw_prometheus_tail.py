"""srt-slurm's ``logs/raw_prometheus.jsonl`` followed as it grows (``pdwatch watch``): record by record.

srt-slurm's scraper appends one JSON record a line per scrape and endpoint
(``parsers/raw_prometheus.py``). A record is handed on as a ``ScrapeBlock`` (the item a live
``/metrics`` URL gives) once its newline has arrived (a half-written line waits, as for a log),
with source ``FILE#<endpoint>`` (``decode_w0``, ``frontend_0``) and line_no the record's line,
as ``pdwatch.events.raw_prometheus`` names them, so that a watch and a report give the same
endpoints. A line that is not a record is skipped and told (the first ``MAX_TOLD``, then counted
in one notice per poll that skipped more); a failed scrape (empty ``text``) is passed over. A ``.gz`` cannot grow:
it is read once, ``BATCH`` records a poll.
"""

from __future__ import annotations

import zlib
from typing import Iterator

from pdwatch.parsers.raw_prometheus import RecordError

from .discovery import source_of
from .file_tail import FileTail
from .jsonl import MAX_LINE_BYTES, iter_lines, open_lines
from .raw_records import Skipped, record_at
from .records import LineBlock, ScrapeBlock, SourceNotice

Item = LineBlock | ScrapeBlock | SourceNotice

BATCH = 500  # records a poll from a .gz


class RawPrometheusTail:
    def __init__(self, path: str, *, max_line_bytes: int, history: tuple[int, int] | None = None) -> None:
        self.path = path
        self._gz: Iterator[tuple[int, bytes | None]] | None = None
        self._tail: FileTail | None = None
        if path.lower().endswith(".gz"):
            self._gz = self._gz_lines()
        else:
            self._tail = FileTail(path, follow=True, max_line_bytes=max(max_line_bytes, MAX_LINE_BYTES),
                                  history=history)
        self._skipped = Skipped(path)

    def poll(self) -> list[Item]:
        out: list[Item] = []
        if self._gz is not None:
            for _ in range(BATCH):
                got = next(self._gz, None)
                if got is None:
                    self._gz = iter(())
                    break
                self._line(got[0], got[1], out)
            return out
        assert self._tail is not None
        for item in self._tail.poll():
            if not isinstance(item, LineBlock):
                out.append(item)  # opened, rotated, unreadable: said as for any file
                continue
            for offset, raw in enumerate(item.data.splitlines()):
                self._line(item.first_line_no + offset, raw, out)
        untold = self._skipped.untold()
        if untold is not None:
            out.append(SourceNotice(self.path, "error", untold))
        return out

    def close(self) -> None:
        if self._tail is not None:
            self._tail.close()

    def _gz_lines(self) -> Iterator[tuple[int, bytes | None]]:
        no = 0
        try:
            with open_lines(self.path) as f:
                for no, line in iter_lines(f):
                    yield no, line
        except (EOFError, OSError, zlib.error) as exc:
            yield 0, f"read stopped after line {no}: {exc or type(exc).__name__}".encode()

    def _line(self, line_no: int, raw: bytes | None, out: list[Item]) -> None:
        if line_no == 0 and raw is not None:  # the .gz reader's last word
            out.append(SourceNotice(self.path, "error", f"{self.path}: {raw.decode()}"))
            return
        try:
            record = record_at(line_no, raw)
        except RecordError as exc:
            self._skip(line_no, str(exc), out)
            return
        if record is not None and record.text.strip():
            out.append(ScrapeBlock(source_of(self.path, record.endpoint), line_no, record.ts, record.text))

    def _skip(self, line_no: int, why: str, out: list[Item]) -> None:
        told = self._skipped.skip(line_no, why)
        if told is not None:
            out.append(SourceNotice(self.path, "error", told))
