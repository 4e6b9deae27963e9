"""The capacity the log states beside the model-shape estimate, and why the two differ.

The estimate is the article's arithmetic: the pool of blocks the KV memory holds, and vLLM's
figures for that pool. When the log's capacity and the estimate are more than ``LARGE_GAP``
(25%) apart the reason is said in words, first that applies:

- ``override``: ``num_gpu_blocks_override`` set the pool, whatever the memory held;
- ``gpu_memory_utilization``: the estimate's memory came from a budget whose utilisation neither
  the log nor an option states (the article's 0.92), and the log's size implies another;
- ``activation_cudagraph_memory``: the budget counted peak activations or CUDA graphs as 0;
- ``unexplained``, with both figures and the KV memory the log's size implies.

Why 25%: where the inputs are right the estimate reproduces vLLM's figures to the block (the
real logs' tests), so small gaps are the log's rounding (KV memory printed to 0.01 GiB) or
the budget's defaults (CUDA context, non-torch memory: a few GiB of a GPU's tens). A quarter of
the cache is more than those move it: past it a setting or a wrong input made the difference.
"""

from __future__ import annotations

from dataclasses import dataclass

from pdwatch.capacity import arithmetic as ar
from pdwatch.capacity.compare import VllmView
from pdwatch.capacity.estimate import Capacity
from pdwatch.capacity.logged import Figure, LoggedCapacity
from pdwatch.capacity.sourced import Sourced

LARGE_GAP = 0.25  # |log ÷ estimate − 1| past which the gap is explained
FROM_CONFIG = "the model config"
FROM_VLLM = "vLLM's count from its KV memory"
_UNMEASURED = {"peak activations": "peak activations", "CUDA-graph estimate": "CUDA-graph memory"}  # budget terms


@dataclass(frozen=True)
class Estimate:
    """What the KV memory holds by the model's shape: the pool and vLLM's figures for it."""

    blocks: int
    tokens: int | None  # None: max_model_len unknown
    max_concurrency: float | None
    kv_memory: Sourced  # GiB


@dataclass(frozen=True)
class Gap:
    log_over_estimate: float
    large: bool
    reason: str | None  # None when not large
    text: str | None  # the reason in words
    estimate_from: str


def estimate_of(cap: Capacity, view: VllmView | None, logged: LoggedCapacity | None) -> Estimate | None:
    """The estimate from the KV memory (never the override: that is what the log may say)."""
    if cap.engine is None:
        return None
    blocks = cap.engine.pool_blocks
    if view is None:
        return Estimate(blocks, None, None, cap.kv_memory)
    groups = sum(cap.grouping.groups.values())
    conc, tokens = view.at(blocks, cap.grouping.group_size, groups, cap.block.tokens)
    return Estimate(blocks, tokens[_tokens_formula(view, logged)], conc, cap.kv_memory)


def _tokens_formula(view: VllmView, logged: LoggedCapacity | None) -> str:
    """The 'KV cache size' formula the log's vLLM used, by what it printed for its own pool."""
    printed = logged.tokens.value if logged and logged.tokens else None
    kv = view.kv_tokens
    if kv and printed is not None and kv["concurrency_x_max_model_len"] != printed == kv["blocks_per_group_x_block_size"]:
        return "blocks_per_group_x_block_size"
    return "concurrency_x_max_model_len"


def explain(cap: Capacity, view: VllmView | None, logged: LoggedCapacity, estimate: Estimate) -> Gap | None:
    """The log's capacity against the estimate, in the first unit both have: blocks, tokens (both printed
    whole), then concurrency (printed to 2 decimals)."""
    pairs = [(logged.blocks, estimate.blocks), (logged.tokens, estimate.tokens),
             (logged.max_concurrency, estimate.max_concurrency)]
    pair = next(((f.value, e) for f, e in pairs if f is not None and e), None)
    if pair is None:
        return None
    ratio = pair[0] / pair[1]
    if abs(ratio - 1) <= LARGE_GAP:
        return Gap(ratio, False, None, None, FROM_CONFIG)
    reason, text = _reason(cap, view, logged, estimate)
    return Gap(ratio, True, reason, text, FROM_CONFIG)


def gap_from_log(logged: LoggedCapacity | None) -> Gap | None:
    """Without a model config: the override's blocks against the count vLLM made from its memory."""
    if logged is None or logged.override is None or logged.memory_blocks is None or not logged.memory_blocks.value:
        return None
    ratio = logged.override.value / logged.memory_blocks.value
    if abs(ratio - 1) <= LARGE_GAP:
        return Gap(ratio, False, None, None, FROM_VLLM)
    memory = logged.memory_blocks
    where = "" if memory.line_no == logged.override.line_no else f" ({memory.where()})"  # often the same line
    text = (f"{_override(logged.override)}: vLLM allocated {logged.override.value:,} blocks instead of "
            f"the {memory.value:,} its KV memory holds{where}")
    return Gap(ratio, True, "override", text, FROM_VLLM)


def _reason(cap: Capacity, view: VllmView | None, logged: LoggedCapacity, est: Estimate) -> tuple[str, str]:
    kv = f"{est.kv_memory.value:.2f} GiB"
    if logged.override is not None:
        text = (f"{_override(logged.override)}: vLLM allocated {logged.override.value:,} blocks instead of the "
                f"{est.blocks:,} its {kv} of KV memory holds")
        memory = logged.memory_blocks
        if memory is not None and memory.value != est.blocks:
            text += f" (vLLM counted {memory.value:,}, {memory.where()})"
        return "override", text
    implied = _implied_gib(cap, view, logged)
    implied_text = "" if implied is None else f" ({implied:.2f} GiB of KV memory)"
    budget = cap.budget
    if est.kv_memory.source == "budget" and budget is not None:
        if budget.utilization.source not in ("log", "option") and implied is not None:  # a default: guessed
            fits = (implied + budget.deducted_gib) / budget.total.value
            return "gpu_memory_utilization", (
                f"memory utilisation: the estimate assumed gpu_memory_utilization {budget.utilization.value:g} "
                f"({budget.utilization.source}), which the log does not state; the log's "
                f"{_logged_text(logged)}{implied_text} fit {fits:.2f} of the {budget.total.value:.2f} GiB")
        unmeasured = [_UNMEASURED[m] for m in budget.missing if m in _UNMEASURED]
        if unmeasured and est.blocks > _logged_blocks(cap, view, logged, est.blocks):
            return "activation_cudagraph_memory", (
                f"CUDA-graph / activation memory: the estimate counts {' and '.join(unmeasured)} as 0 (the log "
                f"does not state them); the log's {_logged_text(logged)}{implied_text} leave "
                f"{est.kv_memory.value - (implied or 0):.2f} GiB of the estimate's {kv} to them")
    log_text, est_text = _both_texts(logged, est)
    return "unexplained", (
        f"unexplained: the log's {log_text} against the estimate's {est_text} from "
        f"{kv} of KV memory ({est.kv_memory.source}); the log's figure implies "
        f"{'?' if implied is None else f'{implied:.2f}'} GiB. Check TP, the KV-cache dtype, the block size and "
        "config.json against the server's")


def _override(override: Figure) -> str:
    return f"num_gpu_blocks_override {override.value} ({override.where()})"


def _logged_blocks(cap: Capacity, view: VllmView | None, logged: LoggedCapacity, default: int) -> int:
    """The pool the log's figures stand for, in block ids (from its concurrency or size when it prints no count)."""
    if logged.blocks is not None:
        return logged.blocks.value
    if view is not None:
        per_request = view.request.blocks // cap.grouping.group_size
        if logged.max_concurrency is not None:
            return round(logged.max_concurrency.value * per_request)
        if logged.tokens is not None:
            return round(logged.tokens.value / view.max_model_len * per_request)
    return default


def _implied_gib(cap: Capacity, view: VllmView | None, logged: LoggedCapacity) -> float | None:
    blocks = _logged_blocks(cap, view, logged, -1)
    return None if blocks < 0 else blocks * cap.block.page_bytes * cap.grouping.group_size / ar.GiB


def _logged_text(logged: LoggedCapacity) -> str:
    if logged.tokens is not None:
        return f"{logged.tokens.value:,} tokens"
    if logged.max_concurrency is not None:
        return f"{logged.max_concurrency.value:,.2f}x"
    return f"{logged.blocks.value:,} blocks"


def _both_texts(logged: LoggedCapacity, est: Estimate) -> tuple[str, str]:
    """The log's figure and the estimate's, in the first unit both have: tokens, concurrency, blocks."""
    if logged.tokens is not None and est.tokens is not None:
        return f"{logged.tokens.value:,} tokens", f"{est.tokens:,} tokens"
    if logged.max_concurrency is not None and est.max_concurrency is not None:
        return f"{logged.max_concurrency.value:,.2f}x", f"{est.max_concurrency:,.2f}x"
    if logged.blocks is not None:
        return f"{logged.blocks.value:,} blocks", f"{est.blocks:,} blocks"
    return _logged_text(logged), f"{est.blocks:,} blocks"
