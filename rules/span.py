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

from pdwatch.units import DURATION_RE, duration_seconds

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
