"""Sweeps: srt-slurm benchmark jobs -> one point per measured run, with its window and figures.

- ``jobs``      folders -> ``Job`` (both srt-slurm layouts, or a folder of jobs)
- ``jsonscan``  the top-level scalars of a JSON file of any size, in bounded memory
- ``results``   result files (sa-bench, ``vllm bench serve``, ``benchmark-rollup.json``) -> ``BenchmarkResult``
- ``windows``   ``benchmark.out`` markers or date − duration -> ``PointWindow`` in a stated time zone
- ``point``     ``SweepPoint``: the named Pareto axes and the validity read from the result alone

``read_sweep`` runs them in that order.
"""

from __future__ import annotations

from datetime import tzinfo
from pathlib import Path
from typing import Iterable

from pdwatch.sweep.jobs import Job, find_jobs
from pdwatch.sweep.point import AXES, Axis, SweepPoint, make_point
from pdwatch.sweep.results import BenchmarkResult, read_result_file, read_rollup
from pdwatch.sweep.windows import PointWindow, measured_runs, parse_timezone, point_window

__all__ = ["AXES", "Axis", "BenchmarkResult", "Job", "PointWindow", "SweepPoint", "find_jobs", "job_points",
           "read_sweep"]


def job_points(job: Job, tz: tzinfo | str = "UTC") -> list[SweepPoint]:
    """The points of one job: its per-point result files, else its rollup; in concurrency order."""
    if isinstance(tz, str):
        tz = parse_timezone(tz)
    if job.result_files:
        results = [read_result_file(path, job.metadata) for path in job.result_files]
    elif job.rollup is not None:
        results = read_rollup(job.rollup, job.metadata)
    else:
        return []
    runs = measured_runs(job.benchmark_out) if job.benchmark_out else {}
    points = [make_point(job.job_id, result, point_window(result, runs, tz)) for result in results]
    return sorted(points, key=lambda point: (point.concurrency is None, point.concurrency or 0, point.result.name))


def read_sweep(paths: Iterable[str | Path], tz: tzinfo | str = "UTC") -> list[SweepPoint]:
    """Every point of every job under ``paths`` (a ``UsageError`` for a path with no results)."""
    if isinstance(tz, str):
        tz = parse_timezone(tz)
    return [point for job in find_jobs(paths) for point in job_points(job, tz)]
