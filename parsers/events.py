"""The typed event every parser emits, and the catalogue of event kinds.

An event is one fact read from a log: a stats line, a start-up fact, a problem.
The common envelope (kind, source, line_no, ts, engine, level) is the same for
every kind; kind-specific values live in ``values`` under the keys that
``KINDS`` declares for that kind. The JSON form (``Event.to_json_dict``) puts
the values next to the envelope keys: that flat shape is the ``pdwatch parse``
contract.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

# kind -> {value key: short description}. Keys listed here may be absent from an
# event only where the description says "when present"; a test checks that every
# event carries only declared keys. Never rename a kind or a key: other tools rely on them.
KINDS: dict[str, dict[str, str]] = {
    "stats": {
        "prompt_tps": "Avg prompt throughput, tokens/s",
        "gen_tps": "Avg generation throughput, tokens/s",
        "running": "requests running (last scheduler snapshot)",
        "waiting": "requests waiting (V0: Pending)",
        "kv_usage_pct": "KV-cache usage 0-100 (GPU KV, or CPU KV on vLLM's CPU backend)",
        "swapped": "V0 swapped requests, when present",
        "pending": "V0 pending requests, when present",
        "deferred": "deferred (skipped-waiting) requests, when present",
        "preemptions": "preemptions in this interval, when present",
        "corrupted": "requests with NaNs in logits, when present",
        "prefix_hit_pct": "prefix-cache hit rate %, when present",
        "external_prefix_hit_pct": "KV-connector prefix-cache hit rate %, when present",
        "mm_hit_pct": "multi-modal cache hit rate %, when present",
        "cpu_kv_usage_pct": "V0 CPU swap-space usage %, when present",
        "engines_aggregated": "N of 'N Engines Aggregated:', when present",
    },
    "prefix_cache": {
        "gpu_hit_pct": "V0 GPU prefix-cache hit rate %",
        "cpu_hit_pct": "V0 CPU prefix-cache hit rate %",
    },
    "spec_decode": {
        "mean_acceptance_length": "mean accepted tokens per draft step",
        "accepted_tps": "accepted tokens/s, when present",
        "drafted_tps": "drafted tokens/s, when present",
        "accepted_tokens": "accepted tokens in the interval (V0's 'Speculative metrics': since start)",
        "drafted_tokens": "drafted tokens in the interval (V0: since start)",
        "per_position_acceptance": "acceptance rate per draft position (list of floats)",
        "acceptance_rate_pct": "draft acceptance rate % (null when nan)",
        "system_efficiency_pct": "V0: emitted tokens over the most a step could emit, % (null when nan)",
        "num_speculative_tokens": "V0: speculative tokens per step",
        "emitted_tokens": "V0: tokens emitted by speculative steps, so far",
    },
    "kv_transfer": {
        "connector": "connector name for a MultiConnector line, else null",
        "metrics": "dict of the connector's metrics, keys snake_cased (num_successful_transfers, avg_xfer_time_ms, ...)",
    },
    "version": {
        "version": "vLLM version string",
        "model": "served model, when printed on the same record",
    },
    "args": {
        "args": "the args as a dict: vLLM >= 0.9 logs the non-default ones, older versions (and V0) every one as a Namespace (nested config reprs become dicts)",
        "form": "namespace when the line was args: Namespace(...) (every argument, defaults included); absent for the non-default dict",
    },
    "engine_config": {
        "version": "vLLM version from 'Initializing a V1 LLM engine (vX)'",
        "model": "model",
        "tensor_parallel_size": "TP size, when present",
        "pipeline_parallel_size": "PP size, when present",
        "data_parallel_size": "DP size, when present",
        "max_seq_len": "max model length, when present",
        "kv_cache_dtype": "KV-cache dtype, when present",
        "enable_prefix_caching": "bool, when present",
        "enforce_eager": "bool, when present",
        "num_speculative_tokens": "speculative tokens per step, when present",
        "cudagraph_mode": "compilation cudagraph mode, when present",
    },
    "model_loading": {
        "gib": "memory taken by the weights, GiB",
        "seconds": "load time, s",
    },
    "kv_memory": {
        "gib": "memory available for the KV cache, GiB",
    },
    "memory_profile": {
        "total_gib": "device memory, GiB, when present",
        "utilization": "gpu_memory_utilization, when present",
        "weights_gib": "weights, GiB, when present",
        "activation_peak_gib": "peak activations, GiB, when present",
        "non_torch_gib": "non-torch memory, GiB, when present",
        "cudagraph_gib": "CUDA-graph memory, GiB, when present",
        "non_kv_gib": "total non-KV memory, GiB, when present",
        "kv_gib": "memory left for the KV cache, GiB, when present",
    },
    "kv_cache_size": {
        "tokens": "KV-cache capacity in tokens",
        "device": "GPU, CPU, ... as printed",
    },
    "max_concurrency": {
        "tokens_per_request": "request length the figure is for",
        "concurrency": "how many such requests fit in the KV cache",
    },
    "cache_config": {
        "num_gpu_blocks": "KV blocks allocated",
        "override": "num_gpu_blocks_override, when the line says it replaced vLLM's count",
        "memory_blocks": "the blocks the KV memory would have held, which the override replaced",
    },
    "cudagraph_capture": {
        "sizes": "captured batch sizes, ascending (list of ints; empty list = no CUDA graphs), or null",
        "max_size": "largest captured size, or null when there are none",
        "origin": "engine_config | profiling | override",
    },
    "cudagraph_memory": {
        "estimated_gib": "estimated CUDA-graph memory, GiB, when present",
        "actual_gib": "actual CUDA-graph memory, GiB, when present",
        "seconds": "capture time, s, when present",
    },
    "init_time": {
        "seconds": "engine init time, s",
        "compilation_seconds": "of which compilation, s, when present",
    },
    "compile_time": {
        "seconds": "torch.compile total time, s",
    },
    "role_hint": {
        "role": "prefill or decode, as a Dynamo worker says of itself",
        "message": "the line's message",
        "origin": "what said so, when not a log line: 'prometheus label' (a Prometheus target's labels)",
    },
    "block_size": {
        "attention_block_tokens": "attention block size set for the mamba page size, when present",
        "mamba_padding_pct": "mamba page padding %, when present",
    },
    "ssm_dtype": {
        "dtype": "SSM state dtype vLLM uses",
        "backend": "mamba backend named by the line",
    },
    "ssm_conv_layout": {
        "layout": "SSM conv-state layout vLLM set (SD or DS)",
    },
    "preemption": {
        "request_id": "preempted request",
        "mode": "RECOMPUTE or SWAP",
        "cumulative": "total_num_cumulative_preemption",
    },
    "stats_disabled": {
        "reason": "why vLLM stopped printing stats lines",
    },
    "broadcast_wait": {
        "seconds": "how long a vLLM process has waited on its shared-memory queue (a process it waits for is "
                   "stuck, or compiling at start-up); repeated every that many seconds",
    },
    "nixl_failure": {
        "failure_type": "transfer_failed, handshake_failed, ...",
        "detail": "the rest of the message",
        "request_id": "request, when known",
        "remote_host": "peer, when known",
    },
    "kv_expired": {
        "request_id": "request whose KV blocks expired",
        "retrieved_by": "how many remote workers had pulled them (null when unknown)",
        "timeout_s": "abort timeout in seconds (older wording), when present",
    },
    "kv_load_failure": {
        "requests": "requests affected",
        "tokens": "tokens affected",
        "recovered": "true when rescheduled, false when failed",
    },
    "kv_cache_error": {
        "message": "the start-up KV-cache error",
        "needed_gib": "KV memory one max-length request needs, when present",
        "available_gib": "KV memory available, when present",
        "estimated_max_len": "max model length that would fit, when present",
    },
    "oom": {
        "message": "the out-of-memory text",
        "tried_gib": "allocation that failed, GiB, when present",
    },
    "engine_dead": {
        "reason": "engine_dead_error | fatal_error | failed_to_start | init_failed | worker_died | output_handler_failed",
        "message": "the line's message",
    },
    "traceback": {
        "exception": "exception type of the last line",
        "message": "exception message",
        "frames": "number of 'File ...' frames",
    },
    "shutdown": {
        "message": "the [shutdown] message",
    },
    "stop_requested": {
        "how": "what started the stop: api_server_signal | SIGINT | SIGTERM | ... | http_server",
    },
    "http_access": {
        "client": "client address",
        "method": "HTTP method",
        "path": "request path",
        "status": "HTTP status code (int)",
    },
    "worker_selected": {
        "worker_type": "prefill | decode | ...",
        "worker_id": "worker id (string; Dynamo ids exceed JS integers)",
        "dp_rank": "DP rank (int) or null",
        "logit": "router logit, when present",
        "cached_blocks": "cached blocks, when present",
        "tree_size": "tree size, when present",
        "total_blocks": "total blocks, when present",
    },
    "model_registered": {
        "action": "added | removed",
        "model_name": "model, when present",
        "namespace": "namespace, when present",
    },
    "dynamo_process": {
        "process": "frontend | worker: which Dynamo process wrote the line",
        "stage": "import | start | register | ready",
        "address": "frontend: the HTTP service's host:port, when present",
        "port": "frontend: its HTTP port (its /metrics are there), when present",
        "model": "worker: the model it serves, when present",
        "serves": "worker: what it registers, 'prefill' or the OpenAI endpoints ('chat,completions'), when present",
    },
    "kv_connector": {
        "name": "the KV connector vLLM created (NixlConnector, NixlPullConnector, ...)",
        "engine_id": "the connector's engine id, when present",
        "kv_role": "kv_producer | kv_consumer | kv_both, when present",
    },
    "worker_set": {
        "action": "added | removed: a set of workers joined or left a model in the frontend's discovery",
        "model": "the model",
        "mode": "aggregated | prefill | decode (the namespace's last element)",
        "component": "the Dynamo component (backend, prefill, ...)",
        "remaining": "worker sets left for the model after a removal, when present",
    },
    "backend_error": {
        "reason": "what the frontend says broke: the route's outcome (worker_disconnected, ...) or migration_exhausted",
        "error_type": "the error type it gives (disconnected, ...), when present",
        "worker_id": "the worker's instance id (decimal string), when present",
        "target": "the role of the backend that failed when the line names it (prefill: the prefill router's), else null",
    },
    "frontend_response": {
        "status": "HTTP status (int)",
        "latency_ms": "latency, ms, when present",
        "method": "HTTP method, when present",
        "path": "request path, when present",
        "inference": "true for an inference request (POST /v1/..., not a tokenizer call)",
    },
    "request_failed": {
        "status": "HTTP status of an inference request that failed (>= 400)",
        "path": "request path",
        "latency_ms": "latency, ms, when present",
    },
    "request_error": {
        "error_type": "Dynamo's error type of a failed request (unavailable, not_found, ...)",
        "detail": "its error detail, when present",
    },
    "server_ready": {
        "server": "vllm (uvicorn's 'Application startup complete') or dynamo.vllm ('worker for M has been initialized')",
    },
    "error_traceback": {
        "reason": "no log line makes this kind: pdwatch's copy of a traceback logged at ERROR or with no level "
                  "(not vLLM's start-up warnings, which are harmless): the exception line",
    },
    "status_server_failed": {
        "error": "why a Dynamo worker's status server (/health, /metrics) did not start, when present",
    },
    "request_plane_error": {
        "error": "a Dynamo worker's request-plane connection broke (reset by peer, broken pipe)",
    },
    "frontend_lost": {
        "reason": "no log line makes this kind: pdwatch puts a worker's broken connection on the frontend "
                  "whose log went silent across it, or a frontend's restart that no stop preceded on its "
                  "last line before it (pdwatch.model.frontend_losses)",
    },
    "seen_again": {
        "reason": "no log line makes this kind: the first line of an endpoint after it was lost (a restart)",
    },
    "lost_by_frontend": {
        "reason": "no log line makes this kind: pdwatch puts a frontend's line on the worker it lost "
                  "(pdwatch.model.frontend_losses); what the line says happened to it",
    },
    "request_completed": {
        "status": "status field, when present",
        "latency_ms": "latency, when present",
        "ttft_ms": "time to first token, when present",
        "fields": "every key=value field of the line",
    },
}

ENVELOPE_KEYS = ("kind", "source", "line_no", "ts", "engine", "level")


@dataclass(slots=True)
class Event:
    """One parsed fact. ``ts`` is timezone-aware, or None when the line had no timestamp."""

    kind: str
    source: str
    line_no: int
    ts: datetime | None
    engine: int | None
    level: str | None
    values: dict[str, Any] = field(default_factory=dict)
    end_line_no: int | None = None
    text: str = ""  # the ANSI-stripped line (first line for grouped events): evidence for reports
    # A Prometheus target's labels (its events' source names them too, for people): what the
    # deployment model names and matches the endpoint by. None for logs and /metrics scrapes.
    # Not in ``to_json_dict``: ``pdwatch parse`` prints the source, which shows them.
    labels: Mapping[str, str] | None = None

    def moved(self, delta: int) -> Event:
        """A copy with its line numbers moved by ``delta`` (read with provisional numbers: a
        piece of a file scanned before the lines ahead of it were counted)."""
        return replace(self, line_no=self.line_no + delta,
                       end_line_no=None if self.end_line_no is None else self.end_line_no + delta)

    def to_json_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "source": self.source,
            "line_no": self.line_no,
            "ts": self.ts.isoformat() if self.ts is not None else None,
            "engine": self.engine,
            "level": self.level,
        }
        if self.end_line_no is not None:
            out["end_line_no"] = self.end_line_no
        out.update(self.values)
        return out
