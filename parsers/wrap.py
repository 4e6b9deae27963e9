"""Detect logs that a terminal hard-wrapped at a fixed width (copied from a screen).

Such a file cuts records mid-token (``Available KV cache me`` / ``mory: 11.03 GiB``).
The widths it was cut at show up as many lines of exactly the same length, each
followed by a line that does not start a record. Only such widths are trusted;
the scanner then rejoins a piece of that width with a following non-record line.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import regex

from .cleaning import _SGR, clean_raw

if TYPE_CHECKING:
    import numpy as np

_RECORD_START = regex.compile(
    r"(?:\([\w\- =,.]*pid=\d+"  # (APIServer pid=1), (RayWorkerWrapper pid=3, ip=...)
    r"|(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)[ :]"
    r"|\d{4}-\d\d-\d\d[T ]\d\d:"
    r"|\{\"|Traceback |Loading |Capturing |\[\w[\w /:.-]*\] "
    r"|/\S+\.py:\d+: )"
)
_MIN_WIDTH = 60
_MIN_HITS = 3
_MIN_SHARE = 0.6
_SAMPLE_LINES = 5000
# From this block size on, the sample is judged in bulk (~5x faster on a 1 MB sample); below it,
# line by line: loading numpy (~55 ms) would cost a small input more than it saves.
_BULK_MIN_BYTES = 256 << 10


# Where a line of plain ASCII does not start a record (the same pattern on bytes: on ASCII text its
# classes match what they match on str); empty lines match too and are told apart by their length.
_NOT_RECORD_START = regex.compile(rb"(?m)^(?!" + _RECORD_START.pattern.encode() + rb")")


def starts_record(text: str) -> bool:
    return _RECORD_START.match(text) is not None


def _sample_lines(data: bytes, parts: list[bytes]) -> tuple[np.ndarray, np.ndarray, str]:
    """The length of each line of ``parts`` (the first lines of ``data``) once cleaned, whether it
    would continue a wrapped record (not empty, not a record's start) and the last one's text:
    what ``clean_raw`` and ``starts_record`` give line by line, ~5x faster. Colour codes go from
    the whole sample at once; a line left with only printable ASCII then is its own text, and
    only the others (other escapes, CRs, controls, non-ASCII) are cleaned one by one."""
    import numpy as np

    sample = data[: sum(map(len, parts)) + len(parts) - 1]
    if b"\x1b[" in sample:
        # clean_raw strips colour codes first, with this pattern; a code holds no newline, so
        # the lines stay where they were
        sample = _SGR.sub(b"", sample)
    raw = np.frombuffer(sample, dtype=np.uint8)
    newline_at = np.flatnonzero(raw == 10)
    starts = np.concatenate(([0], newline_at + 1))
    lengths = np.diff(np.concatenate((starts, [len(sample) + 1]))) - 1
    plain = np.ones(len(parts), dtype=bool)
    plain[np.searchsorted(newline_at, np.flatnonzero(((raw < 0x20) & (raw != 9) & (raw != 10)) | (raw > 0x7E)))] = False
    not_record = np.zeros(len(parts), dtype=bool)
    not_record[np.searchsorted(starts, [m.start() for m in _NOT_RECORD_START.finditer(sample)])] = True
    for i in np.flatnonzero(~plain).tolist():
        text = clean_raw(parts[i])
        lengths[i] = len(text)
        not_record[i] = not starts_record(text)
    continues = (lengths > 0) & not_record
    last = len(parts) - 1
    last_text = sample[starts[last]:].decode("ascii") if plain[last] else clean_raw(parts[last])
    return lengths, continues, last_text


def _counts(values: np.ndarray) -> dict[int, int]:
    import numpy as np

    found, counts = np.unique(values, return_counts=True)
    return dict(zip(found.tolist(), counts.tolist()))


class WrapDetector:
    """Looks at the first lines of a source; ``widths`` stays empty for ordinary logs."""

    def __init__(self) -> None:
        self.widths: frozenset[int] = frozenset()
        self.decided = False
        self._continued: Counter[int] = Counter()
        self._total: Counter[int] = Counter()
        self._seen = 0
        self._previous: str | None = None
        self._longest = 0

    def decide(self, widths: frozenset[int]) -> None:
        """Take a decision made elsewhere (the start of the same file, read by another scanner)."""
        self.widths, self.decided = frozenset(widths), True

    def observe(self, data: bytes) -> None:
        want = _SAMPLE_LINES - self._seen
        parts = data.split(b"\n", want)[:want] if want > 0 else []
        if len(data) >= _BULK_MIN_BYTES and parts:
            self._count_in_bulk(data, parts)
        else:
            self._count_one_by_one(parts)
        # Re-judged after every block until enough lines were seen, so short files count too.
        self.decided = self._seen >= _SAMPLE_LINES
        widths = frozenset(
            w for w, hits in self._continued.items()
            if hits >= _MIN_HITS and hits >= _MIN_SHARE * self._total[w]
        )
        # A terminal cuts every line: a file with lines longer than its widest "width" was not
        # wrapped, whatever the lines of one length that happen to be followed by others (a list
        # of same-width items, a stats line as long as the garbage before it).
        self.widths = widths if widths and max(widths) >= self._longest else frozenset()

    def _count_one_by_one(self, parts: list[bytes]) -> None:
        for raw in parts:
            text = clean_raw(raw)
            prev = self._previous
            if prev is not None and len(prev) >= _MIN_WIDTH:
                self._total[len(prev)] += 1
                if text and not starts_record(text):
                    self._continued[len(prev)] += 1
            self._previous = text
            self._longest = max(self._longest, len(text))
            self._seen += 1

    def _count_in_bulk(self, data: bytes, parts: list[bytes]) -> None:
        """``_count_one_by_one`` with the lines judged at once (``_sample_lines``)."""
        import numpy as np  # here: a small input (a tailed file's new lines) need not load it

        lengths, continues, last_text = _sample_lines(data, parts)
        previous = -1 if self._previous is None else len(self._previous)
        prev_lengths = np.concatenate(([previous], lengths[:-1]))
        long = prev_lengths >= _MIN_WIDTH
        self._total.update(_counts(prev_lengths[long]))
        self._continued.update(_counts(prev_lengths[long & continues]))
        self._previous = last_text
        self._longest = max(self._longest, int(lengths.max()))
        self._seen += len(parts)
