"""The capacity of each endpoint from its start-up facts, for the report and the `capacity` rule.

Both read what this computes: with a model ``config.json`` the article's arithmetic
(``pdwatch.capacity``) gives each engine's KV cache per request and the concurrency it
can hold, which becomes the endpoint fact ``planned_concurrency``; without one, the rule
and the report use vLLM's own ``Maximum concurrency`` line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pdwatch.capacity import Assessment, CapacityError, CapacityInputs, ModelSpec, assess
from pdwatch.model.store import Store

_START_UP_FACTS = ("kv_memory_gib", "kv_capacity_tokens", "max_concurrency", "max_model_len")


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
        if result.vllm is not None and result.vllm.max_concurrency is not None:
            endpoint.facts["planned_concurrency"] = round(result.vllm.max_concurrency, 2)
        elif result.capacity.engine is not None:
            endpoint.facts["planned_concurrency"] = float(result.capacity.engine.whole_requests)
    return view


def report_rows(view: CapacityView, name: str) -> dict[str, Any] | None:
    """The computed column of the report's capacity section for one endpoint."""
    if name in view.problems:
        return {"error": view.problems[name]}
    result = view.assessments.get(name)
    if result is None:
        return None
    cap = result.capacity
    request = result.vllm.request if result.vllm is not None else cap.request
    return {
        "block_tokens": cap.block.tokens,
        "kv_bytes_per_request": request.bytes,
        "request_tokens": request.tokens,
        "max_concurrency": None if result.vllm is None else result.vllm.max_concurrency,
        "comparisons": [{"name": c.name, "unit": c.unit, "computed": c.computed, "printed": c.printed,
                         "match": c.match, "notes": list(c.notes)} for c in result.comparisons],
    }
