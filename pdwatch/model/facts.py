"""Start-up facts of one endpoint, gathered from its events (the keys of ``rules.model.ENDPOINT_FACTS``)."""

from __future__ import annotations

from typing import Any

from pdwatch.parsers import Event

_ARG_FACTS = {
    "max_num_seqs": int, "max_num_batched_tokens": int, "api_server_count": int, "block_size": int,
    "async_scheduling": bool, "enable_prefix_caching": bool, "tensor_parallel_size": int,
    "data_parallel_size": int, "max_cudagraph_capture_size": int, "stream_interval": int,
    "mamba_ssm_cache_dtype": str, "gpu_memory_utilization": float, "max_model_len": int,
    "disable_log_stats": bool,
}


def learn(facts: dict[str, Any], event: Event) -> None:
    """Fold one event into ``facts`` (later lines win: a restarted server logs its new config)."""
    kind, values = event.kind, event.values
    if kind == "args":
        _learn_args(facts, values["args"])
        model = values["args"].get("model_tag") or values["args"].get("model")
        if isinstance(model, str) and model:
            facts.setdefault("model", model)  # the model the operator asked for, as typed
    elif kind == "engine_config":
        for key in ("tensor_parallel_size", "data_parallel_size", "enable_prefix_caching", "max_seq_len",
                    "kv_cache_dtype"):
            if key in values:
                facts.setdefault(key, values[key])
        if values.get("model"):
            facts.setdefault("model", values["model"])
        if "num_speculative_tokens" in values:
            facts["num_speculative_tokens"] = values["num_speculative_tokens"]
        facts["version"] = values.get("version", facts.get("version"))
    elif kind == "version":
        facts["version"] = values["version"]
        if values.get("model"):
            facts.setdefault("model", values["model"])
    elif kind == "cudagraph_capture":
        _learn_capture(facts, values)
    elif kind == "kv_cache_size":
        facts["kv_capacity_tokens"] = values["tokens"]
    elif kind == "max_concurrency":
        facts["max_concurrency"] = values["concurrency"]
        facts["max_concurrency_tokens"] = values["tokens_per_request"]
    elif kind == "kv_memory":
        facts["kv_memory_gib"] = values["gib"]
    elif kind == "model_loading":
        facts["weights_gib"] = values["gib"]
    elif kind == "block_size":
        facts["hybrid"] = True
        if values.get("attention_block_tokens"):
            facts["block_size"] = values["attention_block_tokens"]
    elif kind == "ssm_dtype":
        facts["ssm_dtype"] = values["dtype"]
    elif kind == "ssm_conv_layout":
        facts["ssm_conv_layout"] = values["layout"]
    elif kind == "stats_disabled":
        facts["stats_disabled"] = True


def _learn_args(facts: dict[str, Any], args: dict[str, Any]) -> None:
    for key, kind in _ARG_FACTS.items():
        value = args.get(key)
        if value is not None and isinstance(value, (int, float, str, bool)):
            try:
                facts[key] = kind(value)
            except (TypeError, ValueError):
                continue
    if "max_cudagraph_capture_size" in facts:
        facts["max_capture_size"] = facts["max_cudagraph_capture_size"]
    kv = args.get("kv_transfer_config")
    if isinstance(kv, dict):
        if kv.get("kv_role"):
            facts["kv_role"] = kv["kv_role"]
        if kv.get("kv_connector"):
            facts["kv_connector"] = kv["kv_connector"]
    spec = args.get("speculative_config")
    if isinstance(spec, dict) and isinstance(spec.get("num_speculative_tokens"), int):
        facts["num_speculative_tokens"] = spec["num_speculative_tokens"]


def _learn_capture(facts: dict[str, Any], values: dict[str, Any]) -> None:
    sizes = values.get("sizes")
    if sizes is not None:
        facts["capture_sizes"] = list(sizes)
    origin = values.get("origin")
    if origin == "engine_config" or "max_capture_size" not in facts:
        facts["max_capture_size"] = values.get("max_size")
    elif values.get("max_size") is not None and facts.get("max_capture_size") is not None:
        # Profiling and override lines name the real largest graph once capture ran.
        facts["max_capture_size"] = values["max_size"]
