"""Split a byte stream into blocks of complete lines, with a bounded carry-over.

Work is per chunk, not per line: a chunk is split once at its last b"\\n".
Only the carried partial line and chunks longer than the cap need extra care.
"""

from __future__ import annotations

NL = b"\n"
# From this many bytes on, newlines are counted by numpy: ~0.12 ns a byte against ~0.5 for
# ``bytes.count``; below it, loading numpy (~55 ms) would cost a small input more than it saves.
_VECTOR_MIN_BYTES = 256 << 10


def count_newlines(buffer, start: int = 0, end: int | None = None) -> int:
    """Newlines in ``buffer[start:end]`` (bytes or an mmap, not copied)."""
    end = len(buffer) if end is None else end
    if end - start < _VECTOR_MIN_BYTES and isinstance(buffer, bytes):
        return buffer.count(NL, start, end)
    import numpy as np  # here: a small input need not load it

    return int(np.count_nonzero(np.frombuffer(buffer, dtype=np.uint8)[start:end] == 10))


class LineFramer:
    """Accumulates chunks and hands back complete lines (raw bytes, untouched)."""

    def __init__(self, max_line_bytes: int = 1 << 20) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be >= 1")
        self.max_line_bytes = max_line_bytes
        self.cut_lines = 0
        self.cut_bytes = 0
        self._tail = bytearray()  # partial line, never longer than max_line_bytes
        self._discarding = False  # inside an over-long line already cut: drop until b"\n"

    @property
    def buffered(self) -> int:
        """Bytes currently held back (the partial line)."""
        return len(self._tail)

    def feed(self, chunk: bytes) -> bytes:
        if not chunk:
            return b""
        cap = self.max_line_bytes
        out: list[bytes] = []
        start = 0

        if self._discarding:
            nl = chunk.find(NL)
            if nl < 0:
                self.cut_bytes += len(chunk)
                return b""
            self.cut_bytes += nl
            self._discarding = False
            start = nl + 1
        elif self._tail:
            nl = chunk.find(NL)
            room = cap - len(self._tail)
            if nl < 0:
                if len(chunk) <= room:
                    self._tail += chunk
                    return b""
                # The carried line would outgrow the cap: cut it now, drop the rest.
                line = bytes(self._tail) + chunk[:room] + NL
                self._tail.clear()
                self._cut(len(chunk) - room)
                self._discarding = True
                return line
            if nl <= room:
                out.append(bytes(self._tail) + chunk[: nl + 1])
            else:
                out.append(bytes(self._tail) + chunk[:room] + NL)
                self._cut(nl - room)
            self._tail.clear()
            start = nl + 1

        last = chunk.rfind(NL, start)
        if last >= 0:
            body = chunk[start : last + 1]
            # A line inside `body` is shorter than `body`, so only check when body > cap.
            out.append(self._cap_body(body) if len(body) > cap else body)
            start = last + 1
        rest = len(chunk) - start
        if rest > cap:
            out.append(chunk[start : start + cap] + NL)
            self._cut(rest - cap)
            self._discarding = True
        elif rest:
            self._tail += chunk[start:]
        return out[0] if len(out) == 1 else b"".join(out)

    def flush(self) -> bytes:
        data = bytes(self._tail)
        self._tail.clear()
        self._discarding = False
        return data

    def reset(self) -> None:
        self._tail.clear()
        self._discarding = False

    def _cut(self, dropped: int) -> None:
        self.cut_lines += 1
        self.cut_bytes += dropped

    def _cap_body(self, body: bytes) -> bytes:
        """Cut over-long lines in `body` (which ends with b"\\n").

        Steps one cap-sized window at a time (not one line at a time): if the
        window after a line start holds a newline, every line up to the last
        one in it is within the cap.
        """
        cap = self.max_line_bytes
        pieces: list[bytes] = []
        pos = 0  # always a line start
        kept = 0  # start of the not-yet-copied good run
        n = len(body)
        while n - pos > cap:
            nl = body.rfind(NL, pos, pos + cap + 1)
            if nl >= 0:
                pos = nl + 1
                continue
            end = body.find(NL, pos + cap)  # exists: body ends with NL
            pieces.append(body[kept : pos + cap])
            pieces.append(NL)
            self._cut(end - pos - cap)
            pos = kept = end + 1
        if not pieces:
            return body
        pieces.append(body[kept:])
        return b"".join(pieces)
