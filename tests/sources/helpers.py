"""Shared helpers for the sources tests: poll with a deadline, flatten blocks into lines."""

from __future__ import annotations

import time
from typing import Callable

from pdwatch.sources import LineBlock, SourceNotice

Item = LineBlock | SourceNotice


def poll_until(
    poll: Callable[[], list[Item]],
    until: Callable[[list[Item]], bool],
    timeout: float = 2.0,
    interval: float = 0.005,
) -> list[Item]:
    """Call poll() repeatedly, accumulating items, until `until(items)` or the deadline."""
    items: list[Item] = []
    deadline = time.monotonic() + timeout
    while True:
        items += poll()
        if until(items):
            return items
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out; got {items!r}"[:3000])
        time.sleep(interval)


def lines(items: list[Item], source: str | None = None) -> list[tuple[int, int, bytes]]:
    """(generation, line_no, line) for every delivered line, checking numbering is consistent."""
    out: list[tuple[int, int, bytes]] = []
    for it in items:
        if not isinstance(it, LineBlock) or (source is not None and it.source != source):
            continue
        parts = it.data.split(b"\n")
        if parts[-1] == b"":
            parts.pop()
        for i, p in enumerate(parts):
            out.append((it.generation, it.first_line_no + i, p))
    return out


def texts(items: list[Item], source: str | None = None) -> list[bytes]:
    return [line for _, _, line in lines(items, source)]


def notices(items: list[Item], kind: str | None = None, source: str | None = None) -> list[SourceNotice]:
    return [
        it
        for it in items
        if isinstance(it, SourceNotice)
        and (kind is None or it.kind == kind)
        and (source is None or it.source == source)
    ]


def kinds(items: list[Item]) -> list[str]:
    return [it.kind for it in items if isinstance(it, SourceNotice)]


def has_text(line: bytes, source: str | None = None) -> Callable[[list[Item]], bool]:
    return lambda items: line in texts(items, source)
