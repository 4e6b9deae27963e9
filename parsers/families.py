"""Every log-line family pdwatch understands, declared as data.

A family has byte ``needles`` (the cheap prefilter: a line that contains none of
them is never looked at by a regex), a ``parse`` function from the message text
to zero or more ``(kind, values)`` pairs, and ``samples``: real-looking messages
with the values they must give, which ``tests/parsers/test_families.py`` runs.
Families match on the message text only, never on the ``[file.py:N]`` in the
header, since vLLM moves messages between files across versions.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import regex

from .fastlane import STATS_ENGINE_KEY, finite_number, spec_decode_message, stats_message
from .pyrepr import ReprError, parse_args_dict, parse_namespace_args, parse_repr

Values = dict[str, Any]
Parsed = list[tuple[str, Values]]


@dataclass(frozen=True)
class Sample:
    message: str
    expect: list[tuple[str, Values]]  # (kind, subset of values that must match)


@dataclass(frozen=True)
class Family:
    name: str
    needles: tuple[bytes, ...]
    parse: Callable[[str], Parsed]
    samples: tuple[Sample, ...] = field(default_factory=tuple)


FAMILIES: list[Family] = []


def family(name: str, needles: Iterable[str], samples: Iterable[Sample] = ()):
    def register(fn: Callable[[str], Parsed]) -> Callable[[str], Parsed]:
        FAMILIES.append(Family(name, tuple(n.encode() for n in needles), fn, tuple(samples)))
        return fn
    return register


_num = finite_number  # a printed float; ``nan`` and ``inf`` become None


def _int(text: str) -> int:
    return int(text.replace(",", ""))


# --- periodic stats ---------------------------------------------------------------------------

_STATS_PREFIX = regex.compile(r"(?:Engine (?P<engine>\d+)|(?P<agg>\d+) Engines Aggregated): ")
_SEGMENT = regex.compile(r"(?P<key>[A-Z][A-Za-z ]*?): (?P<val>-?\d+(?:\.\d+)?|nan|-?inf)(?![\d.])")
_STATS_KEYS = {
    "Avg prompt throughput": "prompt_tps",
    "Avg generation throughput": "gen_tps",
    "Running": "running",
    "Waiting": "waiting",
    "Swapped": "swapped",
    "Pending": "pending",
    "Deferred": "deferred",
    "Preemptions": "preemptions",
    "Corrupted": "corrupted",
    "GPU KV cache usage": "kv_usage_pct",
    "CPU KV cache usage": "cpu_kv_usage_pct",
    "Prefix cache hit rate": "prefix_hit_pct",
    "External prefix cache hit rate": "external_prefix_hit_pct",
    "MM cache hit rate": "mm_hit_pct",
}
_INT_STATS = {"running", "waiting", "swapped", "pending", "deferred", "preemptions", "corrupted"}


def _stats_field(values: Values, label: str, raw: str) -> None:
    key = _STATS_KEYS.get(label)
    if key is None:
        return
    if key in _INT_STATS:
        if raw.isdigit():
            values[key] = int(raw)
        return
    try:
        number = float(raw)
    except ValueError:
        return
    values[key] = number if number == number and abs(number) != float("inf") else None


@family("stats", ["Running: "], [
    Sample("Engine 000: Avg prompt throughput: 10234.5 tokens/s, Avg generation throughput: 1520.3 tokens/s, "
           "Running: 64 reqs, Waiting: 12 reqs, GPU KV cache usage: 87.4%, Prefix cache hit rate: 12.3%",
           [("stats", {"prompt_tps": 10234.5, "gen_tps": 1520.3, "running": 64, "waiting": 12,
                       "kv_usage_pct": 87.4, "prefix_hit_pct": 12.3, "_engine": 0})]),
    Sample("Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 3011.8 tokens/s, "
           "Running: 256 reqs, Waiting: 40 reqs, Deferred: 8 reqs, Preemptions: 3, GPU KV cache usage: 99.1%, "
           "Prefix cache hit rate: 0.0%, External prefix cache hit rate: 96.7%",
           [("stats", {"deferred": 8, "preemptions": 3, "kv_usage_pct": 99.1, "prefix_hit_pct": 0.0,
                       "external_prefix_hit_pct": 96.7})]),
    Sample("4 Engines Aggregated: Avg prompt throughput: 40012.0 tokens/s, Avg generation throughput: 812.4 tokens/s, "
           "Running: 96 reqs, Waiting: 0 reqs, GPU KV cache usage: 41.2%, Prefix cache hit rate: 5.0%",
           [("stats", {"engines_aggregated": 4, "running": 96, "_engine": None})]),
    Sample("Avg prompt throughput: 512.3 tokens/s, Avg generation throughput: 96.0 tokens/s, Running: 4 reqs, "
           "Waiting: 0 reqs GPU KV cache usage: 3.2%.",
           [("stats", {"running": 4, "waiting": 0, "kv_usage_pct": 3.2})]),
    Sample("Avg prompt throughput: 1203.4 tokens/s, Avg generation throughput: 210.8 tokens/s, Running: 12 reqs, "
           "Swapped: 0 reqs, Pending: 3 reqs, GPU KV cache usage: 45.6%, CPU KV cache usage: 0.0%.",
           [("stats", {"running": 12, "swapped": 0, "pending": 3, "waiting": 3, "kv_usage_pct": 45.6,
                       "cpu_kv_usage_pct": 0.0})]),
    Sample("Engine 000: Avg prompt throughput: 123.5 tokens/s, Avg generation throughput: 116.0 tokens/s, "
           "Running: 0 reqs, Waiting: 0 reqs, CPU KV cache usage: 0.2%, Prefix cache hit rate: 0.0%",
           [("stats", {"kv_usage_pct": 0.2, "running": 0})]),
    Sample("Running: 3 reqs, Waiting: 1 reqs ", [("stats", {"running": 3, "waiting": 1})]),
])
def parse_stats(msg: str) -> Parsed:
    common = stats_message(msg)
    if common is not None:
        return [("stats", common)]
    engine: int | None = None
    values: Values = {}
    body = msg
    m = _STATS_PREFIX.match(msg)
    if m:
        body = msg[m.end():]
        if m["engine"] is not None:
            engine = int(m["engine"])
        else:
            values["engines_aggregated"] = int(m["agg"])
    # Split on ", " and ": " (plain str methods, far cheaper than a regex per line); only the
    # v0.7.1 form, which has two fields in one segment ("Waiting: 0 reqs GPU KV ..."), needs the regex.
    for seg in body.split(", "):
        key, sep, rest = seg.partition(": ")
        if not sep:
            continue
        if ": " in rest:
            for m in _SEGMENT.finditer(seg):
                _stats_field(values, m["key"], m["val"])
            continue
        _stats_field(values, key, rest.split(" ", 1)[0].rstrip("%."))
    if "running" not in values:
        return []  # a line that mentions "Running: " but is not a stats line
    if "pending" in values and "waiting" not in values:
        values["waiting"] = values["pending"]  # V0's Pending is the waiting queue
    if "cpu_kv_usage_pct" in values and "kv_usage_pct" not in values:
        # V1 on vLLM's CPU backend: the CPU KV cache is the main KV cache, not swap.
        values["kv_usage_pct"] = values.pop("cpu_kv_usage_pct")
    values[STATS_ENGINE_KEY] = engine
    return [("stats", values)]


_V0_PREFIX = regex.compile(r"Prefix cache hit rate: GPU: (?P<gpu>[\d.]+|nan)%, CPU: (?P<cpu>[\d.]+|nan)%")


@family("prefix_cache", ["Prefix cache hit rate: GPU: "], [
    Sample("Prefix cache hit rate: GPU: 23.45%, CPU: 0.00%", [("prefix_cache", {"gpu_hit_pct": 23.45, "cpu_hit_pct": 0.0})]),
])
def parse_v0_prefix(msg: str) -> Parsed:
    m = _V0_PREFIX.search(msg)
    return [("prefix_cache", {"gpu_hit_pct": _num(m["gpu"]), "cpu_hit_pct": _num(m["cpu"])})] if m else []


# --- spec decode and KV transfer (follow their engine's stats line) ---------------------------

_SPEC_LIST = regex.compile(r"Per-position acceptance rate: (?P<pp>[\d.]+(?:, [\d.]+)*)")
_SPEC_FIELDS = {
    "Mean acceptance length": "mean_acceptance_length",
    "Accepted throughput": "accepted_tps",
    "Drafted throughput": "drafted_tps",
    "Accepted": "accepted_tokens",
    "Drafted": "drafted_tokens",
    "Avg Draft acceptance rate": "acceptance_rate_pct",
    "Draft acceptance rate": "acceptance_rate_pct",
}
_SPEC_SEGMENT = regex.compile(r"(?:^|, )(?P<key>[A-Z][A-Za-z ]*?): (?P<val>-?\d+(?:\.\d+)?|nan|-?inf)(?![\d.])")


@family("spec_decode", ["SpecDecoding metrics: "], [
    Sample("SpecDecoding metrics: Mean acceptance length: 2.41, Accepted throughput: 1203.55 tokens/s, Drafted "
           "throughput: 2560.10 tokens/s, Accepted: 12036 tokens, Drafted: 25601 tokens, Per-position acceptance "
           "rate: 0.712, 0.455, 0.243, Avg Draft acceptance rate: 47.0%",
           [("spec_decode", {"mean_acceptance_length": 2.41, "accepted_tps": 1203.55, "drafted_tokens": 25601,
                             "per_position_acceptance": [0.712, 0.455, 0.243], "acceptance_rate_pct": 47.0})]),
    Sample("SpecDecoding metrics: Draft acceptance rate: 47.0%, Mean acceptance length: 2.41, Accepted: 12036 "
           "tokens, Drafted: 25601 tokens, Per-position acceptance rate: 0.712, 0.455, 0.243",
           [("spec_decode", {"acceptance_rate_pct": 47.0, "accepted_tokens": 12036})]),
    Sample("SpecDecoding metrics: Mean acceptance length: 1.00, Accepted throughput: 0.00 tokens/s, Drafted "
           "throughput: 0.00 tokens/s, Accepted: 0 tokens, Drafted: 0 tokens, Per-position acceptance rate: 0.000, "
           "Avg Draft acceptance rate: nan%", [("spec_decode", {"acceptance_rate_pct": None})]),
])
def parse_spec_decode(msg: str) -> Parsed:
    body = msg[msg.index("SpecDecoding metrics: ") + len("SpecDecoding metrics: "):]
    common = spec_decode_message(body)
    if common is not None:
        return [("spec_decode", common)]
    values: Values = {}
    m = _SPEC_LIST.search(body)
    if m:
        values["per_position_acceptance"] = [float(x) for x in m["pp"].split(", ")]
        body = body[: m.start()] + body[m.end():]
    for seg in _SPEC_SEGMENT.finditer(body):
        key = _SPEC_FIELDS.get(seg["key"])
        if key is None:
            continue
        if key in {"accepted_tokens", "drafted_tokens"}:
            values[key] = int(float(seg["val"]))
        else:
            values[key] = _num(seg["val"])
    return [("spec_decode", values)] if values else []


# V0 (and V1 before 0.9): rates as fractions (0.651), counts over the run so far; older
# releases printed "Number of draft tokens tokens:".
_V0_SPEC_FIELDS = {
    "Draft acceptance rate": ("acceptance_rate_pct", 100.0),
    "System efficiency": ("system_efficiency_pct", 100.0),
    "Number of speculative tokens": ("num_speculative_tokens", None),
    "Number of accepted tokens": ("accepted_tokens", None),
    "Number of draft tokens": ("drafted_tokens", None),
    "Number of draft tokens tokens": ("drafted_tokens", None),
    "Number of emitted tokens": ("emitted_tokens", None),
    "Number of emitted tokens tokens": ("emitted_tokens", None),
}


@family("spec_decode_v0", ["Speculative metrics: "], [
    Sample("Speculative metrics: Draft acceptance rate: 0.651, System efficiency: 0.570, Number of speculative "
           "tokens: 3, Number of accepted tokens: 12036, Number of draft tokens: 18489, Number of emitted tokens: "
           "15810.", [("spec_decode", {"acceptance_rate_pct": 65.1, "system_efficiency_pct": 57.0,
                                       "num_speculative_tokens": 3, "accepted_tokens": 12036,
                                       "drafted_tokens": 18489, "emitted_tokens": 15810})]),
    Sample("Speculative metrics: Draft acceptance rate: nan, System efficiency: nan, Number of speculative tokens: 5, "
           "Number of accepted tokens: 0, Number of draft tokens tokens: 0, Number of emitted tokens tokens: 0.",
           [("spec_decode", {"acceptance_rate_pct": None, "drafted_tokens": 0, "emitted_tokens": 0})]),
])
def parse_spec_decode_v0(msg: str) -> Parsed:
    if "Speculative metrics: " not in msg:
        return []
    body = msg[msg.index("Speculative metrics: ") + len("Speculative metrics: "):].rstrip(". ")
    values: Values = {}
    for seg in _SPEC_SEGMENT.finditer(body):
        field = _V0_SPEC_FIELDS.get(seg["key"])
        if field is None:
            continue
        key, scale = field
        number = _num(seg["val"])
        if scale is not None:
            values[key] = None if number is None else round(number * scale, 6)
        else:
            values[key] = None if number is None else int(number)
    return [("spec_decode", values)] if values else []


_XFER_CONNECTOR = regex.compile(r"(?P<name>\w+)=\{(?P<body>[^{}]*)\}")


@functools.lru_cache(maxsize=256)
def _snake(key: str) -> str:
    """``Avg xfer time (ms)`` -> ``avg_xfer_time_ms``; cached: a run has a handful of keys."""
    key = key.strip(" '").replace("MB/s", "mb_s").replace("(", " ").replace(")", " ").replace("/", " ")
    key = regex.sub(r"\bnumber of\b", "", key, flags=regex.I)
    return "_".join(key.lower().split())


def _metric_value(raw: str) -> int | float | None:
    raw = raw.strip(" '")
    if raw.isdigit():
        return int(raw)
    if "." not in raw:  # int() accepts no dot: try it first so "7" stays an int
        try:
            return int(raw)
        except ValueError:
            pass
    try:
        return float(raw)
    except ValueError:
        return None


def _xfer_metrics(body: str) -> Values:
    """``k=v, k=v`` (NIXL) or ``'k': v, 'k': v`` (dict repr), split with str methods (hot path)."""
    out: Values = {}
    for part in body.split(", "):
        key, sep, raw = part.partition("=") if "=" in part else part.partition(": ")
        if not sep:
            continue
        value = _metric_value(raw)
        if value is not None and key.strip(" '"):
            out[_snake(key)] = value
    return out


@family("kv_transfer", ["KV Transfer metrics: "], [
    Sample("KV Transfer metrics: Num successful transfers=128, Avg xfer time (ms)=4.812, P90 xfer time (ms)=9.107, "
           "Avg post time (ms)=0.214, P90 post time (ms)=0.391, Avg MB per transfer=56.25, Throughput (MB/s)=11689.527, "
           "Avg number of descriptors=3584.0",
           [("kv_transfer", {"connector": None, "metrics": {
               "num_successful_transfers": 128, "avg_xfer_time_ms": 4.812, "p90_xfer_time_ms": 9.107,
               "avg_post_time_ms": 0.214, "p90_post_time_ms": 0.391, "avg_mb_per_transfer": 56.25,
               "throughput_mb_s": 11689.527, "avg_descriptors": 3584.0}})]),
    Sample("KV Transfer metrics: NixlConnector={'Num successful transfers': 12, 'Avg xfer time (ms)': 3.21}, "
           "OffloadingConnector={'Num successful transfers': 3}",
           [("kv_transfer", {"connector": "NixlConnector", "metrics": {"num_successful_transfers": 12,
                                                                        "avg_xfer_time_ms": 3.21}}),
            ("kv_transfer", {"connector": "OffloadingConnector", "metrics": {"num_successful_transfers": 3}})]),
    Sample("KV Transfer metrics: num_successful_transfers=17",
           [("kv_transfer", {"connector": None, "metrics": {"num_successful_transfers": 17}})]),
])
def parse_kv_transfer(msg: str) -> Parsed:
    body = msg[msg.index("KV Transfer metrics: ") + len("KV Transfer metrics: "):]
    connectors = list(_XFER_CONNECTOR.finditer(body))
    if connectors:
        return [("kv_transfer", {"connector": c["name"], "metrics": _xfer_metrics(c["body"])}) for c in connectors]
    metrics = _xfer_metrics(body)
    return [("kv_transfer", {"connector": None, "metrics": metrics})] if metrics else []


# --- start-up facts ---------------------------------------------------------------------------

_VERSION_FORMS = [
    regex.compile(r"vLLM server version (?P<version>\S+), serving model (?P<model>\S+)"),
    regex.compile(r"vLLM API server version (?P<version>\S+)$"),
    regex.compile(r"^[\s\u2580-\u259f]*\s version (?P<version>\d\S*)\s*$"),  # the ASCII-art logo
]
_LOGO_MODEL = regex.compile(r"^[\s\u2580-\u259f]*\s model\s+(?P<model>\S+)\s*$")


@family("version", ["server version ", "  version "], [
    Sample("vLLM API server version 0.12.0", [("version", {"version": "0.12.0"})]),
    Sample("vLLM server version 0.21.0, serving model Qwen/Qwen3-32B",
           [("version", {"version": "0.21.0", "model": "Qwen/Qwen3-32B"})]),
    Sample(" \u2584\u2584 \u2584\u2588 \u2588     \u2588     \u2588 \u2580\u2584\u2580 \u2588  version 0.21.0",
           [("version", {"version": "0.21.0"})]),
])
def parse_version(msg: str) -> Parsed:
    for form in _VERSION_FORMS:
        m = form.search(msg)
        if m:
            values: Values = {"version": m["version"]}
            if "model" in m.groupdict() and m["model"]:
                values["model"] = m["model"]
            return [("version", values)]
    return []


LOGO_MODEL_KIND = "_logo_model"  # private: joined to the logo's version line by the scanner


@family("logo_model", ["  model  "], [
    Sample("  \u2588\u2584\u2588\u2580 \u2588     \u2588     \u2588     \u2588  model   /models/model",
           [(LOGO_MODEL_KIND, {"model": "/models/model"})]),
])
def parse_logo_model(msg: str) -> Parsed:
    m = _LOGO_MODEL.match(msg)
    return [(LOGO_MODEL_KIND, {"model": m["model"]})] if m else []


@family("args", ["non-default args: "], [
    Sample("non-default args: {'model_tag': 'Qwen/Qwen3-32B', 'max_num_seqs': 256, 'gpu_memory_utilization': 0.9, "
           "'enable_prefix_caching': True, 'kv_transfer_config': KVTransferConfig(kv_connector='NixlConnector', "
           "kv_role='kv_producer', kv_rank=None, kv_buffer_size=1000000000.0)}",
           [("args", {"args": {"model_tag": "Qwen/Qwen3-32B", "max_num_seqs": 256, "gpu_memory_utilization": 0.9,
                               "enable_prefix_caching": True,
                               "kv_transfer_config": {"kv_connector": "NixlConnector", "kv_role": "kv_producer",
                                                      "kv_rank": None, "kv_buffer_size": 1e9}}})]),
    Sample("non-default args: {'model': 'm', 'max_num_seqs': 16, 'kv_transfer_config': KVTransferConfig(kv_connector='N"
           "ixlConnector', kv_role='kv_consumer'",
           [("args", {"args": {"model": "m", "max_num_seqs": 16,
                               "kv_transfer_config": {"kv_connector": "NixlConnector", "kv_role": "kv_consumer"}}})]),
])
def parse_args(msg: str) -> Parsed:
    text = msg[msg.index("non-default args: ") + len("non-default args: "):]
    return [("args", {"args": parse_args_dict(text)})]


@family("args_namespace", ["args: Namespace("], [
    Sample("args: Namespace(subparser='serve', model_tag='Qwen/Qwen2.5-1.5B-Instruct', host=None, port=8000, "
           "config_format=<ConfigFormat.AUTO: 'auto'>, model='Qwen/Qwen2.5-1.5B-Instruct', pipeline_parallel_size=1, "
           "tensor_parallel_size=2, data_parallel_size=1, max_num_seqs=None, disable_log_stats=True, "
           "dispatch_function=<function ServeSubcommand.cmd at 0x7ac262db7420>)",
           [("args", {"form": "namespace",
                      "args": {"subparser": "serve", "model_tag": "Qwen/Qwen2.5-1.5B-Instruct", "host": None,
                               "port": 8000, "model": "Qwen/Qwen2.5-1.5B-Instruct", "pipeline_parallel_size": 1,
                               "tensor_parallel_size": 2, "data_parallel_size": 1, "max_num_seqs": None,
                               "disable_log_stats": True}})]),
])
def parse_args_namespace(msg: str) -> Parsed:
    # vLLM <= 0.8 and V0 log every argument, defaults included (not only the non-default ones)
    if "args: Namespace(" not in msg:
        return []
    return [("args", {"args": parse_namespace_args(msg), "form": "namespace"})]


_ENGINE_VERSION = regex.compile(r"Initializing (?:a V[01] |an )LLM engine \(v(?P<v>[^)]+)\)")
_CONFIG_FIELDS: list[tuple[str, Any, Callable[[str], Any]]] = [
    ("model", regex.compile(r"\bmodel='(?P<v>[^']*)'"), str),
    ("tensor_parallel_size", regex.compile(r"\btensor_parallel_size=(?P<v>\d+)"), int),
    ("pipeline_parallel_size", regex.compile(r"\bpipeline_parallel_size=(?P<v>\d+)"), int),
    ("data_parallel_size", regex.compile(r"\bdata_parallel_size=(?P<v>\d+)"), int),
    ("max_seq_len", regex.compile(r"\bmax_seq_len=(?P<v>\d+)"), int),
    ("kv_cache_dtype", regex.compile(r"\bkv_cache_dtype=(?P<v>[\w.]+)"), str),
    ("enable_prefix_caching", regex.compile(r"\benable_prefix_caching=(?P<v>True|False)"), lambda v: v == "True"),
    ("enforce_eager", regex.compile(r"\benforce_eager=(?P<v>True|False)"), lambda v: v == "True"),
    ("num_speculative_tokens", regex.compile(r"\bnum_(?:spec|speculative)_tokens=(?P<v>\d+)"), int),
    ("cudagraph_mode", regex.compile(r"""['"]cudagraph_mode['"]:\s*(?:<(?P<v>[\w.]+)[^>]*>|(?P<v>\d+))"""), str),
]
_CAPTURE_SIZES = regex.compile(r"""['"]cudagraph_capture_sizes['"]:\s*\[(?P<v>[\d,\s]*)\]""")
_CAPTURE_MAX = regex.compile(r"""['"](?:max_cudagraph_capture_size|max_capture_size)['"]:\s*(?P<v>\d+|None|null)""")


@family("engine_config", ["Initializing a V1 LLM engine", "Initializing a V0 LLM engine", "Initializing an LLM engine"], [
    Sample("Initializing an LLM engine (v0.6.1.post2) with config: model='google/gemma-2-2b-it', "
           "speculative_config=None, tensor_parallel_size=1, pipeline_parallel_size=1, enforce_eager=False",
           [("engine_config", {"version": "0.6.1.post2", "model": "google/gemma-2-2b-it", "tensor_parallel_size": 1,
                               "pipeline_parallel_size": 1})]),
    Sample("Initializing a V0 LLM engine (v0.8.5.dev32+g44fa4d556) with config: model='Qwen/Qwen2.5-1.5B-Instruct', "
           "tensor_parallel_size=4, pipeline_parallel_size=1",
           [("engine_config", {"version": "0.8.5.dev32+g44fa4d556", "tensor_parallel_size": 4})]),
    Sample("Initializing a V1 LLM engine (v0.21.0) with config: model='Qwen/Qwen3-32B', speculative_config=None, "
           "max_seq_len=32768, tensor_parallel_size=2, pipeline_parallel_size=1, data_parallel_size=1, "
           "enforce_eager=False, kv_cache_dtype=auto, enable_prefix_caching=True, compilation_config={'mode': "
           "<CompilationMode.VLLM_COMPILE: 3>, 'cudagraph_mode': <CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>, "
           "'cudagraph_capture_sizes': [1, 2, 4, 8, 16, 512], 'max_cudagraph_capture_size': 512}",
           [("engine_config", {"version": "0.21.0", "model": "Qwen/Qwen3-32B", "tensor_parallel_size": 2,
                               "max_seq_len": 32768, "enable_prefix_caching": True,
                               "cudagraph_mode": "CUDAGraphMode.FULL_AND_PIECEWISE"}),
            ("cudagraph_capture", {"sizes": [1, 2, 4, 8, 16, 512], "max_size": 512, "origin": "engine_config"})]),
    Sample("Initializing a V1 LLM engine (v0.10.1.1) with config: model='Q', compilation_config={\"level\":3,"
           "\"cudagraph_capture_sizes\":[512,504,8,4,2,1],\"max_capture_size\":512}",
           [("engine_config", {"version": "0.10.1.1"}),
            ("cudagraph_capture", {"sizes": [1, 2, 4, 8, 504, 512], "max_size": 512})]),
    Sample("Initializing a V1 LLM engine (v0.32.0) with config: model='/m', compilation_config={'cudagraph_mode': "
           "<CUDAGraphMode.NONE: 0>, 'cudagraph_capture_sizes': [], 'max_cudagraph_capture_size': None}",
           [("engine_config", {"cudagraph_mode": "CUDAGraphMode.NONE"}),
            ("cudagraph_capture", {"sizes": [], "max_size": None})]),
])
def parse_engine_config(msg: str) -> Parsed:
    values: Values = {}
    m = _ENGINE_VERSION.search(msg)
    if m:
        values["version"] = m["v"]
    for key, pattern, convert in _CONFIG_FIELDS:
        m = pattern.search(msg)
        if m:
            values[key] = convert(m["v"])
    out: Parsed = [("engine_config", values)]
    sizes_m, max_m = _CAPTURE_SIZES.search(msg), _CAPTURE_MAX.search(msg)
    if sizes_m or max_m:
        sizes = sorted(int(s) for s in sizes_m["v"].replace(" ", "").split(",") if s) if sizes_m else None
        max_size: int | None = None
        if max_m and max_m["v"].isdigit():
            max_size = int(max_m["v"])
        elif sizes:
            max_size = max(sizes)
        out.append(("cudagraph_capture", {"sizes": sizes, "max_size": max_size, "origin": "engine_config"}))
    return out


_PROFILE_GRAPHS = regex.compile(r"(?P<mode>[A-Z_]+)=(?P<count>\d+) \(largest=(?P<largest>\d+)\)")
_OVERRIDE_CAPTURE = regex.compile(r"Overriding max cuda graph capture size to (?P<v>\d+)")


@family("cudagraph_capture", ["Profiling CUDA graph memory: ", "Overriding max cuda graph capture size"], [
    Sample("Profiling CUDA graph memory: PIECEWISE=67 (largest=512), FULL=35 (largest=256)",
           [("cudagraph_capture", {"sizes": None, "max_size": 512, "origin": "profiling"})]),
    Sample("Overriding max cuda graph capture size to 1024 for performance.",
           [("cudagraph_capture", {"sizes": None, "max_size": 1024, "origin": "override"})]),
])
def parse_cudagraph_capture(msg: str) -> Parsed:
    m = _OVERRIDE_CAPTURE.search(msg)
    if m:
        return [("cudagraph_capture", {"sizes": None, "max_size": int(m["v"]), "origin": "override"})]
    largest = [int(g["largest"]) for g in _PROFILE_GRAPHS.finditer(msg)]
    if not largest:
        return []
    return [("cudagraph_capture", {"sizes": None, "max_size": max(largest), "origin": "profiling"})]


_MODEL_LOADING = regex.compile(
    r"Model loading took (?P<gib>[\d.]+) ?(?:GiB|GB)(?: memory)? and (?P<sec>[\d.]+) ?s(?:econds)?\b")


@family("model_loading", ["Model loading took "], [
    Sample("Model loading took 30.52 GiB memory and 41.203117 seconds", [("model_loading", {"gib": 30.52, "seconds": 41.203117})]),
    Sample("Model loading took 30.5234 GiB and 41.203117 seconds", [("model_loading", {"gib": 30.5234})]),
    Sample("Model loading took 14.2500 GB and 9.5 seconds", [("model_loading", {"gib": 14.25})]),
])
def parse_model_loading(msg: str) -> Parsed:
    m = _MODEL_LOADING.search(msg)
    return [("model_loading", {"gib": float(m["gib"]), "seconds": float(m["sec"])})] if m else []


_KV_MEMORY = regex.compile(r"Available KV cache memory: (?P<gib>[\d.]+) GiB$")


_KV_MEMORY_CPU = regex.compile(r"Explicitly set \((?P<gib>[\d.]+)/[\d.]+\) GiB for KV cache")


@family("kv_memory", ["Available KV cache memory: ", "GiB for KV cache"], [
    Sample("Available KV cache memory: 61.87 GiB", [("kv_memory", {"gib": 61.87})]),
    Sample("Available KV cache memory: 62.0 GiB", [("kv_memory", {"gib": 62.0})]),
    Sample("Explicitly set (1.0/10.09) GiB for KV cache on node 0.", [("kv_memory", {"gib": 1.0})]),  # CPU backend
])
def parse_kv_memory(msg: str) -> Parsed:
    m = _KV_MEMORY.search(msg) or _KV_MEMORY_CPU.search(msg)
    return [("kv_memory", {"gib": float(m["gib"])})] if m else []


_MEM_V1 = regex.compile(
    r"Total non KV cache memory: (?P<non_kv>[\d.]+) ?GiB; torch peak memory increase: (?P<peak>[\d.]+) ?GiB; "
    r"non-torch forward increase memory: (?P<non_torch>[\d.]+) ?GiB; weights memory: (?P<weights>[\d.]+) ?GiB")
_MEM_V0_TOTAL = regex.compile(
    r"total_gpu_memory \((?P<total>[\d.]+) ?GiB\) x gpu_memory_utilization \((?P<util>[\d.]+)\)")
_MEM_V0_PARTS = regex.compile(
    r"model weights take (?P<weights>[\d.]+) ?GiB; non_torch_memory takes (?P<non_torch>[\d.]+) ?GiB; "
    r"PyTorch activation peak memory takes (?P<peak>[\d.]+) ?GiB; the rest of the memory reserved for KV Cache "
    r"is (?P<kv>[\d.]+) ?GiB")
_MEM_FREE = regex.compile(
    r"Free memory on device \((?P<free>[\d.]+)/(?P<total>[\d.]+) GiB\) on startup\. Desired GPU memory utilization "
    r"is \((?P<util>[\d.]+), (?P<desired>[\d.]+) GiB\)\. Actual usage is (?P<weights>[\d.]+) GiB for weight, "
    r"(?P<peak>[\d.]+) GiB for peak activation, (?P<non_torch>[\d.]+) GiB for non-torch memory, and "
    r"(?P<graph>[\d.]+) GiB for CUDAGraph memory")


@family("memory_profile", ["Total non KV cache memory", "total_gpu_memory (", "model weights take ",
                           "Free memory on device ("], [
    Sample("Memory profiling takes 5.12 seconds. Total non KV cache memory: 33.1GiB; torch peak memory increase: "
           "2.04GiB; non-torch forward increase memory: 0.5GiB; weights memory: 30.52GiB.",
           [("memory_profile", {"non_kv_gib": 33.1, "activation_peak_gib": 2.04, "non_torch_gib": 0.5,
                                "weights_gib": 30.52})]),
    Sample("the current vLLM instance can use total_gpu_memory (79.15GiB) x gpu_memory_utilization (0.90) = 71.24GiB",
           [("memory_profile", {"total_gib": 79.15, "utilization": 0.9})]),
    Sample("model weights take 14.99GiB; non_torch_memory takes 0.13GiB; PyTorch activation peak memory takes "
           "1.26GiB; the rest of the memory reserved for KV Cache is 54.86GiB.",
           [("memory_profile", {"weights_gib": 14.99, "kv_gib": 54.86}), ("kv_memory", {"gib": 54.86})]),
    Sample("Free memory on device (178.5/179.1 GiB) on startup. Desired GPU memory utilization is (0.9, 161.2 GiB). "
           "Actual usage is 30.5 GiB for weight, 2.0 GiB for peak activation, 0.6 GiB for non-torch memory, and 1.4 "
           "GiB for CUDAGraph memory. Replace gpu_memory_utilization config with --kv-cache-memory=1 to fit",
           [("memory_profile", {"total_gib": 179.1, "utilization": 0.9, "cudagraph_gib": 1.4})]),
])
def parse_memory_profile(msg: str) -> Parsed:
    m = _MEM_V1.search(msg)
    if m:
        return [("memory_profile", {"non_kv_gib": float(m["non_kv"]), "activation_peak_gib": float(m["peak"]),
                                    "non_torch_gib": float(m["non_torch"]), "weights_gib": float(m["weights"])})]
    m = _MEM_FREE.search(msg)
    if m:
        return [("memory_profile", {"total_gib": float(m["total"]), "utilization": float(m["util"]),
                                    "weights_gib": float(m["weights"]), "activation_peak_gib": float(m["peak"]),
                                    "non_torch_gib": float(m["non_torch"]), "cudagraph_gib": float(m["graph"])})]
    out: Parsed = []
    m = _MEM_V0_TOTAL.search(msg)
    if m:
        out.append(("memory_profile", {"total_gib": float(m["total"]), "utilization": float(m["util"])}))
    m = _MEM_V0_PARTS.search(msg)
    if m:
        out.append(("memory_profile", {"weights_gib": float(m["weights"]), "non_torch_gib": float(m["non_torch"]),
                                       "activation_peak_gib": float(m["peak"]), "kv_gib": float(m["kv"])}))
        out.append(("kv_memory", {"gib": float(m["kv"])}))
    return out


_KV_SIZE = regex.compile(r"(?P<device>\b\w+) KV cache size: (?P<tokens>\d[\d,]*) tokens(?:$|,)")
_MAX_CONC = regex.compile(
    r"Maximum concurrency for (?P<tokens>\d[\d,]*) tokens per request: (?P<conc>\d[\d,]*(?:\.\d+)?)x$")


@family("kv_cache_size", ["KV cache size: ", "Maximum concurrency for "], [
    Sample("GPU KV cache size: 506,816 tokens", [("kv_cache_size", {"tokens": 506816, "device": "GPU"})]),
    Sample("Maximum concurrency for 32,768 tokens per request: 15.47x",
           [("max_concurrency", {"tokens_per_request": 32768, "concurrency": 15.47})]),
    Sample("CPU KV cache size: 2,097,152 tokens, Maximum concurrency for 1,536 tokens per request: 1365.33x",
           [("kv_cache_size", {"tokens": 2097152, "device": "CPU"}),
            ("max_concurrency", {"tokens_per_request": 1536, "concurrency": 1365.33})]),
    Sample("Maximum concurrency for 16,384 tokens per request: 25.", []),  # cut by a terminal: no value
])
def parse_kv_cache_size(msg: str) -> Parsed:
    out: Parsed = []
    m = _KV_SIZE.search(msg)
    if m:
        out.append(("kv_cache_size", {"tokens": _int(m["tokens"]), "device": m["device"]}))
    m = _MAX_CONC.search(msg)
    if m:
        out.append(("max_concurrency", {"tokens_per_request": _int(m["tokens"]),
                                        "concurrency": float(m["conc"].replace(",", ""))}))
    return out


_CACHE_CONFIG = regex.compile(r"cache_config_info with initialization after num_gpu_blocks is: (?P<n>\d+)$")
_BLOCKS_OVERRIDE = regex.compile(r"Overriding num_gpu_blocks=(?P<memory>\d+) with num_gpu_blocks_override=(?P<n>\d+)")


@family("cache_config", ["num_gpu_blocks is: ", "Overriding num_gpu_blocks="], [
    Sample("Engine 000: vllm cache_config_info with initialization after num_gpu_blocks is: 25809",
           [("cache_config", {"num_gpu_blocks": 25809})]),
    # --num-gpu-blocks-override: the blocks vLLM allocates, and those its KV memory would have held
    Sample("Overriding num_gpu_blocks=16384 with num_gpu_blocks_override=40",
           [("cache_config", {"num_gpu_blocks": 40, "override": 40, "memory_blocks": 16384})]),
])
def parse_cache_config(msg: str) -> Parsed:
    m = _CACHE_CONFIG.search(msg)
    if m:
        return [("cache_config", {"num_gpu_blocks": int(m["n"])})]
    m = _BLOCKS_OVERRIDE.search(msg)
    if m:
        n = int(m["n"])
        return [("cache_config", {"num_gpu_blocks": n, "override": n, "memory_blocks": int(m["memory"])})]
    return []


_GRAPH_ESTIMATE = regex.compile(r"Estimated CUDA graph memory: (?P<est>[\d.]+) GiB total")
_GRAPH_DONE = regex.compile(r"Graph capturing finished in (?P<sec>\d+) secs, took (?P<gib>-?[\d.]+) GiB$")
_GRAPH_POOL = regex.compile(r"CUDA graph pool memory: (?P<act>[\d.]+) GiB \(actual\), (?P<est>[\d.]+) GiB \(estimated\)")


@family("cudagraph_memory", ["Estimated CUDA graph memory", "Graph capturing finished", "CUDA graph pool memory"], [
    Sample("Estimated CUDA graph memory: 1.43 GiB total", [("cudagraph_memory", {"estimated_gib": 1.43})]),
    Sample("Graph capturing finished in 23 secs, took 1.38 GiB", [("cudagraph_memory", {"actual_gib": 1.38, "seconds": 23.0})]),
    Sample("CUDA graph pool memory: 1.38 GiB (actual), 1.43 GiB (estimated), difference: 0.05 GiB (3.6%).",
           [("cudagraph_memory", {"actual_gib": 1.38, "estimated_gib": 1.43})]),
    Sample("Graph capturing finished in 11", []),
])
def parse_cudagraph_memory(msg: str) -> Parsed:
    m = _GRAPH_POOL.search(msg)
    if m:
        return [("cudagraph_memory", {"actual_gib": float(m["act"]), "estimated_gib": float(m["est"])})]
    m = _GRAPH_ESTIMATE.search(msg)
    if m:
        return [("cudagraph_memory", {"estimated_gib": float(m["est"])})]
    m = _GRAPH_DONE.search(msg)
    if m:
        return [("cudagraph_memory", {"actual_gib": float(m["gib"]), "seconds": float(m["sec"])})]
    return []


_INIT = regex.compile(r"init engine \(profile, create kv cache, warmup model\) took (?P<sec>[\d.]+) ?(?:s|seconds)"
                      r"(?: \(compilation: (?P<comp>[\d.]+) ?s)?")


@family("init_time", ["init engine (profile"], [
    Sample("init engine (profile, create kv cache, warmup model) took 52.17 s (compilation: 18.40 s)",
           [("init_time", {"seconds": 52.17, "compilation_seconds": 18.4})]),
    Sample("init engine (profile, create kv cache, warmup model) took 52.17 seconds", [("init_time", {"seconds": 52.17})]),
])
def parse_init_time(msg: str) -> Parsed:
    m = _INIT.search(msg)
    if not m:
        return []
    values: Values = {"seconds": float(m["sec"])}
    if m["comp"]:
        values["compilation_seconds"] = float(m["comp"])
    return [("init_time", values)]


_COMPILE_TOTAL = regex.compile(r"torch\.compile takes (?P<sec>[\d.]+) ?s in total")


@family("compile_time", ["torch.compile takes "], [
    Sample("torch.compile takes 18.40 s in total", [("compile_time", {"seconds": 18.4})]),
])
def parse_compile_time(msg: str) -> Parsed:
    m = _COMPILE_TOTAL.search(msg)
    return [("compile_time", {"seconds": float(m["sec"])})] if m else []


_ATTN_BLOCK = regex.compile(r"Setting attention block size to (?P<n>\d+) tokens")
_MAMBA_PAD = regex.compile(r"Padding mamba page size by (?P<pct>[\d.]+)%")


@family("block_size", ["Setting attention block size", "Padding mamba page size"], [
    Sample("Setting attention block size to 1072 tokens to ensure that attention page size is >= mamba page size.",
           [("block_size", {"attention_block_tokens": 1072})]),
    Sample("Padding mamba page size by 1.56% to ensure that mamba page size and attention page size are exactly equal.",
           [("block_size", {"mamba_padding_pct": 1.56})]),
])
def parse_block_size(msg: str) -> Parsed:
    m = _ATTN_BLOCK.search(msg)
    if m:
        return [("block_size", {"attention_block_tokens": int(m["n"])})]
    m = _MAMBA_PAD.search(msg)
    return [("block_size", {"mamba_padding_pct": float(m["pct"])})] if m else []


_SSM_DTYPE = regex.compile(r"Reset SSM cache type to (?P<dtype>\w+) for accelerated GDN mamba backend '(?P<backend>[^']*)'")


@family("ssm_dtype", ["Reset SSM cache type"], [
    Sample("Reset SSM cache type to float32 for accelerated GDN mamba backend 'qwen3_next'.",
           [("ssm_dtype", {"dtype": "float32", "backend": "qwen3_next"})]),
])
def parse_ssm_dtype(msg: str) -> Parsed:
    m = _SSM_DTYPE.search(msg)
    return [("ssm_dtype", {"dtype": m["dtype"], "backend": m["backend"]})] if m else []


_SSM_LAYOUT = regex.compile(r"Setting SSM conv state layout to (?P<layout>\w+)")


@family("ssm_conv_layout", ["SSM conv state layout"], [
    Sample("VLLM_SSM_CONV_STATE_LAYOUT env detected. Setting SSM conv state layout to SD.",
           [("ssm_conv_layout", {"layout": "SD"})]),
])
def parse_ssm_conv_layout(msg: str) -> Parsed:
    m = _SSM_LAYOUT.search(msg)
    return [("ssm_conv_layout", {"layout": m["layout"]})] if m else []


_ROLE_HINT = regex.compile(r"\bfor (?P<role>prefill|decode) worker\b")


@family("role_hint", ["for decode worker", "for prefill worker"], [
    Sample("Skipping KV event publisher setup for decode worker", [("role_hint", {"role": "decode"})]),
])
def parse_role_hint(msg: str) -> Parsed:
    m = _ROLE_HINT.search(msg)
    return [("role_hint", {"role": m["role"], "message": msg.strip()})] if m else []


# --- problems ---------------------------------------------------------------------------------

_PREEMPT = regex.compile(r"Sequence group (?P<req>\S+) is preempted by PreemptionMode\.(?P<mode>\w+) mode"
                         r".*?total_num_cumulative_preemption=(?P<n>\d+)")


@family("preemption", ["is preempted by "], [
    Sample("Sequence group cmpl-1a2b3c-0 is preempted by PreemptionMode.RECOMPUTE mode because there is not enough "
           "KV cache space. This can affect the end-to-end performance. Increase gpu_memory_utilization or "
           "tensor_parallel_size to provide more KV cache memory. total_num_cumulative_preemption=51",
           [("preemption", {"request_id": "cmpl-1a2b3c-0", "mode": "RECOMPUTE", "cumulative": 51})]),
])
def parse_preemption(msg: str) -> Parsed:
    m = _PREEMPT.search(msg)
    return [("preemption", {"request_id": m["req"], "mode": m["mode"], "cumulative": int(m["n"])})] if m else []


@family("stats_disabled", ["disabling stats logging"], [
    Sample("AsyncLLM created with api_server_count more than 1; disabling stats logging to avoid incomplete stats.",
           [("stats_disabled", {"reason": "api_server_count > 1"})]),
])
def parse_stats_disabled(msg: str) -> Parsed:
    if "api_server_count more than 1" in msg:
        return [("stats_disabled", {"reason": "api_server_count > 1"})]
    return [("stats_disabled", {"reason": msg.strip()})] if "disabling stats logging" in msg else []


# vLLM's own hint that a process it waits for is stuck (or busy compiling at start-up): the engine
# core, or a worker of a multi-process executor, found no free block in its shared-memory queue
# for N seconds (VLLM_RINGBUFFER_WARNING_INTERVAL, 60 by default), said again every N seconds.
_BROADCAST_WAIT = regex.compile(r"No available shared memory broadcast block found in (?P<s>\d+) second")


@family("broadcast_wait", ["No available shared memory broadcast block"], [
    Sample("No available shared memory broadcast block found in 60 seconds. This typically happens when some "
           "processes are hanging or doing some time-consuming work (e.g. compilation, weight/kv cache "
           "quantization).", [("broadcast_wait", {"seconds": 60})]),
])
def parse_broadcast_wait(msg: str) -> Parsed:
    m = _BROADCAST_WAIT.search(msg)
    return [("broadcast_wait", {"seconds": int(m["s"])})] if m else []


_NIXL_FAIL = regex.compile(r"NIXL transfer failure: (?P<type>[\w-]+)\.?(?P<detail>[^|]*?)\s*(?:\| Context: (?P<ctx>.*))?$")
_CTX_FIELD = regex.compile(r"'(?P<k>request_id|remote_host)': '(?P<v>[^']*)'")
_SKIP_POST = regex.compile(r"Skipping KV post-processing for failed request (?P<req>\S+)")


@family("nixl_failure", ["NIXL transfer failure", "Skipping KV post-processing"], [
    Sample("NIXL transfer failure: transfer_failed | Context: {'failure_type': 'transfer_failed', 'request_id': "
           "'cmpl-6a1f2c-0', 'engine_id': '8e2c', 'remote_host': '10.0.0.12', 'remote_port': 5600}",
           [("nixl_failure", {"failure_type": "transfer_failed", "request_id": "cmpl-6a1f2c-0",
                              "remote_host": "10.0.0.12"})]),
    Sample("Skipping KV post-processing for failed request cmpl-9-0",
           [("nixl_failure", {"failure_type": "post_processing_skipped", "request_id": "cmpl-9-0"})]),
])
def parse_nixl_failure(msg: str) -> Parsed:
    m = _SKIP_POST.search(msg)
    if m:
        return [("nixl_failure", {"failure_type": "post_processing_skipped", "detail": "",
                                  "request_id": m["req"], "remote_host": None})]
    m = _NIXL_FAIL.search(msg)
    if not m:
        return []
    context: dict[str, Any] = {}
    if m["ctx"]:
        try:
            parsed = parse_repr(m["ctx"])
            context = parsed if isinstance(parsed, dict) else {}
        except ReprError:
            context = {f["k"]: f["v"] for f in _CTX_FIELD.finditer(m["ctx"])}
    return [("nixl_failure", {"failure_type": m["type"], "detail": m["detail"].strip(" ."),
                              "request_id": context.get("request_id"), "remote_host": context.get("remote_host")})]


_EXPIRED_OLD = regex.compile(r"Releasing expired KV blocks for request (?P<req>\S+) which were retrieved by "
                             r"(?P<n>\d+) decode worker\(s\) within (?P<t>\d+) seconds")
_EXPIRED_LEASE = regex.compile(r"Releasing expired KV blocks for request (?P<req>\S+) which were retrieved by "
                               r"(?P<n>\d+) remote worker\(s\) before lease expired")
_INVALID_BLOCKS = regex.compile(r"Potentially invalid KV blocks for unrecognized request (?P<req>\S+) were retrieved")


@family("kv_expired", ["Releasing expired KV blocks", "Potentially invalid KV blocks"], [
    Sample("Releasing expired KV blocks for request cmpl-6a1f2c-0 which were retrieved by 0 decode worker(s) within "
           "480 seconds.", [("kv_expired", {"request_id": "cmpl-6a1f2c-0", "retrieved_by": 0, "timeout_s": 480})]),
    Sample("Releasing expired KV blocks for request cmpl-6a1f2c-0 which were retrieved by 0 remote worker(s) before "
           "lease expired.", [("kv_expired", {"request_id": "cmpl-6a1f2c-0", "retrieved_by": 0})]),
    Sample("Potentially invalid KV blocks for unrecognized request cmpl-7 were retrieved by a decode worker. They may "
           "have expired.", [("kv_expired", {"request_id": "cmpl-7", "retrieved_by": None})]),
])
def parse_kv_expired(msg: str) -> Parsed:
    m = _EXPIRED_OLD.search(msg)
    if m:
        return [("kv_expired", {"request_id": m["req"], "retrieved_by": int(m["n"]), "timeout_s": int(m["t"])})]
    m = _EXPIRED_LEASE.search(msg)
    if m:
        return [("kv_expired", {"request_id": m["req"], "retrieved_by": int(m["n"])})]
    m = _INVALID_BLOCKS.search(msg)
    return [("kv_expired", {"request_id": m["req"], "retrieved_by": None})] if m else []


_KV_RECOVERED = regex.compile(r"Recovered from KV load failure: (?P<n>\d+) request\(s\) rescheduled \((?P<t>\d+) tokens affected\)")
_KV_FAILING = regex.compile(r"Failing (?P<n>\d+) request\(s\) due to KV load failure \(failure_policy=\w+, (?P<t>\d+) tokens affected\)")


@family("kv_load_failure", ["KV load failure"], [
    Sample("Recovered from KV load failure: 1 request(s) rescheduled (3968 tokens affected).",
           [("kv_load_failure", {"requests": 1, "tokens": 3968, "recovered": True})]),
    Sample("Failing 2 request(s) due to KV load failure (failure_policy=fail, 100 tokens affected). Request IDs: {'a'}",
           [("kv_load_failure", {"requests": 2, "tokens": 100, "recovered": False})]),
])
def parse_kv_load_failure(msg: str) -> Parsed:
    for pattern, recovered in ((_KV_RECOVERED, True), (_KV_FAILING, False)):
        m = pattern.search(msg)
        if m:
            return [("kv_load_failure", {"requests": int(m["n"]), "tokens": int(m["t"]), "recovered": recovered})]
    return []


_KV_TOO_SMALL = regex.compile(
    r"max seq len \((?P<len>\d+)\), \((?P<need>[\d.]+) GiB KV cache is needed, which is larger than the available KV "
    r"cache memory \((?P<avail>[\d.]+) GiB\)\.(?: Based on the available memory, the estimated maximum model length "
    r"is (?P<est>\d+)\.)?")


@family("kv_cache_error", ["No available memory for the cache blocks", "KV cache is needed"], [
    Sample("ValueError: To serve at least one request with the model's max seq len (131072), (16.0 GiB KV cache is "
           "needed, which is larger than the available KV cache memory (9.5 GiB). Based on the available memory, the "
           "estimated maximum model length is 77824. Try increasing `gpu_memory_utilization`",
           [("kv_cache_error", {"needed_gib": 16.0, "available_gib": 9.5, "estimated_max_len": 77824})]),
    Sample("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
           "initializing the engine.", [("kv_cache_error", {"needed_gib": None})]),
])
def parse_kv_cache_error(msg: str) -> Parsed:
    m = _KV_TOO_SMALL.search(msg)
    values: Values = {"message": msg.strip(), "needed_gib": None, "available_gib": None, "estimated_max_len": None}
    if m:
        values.update(needed_gib=float(m["need"]), available_gib=float(m["avail"]),
                      estimated_max_len=int(m["est"]) if m["est"] else None)
    elif "No available memory for the cache blocks" not in msg:
        return []
    return [("kv_cache_error", values)]


_OOM_TRIED = regex.compile(r"Tried to allocate (?P<n>[\d.]+) (?P<unit>[KMGT]i?B)")
_UNIT_GIB = {"KiB": 1 / 1024**2, "KB": 1 / 1024**2, "MiB": 1 / 1024, "MB": 1 / 1024, "GiB": 1.0, "GB": 1.0,
             "TiB": 1024.0, "TB": 1024.0}


@family("oom", ["OutOfMemoryError", "CUDA out of memory", "Error in memory profiling"], [
    Sample("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of "
           "139.81 GiB of which 1.12 GiB is free.", [("oom", {"tried_gib": 2.0})]),
    Sample("AssertionError: Error in memory profiling. Initial free memory 10.0 GiB, current free memory 12.0 GiB.",
           [("oom", {"tried_gib": None})]),
])
def parse_oom(msg: str) -> Parsed:
    m = _OOM_TRIED.search(msg)
    tried = float(m["n"]) * _UNIT_GIB[m["unit"]] if m else None
    return [("oom", {"message": msg.strip(), "tried_gib": tried})]


_ENGINE_DEAD = [
    ("engine_dead_error", "EngineDeadError"),
    ("fatal_error", "EngineCore encountered a fatal error"),
    ("failed_to_start", "EngineCore failed to start"),
    ("init_failed", "Engine core initialization failed"),
    ("worker_died", "died unexpectedly"),
    ("output_handler_failed", "AsyncLLM output_handler failed"),
]


@family("engine_dead", [needle for _, needle in _ENGINE_DEAD], [
    Sample("vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for "
           "the root cause.", [("engine_dead", {"reason": "engine_dead_error"})]),
    Sample("EngineCore encountered a fatal error.", [("engine_dead", {"reason": "fatal_error"})]),
    Sample("    raise EngineDeadError()", []),
    Sample("Worker proc VllmWorker-3 died unexpectedly, shutting down executor.", [("engine_dead", {"reason": "worker_died"})]),
    Sample("RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): "
           "{'EngineCore_DP0': 1}", [("engine_dead", {"reason": "init_failed"})]),
])
def parse_engine_dead(msg: str) -> Parsed:
    for reason, needle in _ENGINE_DEAD:
        if needle in msg:
            if reason == "worker_died" and not regex.search(r"(?:Worker proc|Engine core process) \S+ died", msg):
                continue
            if msg.lstrip().startswith("raise "):  # a traceback's source line, not a death of its own
                return []
            return [("engine_dead", {"reason": reason, "message": msg.strip()})]
    return []


# A stop somebody started: a signal reached the server, or it began to shut down. Whether an
# engine death that follows is a crash depends on which came first (the rules' ``before``):
# vLLM tears down the same way after a crash, so ``shutdown`` lines alone say nothing.
_SIGNALLED = regex.compile(r"trigger received signal=(?P<signal>SIG[A-Z]+)")


def _stop_requested(msg: str) -> Values | None:
    if msg == "[shutdown] API server: shutdown triggered":  # vLLM's SIGINT/SIGTERM handler
        return {"how": "api_server_signal"}
    m = _SIGNALLED.search(msg)
    if m:
        return {"how": m["signal"]}
    return None


@family("shutdown", ["[shutdown] "], [
    Sample("[shutdown] API server: shutdown triggered", [("shutdown", {"message": "API server: shutdown triggered"}),
                                                        ("stop_requested", {"how": "api_server_signal"})]),
    Sample("[shutdown] EngineCore: trigger received signal=SIGTERM",
           [("shutdown", {"message": "EngineCore: trigger received signal=SIGTERM"}),
            ("stop_requested", {"how": "SIGTERM"})]),
    Sample("[shutdown] Process manager: send sigterm to process EngineCore",
           [("shutdown", {"message": "Process manager: send sigterm to process EngineCore"})]),
])
def parse_shutdown(msg: str) -> Parsed:
    if not msg.startswith("[shutdown] "):
        return []
    out: Parsed = [("shutdown", {"message": msg[len("[shutdown] "):].strip()})]
    stop = _stop_requested(msg)
    return out + [("stop_requested", stop)] if stop else out


@family("stop_requested", ["Shutting down", "Received KeyboardInterrupt"], [
    Sample("Shutting down", [("stop_requested", {"how": "http_server"})]),  # uvicorn, on a signal or a dead engine
    Sample("Shutting down FastAPI HTTP server.", [("stop_requested", {"how": "http_server"})]),  # vLLM <= 0.1x
    Sample("Received KeyboardInterrupt, shutting down API servers...", [("stop_requested", {"how": "SIGINT"})]),
])
def parse_stop_requested(msg: str) -> Parsed:
    text = msg.strip()
    if text in ("Shutting down", "Shutting down FastAPI HTTP server."):
        return [("stop_requested", {"how": "http_server"})]
    if text.startswith("Received KeyboardInterrupt"):
        return [("stop_requested", {"how": "SIGINT"})]
    return []


# --- Dynamo 1.x processes: what a frontend and a dynamo.vllm worker say of themselves -------------
# Read off real Dynamo 1.6.1 runs (tests/data/real/dynamo): a frontend announces its HTTP service;
# a worker reads its config, starts its engine, then registers what it serves: the OpenAI-facing
# generate endpoint ("chat,completions": an aggregated or a decode worker) or "prefill". Dynamo
# calls both serving kinds "decode worker" in its own logs, so that word says nothing of the role.

_HTTP_SERVICE = regex.compile(r'Starting HTTP\(S\) service\b.*?\baddress="?(?P<address>[^"\s]*?:(?P<port>\d+))"?(?:\s|$)')
_WORKER_READY = regex.compile(r"^worker for (?P<model>\S+) has been initialized")
_WORKER_SERVES = regex.compile(r"configuration metadata from vLLM engine for (?P<serves>[\w,|]+)")


@family("dynamo_process", ['Starting HTTP(S) service', "has been initialized", "Using kv_events_config for publishing",
                           "configuration metadata from vLLM engine for ", "dynamo.nixl_connect: "], [
    # printed by every dynamo.vllm worker as it imports, at WARN: still there at DYN_LOG=warn
    Sample("dynamo.nixl_connect: Failed to load CuPy for GPU acceleration, utilizing numpy to provide CPU based "
           "operations.", [("dynamo_process", {"process": "worker", "stage": "import"})]),
    Sample('Starting HTTP(S) service protocol="HTTP" address="127.0.0.1:8700"',
           [("dynamo_process", {"process": "frontend", "stage": "start", "address": "127.0.0.1:8700", "port": 8700})]),
    Sample("worker for tiny-qwen3 has been initialized",
           [("dynamo_process", {"process": "worker", "stage": "ready", "model": "tiny-qwen3"})]),
    Sample("Using kv_events_config for publishing vLLM kv events over zmq: None (use_kv_events=False)",
           [("dynamo_process", {"process": "worker", "stage": "start"})]),
    Sample("Getting engine runtime configuration metadata from vLLM engine for prefill...",
           [("dynamo_process", {"process": "worker", "stage": "register", "serves": "prefill"})]),
    Sample("Getting engine runtime configuration metadata from vLLM engine for chat,completions...",
           [("dynamo_process", {"process": "worker", "stage": "register", "serves": "chat,completions"})]),
])
def parse_dynamo_process(msg: str) -> Parsed:
    m = _HTTP_SERVICE.search(msg)
    if m:
        return [("dynamo_process", {"process": "frontend", "stage": "start", "address": m["address"],
                                    "port": int(m["port"])})]
    m = _WORKER_READY.search(msg.strip())
    if m:
        return [("dynamo_process", {"process": "worker", "stage": "ready", "model": m["model"]})]
    if "Using kv_events_config for publishing" in msg:
        return [("dynamo_process", {"process": "worker", "stage": "start"})]
    if msg.lstrip().startswith("dynamo.nixl_connect: "):
        return [("dynamo_process", {"process": "worker", "stage": "import"})]
    m = _WORKER_SERVES.search(msg)
    if m:
        return [("dynamo_process", {"process": "worker", "stage": "register", "serves": m["serves"]})]
    return []


_CONNECTOR = regex.compile(r"Creating v1 connector with name: (?P<name>\w+)(?: and engine_id: (?P<engine_id>\S+))?")
_CONNECTOR_ROLE = regex.compile(r"Using kv_role='(?P<role>\w+)' with (?P<name>\w+)")


@family("kv_connector", ["Creating v1 connector with name: ", "Using kv_role="], [
    Sample("Creating v1 connector with name: NixlPullConnector and engine_id: 6819c247-5706-4012-8314-7ac9eaa69855",
           [("kv_connector", {"name": "NixlPullConnector", "engine_id": "6819c247-5706-4012-8314-7ac9eaa69855"})]),
    Sample("Using kv_role='kv_both' with NixlConnector is deprecated and will be removed in a future release.",
           [("kv_connector", {"name": "NixlConnector", "kv_role": "kv_both"})]),
])
def parse_kv_connector(msg: str) -> Parsed:
    m = _CONNECTOR.search(msg)
    if m:
        return [("kv_connector", {"name": m["name"], "engine_id": m["engine_id"]})]
    m = _CONNECTOR_ROLE.search(msg)
    if m:
        return [("kv_connector", {"name": m["name"], "kv_role": m["role"]})]
    return []


# The frontend's discovery: a worker set (one namespace/component/endpoint and its mode, the last
# element of the namespace list) joins or leaves a model. A set leaving while its workers did not
# stop on purpose is how a dead worker shows once its discovery lease expires.
_WORKER_SET = regex.compile(r"^(?P<action>Adding|Removed) worker set (?:to|from) model model=(?P<model>\S+) "
                            r"namespace=\[(?P<ns>[^\]]*)\](?:.*?remaining_sets=(?P<remaining>\d+))?")


@family("worker_set", ["worker set to model", "worker set from model"], [
    Sample('Adding worker set to model model=tiny-qwen3 namespace=["dynamo","backend","generate","chat|completions",'
           '"aggregated"]', [("worker_set", {"action": "added", "model": "tiny-qwen3", "mode": "aggregated",
                                              "component": "backend", "remaining": None})]),
    Sample('Removed worker set from model model=tiny-qwen3 namespace=["dynamo","prefill","generate","prefill",'
           '"prefill"] remaining_sets=1', [("worker_set", {"action": "removed", "mode": "prefill", "remaining": 1})]),
])
def parse_worker_set(msg: str) -> Parsed:
    m = _WORKER_SET.search(msg.strip())
    if not m:
        return []
    parts = [p.strip().strip('"') for p in m["ns"].split(",")]
    return [("worker_set", {"action": "added" if m["action"] == "Adding" else "removed", "model": m["model"],
                            "mode": parts[-1] if parts else None, "component": parts[1] if len(parts) > 1 else None,
                            "remaining": int(m["remaining"]) if m["remaining"] else None})]


# A frontend losing a backend mid-request: the stream to the worker broke (its process died or
# the connection dropped), and, once migration could not move the request elsewhere, the request
# is lost. Both name what happened; the second names the worker's instance id.
_ROUTE_FAILED = regex.compile(r'route request failed request\.outcome="?(?P<outcome>[\w.]+)"?'
                              r'(?: error\.type="?(?P<etype>[\w.]+)"?)?')
_REMOTE_PREFILL = regex.compile(r"Remote prefill failed(?:, failing request)?(?: error=(?P<error>.*?))?(?= method=| \w+=|$)")
_MIGRATION_EXHAUSTED = regex.compile(r"migration retries exhausted\b(?=.*?migration\.reason=\"?(?P<reason>[\w.]+))?"
                                     r"(?=.*?migration\.from_worker_id=(?P<worker>\d+))?")


@family("backend_error", ["route request failed", "migration retries exhausted", "Remote prefill failed"], [
    Sample('request_span: route request failed request.outcome="worker_disconnected" error.type="disconnected" '
           'method=POST uri=/v1/completions', [("backend_error", {"reason": "worker_disconnected",
                                                                 "error_type": "disconnected", "worker_id": None})]),
    Sample('request_span: migration retries exhausted request.attempt=0 migration.is_retry=true '
           'migration.reason="disconnected" migration.from_worker_id=9243723466659353727 method=POST',
           [("backend_error", {"reason": "migration_exhausted", "error_type": "disconnected",
                               "worker_id": "9243723466659353727", "target": None})]),
    Sample("dynamo_llm::kv_router::prefill_router: Remote prefill failed, failing request error=Unavailable: No "
           "workers available for endpoint dynamo/prefill/generate method=POST uri=/v1/completions",
           [("backend_error", {"reason": "remote_prefill_failed", "target": "prefill",
                               "error_type": "Unavailable: No workers available for endpoint dynamo/prefill/generate"})]),
])
def parse_backend_error(msg: str) -> Parsed:
    """``target``: the role the failed backend has when the line says so (the prefill router's)."""
    m = _ROUTE_FAILED.search(msg)
    if m:
        return [("backend_error", {"reason": m["outcome"], "error_type": m["etype"], "worker_id": None,
                                   "target": None})]
    m = _MIGRATION_EXHAUSTED.search(msg)
    if m:
        return [("backend_error", {"reason": "migration_exhausted", "error_type": m["reason"],
                                   "worker_id": m["worker"], "target": None})]
    m = _REMOTE_PREFILL.search(msg)
    if m:
        return [("backend_error", {"reason": "remote_prefill_failed", "error_type": m["error"], "worker_id": None,
                                   "target": "prefill"})]
    return []


# Every HTTP response of a Dynamo frontend (INFO; a failed one at ERROR, also with DYN_LOG=error).
# Inference requests (POST /v1/...) are what a benchmark's failed-request count is made of; probes,
# scrapes and tokenizer calls (benchmark clients POST /tokenize, which Dynamo answers 404) are not.
_RESPONSE = regex.compile(r"\bhttp response sent status=(?P<status>\d{3})(?:.*?\blatency_ms=(?P<latency>[\d.]+))?"
                          r"(?:.*?\bmethod=(?P<method>[A-Z]+))?(?:.*?\buri=(?P<uri>\S+))?")


def is_inference(method: str | None, path: str | None) -> bool:
    return method == "POST" and bool(path) and path.startswith("/v1/") and "tokenize" not in path


@family("frontend_response", ["http response sent "], [
    Sample("http response sent status=200 latency_ms=4 method=POST uri=/v1/completions version=HTTP/1.1 "
           "request_id=f2d68fb0", [("frontend_response", {"status": 200, "latency_ms": 4.0, "method": "POST",
                                                          "path": "/v1/completions", "inference": True})]),
    Sample("http response sent status=503 latency_ms=10768 method=POST uri=/v1/completions version=HTTP/1.1",
           [("frontend_response", {"status": 503, "inference": True}),
            ("request_failed", {"status": 503, "path": "/v1/completions", "latency_ms": 10768.0})]),
    Sample("http response sent status=404 latency_ms=0 method=POST uri=/tokenize version=HTTP/1.1",
           [("frontend_response", {"status": 404, "inference": False})]),
    Sample("http response sent status=200 latency_ms=0 method=GET uri=/metrics version=HTTP/1.1",
           [("frontend_response", {"status": 200, "inference": False})]),
])
def parse_frontend_response(msg: str) -> Parsed:
    m = _RESPONSE.search(msg)
    if not m:
        return []
    status = int(m["status"])
    latency = _num(m["latency"]) if m["latency"] else None
    inference = is_inference(m["method"], m["uri"])
    out: Parsed = [("frontend_response", {"status": status, "latency_ms": latency, "method": m["method"],
                                          "path": m["uri"], "inference": inference})]
    if inference and status >= 400:
        out.append(("request_failed", {"status": status, "path": m["uri"], "latency_ms": latency}))
    return out


# A worker's status server (DYN_SYSTEM_PORT: /health, /live, /metrics) that could not start: Dynamo
# 1.6 logs it and serves on without it, so probes fail and its metrics cannot be scraped.
_STATUS_SERVER = regex.compile(r"System status server startup failed(?: error=(?P<error>.*))?")


@family("status_server_failed", ["System status server startup failed"], [
    Sample("System status server startup failed error=Failed to bind to address: Address already in use (os error 98)",
           [("status_server_failed", {"error": "Failed to bind to address: Address already in use (os error 98)"})]),
])
def parse_status_server_failed(msg: str) -> Parsed:
    m = _STATUS_SERVER.search(msg)
    return [("status_server_failed", {"error": (m["error"] or "").strip() or None})] if m else []


# The request plane seen from a worker: the connection a frontend (or a prefill router) held to it
# was reset. A process on the other end that died does this; a request cancelled by its client
# does not (it is cancelled over the stream).
_PLANE_ERROR = regex.compile(r"(?:Failed to read TCP request|TCP connection error): (?P<error>.*)")


@family("request_plane_error", ["Failed to read TCP request", "TCP connection error: "], [
    Sample("Failed to read TCP request: Connection reset by peer (os error 104)",
           [("request_plane_error", {"error": "Connection reset by peer (os error 104)"})]),
    Sample("TCP connection error: Broken pipe (os error 32)", [("request_plane_error", {"error": "Broken pipe (os error 32)"})]),
])
def parse_request_plane_error(msg: str) -> Parsed:
    m = _PLANE_ERROR.search(msg)
    return [("request_plane_error", {"error": m["error"].strip()})] if m else []


# A server saying it is ready to serve: uvicorn's (vLLM's OpenAI server) and a dynamo.vllm worker's.
@family("server_ready", ["Application startup complete", "has been initialized"], [
    Sample("Application startup complete.", [("server_ready", {"server": "vllm"})]),
    Sample("worker for tiny-qwen3 has been initialized", [("server_ready", {"server": "dynamo.vllm"})]),
])
def parse_server_ready(msg: str) -> Parsed:
    text = msg.strip()
    if text.startswith("Application startup complete"):
        return [("server_ready", {"server": "vllm"})]
    if _WORKER_READY.search(text):
        return [("server_ready", {"server": "dynamo.vllm"})]
    return []


# A Dynamo stop that somebody started: the graceful shutdown a worker runs on SIGINT/SIGTERM
# (unregister from discovery, grace period, stop), and a frontend's HTTP server asked to stop.
@family("dynamo_stop", ["Received shutdown signal", "HTTP server shutdown requested"], [
    Sample("Received shutdown signal; unregistering endpoints from discovery",
           [("stop_requested", {"how": "dynamo_graceful_shutdown"})]),
    Sample("HTTP server shutdown requested", [("stop_requested", {"how": "frontend_shutdown"})]),
])
def parse_dynamo_stop(msg: str) -> Parsed:
    text = msg.strip()
    if text.startswith("Received shutdown signal"):
        return [("stop_requested", {"how": "dynamo_graceful_shutdown"})]
    if text.startswith("HTTP server shutdown requested"):
        return [("stop_requested", {"how": "frontend_shutdown"})]
    return []


# --- HTTP and Dynamo frontend/router ----------------------------------------------------------

_ACCESS = regex.compile(r'(?P<client>[\w.:\[\]-]+?):(?P<port>\d+) - "(?P<method>[A-Z]+) (?P<path>\S+) HTTP/[\d.]+" (?P<status>\d{3})\b')


@family("http_access", ['HTTP/1.', 'HTTP/2'], [
    Sample('127.0.0.1:45484 - "POST /v1/completions HTTP/1.1" 200 OK',
           [("http_access", {"client": "127.0.0.1", "method": "POST", "path": "/v1/completions", "status": 200})]),
])
def parse_http_access(msg: str) -> Parsed:
    m = _ACCESS.search(msg)
    if not m:
        return []
    return [("http_access", {"client": m["client"], "method": m["method"], "path": m["path"], "status": int(m["status"])})]


_SELECTED = regex.compile(
    r"Selected (?:pinned )?worker: worker_type=(?P<type>\w+), worker_id=(?P<id>\w+),? dp_rank=(?:Some\()?(?P<dp>\d+|None)\)?"
    r"(?:, logit: (?P<logit>-?[\d.]+))?(?:, cached blocks: (?P<cached>\d+))?(?:, tree size: (?P<tree>\d+))?"
    r"(?:, total blocks: (?P<total>\d+))?")


@family("worker_selected", ["Selected worker: ", "Selected pinned worker: "], [
    Sample("Selected worker: worker_type=prefill, worker_id=7587889301234 dp_rank=0, logit: 1.250, cached blocks: 12, "
           "tree size: 3401, total blocks: 50912",
           [("worker_selected", {"worker_type": "prefill", "worker_id": "7587889301234", "dp_rank": 0, "logit": 1.25,
                                 "cached_blocks": 12, "tree_size": 3401, "total_blocks": 50912})]),
    Sample("Selected worker: worker_type=decode, worker_id=7587889305678 dp_rank=3, logit: 0.842",
           [("worker_selected", {"worker_type": "decode", "dp_rank": 3, "logit": 0.842, "cached_blocks": None})]),
])
def parse_worker_selected(msg: str) -> Parsed:
    m = _SELECTED.search(msg)
    if not m:
        return []
    return [("worker_selected", {
        "worker_type": m["type"], "worker_id": m["id"], "dp_rank": None if m["dp"] == "None" else int(m["dp"]),
        "logit": float(m["logit"]) if m["logit"] else None,
        "cached_blocks": int(m["cached"]) if m["cached"] else None,
        "tree_size": int(m["tree"]) if m["tree"] else None,
        "total_blocks": int(m["total"]) if m["total"] else None,
    })]


_FIELD = regex.compile(r'(?P<k>\w+)=(?:"(?P<q>[^"]*)"|(?P<v>[^\s,]+))')
_MODEL_EVENT = regex.compile(r"^(?P<action>added|removed) model\b")


@family("model_registered", ["added model", "removed model"], [
    Sample('added model model_name="Qwen/Qwen3-32B" namespace="dynamo"',
           [("model_registered", {"action": "added", "model_name": "Qwen/Qwen3-32B", "namespace": "dynamo"})]),
])
def parse_model_registered(msg: str) -> Parsed:
    m = _MODEL_EVENT.match(msg)
    if not m:
        return []
    fields = {f["k"]: f["q"] if f["q"] is not None else f["v"] for f in _FIELD.finditer(msg)}
    return [("model_registered", {"action": m["action"], "model_name": fields.get("model_name"),
                                  "namespace": fields.get("namespace")})]


@family("request_completed", ["request completed"], [
    Sample("request completed status=200 latency_ms=1532", [("request_completed", {"status": "200", "latency_ms": 1532.0})]),
    Sample("metrics: request completed ttft_ms=35.5 request_id=\"abc\"", [("request_completed", {"ttft_ms": 35.5})]),
    Sample("dynamo_llm::http::service::metrics: request completed request_id=65695ff9 model=tiny-qwen3 "
           "endpoint=completions request_type=unary status=error error_type=unavailable error_detail=no backend "
           "worker available elapsed_ms=1076",
           [("request_completed", {"status": "error"}),
            ("request_error", {"error_type": "unavailable", "detail": "no backend worker available"})]),
])
def parse_request_completed(msg: str) -> Parsed:
    idx = msg.find("request completed")
    if idx < 0:
        return []
    fields = {f["k"]: f["q"] if f["q"] is not None else f["v"] for f in _FIELD.finditer(msg[idx:])}

    def number(key: str) -> float | None:
        return _num(fields[key]) if key in fields else None

    out: Parsed = [("request_completed", {"status": fields.get("status"), "latency_ms": number("latency_ms"),
                                          "ttft_ms": number("ttft_ms"), "fields": fields})]
    return out + request_error(fields, msg)


# Dynamo prints a detail unquoted, spaces and all: it runs to the next ``key=``.
_ERROR_DETAIL = regex.compile(r"\berror_detail=(?P<detail>.*?)(?= [\w.]+=|$)")


def request_error(fields: dict[str, str], msg: str) -> Parsed:
    """A Dynamo frontend's failed request, by its error type (``status=error error_type=...``)."""
    if fields.get("status") != "error":
        return []
    m = _ERROR_DETAIL.search(msg)
    return [("request_error", {"error_type": fields.get("error_type"),
                               "detail": m["detail"].strip() if m else fields.get("error_detail")})]
