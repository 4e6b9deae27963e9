"""A report's phases: a run whose load changes is judged phase by phase, each with its own headline
(its steady part, after its ramp, as the run's headline is measured) and verdict, instead of one
steady state blended over every load and the idle gaps between them.

- A sweep job (a ``benchmark.out`` and result files beside the logs, or in the job folder above
  them): each measured point is a phase, its window from ``benchmark.out``; its verdict is the one
  ``pdwatch sweep`` gives the point.
- Any other run: stretches of load between idle gaps (the deployment's requests in flight, per stats
  interval, near zero for a bucket or more) are the phases, when there are at least two.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from pdwatch.sweep import Job, job_points
from pdwatch.sweep.jobs import read_job

from .sweep_verdicts import PointVerdict, judge_point, judge_window

MIN_PHASE_BUCKETS = 3  # a load shorter than three stats intervals is no phase (a test prompt, a blip)
IDLE_SHARE = 0.05  # in flight under 5% of the run's 95th percentile (or under one request): idle


@dataclass(frozen=True)
class Phase:
    label: str  # "C=512" or "load 2"
    concurrency: int | None
    start: pd.Timestamp
    end: pd.Timestamp
    source: str  # where the window comes from
    timezone: str
    headline: Any  # model.throughput.Headline over the window
    verdict: PointVerdict | None
    invalid_reasons: tuple[str, ...]


def sweep_job_of(paths: list[str]) -> Job | None:
    """The sweep job the logs belong to: a folder given, or a log's folder, or one of their parents
    up to the job's folder (outputs/<id>/logs/x.out -> outputs/<id>)."""
    seen: set[Path] = set()
    for path in paths:
        if "://" in path:
            continue
        folder = Path(path if os.path.isdir(path) else os.path.dirname(path) or ".").resolve()
        for candidate in (folder, folder.parent, folder.parent.parent):
            if candidate in seen:
                continue
            seen.add(candidate)
            job = read_job(candidate)
            if job is not None and job.has_results and job.benchmark_out is not None:
                return job
    return None


def phases(analysis: Any, tz: str = "UTC") -> list[Phase]:
    job = sweep_job_of(list(analysis.paths))
    if job is not None:
        return _sweep_phases(analysis, job, tz)
    return _load_phases(analysis)


def _sweep_phases(analysis: Any, job: Job, tz: str) -> list[Phase]:
    out = []
    for point in job_points(job, tz):
        if point.window is None:
            continue
        start, end = pd.Timestamp(point.window.start), pd.Timestamp(point.window.end)
        judged = judge_point(point, analysis)
        out.append(Phase(f"C={point.concurrency}", point.concurrency, start, end, point.window.source,
                         point.window.timezone, _headline(analysis.store, start, end), judged.verdict,
                         judged.invalid_reasons))
    return out


def _load_phases(analysis: Any) -> list[Phase]:
    from pdwatch.model.throughput import bucketed
    store = analysis.store
    frames = {e.name: (e, store.stats(e.name)) for e in store.endpoints() if e.role != "frontend"}
    intervals = sorted(e.facts["stats_interval_s"] for e, _ in frames.values() if e.facts.get("stats_interval_s"))
    bucket = intervals[len(intervals) // 2] if intervals else 10.0
    inflight = bucketed(frames, bucket)["inflight"].fillna(0.0) if frames else pd.Series(dtype="float64")
    if len(inflight) < 2 * MIN_PHASE_BUCKETS:
        return []
    busy = (inflight > max(1.0, IDLE_SHARE * float(inflight.quantile(0.95)))).to_numpy()
    runs: list[tuple[int, int]] = []
    i = 0
    while i < len(busy):
        if not busy[i]:
            i += 1
            continue
        j = i
        while j + 1 < len(busy) and busy[j + 1]:
            j += 1
        if j - i + 1 >= MIN_PHASE_BUCKETS:
            runs.append((i, j))
        i = j + 1
    if len(runs) < 2:
        return []
    step = pd.Timedelta(seconds=bucket)
    out = []
    for n, (i, j) in enumerate(runs, 1):
        start, end = pd.Timestamp(inflight.index[i]), pd.Timestamp(inflight.index[j]) + step
        verdict, reasons = judge_window(analysis, start, end)
        out.append(Phase(f"load {n}", None, start, end, "the logs: requests in flight between idle gaps", "UTC",
                         _headline(store, start, end), verdict, tuple(reasons)))
    return out


def _headline(store: Any, start: pd.Timestamp, end: pd.Timestamp) -> Any:
    from pdwatch.model.throughput import headline
    endpoints = store.endpoints()
    stats = {}
    for ep in endpoints:
        frame = store.stats(ep.name)
        stats[ep.name] = frame[(frame["ts"] >= start) & (frame["ts"] <= end)] if not frame.empty else frame
    return headline(endpoints, stats)
