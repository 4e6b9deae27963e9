"""What the benchmark client writes for one run: sa-bench's result JSON and its printed block.

The keys, their order and the printed "Serving Benchmark Result" block follow vLLM's
``benchmark_serving.py``, which srt-slurm's sa-bench forks (see
``/work/shared/formats/srt-slurm-and-dynamo-metrics.md`` §1.3): setup keys, the aggregates,
the per-request arrays, then ``mean/median/std/p99`` of TTFT, TPOT, ITL and E2EL last (so a
reader can take the throughput from the head of a file and the latencies from its tail).

The simulator is a fluid one: a request's tokens come evenly between its first token and its
end, so its inter-token latencies are all its TPOT. ``itls`` therefore holds one value per
request (its mean gap, in seconds) instead of one per token, and the ITL statistics weigh
each request's TPOT by its number of gaps.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import numpy as np

from .client import RequestRecord, RunRecord

PERCENTILE = 99


def _ms_stats(name: str, values: list[float], weights: list[float] | None = None) -> dict[str, float]:
    """``mean_/median_/std_/p99_<name>_ms`` of ``values`` (seconds), as vLLM computes them (0 when empty)."""
    if not values:
        return {f"mean_{name}_ms": 0.0, f"median_{name}_ms": 0.0, f"std_{name}_ms": 0.0,
                f"p{PERCENTILE}_{name}_ms": 0.0}
    xs = np.asarray(values, dtype=float) * 1000.0
    if weights is None:
        return {f"mean_{name}_ms": float(np.mean(xs)), f"median_{name}_ms": float(np.median(xs)),
                f"std_{name}_ms": float(np.std(xs)), f"p{PERCENTILE}_{name}_ms": float(np.percentile(xs, PERCENTILE))}
    w = np.asarray(weights, dtype=float)
    order = np.argsort(xs)
    xs, w = xs[order], w[order]
    mean = float(np.average(xs, weights=w))
    cum = np.cumsum(w) / w.sum()

    def quantile(q: float) -> float:
        return float(xs[min(int(np.searchsorted(cum, q)), len(xs) - 1)])

    return {f"mean_{name}_ms": mean, f"median_{name}_ms": quantile(0.5),
            f"std_{name}_ms": float(math.sqrt(np.average((xs - mean) ** 2, weights=w))),
            f"p{PERCENTILE}_{name}_ms": quantile(PERCENTILE / 100)}


def _tpot(r: RequestRecord) -> float | None:
    if r.first_token is None or r.done is None or r.osl < 2:
        return None
    return (r.done - r.first_token) / (r.osl - 1)


def peak_output_tokens_per_s(run: RunRecord) -> float:
    """The most output tokens in any whole second of the run (vLLM buckets token times by second)."""
    seconds = max(1, math.ceil(run.duration))
    buckets = np.zeros(seconds + 1)
    for r in run.requests:
        if not r.ok or r.first_token is None:
            continue
        a, b = r.first_token - run.main_start, r.done - run.main_start
        buckets[min(int(a), seconds)] += 1.0  # the first token
        rest = r.osl - 1
        if rest <= 0:
            continue
        if b - a <= 0:
            buckets[min(int(b), seconds)] += rest
            continue
        rate = rest / (b - a)
        edges = np.arange(math.floor(a), math.floor(b) + 1)
        for k in edges:  # the share of [a, b] inside second k
            overlap = min(b, k + 1) - max(a, k)
            if overlap > 0:
                buckets[min(int(k), seconds)] += rate * overlap
    return float(buckets.max())


def result_json(run: RunRecord, *, start: datetime, model: str, tokenizer: str,
                extra: dict[str, object] | None = None) -> dict[str, object]:
    """The sa-bench result of a measured ``run`` (times in ``run`` are seconds after ``start``)."""
    ok = [r for r in run.requests if r.ok]
    duration = run.duration
    total_in = sum(r.isl for r in ok)
    total_out = sum(r.osl for r in ok)
    saved = start + timedelta(seconds=run.main_end + 0.2)
    tpots = [(t, r.osl - 1) for r in ok if (t := _tpot(r)) is not None]
    result: dict[str, object] = {
        "date": saved.strftime("%Y%m%d-%H%M%S"),
        "backend": "dynamo",
        "model_id": model,
        "tokenizer_id": tokenizer,
        "best_of": 1,
        "num_prompts": run.num_prompts,
        **(extra or {}),
        "request_rate": "inf" if math.isinf(run.request_rate) else run.request_rate,
        "burstiness": 1.0,
        "max_concurrency": run.concurrency,
        "duration": duration,
        "completed": len(ok),
        "total_input_tokens": total_in,
        "total_output_tokens": total_out,
        "request_throughput": len(ok) / duration,
        "request_goodput": None,
        "output_throughput": total_out / duration,
        "peak_output_tokens_per_s": peak_output_tokens_per_s(run),
        "total_token_throughput": (total_in + total_out) / duration,
        "input_lens": [r.isl for r in run.requests],
        "output_lens": [r.osl if r.ok else 0 for r in run.requests],
        "ttfts": [round(r.first_token - r.sent, 6) if r.ok and r.first_token is not None else 0.0
                  for r in run.requests],
        "itls": [[round(t, 6)] if (t := _tpot(r)) is not None and r.ok else [] for r in run.requests],
        "generated_texts": ["" for _ in run.requests],
        "errors": [r.error for r in run.requests],
    }
    result.update(_ms_stats("ttft", [r.first_token - r.sent for r in ok if r.first_token is not None]))
    result.update(_ms_stats("tpot", [t for t, _ in tpots]))
    result.update(_ms_stats("itl", [t for t, _ in tpots], [n for _, n in tpots]))
    result.update(_ms_stats("e2el", [r.done - r.sent for r in ok]))
    return result


def _row(label: str, value: object) -> str:
    if isinstance(value, float):
        return f"{label:<40} {value:<10.2f}"
    return f"{label:<40} {value!s:<10}"


_METRICS = (("ttft", "TTFT", "Time to First Token"), ("tpot", "TPOT", "Time per Output Token (excl. 1st token)"),
            ("itl", "ITL", "Inter-token Latency"), ("e2el", "E2EL", "End-to-end Latency"))


def printed_block(result: dict[str, object]) -> list[str]:
    """The "Serving Benchmark Result" block vLLM's client prints at the end of a run."""
    lines = [
        "{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="="),
        _row("Successful requests:", result["completed"]),
        _row("Maximum request concurrency:", result["max_concurrency"]),
    ]
    if result["request_rate"] != "inf":
        lines.append(_row("Request rate configured (RPS):", float(result["request_rate"])))
    lines += [
        _row("Benchmark duration (s):", float(result["duration"])),
        _row("Total input tokens:", result["total_input_tokens"]),
        _row("Total generated tokens:", result["total_output_tokens"]),
        _row("Request throughput (req/s):", float(result["request_throughput"])),
        _row("Output token throughput (tok/s):", float(result["output_throughput"])),
        _row("Peak output token throughput (tok/s):", float(result["peak_output_tokens_per_s"])),
        _row("Total Token throughput (tok/s):", float(result["total_token_throughput"])),
    ]
    for key, short, header in _METRICS:
        lines.append("{s:{c}^{n}}".format(s=header, n=50, c="-"))
        lines.append(_row(f"Mean {short} (ms):", float(result[f"mean_{key}_ms"])))
        lines.append(_row(f"Median {short} (ms):", float(result[f"median_{key}_ms"])))
        lines.append(_row(f"P{PERCENTILE} {short} (ms):", float(result[f"p{PERCENTILE}_{key}_ms"])))
    lines.append("=" * 50)
    return lines
