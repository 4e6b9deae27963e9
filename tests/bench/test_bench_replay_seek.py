"""Smoke test of the replay-seek bench (bench/bench_replay_seek.py, issue 34) on a bundled sample.

The bench prints figures and is not a test; this checks it still drives a real replay session
through its rounds of seeks end to end and prints its table with a figure per round.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "bench_replay_seek.py"


def test_replay_seek_bench_prints_a_round_per_round(tmp_path):
    folder = ROOT / "samples" / "prefill-bound"
    run = subprocess.run([sys.executable, str(BENCH), str(folder), "--rounds", "2"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout
    assert re.search(r"^input\s+log h\s+read s\s+read MB\s+round 1 MB\s+last MB\s+peak MB", out, re.M), out
    row = re.search(r"^prefill-bound\s+([\d.]+)(\s+[\d.]+){7}$", out, re.M)
    assert row and float(row.group(1)) > 0, out
    rounds = re.search(r"prefill-bound: RSS after each round of 6 seeks: (\d+) (\d+) MB", out)
    assert rounds and all(int(x) > 20 for x in rounds.groups()), out
