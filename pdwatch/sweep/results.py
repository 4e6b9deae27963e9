"""Benchmark result files -> one ``BenchmarkResult`` per measured point.

Three sources, all with vLLM's benchmark keys (``completed``, ``output_throughput``, ``mean_tpot_ms``...):

- sa-bench's ``results_concurrency_<C>_gpus_<T>[_ctx_<P>_gen_<D>].json``: the GPU counts are only in the name;
- ``vllm bench serve --save-result`` files (same keys; concurrency from ``max_concurrency``), and the
  older srt-slurm names inside ``sa-bench_*/`` folders;
- ``benchmark-rollup.json`` (srt-slurm's post-processing table), used when the per-point files are gone.

Result files reach hundreds of MB; only their top-level scalars are read (``jsonscan``). Nothing here
raises on bad content: a point that cannot be read carries ``read_error``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pdwatch.sweep.jsonscan import read_scalars, read_top_level

SA_BENCH_NAME = re.compile(r"results_concurrency_(?P<concurrency>\d+)_gpus_(?P<total>\d+)"
                           r"(?:_ctx_(?P<prefill>\d+)_gen_(?P<decode>\d+))?\.json$")
LATENCY_METRICS = ("ttft", "tpot", "itl", "e2el")
SCALAR_KEYS = frozenset({
    "date", "backend", "model_id", "num_prompts", "request_rate", "max_concurrency",
    "duration", "completed", "failed", "total_input_tokens", "total_output_tokens", "total_input", "total_output",
    "request_throughput", "output_throughput", "total_token_throughput",
    *(f"{stat}_{metric}_ms" for stat in ("mean", "median", "p99") for metric in LATENCY_METRICS),
    *(f"percentiles_{metric}_ms" for metric in LATENCY_METRICS),  # older files: [[99, value], ...]
})
# what a point needs: read from a big file's two ends when they hold all of it (jsonscan.read_scalars)
NEEDED_KEYS = frozenset({"completed", "duration", "output_throughput", "total_token_throughput",
                         "mean_ttft_ms", "mean_tpot_ms"})
ROLLUP_NAME = "benchmark-rollup.json"
MAX_ROLLUP_BYTES = 64 << 20


@dataclass(frozen=True)
class GpuCount:
    """GPUs the point ran on, and where that number came from (the file name or the job's metadata)."""

    total: int
    prefill: int | None = None
    decode: int | None = None
    source: str = ""


@dataclass(frozen=True)
class Latency:
    """One latency metric of a run, in milliseconds."""

    mean_ms: float | None = None
    median_ms: float | None = None
    p99_ms: float | None = None


@dataclass(frozen=True)
class BenchmarkResult:
    """The figures of one measured run, as its result file states them."""

    path: Path
    kind: str  # "sa-bench" | "vllm bench serve" | "rollup"
    concurrency: int | None = None
    gpus: GpuCount | None = None
    requested: int | None = None  # num_prompts
    completed: int | None = None
    failed: int | None = None  # only vLLM's own client writes it
    duration_s: float | None = None
    total_input_tokens: int | None = None
    total_output_tokens: int | None = None
    request_throughput: float | None = None
    output_throughput: float | None = None  # output tokens/s
    total_token_throughput: float | None = None  # input + output tokens/s
    ttft: Latency = Latency()
    tpot: Latency = Latency()
    itl: Latency = Latency()
    e2el: Latency = Latency()
    date: str | None = None  # when the file was saved (= end of run), container-local "%Y%m%d-%H%M%S"
    read_error: str | None = None  # "results_concurrency_64_gpus_8.json: truncated JSON at byte 1234"

    @property
    def name(self) -> str:
        return self.path.name


def read_result_file(path: Path, metadata: dict[str, Any] | None = None) -> BenchmarkResult:
    """One result file -> one point; GPU counts from its name, else from the job's ``metadata``."""
    path = Path(path)
    name_match = SA_BENCH_NAME.search(path.name)
    kind = "sa-bench" if name_match else "vllm bench serve"
    gpus = _gpus_from_name(name_match) if name_match else gpus_from_metadata(metadata or {})
    try:
        read = read_scalars(path, SCALAR_KEYS, NEEDED_KEYS)
    except OSError as err:
        return BenchmarkResult(path, kind, gpus=gpus, read_error=f"{path.name}: cannot read ({err.strerror})")
    values = read.values
    error = read.error
    if error is None and read.more_documents:
        error = "holds more than one result (vllm bench serve --append-result?): only one run per file is read"
    if error is None and not {"completed", "duration"} & values.keys():
        error = "not a benchmark result (no 'completed' or 'duration' key)"
    concurrency = _as_int(values.get("max_concurrency"))
    if concurrency is None and name_match:
        concurrency = int(name_match["concurrency"])
    return BenchmarkResult(
        path=path, kind=kind, concurrency=concurrency, gpus=gpus,
        requested=_as_int(values.get("num_prompts")),
        completed=_as_int(values.get("completed")),
        failed=_as_int(values.get("failed")),
        duration_s=_as_float(values.get("duration")),
        total_input_tokens=_as_int(_first(values, "total_input_tokens", "total_input")),
        total_output_tokens=_as_int(_first(values, "total_output_tokens", "total_output")),
        request_throughput=_as_float(values.get("request_throughput")),
        output_throughput=_as_float(values.get("output_throughput")),
        total_token_throughput=_as_float(values.get("total_token_throughput")),
        **{metric: _latency(values, metric) for metric in LATENCY_METRICS},
        date=values.get("date") if isinstance(values.get("date"), str) else None,
        read_error=f"{path.name}: {error}" if error else None,
    )


def read_rollup(path: Path, metadata: dict[str, Any] | None = None) -> list[BenchmarkResult]:
    """srt-slurm's ``benchmark-rollup.json`` -> one point per ``runs[]`` entry.

    The rollup keeps tokens, completed requests and request throughput; duration and the token
    rates are derived from them (duration = completed / request throughput), so no number is
    taken from its ambiguous ``throughput_toks``. A rollup that cannot be read gives one point
    carrying the reason.
    """
    path = Path(path)
    gpus = gpus_from_metadata(metadata or {})
    try:
        if path.stat().st_size > MAX_ROLLUP_BYTES:
            return [BenchmarkResult(path, "rollup", gpus=gpus,
                                    read_error=f"{path.name}: over {MAX_ROLLUP_BYTES >> 20} MiB, not a rollup table")]
        document = json.loads(path.read_bytes())
    except OSError as err:
        return [BenchmarkResult(path, "rollup", gpus=gpus, read_error=f"{path.name}: cannot read ({err.strerror})")]
    except ValueError as err:
        return [BenchmarkResult(path, "rollup", gpus=gpus, read_error=f"{path.name}: not JSON ({err})")]
    runs = document.get("runs") if isinstance(document, dict) else None
    if not isinstance(runs, list):
        return [BenchmarkResult(path, "rollup", gpus=gpus, read_error=f"{path.name}: no 'runs' list")]
    return [_rollup_point(path, run, gpus) for run in runs if isinstance(run, dict)]


def gpus_from_metadata(metadata: dict[str, Any]) -> GpuCount | None:
    """The job's GPU count from its ``<job_id>.json``: an explicit total if the writer gave one, else
    srt-slurm's dashboard rule, (prefill + decode + agg nodes) × GPUs per node. The legacy format
    nests the same fields under ``run_metadata``."""
    resources = metadata.get("resources") or metadata.get("run_metadata") or {}
    if not isinstance(resources, dict):
        return None
    explicit = _as_int(resources.get("total_gpus_counted")) or _as_int(resources.get("total_gpus"))
    if explicit:
        return GpuCount(explicit, source="job metadata (total GPUs)")
    per_node = _as_int(resources.get("gpus_per_node"))
    nodes = {role: _as_int(resources.get(f"{role}_nodes")) or 0 for role in ("prefill", "decode", "agg")}
    if per_node and sum(nodes.values()):
        return GpuCount(sum(nodes.values()) * per_node,
                        prefill=nodes["prefill"] * per_node if nodes["prefill"] else None,
                        decode=nodes["decode"] * per_node if nodes["decode"] else None,
                        source="job metadata (nodes × GPUs per node)")
    return None


def _gpus_from_name(match: re.Match[str]) -> GpuCount:
    prefill, decode = match["prefill"], match["decode"]
    return GpuCount(int(match["total"]), prefill=int(prefill) if prefill else None,
                    decode=int(decode) if decode else None, source="file name")


def _rollup_point(path: Path, run: dict[str, Any], gpus: GpuCount | None) -> BenchmarkResult:
    completed = _as_int(run.get("completed_requests"))
    request_rate = _as_float(run.get("request_throughput"))
    tokens_in, tokens_out = _as_int(run.get("total_input_tokens")), _as_int(run.get("total_output_tokens"))
    duration = completed / request_rate if completed and request_rate else None
    return BenchmarkResult(
        path=path, kind="rollup", concurrency=_as_int(run.get("concurrency")), gpus=gpus,
        completed=completed, duration_s=duration,
        total_input_tokens=tokens_in, total_output_tokens=tokens_out, request_throughput=request_rate,
        output_throughput=tokens_out / duration if duration and tokens_out is not None else None,
        total_token_throughput=(tokens_in + tokens_out) / duration
        if duration and tokens_in is not None and tokens_out is not None else None,
        ttft=Latency(_as_float(run.get("ttft_mean_ms")), None, _as_float(run.get("ttft_p99_ms"))),
        tpot=Latency(_as_float(run.get("tpot_mean_ms")), None, _as_float(run.get("tpot_p99_ms"))),
        itl=Latency(_as_float(run.get("itl_mean_ms")), None, _as_float(run.get("itl_p99_ms"))),
        e2el=Latency(_as_float(run.get("e2el_mean_ms"))),
    )


def _latency(values: dict[str, Any], metric: str) -> Latency:
    p99 = _as_float(values.get(f"p99_{metric}_ms"))
    if p99 is None:  # older files: percentiles_<m>_ms = [[99, value], ...]
        for pair in values.get(f"percentiles_{metric}_ms") or ():
            if isinstance(pair, list) and len(pair) == 2 and _as_float(pair[0]) == 99:
                p99 = _as_float(pair[1])
    return Latency(_as_float(values.get(f"mean_{metric}_ms")), _as_float(values.get(f"median_{metric}_ms")), p99)


def _first(values: dict[str, Any], *keys: str) -> Any:
    return next((values[key] for key in keys if values.get(key) is not None), None)


def _as_float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        return float(value)
    except ValueError:
        return None


def _as_int(value: Any) -> int | None:
    number = _as_float(value)
    return int(number) if number is not None and number == number and abs(number) != float("inf") else None
