"""The start-up facts capacity needs, from parsed log events.

Builds on :func:`pdwatch.model.facts.learn` (the endpoint facts the rules see) and adds keys of its own:

``attention_block_tokens``, ``mamba_padding_pct``  the hybrid block lines
``kv_device``               ``GPU``/``CPU`` from "… KV cache size" (CPU: vLLM's CPU backend)
``user_block_size``         ``--block-size`` from the non-default args
``dtype``, ``mamba_cache_dtype``, ``mamba_cache_mode``  from the non-default args
``memory_total_gib``, ``non_torch_gib``, ``activation_peak_gib``, ``cudagraph_estimate_gib``
                            from the memory-profile and CUDA-graph lines
``kv_blocks``               the KV blocks vLLM allocated ("num_gpu_blocks is: N", or the override's N)
``num_gpu_blocks_override`` ``--num-gpu-blocks-override`` (the args, or vLLM's "Overriding num_gpu_blocks" line)
``kv_blocks_from_memory``   the blocks the KV memory would have held, which the override replaced
``fact_lines``              {fact: (source, line number)} of the lines the capacity figures came from

A caller holding endpoint facts already (the report) can pass them as they are: every key is optional.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable

from pdwatch.parsers import Event
from pdwatch.model.facts import learn

_ARGS = {"block_size": "user_block_size", "dtype": "dtype", "mamba_cache_dtype": "mamba_cache_dtype",
         "mamba_cache_mode": "mamba_cache_mode", "kv_cache_dtype": "kv_cache_dtype",
         "max_model_len": "max_model_len", "num_gpu_blocks_override": "num_gpu_blocks_override"}
_PROFILE = {"total_gib": "memory_total_gib", "utilization": "profile_utilization",
            "non_torch_gib": "non_torch_gib", "activation_peak_gib": "activation_peak_gib",
            "cudagraph_gib": "cudagraph_estimate_gib"}

# Every kind fold() (and pdwatch.model.facts.learn under it) reads; the store ships only these
# (among others) from a worker to the parent, so a kind read here must be listed.
FACT_KINDS = frozenset({
    "args", "engine_config", "version", "cudagraph_capture", "kv_cache_size", "max_concurrency",
    "kv_memory", "model_loading", "block_size", "ssm_dtype", "ssm_conv_layout", "stats_disabled",
    "memory_profile", "cudagraph_memory", "cache_config",
})
# The facts capacity quotes with their line ("as the log says, line N"), by the kinds that give them.
_LINED_FACTS = {"kv_cache_size": ("kv_capacity_tokens",), "max_concurrency": ("max_concurrency",),
                "kv_memory": ("kv_memory_gib",), "cache_config": ("kv_blocks", "num_gpu_blocks_override", "kv_blocks_from_memory"),
                "args": ("num_gpu_blocks_override", "gpu_memory_utilization")}


def facts_by_source(events: Iterable[Event]) -> dict[str, dict[str, Any]]:
    """One facts dict per log file (each file is one vLLM server), in first-seen order."""
    out: dict[str, dict[str, Any]] = defaultdict(dict)
    for event in events:
        fold(out[event.source], event)
    return dict(out)


def fold(facts: dict[str, Any], event: Event) -> None:
    learn(facts, event)
    kind, values = event.kind, event.values
    if kind == "args":
        for key, fact in _ARGS.items():
            value = values["args"].get(key)
            if isinstance(value, (int, float, str)) and not isinstance(value, bool):
                facts[fact] = value
    elif kind == "block_size":
        for key in ("attention_block_tokens", "mamba_padding_pct"):
            if values.get(key) is not None:
                facts[key] = values[key]
    elif kind == "kv_cache_size":
        facts["kv_device"] = values.get("device")
    elif kind == "memory_profile":
        for key, fact in _PROFILE.items():
            if values.get(key) is not None:
                facts[fact] = values[key]
    elif kind == "cudagraph_memory" and values.get("estimated_gib") is not None:
        facts["cudagraph_estimate_gib"] = values["estimated_gib"]
    elif kind == "engine_config" and values.get("max_seq_len") is not None:
        facts.setdefault("max_model_len", values["max_seq_len"])
    elif kind == "cache_config":
        facts["kv_blocks"] = values["num_gpu_blocks"]
        if values.get("override") is not None:
            facts["num_gpu_blocks_override"] = values["override"]
            facts["kv_blocks_from_memory"] = values["memory_blocks"]
    _note_lines(facts, event)


def _note_lines(facts: dict[str, Any], event: Event) -> None:
    """Where each capacity figure was read; a later line wins, as its value does."""
    names = _LINED_FACTS.get(event.kind, ())
    if event.kind == "args":  # only the args that name them
        names = tuple(n for n in names if event.values["args"].get(n) is not None)
    elif event.kind == "cache_config" and event.values.get("override") is None:
        names = names[:1]
    for name in names:
        facts.setdefault("fact_lines", {})[name] = (event.source, event.line_no)
