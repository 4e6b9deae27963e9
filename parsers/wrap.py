"""Detect logs that a terminal hard-wrapped at a fixed width (copied from a screen).

Such a file cuts records mid-token (``Available KV cache me`` / ``mory: 11.03 GiB``).
The widths it was cut at show up as many lines of exactly the same length, each
followed by a line that does not start a record. Only such widths are trusted;
the scanner then rejoins a piece of that width with a following non-record line.
"""

from __future__ import annotations

from collections import Counter

import regex

from .cleaning import clean_raw

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


def starts_record(text: str) -> bool:
    return _RECORD_START.match(text) is not None


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
        for raw in data.split(b"\n", _SAMPLE_LINES - self._seen)[: _SAMPLE_LINES - self._seen]:
            text = clean_raw(raw)
            prev = self._previous
            if prev is not None and len(prev) >= _MIN_WIDTH:
                self._total[len(prev)] += 1
                if text and not starts_record(text):
                    self._continued[len(prev)] += 1
            self._previous = text
            self._longest = max(self._longest, len(text))
            self._seen += 1
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
