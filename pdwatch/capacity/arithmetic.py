"""The capacity arithmetic, as the Qwen3.8-2.4T article walks it and as vLLM computes it.

Pure functions on integers: bytes, tokens, blocks. No I/O, no defaults of the deployment.
vLLM references (read from upstream source): ``AttentionSpec.real_page_size_bytes``,
``MambaSpec.page_size_bytes`` / ``max_memory_usage_bytes`` (``v1/kv_cache_interface.py``),
``MambaStateShapeCalculator`` (``model_executor/layers/mamba/mamba_utils.py``), the hybrid block
size in ``platforms/interface.py``, and ``_get_kv_cache_groups_uniform_page_size``,
``get_num_blocks``, ``get_max_concurrency_for_kv_cache_config`` (``v1/core/kv_cache_utils.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from pdwatch.capacity.model_config import FullAttention, GatedDeltaNet, Mamba2

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30

CAPTURE_HEADROOM = 128  # the article's rule: --max-cudagraph-capture-size = cc / DP ranks + 128
VLLM_DEFAULT_MAX_CAPTURE = 512

_DTYPE_BYTES = {
    "float32": 4, "float": 4, "fp32": 4,
    "bfloat16": 2, "bf16": 2, "float16": 2, "half": 2, "fp16": 2,
    "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "fp8_inc": 1, "float8_e4m3fn": 1, "float8_e5m2": 1, "int8": 1,
    "uint8": 1,
}


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def dtype_bytes(name: str) -> int:
    """Bytes per element of a torch / vLLM dtype name (``torch.bfloat16`` and ``bfloat16`` alike)."""
    key = name.lower().removeprefix("torch.")
    if key not in _DTYPE_BYTES:
        raise ValueError(f"unknown dtype {name!r} (known: bfloat16, float16, float32, fp8, int8)")
    return _DTYPE_BYTES[key]


def attention_bytes_per_token(attn: FullAttention, tp: int, nbytes: int) -> int:
    """One token of one full-attention layer on one TP rank: K and V (MLA: one latent)."""
    if attn.mla:
        return attn.head_dim * nbytes
    heads = max(1, attn.num_kv_heads // tp)  # vLLM replicates KV heads when TP exceeds them
    return heads * (attn.head_dim + attn.head_dim_v) * nbytes


def kv_heads_per_rank(attn: FullAttention, tp: int) -> int:
    return 1 if attn.mla else max(1, attn.num_kv_heads // tp)


@dataclass(frozen=True)
class StateShapes:
    """The per-request state of one linear layer on one TP rank, as element shapes."""

    conv: tuple[int, ...]
    ssm: tuple[int, ...]
    conv_channels: int  # the conv state's channel count before TP, for the step-by-step table


def gdn_state_shapes(gdn: GatedDeltaNet, tp: int, num_spec: int = 0) -> StateShapes:
    """``gated_delta_net_state_shape``: conv (kernel-1+spec, conv_dim/tp), SSM (v_heads/tp, k_dim, v_dim)."""
    conv_dim = gdn.head_k_dim * gdn.num_k_heads * 2 + gdn.head_v_dim * gdn.num_v_heads
    _check_tp("linear_num_value_heads", gdn.num_v_heads, tp)
    conv = (gdn.conv_kernel - 1 + num_spec, conv_dim // tp)
    ssm = (gdn.num_v_heads // tp, gdn.head_k_dim, gdn.head_v_dim)
    return StateShapes(conv, ssm, conv_dim)


def mamba2_state_shapes(m: Mamba2, tp: int, num_spec: int = 0) -> StateShapes:
    """``mamba2_state_shape``: conv (kernel-1+spec, (inner + 2·groups·state)/tp), SSM (heads/tp, head, state)."""
    groups = m.n_groups if m.n_groups % tp == 0 else tp  # extra_groups_for_head_shards pads groups up to TP
    conv_dim = m.intermediate_size + 2 * groups * m.state_size
    _check_tp("mamba_num_heads", m.num_heads, tp)
    conv = (m.conv_kernel - 1 + num_spec, conv_dim // tp)
    ssm = (m.num_heads // tp, m.head_dim, m.state_size)
    return StateShapes(conv, ssm, conv_dim)


def _check_tp(name: str, heads: int, tp: int) -> None:
    if heads % tp:
        raise ValueError(f"{name} {heads} is not divisible by TP {tp}")


def state_bytes(shape: tuple[int, ...], nbytes: int) -> int:
    return prod(shape) * nbytes


@dataclass(frozen=True)
class Block:
    """The KV block: tokens it holds, and its bytes per layer (the page vLLM allocates)."""

    tokens: int
    page_bytes: int
    attention_bytes_per_token: int
    align: int
    state_bytes: int = 0  # the linear state the block must hold (0 for a dense model)
    ratio_tokens: float = 0.0  # state_bytes / attention bytes per token, before alignment
    user_block_size: int | None = None

    @property
    def padding_bytes(self) -> int:
        """How much the linear-state page is padded to equal the attention page."""
        return self.page_bytes - self.state_bytes if self.state_bytes else 0

    @property
    def padding_pct(self) -> float:
        return 100 * self.padding_bytes / self.state_bytes if self.state_bytes else 0.0


def hybrid_block(state: int, per_token: int, align: int, user_block_size: int | None = None) -> Block:
    """The smallest multiple of ``align`` tokens whose attention page holds one linear state.

    vLLM keeps a user ``--block-size`` only when it is at least that large.
    """
    tokens = align * cdiv(state, align * per_token)
    if user_block_size is not None and user_block_size >= tokens:
        tokens = user_block_size
    return Block(tokens, tokens * per_token, per_token, align, state, state / per_token, user_block_size)


def dense_block(per_token: int, block_size: int) -> Block:
    return Block(block_size, block_size * per_token, per_token, block_size)


@dataclass(frozen=True)
class Grouping:
    """vLLM's KV-cache groups for a hybrid model: every group has ``group_size`` layers.

    ``groups`` counts the groups of each layer type; the last group of a type may carry padding
    layers ("Add %d padding layers, may waste at most %.2f%% KV cache memory").
    """

    group_size: int
    groups: dict[str, int]
    padding_layers: dict[str, int]


def kv_cache_groups(layer_counts: dict[str, int]) -> Grouping:
    """``_get_kv_cache_groups_uniform_page_size``: the group size is the smallest layer count,
    or the largest when it is under 1.5 × the smallest."""
    counts = {k: v for k, v in layer_counts.items() if v > 0}
    low, high = min(counts.values()), max(counts.values())
    size = high if high < low * 1.5 else low
    groups = {k: cdiv(v, size) for k, v in counts.items()}
    padding = {k: groups[k] * size - v for k, v in counts.items()}
    return Grouping(size, groups, padding)


def linear_blocks_per_request(mode: str, num_spec: int, tokens: int, block_tokens: int) -> int:
    """``MambaSpec.max_memory_usage_bytes`` in blocks: 'none' 1 + spec, 'align' 2 + spec, 'all' per block."""
    if mode == "all":
        return cdiv(tokens, block_tokens)
    if mode == "align":
        return 2 + num_spec
    if mode == "none":
        return 1 + num_spec
    raise ValueError(f"unknown mamba cache mode {mode!r} (none, align, all)")


@dataclass(frozen=True)
class RequestKV:
    """The KV cache one request holds: whole blocks per layer, over the (padded) layer groups."""

    tokens: int
    attention_blocks_per_layer: int
    linear_blocks_per_layer: int
    attention_layers: int  # layers as vLLM allocates them (a padded group counts in full)
    linear_layers: int
    page_bytes: int

    @property
    def attention_blocks(self) -> int:
        return self.attention_blocks_per_layer * self.attention_layers

    @property
    def linear_blocks(self) -> int:
        return self.linear_blocks_per_layer * self.linear_layers

    @property
    def blocks(self) -> int:
        return self.attention_blocks + self.linear_blocks

    @property
    def bytes(self) -> int:
        return self.blocks * self.page_bytes


def request_kv(tokens: int, block: Block, grouping: Grouping, linear_blocks: int) -> RequestKV:
    """Attention layers need ceil(tokens / block) blocks each; linear layers ``linear_blocks`` each."""
    size = grouping.group_size
    return RequestKV(
        tokens=tokens,
        attention_blocks_per_layer=cdiv(tokens, block.tokens),
        linear_blocks_per_layer=linear_blocks if grouping.groups.get("linear") else 0,
        attention_layers=grouping.groups.get("attention", 0) * size,
        linear_layers=grouping.groups.get("linear", 0) * size,
        page_bytes=block.page_bytes,
    )


def num_blocks(kv_bytes: int, page_bytes: int, group_size: int) -> int:
    """``get_num_blocks``: one tensor per layer of a group, each holding ``num_blocks`` pages."""
    return max(0, kv_bytes // page_bytes // group_size)


def vllm_max_concurrency(blocks: int, request: RequestKV, group_size: int) -> float:
    """``get_max_concurrency_for_kv_cache_config``: pool blocks ÷ blocks one request takes over all groups."""
    per_request = request.blocks // group_size
    return blocks / per_request if per_request else 0.0


def vllm_kv_cache_tokens(blocks: int, block_tokens: int, groups: int, max_concurrency: float,
                         max_model_len: int) -> dict[str, int]:
    """The 'KV cache size: N tokens' vLLM prints: the newer form (max_concurrency × max_model_len,
    used for every model at vLLM ≥ 2026) and the older one (num_blocks // groups × block_size)."""
    return {"concurrency_x_max_model_len": int(max_concurrency * max_model_len),
            "blocks_per_group_x_block_size": blocks // groups * block_tokens}


def capture_size(concurrency: int, dp_ranks: int) -> int:
    """The article's ``--max-cudagraph-capture-size``: requests per decode DP rank + 128."""
    return cdiv(concurrency, dp_ranks) + CAPTURE_HEADROOM
