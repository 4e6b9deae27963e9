"""A report's phases: when the logs are those of a sweep job (a benchmark.out and result files
beside them), each measured point is a phase with its own headline and verdict, instead of one
steady state blended over every concurrency and the idle gaps between them.

A phase's headline is measured over its window alone (its steady part, after the ramp, as the
run's headline is); its verdict is the one ``pdwatch sweep`` gives the point
(``sweep_verdicts.judge_point``), from the same analysis.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from pdwatch.sweep import Job, job_points
from pdwatch.sweep.jobs import read_job

from .sweep_verdicts import JudgedPoint, judge_point


@dataclass(frozen=True)
class Phase:
    judged: JudgedPoint
    headline: Any  # model.throughput.Headline over the window


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
    if job is None:
        return []
    from pdwatch.model.throughput import headline
    out = []
    store = analysis.store
    endpoints = store.endpoints()
    for point in job_points(job, tz):
        if point.window is None:
            continue
        start, end = pd.Timestamp(point.window.start), pd.Timestamp(point.window.end)
        stats = {}
        for ep in endpoints:
            frame = store.stats(ep.name)
            stats[ep.name] = frame[(frame["ts"] >= start) & (frame["ts"] <= end)] if not frame.empty else frame
        out.append(Phase(judge_point(point, analysis), headline(endpoints, stats)))
    return out
