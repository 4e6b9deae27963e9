"""The capacity of each endpoint from its start-up facts, for the report and the `capacity` rule.

Both read what this computes. What the log states of the KV cache (its size, block count,
``num_gpu_blocks_override``, "Maximum concurrency") is the capacity; with a model ``config.json``
the article's arithmetic (``pdwatch.capacity``) is the estimate beside it and the endpoint fact
``planned_concurrency`` is the log's figure, else the arithmetic's. Without a config the rule and
the report use vLLM's own ``Maximum concurrency`` line, and a gap the log itself shows (the override
against the blocks vLLM counted from its memory) is still explained.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from pdwatch.capacity import Assessment, CapacityError, CapacityInputs, ModelSpec, assess
from pdwatch.capacity.gap import gap_from_log
from pdwatch.capacity.logged import logged_capacity
from pdwatch.capacity.side_by_side import gap_json
from pdwatch.model.store import Store

_START_UP_FACTS = ("kv_memory_gib", "kv_capacity_tokens", "max_concurrency", "max_model_len", "kv_blocks")


@dataclass
class CapacityView:
    assessments: dict[str, Assessment] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)


def compute(store: Store, model: ModelSpec | None) -> CapacityView:
    """Assess every endpoint with start-up facts; sets ``planned_concurrency`` on it."""
    view = CapacityView()
    if model is None:
        return view
    for endpoint in store.endpoints():
        if endpoint.role == "frontend" or not any(k in endpoint.facts for k in _START_UP_FACTS):
            continue
        try:
            result = assess(model, CapacityInputs(), endpoint.facts)
        except CapacityError as exc:
            view.problems[endpoint.name] = str(exc)
            continue
        view.assessments[endpoint.name] = result
        planned = _planned_concurrency(result)
        if planned is not None:
            endpoint.facts["planned_concurrency"] = planned
    return view


def _planned_concurrency(result: Assessment) -> float | None:
    """The log's maximum concurrency when it printed one, else vLLM's figure redone, else whole requests."""
    if result.logged is not None and result.logged.max_concurrency is not None:
        return result.logged.max_concurrency.value
    if result.vllm is not None and result.vllm.max_concurrency is not None:
        return round(result.vllm.max_concurrency, 2)
    if result.capacity.engine is not None:
        return float(result.capacity.engine.whole_requests)
    return None


def report_rows(view: CapacityView, name: str) -> dict[str, Any] | None:
    """The computed column of the report's capacity section for one endpoint: the arithmetic's
    figures against what vLLM printed, and the estimate (the pool the KV memory holds) beside them."""
    if name in view.problems:
        return {"error": view.problems[name]}
    result = view.assessments.get(name)
    if result is None:
        return None
    cap, est = result.capacity, result.estimate
    request = result.vllm.request if result.vllm is not None else cap.request
    return {
        "block_tokens": cap.block.tokens,
        "kv_bytes_per_request": request.bytes,
        "request_tokens": request.tokens,
        # vLLM's figure redone on the pool it used (the override's, when set): the log's, if the shape is right
        "max_concurrency": None if result.vllm is None else result.vllm.max_concurrency,
        "comparisons": [{"name": c.name, "unit": c.unit, "computed": c.computed, "printed": c.printed,
                         "match": c.match, "notes": list(c.notes)} for c in result.comparisons],
        "estimate": None if est is None else {"blocks": est.blocks, "tokens": est.tokens,
                                              "max_concurrency": est.max_concurrency,
                                              "kv_memory_gib": est.kv_memory.value},
    }


def gap_row(view: CapacityView, name: str, facts: Mapping[str, Any]) -> dict[str, Any] | None:
    """The log's capacity against the estimate (the model config's, else the count vLLM logged from
    its memory before an override), with the reason when they are far apart; None when unknown."""
    result = view.assessments.get(name)
    gap = result.gap if result is not None else gap_from_log(logged_capacity(facts))
    return None if gap is None else gap_json(gap)
