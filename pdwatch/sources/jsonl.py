"""Lines of a JSON-lines file (srt-slurm's ``raw_prometheus.jsonl``), plain or gzipped, in bounded memory.

``open_lines(path)`` opens it as bytes, a ``.gz`` decompressed as it is read (never whole);
``iter_lines(f)`` gives (line number, line) in order, a line over ``MAX_LINE_BYTES`` as None with its
rest skipped, so memory holds one line at most.
"""

from __future__ import annotations

import gzip
import os
from typing import IO, Iterator

MAX_LINE_BYTES = 64 << 20  # a scrape of a big server is a few MB; longer is not a record


def open_lines(path: str | os.PathLike[str]) -> IO[bytes]:
    """The file as bytes, a ``.gz`` decompressed as it is read."""
    return gzip.open(path, "rb") if os.fspath(path).lower().endswith(".gz") else open(path, "rb")


def iter_lines(f: IO[bytes]) -> Iterator[tuple[int, bytes | None]]:
    """(line number, line) in order; None for a line over ``MAX_LINE_BYTES`` (its rest skipped)."""
    no = 0
    while True:
        line = f.readline(MAX_LINE_BYTES)
        if not line:
            return
        no += 1
        if len(line) >= MAX_LINE_BYTES and not line.endswith(b"\n"):
            while True:  # the rest of the over-long line
                rest = f.readline(MAX_LINE_BYTES)
                if not rest or rest.endswith(b"\n"):
                    break
            yield no, None
            continue
        yield no, line
