"""Capacity arithmetic (the Qwen3.8-2.4T article's method): from the model's layer shapes and the
GPU's memory budget to the KV block size, the KV cache one request needs and the concurrency an
engine can hold — and the same figures as vLLM prints them, to compare with its start-up lines.

    spec = load_model_config("config.json")
    result = assess(spec, CapacityInputs(gpu="gb300", isl=8192, osl=1024), facts)
    result.capacity.request.bytes, result.capacity.engine, result.comparisons
    result.logged, result.estimate, result.gap   # the log's capacity, the model-shape estimate beside it

``facts`` is a dict of start-up facts of one vLLM server (see :mod:`pdwatch.model.log_facts`);
the endpoint facts of ``pdwatch.model.facts.learn`` work as they are. When the log states the KV
cache (its size, block count, override or maximum concurrency) that is the capacity (``logged``);
the arithmetic is the estimate, and a large gap between them is explained (``gap``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from pdwatch.capacity.compare import Comparison, VllmView, compare, vllm_view
from pdwatch.capacity.estimate import Capacity, CapacityError, CapacityInputs, estimate
from pdwatch.capacity.gap import Estimate, Gap, estimate_of, explain, gap_from_log
from pdwatch.capacity.logged import LoggedCapacity, logged_capacity
from pdwatch.model.log_facts import facts_by_source
from pdwatch.capacity.model_config import ConfigError, ModelSpec, load_model_config, model_spec

__all__ = ["Assessment", "Capacity", "CapacityError", "CapacityInputs", "Comparison", "ConfigError", "Estimate",
           "Gap", "LoggedCapacity", "ModelSpec", "VllmView", "assess", "compare", "estimate", "facts_by_source",
           "load_model_config", "logged_capacity", "model_spec", "vllm_view"]


@dataclass
class Assessment:
    capacity: Capacity
    vllm: VllmView | None
    comparisons: list[Comparison]
    source: str | None = None
    logged: LoggedCapacity | None = None  # the capacity, when the log states it
    estimate: Estimate | None = None  # the model-shape arithmetic's pool and figures
    gap: Gap | None = None  # the log's capacity against the estimate (else vLLM's own count); None when unknown


def assess(model: ModelSpec, inputs: CapacityInputs, facts: Mapping[str, Any] | None = None,
           source: str | None = None) -> Assessment:
    """Every step for one vLLM server, and its printed start-up figures next to them."""
    cap = estimate(model, inputs, facts)
    view = vllm_view(cap)
    logged = logged_capacity(cap.facts)
    est = estimate_of(cap, view, logged)
    # no estimate (KV memory unknown): an override is still set against the count vLLM logged from its memory
    gap = explain(cap, view, logged, est) if logged and est else gap_from_log(logged)
    return Assessment(cap, view, compare(cap, view), source, logged, est, gap)
