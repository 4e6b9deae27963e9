"""Run a simulation and write its files: fast-forward (as fast as possible) or at wall-clock pace."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable

from .logwriter import LogOptions, LogRun
from .model import SimConfig, Simulation


@dataclass
class RunResult:
    sim: Simulation
    paths: list[Path]
    start: datetime  # wall time of t = 0 (the benchmark start)
    stopped_early: bool = False

    def truth(self, t0: float, t1: float) -> dict[str, float]:
        return self.sim.truth(t0, t1)


def run(cfg: SimConfig, out_dir: str | os.PathLike, opts: LogOptions, *, realtime: bool = False,
        stop: threading.Event | None = None, on_tick: Callable[[Simulation], None] | None = None) -> RunResult:
    """Simulate ``cfg`` and write its logs into ``out_dir``.

    Args:
        realtime: append lines at wall-clock pace (t = 0 is now) instead of as fast as possible.
        stop: set it to end a real-time run early; the files stay consistent (whole lines).
        on_tick: called after every simulated tick (tests use it to check invariants).
    """
    sim = Simulation(cfg)
    if realtime and opts.start is None:
        opts = replace(opts, start=datetime.now(timezone.utc).replace(microsecond=0) + timedelta(seconds=1))
    writer = LogRun(sim, out_dir, opts)
    stopped = False
    wait = stop.wait if stop is not None else time.sleep
    try:
        writer.begin()
        if realtime:
            # t = 0 is opts.start on the wall clock; wait for it, then keep the simulation level with it.
            origin = time.monotonic() + (writer.start - datetime.now(timezone.utc)).total_seconds()
        for _ in sim.run():
            writer.after_tick()
            if on_tick is not None:
                on_tick(sim)
            if stop is not None and stop.is_set():
                stopped = True
                break
            if realtime:
                ahead = sim.t - (time.monotonic() - origin)
                if ahead > 0:
                    wait(ahead)
                    if stop is not None and stop.is_set():
                        stopped = True
                        break
    finally:
        writer.close()
    return RunResult(sim, writer.paths, writer.start, stopped)
