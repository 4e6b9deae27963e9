"""Read a Hugging Face ``config.json`` into the layer shapes that size the KV cache.

Supported, from the fields vLLM itself reads:
- hybrid Gated-DeltaNet models in the Qwen3-Next style (``layer_types`` with
  ``linear_attention``/``full_attention``, or ``full_attention_interval``; ``linear_num_key_heads``,
  ``linear_num_value_heads``, ``linear_key_head_dim``, ``linear_value_head_dim``,
  ``linear_conv_kernel_dim``), also nested under ``text_config`` as Qwen3.5 does;
- hybrid Mamba2 models in the Nemotron-H style (``hybrid_override_pattern`` with ``M`` and ``*``;
  ``mamba_num_heads``, ``mamba_head_dim``, ``ssm_state_size``, ``n_groups``, ``conv_kernel``);
- dense transformers (``num_key_value_heads``, ``head_dim``), and MLA (``kv_lora_rank``).

Anything else raises :class:`ConfigError` with a one-line reason. No arithmetic here: shapes only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


class ConfigError(ValueError):
    """The config cannot be read into layer shapes (one-line message)."""


@dataclass(frozen=True)
class FullAttention:
    """The full-attention layers: their KV grows by one entry per token."""

    layers: int
    num_kv_heads: int
    head_dim: int
    head_dim_v: int
    mla: bool = False  # MLA caches one latent vector per token (head_dim = kv_lora_rank + rope dim), no V


@dataclass(frozen=True)
class GatedDeltaNet:
    """Linear-attention (GDN) layers: a fixed state per request (conv state + SSM state)."""

    layers: int
    num_k_heads: int
    num_v_heads: int
    head_k_dim: int
    head_v_dim: int
    conv_kernel: int
    kind: str = "gdn"


@dataclass(frozen=True)
class Mamba2:
    """Mamba2 mixer layers: a fixed state per request (conv state + SSM state)."""

    layers: int
    num_heads: int
    head_dim: int
    state_size: int
    n_groups: int
    conv_kernel: int
    intermediate_size: int
    kind: str = "mamba2"


@dataclass(frozen=True)
class ModelSpec:
    architecture: str
    dtype: str | None  # torch_dtype / dtype of the config; None when the config names none
    attention: FullAttention
    linear: GatedDeltaNet | Mamba2 | None
    ssm_dtype: str | None = None  # the config's mamba_ssm_dtype, if it names one
    mtp_layers: int = 0  # multi-token-prediction layers (mtp_num_hidden_layers / num_nextn_predict_layers)

    @property
    def hybrid(self) -> bool:
        return self.linear is not None


def load_model_config(path: str) -> ModelSpec:
    """Read ``path`` (a config.json) into a :class:`ModelSpec`."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the model config: {exc.strerror or exc}") from None
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not a JSON config.json ({_first_line(exc)})") from None
    try:
        return model_spec(data)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def model_spec(data: Any) -> ModelSpec:
    """Build a :class:`ModelSpec` from a parsed config.json."""
    if not isinstance(data, dict):
        raise ConfigError("config.json must be a JSON object")
    top = data
    if isinstance(data.get("text_config"), dict):  # Qwen3.5 / multimodal wrappers
        data = {**data, **data["text_config"]}
    arch = _architecture(top, data)
    dtype = data.get("torch_dtype") or data.get("dtype") or top.get("torch_dtype") or top.get("dtype")
    if dtype is not None and not isinstance(dtype, str):
        raise ConfigError(f"torch_dtype must be a string, got {dtype!r}")
    counts, linear_kind = _layer_counts(data)
    attention = _full_attention(data, counts["full"])
    linear = None
    if counts["linear"]:
        linear = _gdn(data, counts["linear"]) if linear_kind == "gdn" else _mamba2(data, counts["linear"])
    ssm_dtype = data.get("mamba_ssm_dtype")
    mtp = _int(data, "mtp_num_hidden_layers", 0) or _int(data, "num_nextn_predict_layers", 0)
    return ModelSpec(arch, dtype, attention, linear, ssm_dtype if isinstance(ssm_dtype, str) else None, mtp)


def _architecture(top: dict, data: dict) -> str:
    archs = top.get("architectures") or data.get("architectures")
    if isinstance(archs, list) and archs and isinstance(archs[0], str):
        return archs[0]
    return str(data.get("model_type") or "unknown")


def _layer_counts(data: dict) -> tuple[dict[str, int], str]:
    """Count full-attention and linear (GDN/Mamba) layers; say which linear kind."""
    layers = _int(data, "num_hidden_layers")
    types = data.get("layer_types")
    pattern = data.get("hybrid_override_pattern")
    if isinstance(pattern, str):  # Nemotron-H: M = Mamba2, * = attention, - / E = MLP or MoE only
        return {"full": pattern.count("*"), "linear": pattern.count("M")}, "mamba2"
    if isinstance(types, list):
        if len(types) != layers:
            raise ConfigError(f"layer_types lists {len(types)} layers but num_hidden_layers is {layers}")
        unknown = sorted({t for t in types if t not in ("full_attention", "linear_attention")}, key=str)
        if unknown:
            raise ConfigError(f"layer type {unknown[0]!r} is not supported (only full_attention and "
                              "linear_attention)")
        return {"full": types.count("full_attention"), "linear": types.count("linear_attention")}, "gdn"
    interval = data.get("full_attention_interval")
    if interval is not None and "linear_num_value_heads" in data:
        if not isinstance(interval, int) or isinstance(interval, bool) or interval < 1:
            raise ConfigError(f"full_attention_interval must be a positive integer, got {interval!r}")
        full = layers // interval  # vLLM: layer i is full attention when (i + 1) % interval == 0
        return {"full": full, "linear": layers - full}, "gdn"
    if "linear_num_value_heads" in data or "mamba_num_heads" in data:
        raise ConfigError("hybrid config without layer_types, full_attention_interval or "
                          "hybrid_override_pattern: cannot tell which layers are linear")
    return {"full": layers, "linear": 0}, "gdn"


def _full_attention(data: dict, layers: int) -> FullAttention:
    if layers == 0:
        raise ConfigError("no full-attention layer: attention-free models are not supported")
    if data.get("kv_lora_rank") is not None:  # MLA (DeepSeek-style): one latent of rank + rope dim per token
        latent = _int(data, "kv_lora_rank") + _int(data, "qk_rope_head_dim")
        return FullAttention(layers, 1, latent, 0, mla=True)
    heads = _int(data, "num_attention_heads")
    kv_heads = _int(data, "num_key_value_heads", heads)
    head_dim = data.get("head_dim") or data.get("attention_head_dim")
    if head_dim is None:
        hidden = _int(data, "hidden_size")
        if hidden % heads:
            raise ConfigError(f"no head_dim, and hidden_size {hidden} is not a multiple of "
                              f"num_attention_heads {heads}")
        head_dim = hidden // heads
    head_dim = _positive("head_dim", head_dim)
    return FullAttention(layers, kv_heads, head_dim, head_dim)


def _gdn(data: dict, layers: int) -> GatedDeltaNet:
    return GatedDeltaNet(
        layers=layers,
        num_k_heads=_int(data, "linear_num_key_heads"),
        num_v_heads=_int(data, "linear_num_value_heads"),
        head_k_dim=_int(data, "linear_key_head_dim"),
        head_v_dim=_int(data, "linear_value_head_dim"),
        conv_kernel=_int(data, "linear_conv_kernel_dim"),
    )


def _mamba2(data: dict, layers: int) -> Mamba2:
    heads = _int(data, "mamba_num_heads")
    head_dim = _int(data, "mamba_head_dim")
    return Mamba2(
        layers=layers,
        num_heads=heads,
        head_dim=head_dim,
        state_size=_int(data, "ssm_state_size"),
        n_groups=_int(data, "n_groups", 1),
        conv_kernel=_int(data, "conv_kernel"),
        intermediate_size=heads * head_dim,
    )


_MISSING = object()


def _int(data: dict, key: str, default: Any = _MISSING) -> int:
    value = data.get(key)
    if value is None:
        if default is _MISSING:
            raise ConfigError(f"missing {key}")
        return default
    return _positive(key, value, allow_zero=default == 0)


def _positive(key: str, value: Any, allow_zero: bool = False) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < (0 if allow_zero else 1):
        raise ConfigError(f"{key} must be a positive integer, got {value!r}")
    return value


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
