"""stdin ("-") as a source: a daemon thread reads it so poll() never blocks."""

from __future__ import annotations

import queue
import sys
import threading
from typing import BinaryIO, Callable

from .framing import LineFramer
from .records import LineBlock, SourceNotice, capped_notice

Item = LineBlock | SourceNotice
NAME = "-"
_QUEUE_CHUNKS = 64  # bounded: with 1 MiB chunks at most ~64 MiB waits in memory
_NOTHING = object()  # marks "no item held back by wait()"


class StdinSource:
    def __init__(
        self,
        stream: BinaryIO | None = None,
        *,
        chunk_size: int = 1 << 20,
        max_line_bytes: int = 1 << 20,
    ) -> None:
        # The process's stdin is read unbuffered: a reader blocked in sys.stdin.buffer holds its lock,
        # which Python's exit must take (Ctrl-C while stdin is an open pipe or the terminal aborted with
        # "Fatal Python error: _enter_buffered_busy"); the raw file holds none.
        self._stream = stream if stream is not None else sys.stdin.buffer.raw
        self._chunk_size = chunk_size
        self._framer = LineFramer(max_line_bytes)
        # bytes = data; None = EOF; OSError = read failure (also ends the source)
        self._queue: queue.Queue[bytes | OSError | None] = queue.Queue(_QUEUE_CHUNKS)
        self._line_no = 1
        self._reported_cuts = 0
        self._announced = False
        self._held: object = _NOTHING  # an item wait() took off the queue
        self._thread: threading.Thread | None = None
        self.at_eof = False

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._pump, name="pdwatch-stdin", daemon=True)
            self._thread.start()

    def _pump(self) -> None:
        # read1 / raw read return whatever is available, so follow mode sees lines promptly.
        read: Callable[[int], bytes | None] = getattr(self._stream, "read1", None) or self._stream.read
        try:
            while True:
                data = read(self._chunk_size)
                if not data:
                    break
                self._queue.put(data)
        except OSError as e:
            self._queue.put(e)
            return
        except ValueError:  # stream closed under us
            pass
        self._queue.put(None)

    def wait(self, timeout: float) -> None:
        """Block until something is queued (or timeout), without consuming it."""
        if self.at_eof or self._held is not _NOTHING:
            return
        self.start()
        try:
            item = self._queue.get(timeout=timeout)
        except queue.Empty:
            return
        self._held = item  # hand it to the next poll()

    def poll(self, max_chunks: int = 8) -> list[Item]:
        out: list[Item] = []
        if self.at_eof:
            return out
        self.start()
        if not self._announced:
            self._announced = True
            out.append(SourceNotice(NAME, "opened", f"{NAME}: reading standard input"))
        for _ in range(max_chunks):
            if self._held is not _NOTHING:
                item, self._held = self._held, _NOTHING
            else:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            if isinstance(item, bytes):
                lines = self._framer.feed(item)
                if lines:
                    out.append(LineBlock(NAME, self._line_no, lines, 0))
                    self._line_no += lines.count(b"\n")
                continue
            if isinstance(item, OSError):
                out.append(SourceNotice(NAME, "error", f"{NAME}: {item.strerror or item}"))
            tail = self._framer.flush()  # stream ended: its last line is complete
            if tail:
                out.append(LineBlock(NAME, self._line_no, tail, 0))
                self._line_no += 1
            self.at_eof = True
            break
        if self._framer.cut_lines > self._reported_cuts:
            self._reported_cuts = self._framer.cut_lines
            f = self._framer
            out.append(capped_notice(NAME, f.cut_lines, f.cut_bytes, f.max_line_bytes))
        return out
