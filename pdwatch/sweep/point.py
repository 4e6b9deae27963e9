"""A sweep point: a result's figures on named axes, and whether the point may be drawn at all.

Pareto charts in the wild use different axes; the ones computed here are named by ``AXES`` so a view
can label which definition it shows:

- srt-slurm's dashboard: x = 1000 / mean TPOT (ms), "tokens/s per user"; y = output tokens/s ÷ total GPUs;
- the public dashboards (InferenceX): total (input + output) tokens/s ÷ total GPUs.

Validity here is what the result file alone shows (incomplete run, failed requests, no output, unreadable
file, unknown GPU count); reasons found in the logs over the point's window are added by the caller.
"""

from __future__ import annotations

from dataclasses import dataclass

from pdwatch.sweep.results import BenchmarkResult
from pdwatch.sweep.windows import PointWindow

MAX_FAILED_FRACTION = 0.05  # srt-slurm's sa-bench gate (benchmark_outcome.py max_failure_rate)


@dataclass(frozen=True)
class Axis:
    key: str  # the SweepPoint attribute
    label: str
    unit: str
    definition: str


AXES: dict[str, Axis] = {axis.key: axis for axis in (
    Axis("tokens_per_s_per_user", "tokens/s per user", "tok/s/user",
         "1000 / mean TPOT (ms) (srt-slurm's dashboard x axis)"),
    Axis("output_tokens_per_s_per_gpu", "output tokens/s per GPU", "tok/s/GPU",
         "output tokens/s ÷ total GPUs (srt-slurm's dashboard y axis)"),
    Axis("total_tokens_per_s_per_gpu", "total tokens/s per GPU", "tok/s/GPU",
         "(input + output) tokens/s ÷ total GPUs (InferenceX and the public dashboards)"),
)}


@dataclass(frozen=True)
class SweepPoint:
    """One measured run of a sweep, with its job, window, derived figures and validity."""

    job_id: str
    result: BenchmarkResult
    window: PointWindow | None
    tokens_per_s_per_user: float | None
    output_tokens_per_s_per_gpu: float | None
    total_tokens_per_s_per_gpu: float | None
    invalid_reasons: tuple[str, ...]

    @property
    def valid(self) -> bool:
        return not self.invalid_reasons

    @property
    def concurrency(self) -> int | None:
        return self.result.concurrency


def make_point(job_id: str, result: BenchmarkResult, window: PointWindow | None = None) -> SweepPoint:
    """The point of ``result``, with srt-slurm's and the public dashboards' figures."""
    gpus = result.gpus.total if result.gpus and result.gpus.total > 0 else None
    mean_tpot = result.tpot.mean_ms
    return SweepPoint(
        job_id=job_id, result=result, window=window,
        tokens_per_s_per_user=1000.0 / mean_tpot if mean_tpot else None,
        output_tokens_per_s_per_gpu=_per(result.output_throughput, gpus),
        total_tokens_per_s_per_gpu=_per(result.total_token_throughput, gpus),
        invalid_reasons=tuple(invalid_reasons(result)),
    )


def invalid_reasons(result: BenchmarkResult) -> list[str]:
    """Why the result file alone says the point must not be drawn as a valid one (empty: it may)."""
    if result.read_error:
        return [result.read_error]
    reasons: list[str] = []
    requested, completed = result.requested, result.completed
    if requested is not None and completed is not None and completed < requested:
        reasons.append(f"completed {completed} of {requested} requests")
    failed = result.failed if result.failed is not None else (
        requested - completed if requested is not None and completed is not None and completed < requested else None)
    attempted = (completed or 0) + (result.failed or 0) if result.failed is not None else requested
    if failed and attempted and failed / attempted > MAX_FAILED_FRACTION:
        reasons.append(f"{failed} of {attempted} requests failed ({failed / attempted:.0%}, over "
                       f"{MAX_FAILED_FRACTION:.0%})")
    if result.total_output_tokens == 0 or (result.total_output_tokens is None and result.output_throughput == 0):
        reasons.append("no output tokens")
    if result.output_throughput is None:
        reasons.append("no output throughput in the result")
    if result.total_output_tokens != 0 and (result.tpot.mean_ms is None or result.tpot.mean_ms <= 0):
        reasons.append("no mean TPOT in the result (tokens/s per user unknown)")
    if result.gpus is None or result.gpus.total <= 0:
        reasons.append("GPU count unknown (not in the file name nor in the job's metadata)")
    return reasons


def _per(value: float | None, gpus: int | None) -> float | None:
    return value / gpus if value is not None and gpus else None
