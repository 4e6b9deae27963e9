#!/usr/bin/env python3
"""Copy Dynamo captures into pdwatch's test data, small enough to keep in the repository.

    python3 tools/capture-dynamo/trim_for_tests.py CAPTURES_DIR tests/data/real/dynamo [SCENARIO ...]

The logs, requests and scenario files are copied unchanged. Each ``*.metrics.txt`` keeps every
scrape and its header, and of its series those a diagnosis reads, as served: vLLM's gauges and
counters that pdwatch maps (running, waiting, KV usage, tokens, preemptions, prefix cache) and
its NIXL transfer series (without buckets); the frontend's requests, failures, in-flight and queued counts and its
latency histograms (sums and counts, and the buckets of time to first token and inter-token
latency, whose 99th percentile is read from them); the workers' ``dynamo_component_`` gauges and
request counters. Dropped: every other series (the Rust runtime's, ``python_``, ``process_``,
vLLM's per-request histograms), ``# HELP`` lines and ``_created`` samples. A scrape is
55-110 KB as served, 2-6 KB kept. An existing destination folder is never overwritten.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

VLLM = ("num_requests_running", "num_requests_waiting", "kv_cache_usage_perc", "gpu_cache_usage_perc",
        "prompt_tokens", "prompt_tokens_by_source", "generation_tokens", "num_preemptions",
        "prefix_cache_queries", "prefix_cache_hits", "external_prefix_cache_queries", "external_prefix_cache_hits")
KEPT = {f"vllm:{n}" for n in VLLM} | {f"vllm:{n}_total" for n in VLLM} | {
    "dynamo_frontend_requests", "dynamo_frontend_requests_total", "dynamo_frontend_failures",
    "dynamo_frontend_failures_total", "dynamo_frontend_inflight_requests", "dynamo_frontend_queued_requests",
    "dynamo_frontend_disconnected_clients",
    "dynamo_component_gpu_cache_usage_percent", "dynamo_component_total_blocks", "dynamo_component_inflight_requests",
    "dynamo_component_requests", "dynamo_component_requests_total"}
HISTOGRAMS = ("dynamo_frontend_time_to_first_token_seconds", "dynamo_frontend_inter_token_latency_seconds",
              "dynamo_frontend_input_sequence_tokens", "dynamo_frontend_output_sequence_tokens",
              "dynamo_frontend_request_duration_seconds")
BUCKETS = HISTOGRAMS[:2]  # their 99th percentile is read from the buckets
KEPT_PREFIXES = ("vllm:nixl_", "dynamo_component_kvstats_")


def _name(line: str) -> str:
    if line.startswith("# TYPE "):
        return line.split(" ", 3)[2]
    return line.split("{", 1)[0].split(" ", 1)[0]


def keep(line: str) -> bool:
    if line.startswith("# ====="):
        return True
    if line.startswith("# HELP "):
        return False
    name = _name(line)
    if name.endswith("_created"):
        return False
    if name in KEPT or name in HISTOGRAMS or (name.startswith(KEPT_PREFIXES) and not name.endswith("_bucket")):
        return True
    for histogram in HISTOGRAMS:
        if name in (histogram + "_sum", histogram + "_count") or (name == histogram + "_bucket" and histogram in BUCKETS):
            return True
    return False


def trim_scrapes(text: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if keep(line))


NOTE = ("\n## Trimmed for the tests\n\nThis copy was made by `tools/capture-dynamo/trim_for_tests.py`: the logs, "
        "`*.requests.csv` and `*.scenario.json` are as captured; each `*.metrics.txt` keeps every scrape with its "
        "header and, as served, the series a diagnosis reads (vLLM's mapped gauges and counters and NIXL series, "
        "the frontend's request counters, gauges and latency histograms, the workers' `dynamo_component_` gauges); "
        "every other series, `# HELP` lines and `_created` samples are dropped (the script's docstring lists them). "
        "The measured facts above were taken from the untrimmed scrapes.\n")


def copy_capture(src: Path, dest: Path) -> None:
    if dest.exists():
        raise SystemExit(f"trim_for_tests: {dest} exists; nothing is overwritten")
    dest.mkdir(parents=True)
    for path in sorted(src.iterdir()):
        if path.name.endswith(".metrics.txt"):
            (dest / path.name).write_text(trim_scrapes(path.read_text(encoding="utf-8")), encoding="utf-8")
        elif path.name == "README.md":
            (dest / path.name).write_text(path.read_text(encoding="utf-8").rstrip("\n") + "\n" + NOTE,
                                          encoding="utf-8")
        elif path.is_file():
            shutil.copy2(path, dest / path.name)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    src, dest, names = Path(argv[0]), Path(argv[1]), argv[2:]
    for capture in sorted(p for p in src.iterdir() if p.is_dir() and (not names or p.name in names)):
        copy_capture(capture, dest / capture.name)
        print(f"{capture} -> {dest / capture.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
