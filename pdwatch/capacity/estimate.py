"""Put the steps together: model shapes + options + log facts → one engine's capacity.

Precedence for every setting: an explicit option, then what the log says vLLM did, then the model
config, then the article's default. Each resolved setting keeps its source for the table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from pdwatch.capacity import arithmetic as ar
from pdwatch.capacity.budget import (ARTICLE, ARTICLE_CUDA_CONTEXT_GIB, ARTICLE_NON_TORCH_GIB, ARTICLE_UTILIZATION,
                                     GPU_PRESETS, Budget, memory_budget)
from pdwatch.capacity.model_config import ModelSpec
from pdwatch.capacity.sourced import Sourced, pick
from pdwatch.capacity.topology import Topology, parse_topology

ARTICLE_ISL, ARTICLE_OSL = 8192, 1024
ARTICLE_BLOCK_ALIGN = 16  # "aligned to 16" in the article's Blackwell setup
CPU_BLOCK_ALIGN = 128  # vLLM's CPU attention backend works in blocks of 128 tokens


class CapacityError(ValueError):
    """Inputs that cannot be combined (one-line message)."""


@dataclass(frozen=True)
class CapacityInputs:
    """What the user asked for; None = not given (then logs, config or the article decide)."""

    isl: int | None = None
    osl: int | None = None
    template_tokens: int | None = None
    gpu: str | None = None
    gpu_mem_gib: float | None = None
    gpu_memory_utilization: float | None = None
    cuda_context_gib: float | None = None
    non_torch_gib: float | None = None
    weights_gib: float | None = None
    activation_gib: float | None = None
    cudagraph_gib: float | None = None
    kv_cache_memory_gib: float | None = None
    dtype: str | None = None
    kv_cache_dtype: str | None = None
    mamba_cache_dtype: str | None = None
    mamba_ssm_cache_dtype: str | None = None
    block_align: int | None = None
    block_size: int | None = None
    mamba_cache_mode: str | None = None
    num_speculative_tokens: int | None = None
    max_model_len: int | None = None
    tp: int | None = None
    dp: int | None = None
    topology: str | None = None
    cc: int | None = None


@dataclass(frozen=True)
class LinearState:
    kind: str  # gdn | mamba2
    layers: int
    shapes: ar.StateShapes
    conv_dtype: Sourced
    ssm_dtype: Sourced
    conv_bytes: int
    ssm_bytes: int

    @property
    def bytes(self) -> int:
        return self.conv_bytes + self.ssm_bytes


@dataclass(frozen=True)
class EngineCapacity:
    kv_bytes: int
    pool_blocks: int  # vLLM's num_blocks: pages per layer tensor
    per_request_division: float  # the article's KV ÷ bytes per request
    whole_requests: int  # requests whose blocks fit in the pool


@dataclass(frozen=True)
class DeploymentCapacity:
    topology: Topology | None
    decode_engines: int
    kv_limit_concurrency: int | None  # decode engines × whole requests per engine
    cc: int | None
    per_engine_load: int | None
    capture_size: int | None


@dataclass
class Capacity:
    model: ModelSpec
    settings: dict[str, Sourced]
    attention_bytes_per_token: int
    kv_heads_per_rank: int
    linear: LinearState | None
    block: ar.Block
    grouping: ar.Grouping
    request: ar.RequestKV
    budget: Budget | None
    kv_memory: Sourced | None  # GiB the engine count uses
    engine: EngineCapacity | None
    deployment: DeploymentCapacity | None
    facts: Mapping[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def estimate(model: ModelSpec, inputs: CapacityInputs, facts: Mapping[str, Any] | None = None) -> Capacity:
    """Compute every step for one engine (one TP group) and the deployment around it."""
    facts = facts or {}
    try:
        return _estimate(model, inputs, facts)
    except ValueError as exc:
        if isinstance(exc, CapacityError):
            raise
        raise CapacityError(str(exc)) from None


def _estimate(model: ModelSpec, inputs: CapacityInputs, facts: Mapping[str, Any]) -> Capacity:
    topo = parse_topology(inputs.topology) if inputs.topology else None
    s = _settings(model, inputs, facts, topo)
    tp = s["tp"].value
    dtype_bytes = ar.dtype_bytes(s["kv_cache_dtype"].value)
    per_token = ar.attention_bytes_per_token(model.attention, tp, dtype_bytes)
    attn_layers = model.attention.layers + s["mtp_layers"].value
    linear = _linear_state(model, s) if model.linear else None
    if linear:
        block = ar.hybrid_block(linear.bytes, per_token, s["block_align"].value, _value(s.get("block_size")))
        grouping = ar.kv_cache_groups({"attention": attn_layers, "linear": linear.layers})
    else:
        size = _value(s.get("block_size")) or s["block_align"].value
        block = ar.dense_block(per_token, size)
        grouping = ar.kv_cache_groups({"attention": attn_layers})
    tokens = s["tokens"].value
    lin_blocks = ar.linear_blocks_per_request(s["mamba_cache_mode"].value, s["num_speculative_tokens"].value,
                                              tokens, block.tokens)
    request = ar.request_kv(tokens, block, grouping, lin_blocks)
    budget = _budget(inputs, facts)
    kv = pick((inputs.kv_cache_memory_gib, "option"), (facts.get("kv_memory_gib"), "log"),
              (budget.kv_gib if budget else None, "budget"))
    if kv is not None and kv.value <= 0:
        raise CapacityError(f"no memory left for the KV cache ({kv.value:.2f} GiB after deductions)")
    engine = _engine(kv, block, grouping, request) if kv else None
    deployment = _deployment(topo, s, inputs.cc, engine)
    cap = Capacity(model, s, per_token, ar.kv_heads_per_rank(model.attention, tp), linear, block, grouping,
                   request, budget, kv, engine, deployment, dict(facts))
    cap.notes.extend(_notes(cap))
    return cap


def _settings(model: ModelSpec, inputs: CapacityInputs, facts: Mapping[str, Any],
              topo: Topology | None) -> dict[str, Sourced]:
    if topo and (inputs.tp or inputs.dp):
        raise CapacityError("give either --topology or --tp/--dp, not both")
    dtype = pick((inputs.dtype, "option"), (_not_auto(facts.get("dtype")), "log"), (model.dtype, "config.json"))
    if dtype is None:
        raise CapacityError("the model config names no torch_dtype: pass --dtype")
    ar.dtype_bytes(dtype.value)
    s: dict[str, Sourced] = {"dtype": dtype}
    kv_dtype = pick((inputs.kv_cache_dtype, "option"), (facts.get("kv_cache_dtype"), "log"))
    s["kv_cache_dtype"] = kv_dtype if kv_dtype and kv_dtype.value != "auto" else Sourced(dtype.value, "model dtype")
    s["tp"] = pick((topo.serving.tp if topo else None, "topology"), (inputs.tp, "option"),
                   (facts.get("tensor_parallel_size"), "log"), (1, "default"))
    s["engines"] = pick((topo.serving.engines if topo else None, "topology"), (inputs.dp, "option"),
                        (facts.get("data_parallel_size"), "log"), (1, "default"))
    s["num_speculative_tokens"] = pick((inputs.num_speculative_tokens, "option"),
                                       (facts.get("num_speculative_tokens"), "log"), (0, "default"))
    mtp = model.mtp_layers if s["num_speculative_tokens"].value and model.mtp_layers else 0
    s["mtp_layers"] = Sourced(mtp, "config.json (MTP layers, counted when speculating)" if mtp else "none")
    s["mamba_cache_mode"] = pick(
        (inputs.mamba_cache_mode, "option"), (facts.get("mamba_cache_mode"), "log"),
        ("align" if model.hybrid and facts.get("enable_prefix_caching") else None,
         "log: prefix caching on, vLLM's default is 'align'"),
        ("none", "the article: one block per GDN layer"))
    if model.hybrid:
        s.update(_state_dtypes(model, inputs, facts, dtype.value))
    cpu = facts.get("kv_device") == "CPU"
    s["block_align"] = pick((inputs.block_align, "option"), (CPU_BLOCK_ALIGN if cpu else None, "log: CPU backend"),
                            (ARTICLE_BLOCK_ALIGN, "the article's Blackwell setup" if model.hybrid
                             else "vLLM's default block size on GPU"))
    block_size = pick((inputs.block_size, "option"), (facts.get("user_block_size"), "log: --block-size"))
    if block_size:
        s["block_size"] = block_size
    s["max_model_len"] = pick((inputs.max_model_len, "option"), (facts.get("max_model_len"), "log"),
                              (facts.get("max_concurrency_tokens"), "log: Maximum concurrency line"))
    s.update(_workload(inputs, s.get("max_model_len")))
    return {k: v for k, v in s.items() if v is not None}


def _state_dtypes(model: ModelSpec, inputs: CapacityInputs, facts: Mapping[str, Any],
                  dtype: str) -> dict[str, Sourced]:
    """Conv state: --mamba-cache-dtype, else the model dtype. SSM state: what vLLM said it used beats
    the config ("Reset SSM cache type to float32 …"), then --mamba-ssm-cache-dtype, then the config."""
    conv = pick((inputs.mamba_cache_dtype, "option"), (_not_auto(facts.get("mamba_cache_dtype")), "log"),
                (dtype, "model dtype"))
    ssm = pick((inputs.mamba_ssm_cache_dtype, "option"), (facts.get("ssm_dtype"), "log: Reset SSM cache type"),
               (_not_auto(facts.get("mamba_ssm_cache_dtype")), "log: --mamba-ssm-cache-dtype"),
               (model.ssm_dtype, "config.json mamba_ssm_dtype"), (conv.value, "conv-state dtype"))
    ar.dtype_bytes(conv.value)
    ar.dtype_bytes(ssm.value)
    return {"conv_dtype": conv, "ssm_dtype": ssm}


def _workload(inputs: CapacityInputs, max_model_len: Sourced | None) -> dict[str, Sourced]:
    template = inputs.template_tokens or 0
    if inputs.isl is not None or inputs.osl is not None:
        if inputs.isl is None or inputs.osl is None:
            raise CapacityError("give both --isl and --osl")
        return {"isl": Sourced(inputs.isl, "option"), "osl": Sourced(inputs.osl, "option"),
                "template_tokens": Sourced(template, "option" if inputs.template_tokens else "default"),
                "tokens": Sourced(inputs.isl + inputs.osl + template, "ISL + OSL + template")}
    if max_model_len is not None:  # what vLLM sizes a request by; it already holds any template
        return {"tokens": Sourced(max_model_len.value, f"max_model_len ({max_model_len.source})")}
    return {"isl": Sourced(ARTICLE_ISL, "the article's 8K/1K"), "osl": Sourced(ARTICLE_OSL, "the article's 8K/1K"),
            "template_tokens": Sourced(template, "option" if template else "default"),
            "tokens": Sourced(ARTICLE_ISL + ARTICLE_OSL + template, "ISL + OSL + template")}


def _linear_state(model: ModelSpec, s: dict[str, Sourced]) -> LinearState:
    lin = model.linear
    tp, spec = s["tp"].value, s["num_speculative_tokens"].value
    shapes = ar.gdn_state_shapes(lin, tp, spec) if lin.kind == "gdn" else ar.mamba2_state_shapes(lin, tp, spec)
    conv_dtype, ssm_dtype = s["conv_dtype"], s["ssm_dtype"]
    return LinearState(lin.kind, lin.layers, shapes, conv_dtype, ssm_dtype,
                       ar.state_bytes(shapes.conv, ar.dtype_bytes(conv_dtype.value)),
                       ar.state_bytes(shapes.ssm, ar.dtype_bytes(ssm_dtype.value)))


def _budget(inputs: CapacityInputs, facts: Mapping[str, Any]) -> Budget | None:
    if inputs.gpu is not None and inputs.gpu not in GPU_PRESETS:
        raise CapacityError(f"unknown GPU {inputs.gpu!r} (known: {', '.join(GPU_PRESETS)})")
    preset = GPU_PRESETS.get(inputs.gpu) if inputs.gpu else None
    total = pick((inputs.gpu_mem_gib, "option"), (preset.usable_gib if preset else None, f"--gpu {inputs.gpu}"),
                 (facts.get("memory_total_gib"), "log"))
    if total is None:
        return None
    util = pick((inputs.gpu_memory_utilization, "option"), (facts.get("gpu_memory_utilization"), "log"),
                (facts.get("profile_utilization"), "log"), (ARTICLE_UTILIZATION, "the article's default"))
    return memory_budget(
        total, util,
        cuda_context=pick((inputs.cuda_context_gib, "option"), (ARTICLE_CUDA_CONTEXT_GIB, ARTICLE)),
        non_torch=pick((inputs.non_torch_gib, "option"), (facts.get("non_torch_gib"), "log"),
                       (ARTICLE_NON_TORCH_GIB, ARTICLE)),
        weights=pick((inputs.weights_gib, "option"), (facts.get("weights_gib"), "log: Model loading took")),
        activations=pick((inputs.activation_gib, "option"), (facts.get("activation_peak_gib"), "log")),
        cudagraph=pick((inputs.cudagraph_gib, "option"), (facts.get("cudagraph_estimate_gib"), "log")),
    )


def _engine(kv: Sourced, block: ar.Block, grouping: ar.Grouping, request: ar.RequestKV) -> EngineCapacity:
    kv_bytes = int(kv.value * ar.GiB)
    blocks = ar.num_blocks(kv_bytes, block.page_bytes, grouping.group_size)
    per_request = request.blocks // grouping.group_size
    return EngineCapacity(kv_bytes, blocks, kv_bytes / request.bytes, blocks // per_request)


def _deployment(topo: Topology | None, s: dict[str, Sourced], cc: int | None,
                engine: EngineCapacity | None) -> DeploymentCapacity | None:
    engines = s["engines"].value
    if engine is None and cc is None:
        return None
    limit = engines * engine.whole_requests if engine else None
    load = ar.cdiv(cc, engines) if cc else None
    return DeploymentCapacity(topo, engines, limit, cc, load, ar.capture_size(cc, engines) if cc else None)


def _notes(cap: Capacity) -> list[str]:
    notes = []
    if cap.budget and cap.budget.missing:
        notes.append(f"not given, counted as 0: {', '.join(cap.budget.missing)} — the KV memory is an upper bound "
                     "(pass the --*-gib options, or LOGS with the start-up lines)")
    if cap.kv_memory is None:
        notes.append("no memory budget: give --gpu, --gpu-mem-gib or --kv-cache-memory-gib for the concurrency")
    padding = {k: v for k, v in cap.grouping.padding_layers.items() if v}
    if padding:
        notes.append("vLLM pads its KV-cache groups with " + ", ".join(f"{v} {k}" for k, v in padding.items())
                     + " layer(s) (group size " + str(cap.grouping.group_size) + "): they take blocks too")
    spec = cap.settings["num_speculative_tokens"].value
    if spec and cap.linear:
        notes.append(f"{spec} speculative tokens: vLLM keeps {spec} extra block(s) per linear layer and "
                     f"{spec} more conv-state columns; the per-request figure includes them")
    if cap.deployment and cap.deployment.capture_size and cap.deployment.capture_size > ar.VLLM_DEFAULT_MAX_CAPTURE:
        notes.append(f"vLLM captures CUDA graphs up to {ar.VLLM_DEFAULT_MAX_CAPTURE} by default: pass "
                     f"--max-cudagraph-capture-size {cap.deployment.capture_size} on the decode side")
    return notes


def _not_auto(value: Any) -> Any:
    return None if value in (None, "auto") else value


def _value(sourced: Sourced | None) -> Any:
    return sourced.value if sourced else None
