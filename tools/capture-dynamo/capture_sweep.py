#!/usr/bin/env python3
"""Capture a real concurrency sweep of one Dynamo deployment, in srt-slurm's job layout.

    python3 tools/capture-dynamo/capture_sweep.py --out DIR [--job-id N] [--concurrencies 1x4x8x16x32]
        [--isl 256] [--osl 128] [--blocks 24] [--prompts-mult 10] [--warmup-mult 2]
        [--scrapes metrics-txt|raw-jsonl|both]

A frontend and one aggregated dynamo.vllm worker whose KV cache is limited (--blocks, 128 tokens
each), then per concurrency a warm-up and a measured `vllm bench serve` run against the frontend,
with sa-bench's markers in benchmark.out; writes DIR/outputs/<job_id>/ (capture_dynamo/sweep.py
says what is in it). An existing job folder is never overwritten.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

KIT = Path(__file__).resolve().parent
sys.path[:0] = [str(KIT), str(KIT.parent / "capture-vllm")]

from capture import ensure_venv  # noqa: E402
from capture_dynamo.sweep import SweepCapture, SweepConfig  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="folder for outputs/<job_id>/")
    parser.add_argument("--venv", help="Dynamo venv (default $PDWATCH_DYNAMO_VENV or ~/.cache/pdwatch/dynamo-1.6.1)")
    parser.add_argument("--job-id", default=time.strftime("%y%m%d%H%M", time.gmtime()),
                        help="a number, as Slurm's (default: the UTC time, yymmddHHMM)")
    parser.add_argument("--node", help="the node name in the log names (default: the host name)")
    parser.add_argument("--concurrencies", default="1x4x8x16x32", help="x-separated, as sa-bench takes them")
    parser.add_argument("--isl", type=int, default=256)
    parser.add_argument("--osl", type=int, default=128)
    parser.add_argument("--range-ratio", type=float, default=0.8)
    parser.add_argument("--blocks", type=int, default=24, help="--num-gpu-blocks-override (128 tokens a block)")
    parser.add_argument("--max-num-seqs", type=int, default=64)
    parser.add_argument("--prompts-mult", type=int, default=10, help="measured prompts = C x this")
    parser.add_argument("--warmup-mult", type=int, default=2, help="warm-up prompts = C x this")
    parser.add_argument("--scrapes", choices=("metrics-txt", "raw-jsonl", "both"), default="metrics-txt",
                        help="record /metrics as logs/<node>_<proc>.metrics.txt (default), as srt-slurm's "
                             "logs/raw_prometheus.jsonl (one JSON record per scrape and process), or both")
    args = parser.parse_args(argv)
    import os
    cfg = SweepConfig(job_id=args.job_id, concurrencies=tuple(int(c) for c in args.concurrencies.split("x")),
                      isl=args.isl, osl=args.osl, range_ratio=args.range_ratio, blocks=args.blocks,
                      max_num_seqs=args.max_num_seqs, prompts_mult=args.prompts_mult, warmup_mult=args.warmup_mult,
                      scrapes=args.scrapes)
    if args.node:
        cfg.node = args.node
    out = Path(args.out)
    if (out / "outputs" / cfg.job_id).exists():
        parser.error(f"{out}/outputs/{cfg.job_id} exists; nothing is overwritten")
    venv = ensure_venv(args.venv or os.environ.get("PDWATCH_DYNAMO_VENV"))
    SweepCapture(cfg, venv, out).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
