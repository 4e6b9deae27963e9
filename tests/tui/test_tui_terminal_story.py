"""The dashboard in a real terminal (tmux), as a user meets it (issue 32): the replay of a real
Dynamo job offers its first trouble and ``f`` jumps there, ``l`` shows the job's logs, going past
the trouble leaves it on screen (cleared, and "was:" in the verdict), at 80x24 and 200x50; and
the README's first-watch recipe, as written, shows a live deployment.

tests/data/real/dynamo/agg_kv_pressure: a real Dynamo 1.6.1 job (a frontend and one worker on
vLLM's CPU backend) whose KV cache was full from about 16:20:55 to 16:21:57 UTC.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.cli.test_readme_recipes import recipe
from tests.tui.tmux_helpers import REPO, Tmux, have_tmux

pytestmark = pytest.mark.skipif(not have_tmux(), reason="tmux is not installed (.ci/run installs it)")

CAPTURE = "tests/data/real/dynamo/agg_kv_pressure"
SIZES = [(80, 24), (200, 50)]


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_replay_jump_logs_and_history_in_a_terminal(size):
    cols, rows = size
    with Tmux(f"pdwatch replay {CAPTURE}", cols=cols, rows=rows) as term:
        shown = term.wait_for(lambda s: "f jumps to the first trouble" in s)
        assert "kv_exhausted" in shown and "16:20:55" in shown
        term.keys("f")
        shown = term.wait_for(lambda s: "Bottleneck: KV cache" in s and "(paused)" in s)
        assert "2026-12-03 16:20:55" in shown or "16:20:55" in shown
        assert re.search(r"CRITICAL\s+kv_exhausted", shown), shown

        term.keys("l")  # the job's logs, both files, at the clock
        shown = term.wait_for(lambda s: "job log" in s and "frontend" in s and "worker" in s)
        term.keys("Escape")
        term.wait_for(lambda s: "job log" not in s)

        term.keys("g")  # past the trouble: KV back to 0% at 16:22:02
        term.wait_for(lambda s: "14:01:30 or +5m" in s)
        term.keys("16:22:02", "Enter")
        shown = term.wait_for(lambda s: "was: Bottleneck: KV cache" in s)
        assert "No bottleneck found" in shown
        assert "cleared after" in shown and "kv_exhausted" in shown  # the history stays in the table
        if cols >= 140:  # wide: time-axis charts of the run, drawn across the width
            shown = term.wait_for(lambda s: "KV cache %" in s and "running requests" in s, timeout=15)
            axis = next(line for line in shown.splitlines() if "16:18:51" in line and "16:22:04" in line)
            assert len(axis.rstrip()) > 150, axis
        term.keys("q")


def test_the_first_watch_recipe_shows_a_live_deployment(tmp_path: Path):
    command, _ = recipe("first-watch")
    with Tmux(command, cols=80, rows=24, cwd=tmp_path) as term:
        shown = term.wait_for(lambda s: "prefill" in s and "decode" in s and "TPS/GPU" in s, timeout=90)
        assert "live" in shown
        term.keys("q")
    logs = sorted(p.name for p in (tmp_path / "demo-job").iterdir())
    assert any(name.endswith("_prefill_w0.out") for name in logs) and any("_decode_w" in n for n in logs), logs
    shutil.rmtree(tmp_path / "demo-job", ignore_errors=True)
