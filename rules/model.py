"""What the rule engine reads: one immutable view of the deployment per evaluation.

The store (``pdwatch``) builds these; ``rules`` never imports it. The names below are
the whole contract: a rule may only use the stats fields, facts, event kinds and roles
listed here, so a typo in a rule file is an error at load time, not a silent never-fire.
Adding a fact or an event kind is a one-line change here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:  # the views hold frames; reading the names needs no pandas (a report's workers)
    import pandas as pd

ROLES = ("prefill", "decode", "aggregated", "frontend", "unknown")

# Per-stats-line series (float64, NaN = not printed). ``ts``, ``engine``, ``source`` and
# ``line_no`` are also columns but are not values a rule computes with.
STATS_FIELDS = (
    "prompt_tps",
    "gen_tps",
    "running",
    "waiting",
    "kv_usage_pct",
    "preemptions",
    "deferred",
    "prefix_hit_pct",
    "external_prefix_hit_pct",
    # A Dynamo frontend's /metrics (parsers/dynamo_metrics.py): the user-facing side.
    "ttft_s",
    "itl_s",
    "isl_tokens",
    "osl_tokens",
    "request_rate",
    "frontend_inflight",
    "frontend_queued",
    "ttft_p99_s",
    "itl_p99_s",
    # A Dynamo frontend's log (its HTTP response lines): inference requests answered per second.
    "requests_ok",
    "requests_failed",
    "request_latency_s",
)

# Start-up facts of an endpoint; a missing key means "unknown".
ENDPOINT_FACTS: dict[str, str] = {
    "max_num_seqs": "--max-num-seqs (per engine)",
    "max_num_batched_tokens": "--max-num-batched-tokens",
    "max_capture_size": "largest CUDA-graph capture size; None = no CUDA graphs",
    "capture_sizes": "list of CUDA-graph capture sizes",
    "num_speculative_tokens": "speculative tokens per step, 0 if none",
    "stats_interval_s": "median spacing of an engine's stats lines, seconds",
    "kv_capacity_tokens": "KV-cache size in tokens",
    "max_concurrency": "vLLM's 'Maximum concurrency for N tokens per request'",
    "max_concurrency_tokens": "the N of that line",
    "planned_concurrency": "max concurrency per engine with report --model-config: the log's figure, else pdwatch's capacity arithmetic",
    "api_server_count": "--api-server-count",
    "kv_role": "kv_producer | kv_consumer | kv_both",
    "kv_connector": "the KV connector vLLM created (NixlConnector, NixlPullConnector, ExampleConnector, ...)",
    "nixl": "its KV connector is NIXL's, which logs each interval's transfers (bool)",
    "block_size": "KV block size, tokens",
    "async_scheduling": "--async-scheduling (bool)",
    "enable_prefix_caching": "prefix caching on (bool)",
    "hybrid": "hybrid (Mamba/GDN + attention) model (bool)",
    "ssm_conv_layout": "VLLM_SSM_CONV_STATE_LAYOUT, e.g. DS or SD",
    "tensor_parallel_size": "TP size",
    "data_parallel_size": "DP size",
    "stats_disabled": "vLLM said it will not log stats (bool)",
    "disable_log_stats": "started with --disable-log-stats: no stats lines, and vLLM 0.32's /metrics has no vllm: series (bool)",
    "stats_from_metrics": "the endpoint's stats come from recorded /metrics scrapes, not stats lines (bool)",
}

# Deployment-level facts (``DeploymentView.facts``).
DEPLOYMENT_FACTS: dict[str, str] = {
    "concurrency": "requests in flight from the benchmark client",
    "isl": "input sequence length of the workload, tokens",
    "osl": "output sequence length of the workload, tokens",
}

# Kinds of non-stats events (the parser's kinds, minus ``stats``).
EVENT_KINDS = (
    "prefix_cache", "spec_decode", "kv_transfer", "version", "args", "engine_config",
    "model_loading", "kv_memory", "memory_profile", "kv_cache_size", "max_concurrency",
    "cache_config", "cudagraph_capture", "cudagraph_memory", "init_time", "compile_time",
    "role_hint", "block_size", "ssm_dtype", "ssm_conv_layout", "preemption", "stats_disabled",
    "nixl_failure", "kv_expired", "kv_load_failure", "kv_cache_error", "oom", "engine_dead",
    "traceback", "shutdown", "stop_requested", "http_access", "worker_selected", "model_registered",
    "request_completed", "dynamo_process", "kv_connector", "worker_set", "backend_error", "frontend_response",
    "request_failed", "request_error", "lost_by_frontend", "status_server_failed", "request_plane_error",
    "frontend_lost", "seen_again", "broadcast_wait",
)

# The kinds the store keeps for the rules to count and quote (problems and start-up facts).
# The others are per-request chatter (access lines, router choices, ...) or folded into
# facts; a rule naming one would always count 0, so the rules grammar refuses it.
STORED_EVENT_KINDS = (
    "preemption", "stats_disabled", "nixl_failure", "kv_expired", "kv_load_failure", "kv_cache_error",
    "oom", "engine_dead", "traceback", "shutdown", "stop_requested", "spec_decode", "kv_transfer", "cudagraph_capture",
    "args", "engine_config", "version", "kv_cache_size", "max_concurrency", "kv_memory",
    "model_loading", "memory_profile", "cudagraph_memory", "block_size", "ssm_dtype", "ssm_conv_layout",
    "init_time", "role_hint", "cache_config",
    # Dynamo: what each process says it is, and what the frontend saw of its backends.
    "dynamo_process", "kv_connector", "worker_set", "backend_error", "request_failed", "request_error",
    "status_server_failed", "request_plane_error", "server_ready",
    # vLLM's hint that a process it waits for is stuck: evidence of a hang
    "broadcast_wait",
    # a traceback logged at ERROR or with no level (vLLM logs harmless ones as warnings at start-up)
    "error_traceback",
    # pdwatch's own (model.frontend_losses): a frontend's line put on the worker it lost, a worker's
    # broken connection put on the frontend that went silent, an endpoint's first line after it.
    "lost_by_frontend", "frontend_lost", "seen_again", "server_ready", "error_traceback",
)

DEFAULT_STATS_INTERVAL_S = 10.0  # vLLM's VLLM_LOG_STATS_INTERVAL default


@dataclass(frozen=True)
class EndpointView:
    """One vLLM server: its role, engines (DP ranks), facts, stats rows and events.

    ``stats`` columns: ts (datetime64 UTC), engine (int64), the ``STATS_FIELDS`` (float64),
    source (str), line_no (int64); sorted by ts. ``events`` columns: ts (may be NaT),
    engine (nullable Int64), kind, source, line_no, text, reason.
    """

    name: str
    role: str
    engines: tuple[int, ...]
    gpus: int | None
    facts: Mapping[str, Any]
    stats: pd.DataFrame
    events: pd.DataFrame


@dataclass(frozen=True)
class DeploymentView:
    endpoints: tuple[EndpointView, ...]
    facts: Mapping[str, Any]
