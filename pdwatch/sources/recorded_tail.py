"""A recorded ``/metrics`` file followed as it grows (``pdwatch watch``): scrape by scrape.

``pdwatch record`` and the capture kits append one scrape at a time, each after a header line
``# ===== ... t=EPOCH ... port=N =====``. A scrape is handed on as a ``ScrapeBlock`` (the same
item a live ``/metrics`` URL gives) once the next header arrives, or once the file has been
quiet for a poll after it (a recorder writes a scrape in one go). Its source is the path, or
``path#port=N`` when the file holds the scrapes of several servers, as ``events.recorded``
names them, so a watch and a report give the same endpoints.
"""

from __future__ import annotations

from datetime import datetime

from pdwatch.parsers.recorded_header import parse_header

from .file_tail import FileTail
from .records import LineBlock, ScrapeBlock, SourceNotice

Item = LineBlock | ScrapeBlock | SourceNotice

HEADER_START = b"# ====="


class RecordedTail:
    def __init__(self, path: str, *, max_line_bytes: int, history: tuple[int, int] | None = None) -> None:
        self.path = path
        self._tail = FileTail(path, follow=True, max_line_bytes=max_line_bytes, history=history)
        self._header: tuple[int, datetime, int | None] | None = None  # the open scrape's line, time, port
        self._body: list[str] = []
        self._ports: set[int] = set()

    def poll(self) -> list[Item]:
        out: list[Item] = []
        got_lines = False
        for item in self._tail.poll():
            if not isinstance(item, LineBlock):
                out.append(item)  # opened, rotated, unreadable: said as for any file
                continue
            got_lines = True
            for offset, raw in enumerate(item.data.splitlines()):
                self._line(item.first_line_no + offset, raw, out)
        if not got_lines:
            self._close_scrape(out)  # quiet since its header: the recorder wrote it whole
        return out

    def close(self) -> None:
        self._tail.close()

    def _line(self, line_no: int, raw: bytes, out: list[Item]) -> None:
        if raw.startswith(HEADER_START):
            header = parse_header(raw.decode("utf-8", "replace"))
            if header is not None:
                self._close_scrape(out)
                self._header = (line_no, *header)
                return
        if self._header is not None:
            self._body.append(raw.decode("utf-8", "replace"))

    def _close_scrape(self, out: list[Item]) -> None:
        if self._header is None or not self._body:
            return
        line_no, ts, port = self._header
        if port is not None:
            self._ports.add(port)
        # Several servers in one file: each port's scrapes are a source of their own (their counters apart).
        source = f"{self.path}#port={port}" if port is not None and len(self._ports) > 1 else self.path
        out.append(ScrapeBlock(source, line_no, ts, "\n".join(self._body) + "\n"))
        self._header, self._body = None, []
