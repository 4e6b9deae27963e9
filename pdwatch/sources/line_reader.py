"""Raw lines of a local log read by byte offset, forwards or backwards, in bounded memory.

The job log view (``pdwatch.events.job_log``) reads a few hundred lines around a position of
a file that may be gigabytes long: never the whole file. Line numbers (1-based, as the parsers
count them) come from counting newlines, remembered every ``MARK_BYTES`` so that the next count
starts near where it is needed. A file that shrinks or is replaced forgets its marks.
"""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass

CHUNK_BYTES = 1 << 16
MARK_BYTES = 4 << 20  # a (offset, line number) mark about every 4 MiB read: ~250 marks a GiB
MAX_LINE_BYTES = 16 << 10  # a longer line is cut here (the rest of it is skipped, not returned)
MAX_READ_BYTES = 8 << 20  # one call reads at most about this much


@dataclass(frozen=True, slots=True)
class RawLine:
    offset: int  # where the line starts
    line_no: int  # 1-based
    data: bytes  # without its newline; at most MAX_LINE_BYTES
    end: int  # where the next line starts


class LineReader:
    """One local file. Not thread-safe: one reader per thread (the view reads in a worker)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._marks_at: list[int] = [0]  # offsets of line starts, ascending
        self._marks_no: list[int] = [1]  # their line numbers
        self._identity: tuple[int, int] | None = None

    def size(self) -> int:
        """The file's size now; a file replaced or shrunk since the last look forgets its marks."""
        st = os.stat(self.path)
        identity = (st.st_dev, st.st_ino)
        if identity != self._identity or st.st_size < self._marks_at[-1]:
            self._identity = identity
            self._marks_at, self._marks_no = [0], [1]
        return st.st_size

    # -- line numbers and line starts ---------------------------------------------------------
    def line_no_at(self, offset: int) -> int:
        """The number of the line that starts at ``offset`` (a line start)."""
        i = bisect.bisect_right(self._marks_at, offset) - 1
        at, number = self._marks_at[i], self._marks_no[i]
        with open(self.path, "rb") as f:
            f.seek(at)
            while at < offset:
                block = f.read(min(CHUNK_BYTES, offset - at))
                if not block:
                    break
                number += block.count(b"\n")
                at += len(block)
                self._mark(at, number, block)
        return number

    def offset_of_line(self, line_no: int) -> int | None:
        """Where line ``line_no`` starts; None past the end of the file."""
        size = self.size()
        line_no = max(1, line_no)
        i = bisect.bisect_right(self._marks_no, line_no) - 1
        at, number = self._marks_at[i], self._marks_no[i]
        with open(self.path, "rb") as f:
            f.seek(at)
            while number < line_no:
                block = f.read(CHUNK_BYTES)
                if not block:
                    return None
                need = line_no - number
                count = block.count(b"\n")
                if count >= need:
                    pos = -1
                    for _ in range(need):
                        pos = block.index(b"\n", pos + 1)
                    at += pos + 1
                    return at if at < size else None
                number += count
                at += len(block)
                self._mark(at, number, block)
        return at if at < size else None

    def line_start(self, offset: int) -> int:
        """The start of the line that holds ``offset``."""
        if offset <= 0:
            return 0
        with open(self.path, "rb") as f:
            at = offset
            while at > 0:
                lo = max(0, at - CHUNK_BYTES)
                f.seek(lo)
                block = f.read(at - lo)
                nl = block.rfind(b"\n")
                if nl >= 0:
                    return lo + nl + 1
                at = lo
        return 0

    def _mark(self, at: int, number: int, block: bytes) -> None:
        # Marks are line starts: ``at`` is one only when the block read ends with a newline.
        if block.endswith(b"\n") and at - self._marks_at[-1] >= MARK_BYTES:
            self._marks_at.append(at)
            self._marks_no.append(number)

    # -- reading ------------------------------------------------------------------------------
    def forward(self, offset: int, line_no: int, max_lines: int, max_bytes: int = MAX_READ_BYTES) -> list[RawLine]:
        """Up to ``max_lines`` complete lines from the line start ``offset`` (numbered
        ``line_no``), reading at most about ``max_bytes``. A last line without its newline yet
        (a log being written) is left out."""
        out: list[RawLine] = []
        read = 0
        with open(self.path, "rb") as f:
            f.seek(offset)
            at, number = offset, line_no
            while len(out) < max_lines and read < max_bytes:
                data = f.readline(MAX_LINE_BYTES)
                if not data:
                    break
                end = at + len(data)
                while not data.endswith(b"\n") and len(data) >= MAX_LINE_BYTES:
                    rest = f.readline(MAX_LINE_BYTES)  # an over-long line: skip to its end
                    if not rest:
                        break
                    end += len(rest)
                    if rest.endswith(b"\n"):
                        data = data[:MAX_LINE_BYTES] + b"\n"
                        break
                if not data.endswith(b"\n"):
                    break  # still being written
                out.append(RawLine(at, number, data[:-1][:MAX_LINE_BYTES], end))
                read += end - at
                at, number = end, number + 1
        return out

    def backward(self, offset: int, line_no: int, max_lines: int, max_bytes: int = MAX_READ_BYTES) -> list[RawLine]:
        """Up to ``max_lines`` lines before the line start ``offset`` (numbered ``line_no``),
        in file order, reading at most about ``max_bytes`` back."""
        if offset <= 0 or max_lines <= 0:
            return []
        pieces: list[bytes] = []
        have = 0  # newlines in pieces
        lo = offset
        with open(self.path, "rb") as f:
            while lo > 0 and have <= max_lines and offset - lo < max_bytes:
                start = max(0, lo - CHUNK_BYTES)
                f.seek(start)
                block = f.read(lo - start)
                pieces.append(block)
                have += block.count(b"\n")
                lo = start
        data = b"".join(reversed(pieces))  # bytes lo..offset, ending with a newline
        lines = data.split(b"\n")[:-1]
        if lo > 0:
            lines = lines[1:]  # the first piece may be the tail of a line: left out
        lines = lines[-max_lines:]
        out: list[RawLine] = []
        end = offset
        number = line_no
        for raw in reversed(lines):
            number -= 1
            start = end - len(raw) - 1
            out.append(RawLine(start, number, raw[:MAX_LINE_BYTES], end))
            end = start
        out.reverse()
        return out
