"""``pdwatch capacity``: KV block size, KV per request and concurrency from config.json and the
GPU's memory, step by step as the Qwen3.8-2.4T article does it; next to vLLM's start-up lines
when LOGS are given, whose stated KV cache is then the capacity and the arithmetic its estimate."""

from __future__ import annotations

import argparse
import json
import sys

from pdwatch.commands import SUMMARIES
from pdwatch.capacity import Assessment, CapacityError, CapacityInputs, ConfigError, assess, load_model_config
from pdwatch.capacity.budget import GPU_PRESETS
from pdwatch.model.log_facts import facts_by_source
from pdwatch.capacity.render import render_text, to_json
from pdwatch.commands.common import add_time_arguments, check_year, time_zone
from pdwatch.errors import NothingToJudge, UsageError
from pdwatch.events.recognition import nothing_to_judge
from pdwatch.events.stream import EventStream
from pdwatch.sources import READ_FAILURES, SourceNotice, SourceSet

# A file with none of these is not a vLLM server's log (a proxy, a client): it gets no section.
_STARTUP_FACTS = {"version", "kv_capacity_tokens", "max_concurrency", "max_model_len", "kv_memory_gib", "hybrid",
                  "tensor_parallel_size", "weights_gib", "kv_blocks"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "capacity", help=SUMMARIES["capacity"],
        description="Compute, step by step, the hybrid KV block size, the KV cache one request needs, the memory "
                    "left for the KV cache and the concurrency each engine can hold, from a Hugging Face "
                    "config.json. With LOGS, settings come from vLLM's start-up lines and its printed figures "
                    "are set next to the computed ones. Options beat logs; logs beat config.json and defaults.")
    p.add_argument("logs", nargs="*", metavar="LOG", help="vLLM logs (one server per file); a file, glob or folder")
    p.add_argument("--model-config", required=True, metavar="FILE", help="the model's config.json")
    p.add_argument("--format", choices=["table", "json"], default="table")
    gpu = p.add_mutually_exclusive_group()
    gpu.add_argument("--gpu", choices=sorted(GPU_PRESETS), help="device memory preset (gb300: 276.62 GiB, the article)")
    gpu.add_argument("--gpu-mem-gib", type=_pos_float, metavar="N", help="device memory vLLM starts with, GiB")
    p.add_argument("--gpu-memory-utilization", type=_fraction, metavar="F", help="default 0.92 (the article)")
    for name, what in (("cuda-context", "CUDA context (default 3.13, the article)"),
                       ("non-torch", "NCCL buffers etc. (default 2.90, the article)"),
                       ("weights", "model weights per GPU"), ("activation", "peak activations"),
                       ("cudagraph", "CUDA-graph memory estimate"),
                       ("kv-cache-memory", "KV memory outright, skipping the budget (CPU: VLLM_CPU_KVCACHE_SPACE)")):
        p.add_argument(f"--{name}-gib", type=_nonneg_float, metavar="GIB", help=what)
    p.add_argument("--isl", type=_pos_int, help="input tokens per request (default 8192, or the log's max_model_len)")
    p.add_argument("--osl", type=_pos_int, help="output tokens per request (default 1024)")
    p.add_argument("--template-tokens", type=_nonneg_int, metavar="N", help="chat-template slack per request (0)")
    p.add_argument("--max-model-len", type=_pos_int, metavar="N", help="for vLLM's own concurrency figure")
    p.add_argument("--dtype", help="model dtype (default: config.json's torch_dtype)")
    p.add_argument("--kv-cache-dtype", metavar="DTYPE", help="attention KV dtype (default: the model dtype)")
    p.add_argument("--mamba-cache-dtype", metavar="DTYPE", help="conv-state dtype (default: the model dtype)")
    p.add_argument("--mamba-ssm-cache-dtype", metavar="DTYPE", help="SSM-state dtype (default: the log's, else config.json's)")
    p.add_argument("--mamba-cache-mode", choices=["none", "align", "all"],
                   help="blocks per linear layer: none 1, align 2 (vLLM's default with prefix caching), all")
    p.add_argument("--block-align", type=_pos_int, metavar="N",
                   help="attention kernel block multiple (default 16; 128 when the log is from the CPU backend)")
    p.add_argument("--block-size", type=_pos_int, metavar="N", help="vLLM's --block-size, if set")
    p.add_argument("--num-speculative-tokens", type=_nonneg_int, metavar="N", help="MTP / speculative tokens")
    p.add_argument("--tp", type=_pos_int, help="tensor-parallel size of one engine")
    p.add_argument("--dp", type=_pos_int, help="decode engines (DP ranks) in the deployment")
    p.add_argument("--topology", metavar="P-D", help="e.g. 4xDEP2-1xDEP8 (prefill-decode, the article's naming)")
    p.add_argument("--cc", type=_pos_int, metavar="N", help="client concurrency to check against the decode KV")
    add_time_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    check_year(args)
    try:
        spec = load_model_config(args.model_config)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    inputs = CapacityInputs(**{k: getattr(args, k) for k in CapacityInputs.__dataclass_fields__})
    fact_sets = _read_logs(args) if args.logs else {None: {}}
    try:
        results = [assess(spec, inputs, facts, source) for source, facts in fact_sets.items()]
    except CapacityError as exc:
        raise UsageError(str(exc)) from None
    _write(results, args.format)
    return 0


def _read_logs(args: argparse.Namespace) -> dict:
    sources = SourceSet(args.logs, follow=False)
    events, failed = [], []
    try:
        for item in EventStream(sources, year=args.year, tz=time_zone(args)):
            if isinstance(item, SourceNotice):
                if item.kind in READ_FAILURES:
                    failed.append(item.message)
                continue
            events.append(item)
    finally:
        sources.stop()
    if failed:
        raise UsageError(failed[0])
    facts = {src: f for src, f in facts_by_source(e for e in events if e.kind != "stats").items()
             if _STARTUP_FACTS & f.keys()}
    if not events:  # junk in: said as every command says it (exit 3)
        raise nothing_to_judge(list(sources.sources))
    if not facts:  # vLLM lines, but none of the start-up ones capacity reads (a log cut after start-up)
        raise NothingToJudge("nothing to judge: no vLLM start-up lines (args, KV cache size, memory) in "
                             + ", ".join(args.logs))
    return facts


def _write(results: list[Assessment], fmt: str) -> None:
    if fmt == "json":
        doc = {"capacity": [to_json(r.capacity, r.vllm, r.comparisons, r.source, r.logged, r.estimate, r.gap)
                            for r in results]}
        sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        return
    sys.stdout.write("\n".join(render_text(r.capacity, r.vllm, r.comparisons, r.source, r.logged, r.estimate, r.gap)
                                for r in results))


def _number(kind, text: str, ok, what: str):
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"{text!r}: expected {what}")
    return value


def _pos_int(text: str) -> int:
    return _number(int, text, lambda v: v > 0, "a positive integer")


def _nonneg_int(text: str) -> int:
    return _number(int, text, lambda v: v >= 0, "an integer ≥ 0")


def _pos_float(text: str) -> float:
    return _number(float, text, lambda v: 0 < v < float("inf"), "a positive number")


def _nonneg_float(text: str) -> float:
    return _number(float, text, lambda v: 0 <= v < float("inf"), "a number ≥ 0")


def _fraction(text: str) -> float:
    return _number(float, text, lambda v: 0 < v <= 1, "a fraction in (0, 1]")
