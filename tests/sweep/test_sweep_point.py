"""The dashboard says which point of a sweep its clock is in (issue 33): on a replay of the
simulator's srt-slurm sweep, at times inside each measured run (the simulator's own record of when
it ran, not benchmark.out read back) the header shows C=<its concurrency>; between runs it says so."""

from __future__ import annotations

import math

import pandas as pd

from pdwatch.session.live import LiveSession
from pdwatch.sim.sweep import write_sweep_job
from pdwatch.views.tui.widgets.header import render_header


def test_the_header_names_the_point_the_clock_is_in(tmp_path):
    job = write_sweep_job(tmp_path)
    session = LiveSession([str(job.logs)], mode="replay", speed=math.inf)
    session.paused = True
    while session.ingest(5000):
        pass
    session.tick()
    for point in job.points:
        middle = pd.Timestamp(point.start) + (pd.Timestamp(point.end) - pd.Timestamp(point.start)) / 2
        session.seek(middle)
        snap = session.tick()
        assert snap.sweep_point == f"C={point.concurrency}", (point.concurrency, middle, snap.sweep_point)
        assert f"C={point.concurrency}" in render_header(snap, 120).plain
    gap = pd.Timestamp(job.points[0].end) + (pd.Timestamp(job.points[1].start) - pd.Timestamp(job.points[0].end)) / 2
    session.seek(gap)
    assert session.tick().sweep_point == f"between points (after C={job.points[0].concurrency})"


def test_a_run_that_is_not_a_sweep_shows_no_point():
    from tests.conftest import REPO
    session = LiveSession([str(REPO / "samples" / "kv-exhausted")], mode="replay", speed=math.inf)
    while session.ingest(5000):
        pass
    assert session.tick().sweep_point is None
