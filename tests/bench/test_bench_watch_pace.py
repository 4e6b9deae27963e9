"""Smoke test of the pace bench (bench/bench_watch_pace.py, issue 34): a tiny run prints its table.

The bench is not a test (it prints figures); this only checks that it runs end to end (stage a
simulation, write the warm-up, headless watch, the dashboard on a pty, tail -F, lines appended at
their own times, the table) for 4 engines, in well under a minute.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_watch_pace.py"


@pytest.mark.skipif(shutil.which("tail") is None, reason="the bench's baseline is tail -F")
def test_pace_bench_tiny_run_prints_its_table(tmp_path):
    run = subprocess.run(
        [sys.executable, str(BENCH), "--prefill", "1", "--decode", "3", "--stage-hours", "0.1", "--warm-hours",
         "0.05", "--seconds", "8", "--pace", "10", "--out-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout
    appended = re.search(r"^(\d+) lines appended over (\d+) s of wall time", out, re.M)
    assert appended and int(appended.group(1)) > 10, out  # 80 log-seconds of 4 engines' stats lines
    for name in ("headless", "dashboard", "tail -F"):
        assert re.search(rf"^{re.escape(name)}\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+$", out, re.M), out
    assert not list(tmp_path.glob("pace-[0-9]*")), "the grown folder is removed"
