"""Durations that work at any stats interval: ``30s``, ``1m30s``, or ``6 samples``.

A span in samples is converted per endpoint with its stats interval, so one rule reads
the same at 1 s and at 60 s intervals. "N samples" always means N stats lines:
- as a window, the last N lines: N x interval back from the clock;
- as ``for:``, the condition held on N consecutive lines: (N - 1) x interval;
- as ``keep_firing_for:``, N more lines after it stopped holding: N x interval.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
# One or more number+unit pairs, no spaces: 30s, 1.5m, 1m30s (ms before m).
DURATION_RE = re.compile(r"(?:(?:\d+(?:\.\d+)?|\.\d+)(?:ms|s|m|h|d))+", re.ASCII)
_PART_RE = re.compile(r"(\d+(?:\.\d+)?|\.\d+)(ms|s|m|h|d)", re.ASCII)
_SAMPLES_RE = re.compile(r"(\d+)\s+samples?", re.ASCII)


@dataclass(frozen=True)
class Span:
    """A duration in seconds, or a count of stats samples (exactly one is set)."""

    seconds: float | None = None
    samples: int | None = None

    def __str__(self) -> str:
        if self.samples is not None:
            return f"{self.samples} sample{'s' if self.samples != 1 else ''}"
        return f"{self.seconds:g}s"

    def window_us(self, interval_us):
        """Width of a window of this span: N samples = N x interval."""
        if self.samples is not None:
            return interval_us * self.samples
        return round(self.seconds * 1e6)

    def hold_us(self, interval_us):
        """``for:`` hold: N samples = held on N consecutive lines = (N - 1) x interval."""
        if self.samples is not None:
            return interval_us * max(self.samples - 1, 0)
        return round(self.seconds * 1e6)

    @property
    def is_zero(self) -> bool:
        return (self.samples or 0) == 0 and not self.seconds


ZERO = Span(seconds=0.0)


def duration_seconds(text: str) -> float:
    """Seconds of a ``DURATION_RE`` match such as ``1m30s``."""
    return sum(float(num) * UNIT_SECONDS[unit] for num, unit in _PART_RE.findall(text))


def parse_span(text: str) -> Span:
    """Parse ``30s``, ``1m30s``, ``6 samples`` or ``0``; ValueError says what is allowed."""
    s = text.strip()
    if s == "0":
        return ZERO
    if DURATION_RE.fullmatch(s):
        seconds = duration_seconds(s)
        if seconds <= 1e9:
            return Span(seconds=seconds)
    m = _SAMPLES_RE.fullmatch(s)
    if m and int(m.group(1)) <= 1_000_000:
        return Span(samples=int(m.group(1)))
    raise ValueError(f"bad duration {text!r}: write e.g. 30s, 5m, 1m30s, 2h or '6 samples'")
