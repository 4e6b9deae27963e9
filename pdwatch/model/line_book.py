"""A log line read back from its file when it is shown, instead of its text kept in memory (issue 34).

The store keeps a stats line as (source, line number, CRC-32 of its text) next to its numbers;
its text costs ~350 bytes a line and a long run has hundreds of thousands of them. When a finding,
a report or the dashboard quotes the line, ``LineBook.text`` reads it back:

- where: checkpoints (line number -> byte offset) at least ``SEGMENT_BYTES`` apart, found by
  counting newlines once per file and extended as the file grows (a 1 GB log: ~1,000 of them);
  a lookup reads one segment, never the file;
- whether it is still the line that was read: its cleaned text (ANSI stripped as the scanner
  strips it) must have the CRC that was kept. A terminal-wrapped paste's line is the join of a few
  physical lines, so up to ``MAX_JOINED`` are tried. A file truncated, rotated or rewritten since
  gives no wrong line but ``changed(...)``'s sentence; the checkpoints are then rebuilt once.

Sources that cannot be read back (stdin, ssh, ``/metrics``) are never referenced: the store keeps
their text (``can_read_back``).
"""

from __future__ import annotations

import bisect
import mmap
import os
import zlib
from collections import OrderedDict

from pdwatch.parsers.cleaning import clean_raw
from pdwatch.sources.framing import count_newlines

SEGMENT_BYTES = 1 << 20
MAX_JOINED = 4  # physical lines a terminal-wrapped line may span
_MEMO_LINES = 4096  # texts read back, newest kept: the dashboard asks for the same few every tick


def text_crc(text: str) -> int:
    """The CRC-32 the store keeps of a line's cleaned text, to know it again when read back."""
    return zlib.crc32(text.encode("utf-8", "surrogatepass"))


_READABLE: dict[str, bool] = {}


def can_read_back(source: str) -> bool:
    """A local regular file (a log, not stdin, an ssh source or a URL): its lines can be read back."""
    known = _READABLE.get(source)
    if known is None:
        known = _READABLE[source] = "://" not in source and os.path.isfile(source)
    return known


def changed(source: str, line_no: int) -> str:
    return f"line {line_no} of {source} (the file has changed since it was read)"


class _FileLines:
    """Checkpoints of one file: ``lines[i]`` starts at byte ``offsets[i]``; counted up to ``end``."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lines = [1]
        self.offsets = [0]
        self.end = 0  # bytes counted (always just after a newline)
        self.end_line = 1  # the line that starts at ``end``

    def reset(self) -> None:
        self.__init__(self.path)

    def extend(self, data, size: int, upto_line: int) -> None:
        """Count lines on from ``end`` until ``upto_line`` is passed or the file's complete lines end."""
        while self.end_line <= upto_line and self.end < size:
            stop = min(size, self.end + SEGMENT_BYTES)
            cut = data.rfind(b"\n", self.end, stop) if stop < size else data.rfind(b"\n", self.end, size)
            if cut < 0:  # one line longer than a segment: to its end
                cut = data.find(b"\n", stop, size)
                if cut < 0:
                    return  # the last line is still being written
            n = count_newlines(data, self.end, cut + 1)
            self.end, self.end_line = cut + 1, self.end_line + n
            self.lines.append(self.end_line)
            self.offsets.append(self.end)

    def span(self, line_no: int) -> tuple[int, int, int]:
        """(first line, start, end) of the segment holding ``line_no`` (counted already)."""
        i = bisect.bisect_right(self.lines, line_no) - 1
        end = self.offsets[i + 1] if i + 1 < len(self.offsets) else self.end
        return self.lines[i], self.offsets[i], end


class LineBook:
    """Reads lines back from the files they were read from, checking they are the same."""

    def __init__(self) -> None:
        self._files: dict[str, _FileLines] = {}
        self._memo: OrderedDict[tuple[str, int, int], str] = OrderedDict()

    def can_read_back(self, source: str) -> bool:
        return can_read_back(source)

    def text(self, source: str, line_no: int, crc: int) -> str:
        """Line ``line_no`` of ``source`` as it was read (its CRC), else the "file has changed" sentence."""
        key = (source, line_no, crc)
        hit = self._memo.get(key)
        if hit is not None:
            self._memo.move_to_end(key)
            return hit
        text = self._read(source, line_no, crc)
        if text is None:
            self._files.pop(source, None)  # rotated or rewritten: count again, then look once more
            text = self._read(source, line_no, crc)
        if text is None:
            return changed(source, line_no)
        self._memo[key] = text
        if len(self._memo) > _MEMO_LINES:
            self._memo.popitem(last=False)
        return text

    def _read(self, source: str, line_no: int, crc: int) -> str | None:
        try:
            with open(source, "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                if size == 0:
                    return None
                with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
                    lines = self._files.get(source)
                    if lines is None:
                        lines = self._files[source] = _FileLines(source)
                    if lines.end > size:
                        lines.reset()  # truncated below what was counted
                    lines.extend(data, size, line_no + MAX_JOINED)
                    if line_no >= lines.end_line:
                        return None
                    first, start, _end = lines.span(line_no)
                    pos = start
                    for _ in range(line_no - first):
                        pos = data.find(b"\n", pos, size) + 1
                    return _matching(data, pos, size, crc)
        except (OSError, ValueError):
            return None


def _matching(data, pos: int, size: int, crc: int) -> str | None:
    """The cleaned text at ``pos`` (or it joined with the next physical lines) whose CRC is ``crc``."""
    text = ""
    for _ in range(MAX_JOINED):
        nl = data.find(b"\n", pos, size)
        raw = data[pos:nl if nl >= 0 else size]
        text += clean_raw(raw)
        if text_crc(text) == crc:
            return text
        if nl < 0:
            break
        pos = nl + 1
    return None
