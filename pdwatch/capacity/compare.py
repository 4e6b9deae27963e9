"""What vLLM printed at start-up next to what the arithmetic gives, with the reasons they differ.

vLLM's own figures count a request of ``max_model_len`` tokens (not ISL + OSL), keep 2 blocks
per linear layer in 'align' mamba-cache mode (+1 per speculative token), and size the pool from
the KV memory it measured, or take ``--num-gpu-blocks-override`` as it is. :func:`vllm_view` redoes
that computation; :func:`compare` lines it up with the log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pdwatch.capacity import arithmetic as ar
from pdwatch.capacity.estimate import Capacity
from pdwatch.units import fmt_bytes


@dataclass(frozen=True)
class VllmView:
    max_model_len: int
    request: ar.RequestKV  # a max_model_len request as vLLM counts it
    pool_blocks: int | None
    max_concurrency: float | None
    kv_tokens: dict[str, int] | None  # both formulas of "KV cache size: N tokens"
    kv_source: str | None  # what sized the pool: the KV memory's source, or OVERRIDE
    pool_range: tuple[int, int] | None = None  # blocks consistent with a KV memory the log rounded

    def at(self, blocks: int, group_size: int, groups: int, block_tokens: int) -> tuple[float, dict[str, int]]:
        """Max concurrency and KV-cache tokens for a pool of ``blocks`` block ids."""
        conc = ar.vllm_max_concurrency(blocks, self.request, group_size)
        return conc, ar.vllm_kv_cache_tokens(blocks, block_tokens, groups, conc, self.max_model_len)


@dataclass(frozen=True)
class Comparison:
    name: str
    unit: str
    computed: Any
    printed: Any
    match: bool | None  # None: one side unknown
    notes: list[str] = field(default_factory=list)


OVERRIDE = "num_gpu_blocks_override"


def vllm_view(cap: Capacity) -> VllmView | None:
    """vLLM's 'Maximum concurrency' and 'KV cache size' for this engine, when max_model_len is known."""
    max_len = cap.settings.get("max_model_len")
    if max_len is None:
        return None
    mode, spec = cap.settings["mamba_cache_mode"].value, cap.settings["num_speculative_tokens"].value
    lin = ar.linear_blocks_per_request(mode, spec, max_len.value, cap.block.tokens)
    request = ar.request_kv(max_len.value, cap.block, cap.grouping, lin)
    override = cap.facts.get(OVERRIDE)
    if override is not None:  # vLLM allocates the override's blocks, whatever its memory holds
        blocks, source = override, OVERRIDE
    elif cap.engine is not None:
        blocks, source = cap.engine.pool_blocks, cap.kv_memory.source
    else:
        return VllmView(max_len.value, request, None, None, None, None)
    pool_range = (blocks, blocks)
    if source == "log":  # "Available KV cache memory" is printed to 0.01 GiB
        pool_range = tuple(ar.num_blocks(int((cap.kv_memory.value + d) * ar.GiB), cap.block.page_bytes,
                                         cap.grouping.group_size) for d in (-0.005, 0.005))
    view = VllmView(max_len.value, request, blocks, None, None, source, pool_range)
    conc, tokens = view.at(blocks, *_shape(cap))
    return VllmView(max_len.value, request, blocks, conc, tokens, source, pool_range)


def _shape(cap: Capacity) -> tuple[int, int, int]:
    return cap.grouping.group_size, sum(cap.grouping.groups.values()), cap.block.tokens


def compare(cap: Capacity, view: VllmView | None = None) -> list[Comparison]:
    """One row per start-up figure the log printed (rows for figures it did not print are left out)."""
    facts = cap.facts
    view = view if view is not None else vllm_view(cap)
    rows: list[Comparison] = []
    if cap.linear and facts.get("attention_block_tokens") is not None:
        rows.append(_block_row(cap, facts["attention_block_tokens"]))
    if cap.linear and facts.get("mamba_padding_pct") is not None:
        computed = round(cap.block.padding_pct, 2)
        rows.append(Comparison("mamba page padding", "%", computed, facts["mamba_padding_pct"],
                               f"{computed:.2f}" == f"{facts['mamba_padding_pct']:.2f}",
                               [f"({_b(cap.block.page_bytes)} page − {_b(cap.block.state_bytes)} state) "
                                f"÷ {_b(cap.block.state_bytes)}"]))
    if facts.get("kv_memory_gib") is not None and cap.budget is not None:
        rows.append(_kv_memory_row(cap, facts["kv_memory_gib"]))
    if facts.get("kv_capacity_tokens") is not None:
        rows.append(_tokens_row(cap, view, facts["kv_capacity_tokens"]))
    if facts.get("max_concurrency") is not None:
        rows.append(_concurrency_row(cap, view, facts["max_concurrency"]))
    return rows


def _block_row(cap: Capacity, printed: int) -> Comparison:
    b = cap.block
    notes = [f"{_b(b.state_bytes)} state ÷ {_b(b.attention_bytes_per_token)}/token = {b.ratio_tokens:.2f} tokens, "
             f"rounded up to a multiple of {b.align}"]
    if b.tokens != printed:
        notes.append(_block_hint(cap, printed))
    return Comparison("attention block size", "tokens", b.tokens, printed, b.tokens == printed, notes)


def _block_hint(cap: Capacity, printed: int) -> str:
    """Which alignment or SSM dtype would reproduce the printed block size."""
    lin, b = cap.linear, cap.block
    tries = []
    for ssm in ("float32", "bfloat16"):
        state = lin.conv_bytes + ar.state_bytes(lin.shapes.ssm, ar.dtype_bytes(ssm))
        for align in (16, 32, 64, 128, 256):
            if ar.hybrid_block(state, b.attention_bytes_per_token, align).tokens == printed:
                tries.append(f"SSM state {ssm} with alignment {align}")
    if printed % b.align == 0 and printed > b.tokens:
        tries.append(f"a larger --block-size {printed}")
    if not tries:
        return ("no alignment (16–256) or SSM dtype reproduces it: check TP, the KV-cache dtype and the layer "
                "shapes of config.json")
    return "vLLM's figure is reproduced by " + " or ".join(tries)


def _kv_memory_row(cap: Capacity, printed: float) -> Comparison:
    computed = round(cap.budget.kv_gib, 2)
    notes = ["the budget is the article's arithmetic; vLLM measures each term at start-up"]
    if cap.budget.missing:
        notes.append("not given, counted as 0: " + ", ".join(cap.budget.missing))
    return Comparison("available KV memory", "GiB", computed, printed, abs(computed - printed) < 0.01, notes)


def _tokens_row(cap: Capacity, view: VllmView | None, printed: int) -> Comparison:
    if view is None or view.kv_tokens is None:
        return Comparison("KV cache size", "tokens", None, printed, None, [unknown_reason(cap, view)])
    computed = view.kv_tokens["concurrency_x_max_model_len"]
    older = view.kv_tokens["blocks_per_group_x_block_size"]
    notes = [f"vLLM prints int(max concurrency × max_model_len) = int({view.max_concurrency:.4f} × "
             f"{view.max_model_len:,})"]
    key = "concurrency_x_max_model_len"
    if computed != printed and older == printed:
        notes.append(f"the log matches the older formula num_blocks // groups × block size = {older:,}")
        computed, key = older, "blocks_per_group_x_block_size"
    lo, hi = (view.at(b, *_shape(cap))[1][key] for b in view.pool_range)
    notes.extend(_pool_notes(cap, view, f"{lo:,}–{hi:,} tokens"))
    return Comparison("KV cache size", "tokens", computed, printed, lo <= printed <= hi, notes)


def _concurrency_row(cap: Capacity, view: VllmView | None, printed: float) -> Comparison:
    if view is None:
        return Comparison("maximum concurrency", "x", None, printed, None, ["max_model_len unknown"])
    req = view.request
    per_request = req.blocks // cap.grouping.group_size
    linear = (f", {req.linear_blocks_per_layer} per linear layer ('{cap.settings['mamba_cache_mode'].value}' "
              f"mamba cache mode{_spec_text(cap)})") if cap.linear else ""
    notes = [f"vLLM counts a {view.max_model_len:,}-token request: {req.attention_blocks_per_layer} block(s) per "
             f"attention layer{linear} = {per_request} block ids per request, each spanning "
             f"{cap.grouping.group_size} layer(s)"]
    if view.max_concurrency is None:
        notes.append(unknown_reason(cap, view))
        notes.append(_implied_memory(cap, printed, per_request))
        return Comparison("maximum concurrency", "x", None, printed, None, notes)
    computed = round(view.max_concurrency, 2)
    lo, hi = (round(view.at(b, *_shape(cap))[0], 2) for b in view.pool_range)
    notes.extend(_pool_notes(cap, view, f"{lo:.2f}–{hi:.2f}x"))
    workload = cap.settings["tokens"].value
    if workload != view.max_model_len and cap.engine:
        notes.append(f"for {workload:,}-token requests (ISL + OSL) pdwatch counts {cap.engine.whole_requests} "
                     "per engine")
    if cap.settings["num_speculative_tokens"].value:
        notes.append("MTP/speculative slots are in vLLM's count; the article's division ignores them "
                     "(an upper bound)")
    return Comparison("maximum concurrency", "x", computed, printed, lo <= round(printed, 2) <= hi, notes)


def _pool_notes(cap: Capacity, view: VllmView, span: str) -> list[str]:
    if view.kv_source == OVERRIDE:
        memory = "" if cap.engine is None else (f", not the {cap.engine.pool_blocks:,} of {_gib(cap.kv_memory.value)} "
                                                f"({cap.kv_memory.source})")
        return [f"pool: num_gpu_blocks_override = {view.pool_blocks:,} block ids{memory}"]
    notes = [f"pool: {_gib(cap.kv_memory.value)} ({view.kv_source}) ÷ {_b(cap.block.page_bytes)} page ÷ "
             f"{cap.grouping.group_size} layer(s) per group = {view.pool_blocks:,} block ids"]
    lo, hi = view.pool_range
    if lo != hi:
        notes.append(f"the log prints the KV memory to 0.01 GiB: {lo:,}–{hi:,} block ids fit it, i.e. {span}")
    return notes


def unknown_reason(cap: Capacity, view: VllmView | None) -> str:
    """Why vLLM's figures could not be computed, and what to pass."""
    if view is None:
        return "max_model_len unknown: pass --max-model-len"
    if cap.facts.get("kv_device") == "CPU":
        return ("KV memory unknown: vLLM's CPU backend does not print 'Available KV cache memory' "
                "(pass --kv-cache-memory-gib = VLLM_CPU_KVCACHE_SPACE)")
    return "KV memory unknown: pass --kv-cache-memory-gib or --gpu"


def _implied_memory(cap: Capacity, printed: float, per_request: int) -> str:
    blocks = round(printed * per_request)
    slack = ar.cdiv(per_request, 200)  # the printed figure has 2 decimals: ± 0.005 × blocks per request
    kv = blocks * cap.block.page_bytes * cap.grouping.group_size
    return (f"the printed {printed:.2f}x implies {blocks:,} (± {slack}) blocks = {_gib(kv / ar.GiB)} of KV cache")


def _spec_text(cap: Capacity) -> str:
    spec = cap.settings["num_speculative_tokens"].value
    return f", + {spec} speculative" if spec and cap.linear else ""


def _b(n: float) -> str:
    return fmt_bytes(n)


def _gib(n: float) -> str:
    return f"{n:.2f} GiB"
