"""Which point of a sweep the clock is in, for the dashboard's header ("C=512").

The job's ``benchmark.out`` (beside the logs, or in the job folder above them) marks each measured
run; it is read again when it changes (a live sweep writes it as it goes), at most every few
seconds. Outside every measured run (a warm-up, the gap between points) the label says so.
"""

from __future__ import annotations

import os
import time
from datetime import datetime
from pathlib import Path

import pandas as pd

from pdwatch.sweep.windows import run_spans

REREAD_S = 5.0


def benchmark_out_of(paths: list[str]) -> Path | None:
    for path in paths:
        if "://" in path:
            continue
        folder = Path(path if os.path.isdir(path) else os.path.dirname(path) or ".")
        for candidate in (folder, folder.parent, folder.parent.parent):
            for name in (candidate / "benchmark.out", candidate / "logs" / "benchmark.out"):
                if name.is_file():
                    return name
    return None


class SweepPointTracker:
    def __init__(self, paths: list[str], tz: str = "UTC") -> None:
        self._paths, self._tz = paths, tz
        self._file: Path | None = None
        self._looked = -1e9
        self._stamp: tuple[float, int] | None = None
        self._spans: list[tuple[int, datetime, datetime | None]] = []

    def label(self, clock: pd.Timestamp | datetime | None) -> str | None:
        """"C=512" inside a measured run, "between points (after C=256)" outside; None: not a sweep."""
        self._refresh()
        if clock is None or not self._spans:
            return None
        now = pd.Timestamp(clock)
        before = None
        for c, start, end in self._spans:
            if pd.Timestamp(start) <= now and (end is None or now <= pd.Timestamp(end)):
                return f"C={c}"
            if pd.Timestamp(start) <= now:
                before = c
        return f"between points (after C={before})" if before is not None else "before the first point"

    def _refresh(self) -> None:
        wall = time.monotonic()
        if wall - self._looked < REREAD_S:
            return
        self._looked = wall
        if self._file is None:
            self._file = benchmark_out_of(self._paths)
            if self._file is None:
                return
        try:
            st = self._file.stat()
        except OSError:
            return
        if (st.st_mtime, st.st_size) != self._stamp:
            self._stamp = (st.st_mtime, st.st_size)
            try:
                self._spans = run_spans(self._file, self._tz)
            except (OSError, ValueError):
                self._spans = []
