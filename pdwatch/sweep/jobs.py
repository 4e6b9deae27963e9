"""Benchmark jobs found under the paths given to ``pdwatch sweep``.

srt-slurm writes a job in one of two layouts, and a sweep is often a folder of many jobs:

- current: ``outputs/<job_id>/`` with ``<job_id>.json`` and everything the job wrote in ``logs/``
  (worker logs ``<node>_{prefill,decode,agg}_w<i>.out``, ``<node>_frontend_<i>.out``, ``benchmark.out``,
  ``raw_prometheus.jsonl[.gz]``, ``sa-bench_isl_<I>_osl_<O>/results_concurrency_*.json``);
- legacy: ``<job_id>_<P>P_<D>D_<YYYYMMDD_HHMMSS>/`` holding all of that directly;
- a folder of jobs (``outputs/``, or a copy of several): searched a few levels down.

A job is a folder plus what was found in it; nothing is read here but the small metadata file.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from pdwatch.errors import UsageError
from pdwatch.sweep.results import ROLLUP_NAME, SA_BENCH_NAME

WORKER_LOG = re.compile(r"^(?P<node>.+)_(?P<role>prefill|decode|agg)_w(?P<index>\d+)(?:_e\d+)?\.(?:out|err)$")
FRONTEND_LOG = re.compile(r"^(?P<node>.+)_frontend_(?P<index>\d+)\.out$")
LEGACY_JOB_FOLDER = re.compile(r"^(?P<job_id>\d+)_\d+[PA]_(?:\d+D_)?\d{8}_\d{6}$")
# `vllm bench serve --save-result` without --result-filename: <label>-<rate>qps[-concurrency<C>]-<model>-<date>.json
VLLM_RESULT_NAME = re.compile(r"-(?:inf|\d+(?:\.\d+)?)qps(?:-concurrency\d+)?-.+-\d{8}-\d{6}\.json$")
RESULT_FOLDER_PREFIX = "sa-bench_"  # the older result names vary (concurrency_16.json, ..._req_rate_inf.json)
PROMETHEUS_NAMES = ("raw_prometheus.jsonl", "raw_prometheus.jsonl.gz")
SEARCH_DEPTH = 3  # how far below a folder of jobs a job folder may sit
MAX_METADATA_BYTES = 1 << 20
NO_RESULTS = "no sweep results (results_concurrency_*.json, vllm bench serve results or benchmark-rollup.json) under it"


@dataclass(frozen=True)
class WorkerLog:
    """One worker leader's log: ``<node>_<role>_w<index>.out``."""

    path: Path
    node: str
    role: str  # "prefill" | "decode" | "agg"
    index: int


@dataclass(frozen=True)
class Job:
    """One benchmark job: its folder and the files a sweep reads from it."""

    job_id: str
    folder: Path
    layout: str  # "srt-slurm" (outputs/<id>/logs/) | "srt-slurm legacy" (<id>_<P>P_<D>D_<ts>/) | "folder"
    logs_folder: Path
    worker_logs: tuple[WorkerLog, ...] = ()
    frontend_logs: tuple[Path, ...] = ()
    benchmark_out: Path | None = None
    prometheus: Path | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    metadata_path: Path | None = None
    metadata_error: str | None = None
    result_files: tuple[Path, ...] = ()
    rollup: Path | None = None

    @property
    def has_results(self) -> bool:
        return bool(self.result_files) or self.rollup is not None


def find_jobs(paths: Iterable[str | Path]) -> list[Job]:
    """Every job under ``paths``, in path order then folder-name order.

    Jobs without results are kept (a job that failed before its first point is worth showing), but
    a path with no result in any job is a ``UsageError``, as is a path that does not exist.
    """
    jobs: list[Job] = []
    seen: set[Path] = set()
    for given in paths:
        path = Path(given)
        if not path.exists():
            raise UsageError(f"{given}: no such file or directory")
        if not path.is_dir():
            raise UsageError(f"{given}: not a folder (give an srt-slurm job folder or a folder of jobs)")
        found = _jobs_under(path, SEARCH_DEPTH)
        if not any(job.has_results for job in found):
            raise UsageError(f"{given}: {NO_RESULTS}")
        for job in found:  # paths may overlap, and links may reach a job twice
            if job.folder.resolve() not in seen:
                seen.add(job.folder.resolve())
                jobs.append(job)
    return jobs


def read_job(folder: Path) -> Job | None:
    """The job in ``folder``, or None when it holds no job's files (no results, benchmark.out or worker logs)."""
    folder = Path(folder)
    if folder.name == "logs" and _looks_like_logs(folder):
        folder = folder.parent  # given outputs/<id>/logs: the job is its parent
    logs = folder / "logs"
    if logs.is_dir() and _looks_like_logs(logs):
        layout = "srt-slurm"
    elif _looks_like_logs(folder):
        logs = folder
        layout = "srt-slurm legacy" if LEGACY_JOB_FOLDER.match(folder.name) else "folder"
    else:
        return None
    legacy = LEGACY_JOB_FOLDER.match(folder.name)
    job_id = legacy["job_id"] if legacy else folder.name
    metadata, metadata_path, metadata_error = _read_metadata(folder, logs, job_id)
    names = _list(logs)
    worker_logs = sorted((_worker_log(logs / name) for name in names if WORKER_LOG.match(name)),
                         key=lambda log: (log.role, log.index, log.node))
    result_files = _result_files(folder if layout != "srt-slurm" else logs)
    rollup = logs / ROLLUP_NAME if ROLLUP_NAME in names else None
    return Job(
        job_id=job_id, folder=folder, layout=layout, logs_folder=logs,
        worker_logs=tuple(worker_logs),
        frontend_logs=tuple(sorted(logs / name for name in names if FRONTEND_LOG.match(name))),
        benchmark_out=logs / "benchmark.out" if "benchmark.out" in names else None,
        prometheus=next((logs / name for name in PROMETHEUS_NAMES if name in names), None),
        metadata=metadata, metadata_path=metadata_path, metadata_error=metadata_error,
        result_files=tuple(result_files), rollup=rollup,
    )


def is_result_file(path: Path) -> bool:
    """A benchmark result by its name or its folder (not the ``.pytorch.json`` copy vLLM writes beside it)."""
    name = path.name
    if not name.endswith(".json") or name.endswith(".pytorch.json") or name == ROLLUP_NAME:
        return False
    return bool(SA_BENCH_NAME.search(name) or VLLM_RESULT_NAME.search(name)
                or path.parent.name.startswith(RESULT_FOLDER_PREFIX))


def _jobs_under(folder: Path, depth: int) -> list[Job]:
    job = read_job(folder)
    if job is not None:
        return [job]
    if depth == 0:
        return []
    jobs: list[Job] = []
    for name in sorted(_list(folder)):
        child = folder / name
        if child.is_dir():  # a symlink to a job counts (a folder collecting a campaign's jobs); depth bounds a loop
            jobs += _jobs_under(child, depth - 1)
    return jobs


def _looks_like_logs(folder: Path) -> bool:
    names = _list(folder)
    return any(name == "benchmark.out" or name == ROLLUP_NAME or WORKER_LOG.match(name)
               or name.startswith(RESULT_FOLDER_PREFIX) or is_result_file(folder / name) for name in names)


def _result_files(folder: Path) -> list[Path]:
    found: list[Path] = []
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        found += (Path(root) / name for name in sorted(files) if is_result_file(Path(root) / name))
    return found


def _worker_log(path: Path) -> WorkerLog:
    match = WORKER_LOG.match(path.name)
    assert match is not None
    return WorkerLog(path, match["node"], match["role"], int(match["index"]))


def _read_metadata(folder: Path, logs: Path, job_id: str) -> tuple[dict[str, Any], Path | None, str | None]:
    """``<job_id>.json`` beside ``logs/`` or inside it (post-processing copies it there)."""
    for candidate in (folder / f"{job_id}.json", logs / f"{job_id}.json"):
        if not candidate.is_file():
            continue
        try:
            if candidate.stat().st_size > MAX_METADATA_BYTES:
                return {}, candidate, f"{candidate.name}: over 1 MiB, not job metadata"
            document = json.loads(candidate.read_bytes())
        except (OSError, ValueError) as err:
            return {}, candidate, f"{candidate.name}: {err}"
        if not isinstance(document, dict):
            return {}, candidate, f"{candidate.name}: not a JSON object"
        return document, candidate, None
    return {}, None, None


def _list(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []
