"""A replay's rules swept stretch by stretch (``session.replay_rules``) against stepping its grid.

The same replay is driven twice through the same moves (the first tick, seeks forward and
backward, play to the end, play under a tick budget): once as it always stepped (release the
events up to a time, evaluate there, one grid time after the other) and once with the stretches
between structure changes swept at once. After each move the rule engines must hold the same
alerts, periods, findings and notices (``tests/rules/test_rule_sweep.held``), and the stores the
same rows: on every sample, every real capture and a generated run at a 2 s interval.
"""

from __future__ import annotations

import math
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from pdwatch.session.live import LiveSession
from pdwatch.session.replay_rules import ReplayRules, _RunningMedian
from tests.rules.test_rule_sweep import differences, held

ROOT = Path(__file__).resolve().parents[2]
INPUTS = sorted(p for p in (ROOT / "samples").iterdir() if p.is_dir()) + \
    sorted(p for p in (ROOT / "tests" / "data" / "real" / "captures").iterdir() if p.is_dir())


class Stepping(ReplayRules):
    """The replay's loop before stretches were swept: one grid time after the other."""

    def run(self, store, engine, buffer, add, times, deadline, started):
        done = 0
        for now in times:
            if deadline is not None and time.monotonic() > deadline and (started or done):
                break
            add(buffer.release(now))
            engine.evaluate(store.view(), now.floor("us").to_pydatetime())
            done += 1
        return done


def _session(paths: list[str], stepping: bool) -> LiveSession:
    session = LiveSession(paths, mode="replay", speed=math.inf)
    if stepping:
        session._grid = Stepping()
    session.paused = True
    while session.ingest(5000):
        pass
    session.tick(0.0)  # the buffer loads; the clock stands at the logs' first time
    return session


def _state(session: LiveSession) -> dict:
    store = session.store
    return {"engine": held(session.engine), "clock": session.clock, "findings": session._findings,
            "rows": {e.name: (len(store.stats(e.name)), len(store.events(e.name)),
                              store.model.endpoints[e.name].facts.get("stats_interval_s"))
                     for e in store.endpoints()}}


def _moves(session: LiveSession) -> list[tuple[str, pd.Timestamp | None]]:
    start, end = session.time_range
    if start is None:
        return []
    at = [start + (end - start) * f for f in (0.25, 0.8, 0.4, 0.41, 1.0, 0.1)]
    return [("seek", t) for t in at] + [("seek", start), ("play", None)]


def _compare(paths: list[str]) -> None:
    stepped, swept = _session(paths, True), _session(paths, False)
    assert not differences(_state(stepped), _state(swept))
    for move, target in _moves(swept):
        for session in (stepped, swept):
            if move == "seek":
                session.seek(target)
            else:
                session.paused = False
                session.tick(1.0)
        diff = differences(_state(stepped), _state(swept))
        assert not diff, f"after {move} {target}:\n" + "\n".join(diff[:8])
        assert swept.engine.findings() == stepped.engine.findings()


@pytest.mark.parametrize("folder", INPUTS, ids=[p.name for p in INPUTS])
def test_samples_and_captures(folder):
    _compare([str(folder)])


def test_generated_run(tmp_path):
    out = tmp_path / "run"
    subprocess.run([sys.executable, "-m", "pdwatch", "simulate", "--out", str(out), "--noise", "quiet",
                    "--scenario", "kv-exhausted", "--duration", "10m", "--interval", "2", "--seed", "11"],
                   check=True, capture_output=True, timeout=300)
    _compare([str(out)])


def test_a_tick_budget_cuts_the_sweep_where_stepping_would_stop():
    """Under a tick budget the clock stops where the rules are, and playing on from there gives
    what stepping gives."""
    folder = ROOT / "samples" / "kv-exhausted"
    stepped, swept = _session([str(folder)], True), _session([str(folder)], False)
    for session in (stepped, swept):
        session.tick_budget_s = 0.002  # a step or a stretch or two a tick
        session.paused = False
        ticks = 0
        while not session.done and ticks < 10_000:
            session.tick(float(ticks))
            ticks += 1
        assert session.done
    assert not differences(_state(stepped), _state(swept))


@pytest.mark.parametrize("seed", range(20))
def test_running_median_is_numpys(seed):
    import random

    import numpy as np
    rng = random.Random(seed)
    median, seen = _RunningMedian(), []
    for _ in range(300):
        x = rng.choice([10.0, 10.001, 9.999, rng.uniform(0.1, 30), round(rng.uniform(1, 3), 3)])
        median.add(x)
        seen.append(x)
        assert median.median() == float(np.median(seen))
