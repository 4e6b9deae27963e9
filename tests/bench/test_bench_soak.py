"""Smoke test of the soak bench (bench/bench_soak.py, issue 34): a tiny run prints its table.

The bench is not a test (it prints figures); this only checks that it still runs end to end
(simulate, grow the files, headless watch, the dashboard on a pty, tail -F, the table, the
crash's lag) for 4 engines and 3 log-minutes at 100x, in well under a minute.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_soak.py"


@pytest.mark.skipif(shutil.which("tail") is None, reason="the bench's baseline is tail -F")
def test_soak_bench_tiny_run_prints_its_table(tmp_path):
    run = subprocess.run(
        [sys.executable, str(BENCH), "--prefill", "1", "--decode", "3", "--hours", "0.05", "--compression", "100",
         "--settle", "3", "--out-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=90)
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout
    assert re.search(r"^ log-h\s+wall s\s+headless RSS MB\s+headless CPU s\s+dashboard RSS MB", out, re.M), out
    rows = re.findall(r"^\s*(0\.00|0\.05)\s+\d+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+$",
                      out, re.M)
    assert rows == ["0.00", "0.05"], out
    assert "RSS growth per log-hour after the first hour, headless" in out
    assert re.search(r"decode_w2 dies at log-hour 0\.03: headless [\d.]+ s", out), out
    assert not list(tmp_path.glob("soak-[0-9]*")), "the grown folder is removed without --keep"
