"""``pdwatch simulate --sweep C1,C2,...``: write a simulated sa-bench sweep as an srt-slurm job folder."""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from pathlib import Path

import regex

from pdwatch.errors import UsageError
from pdwatch.sim import parse_topology
from pdwatch.sim.sweep import DEFAULT_JOB_ID, SweepPlan, sweep_config, write_sweep_job
from pdwatch.sim.sweep.job import DECODE_BLOCKS

SWEEP_DEFAULTS = {"topology": "1xDEP4-1xDEP4", "isl": 1024, "osl": 256, "style": "dynamo", "noise": "quiet",
                  "interval": 2.0}
_NOT_FOR_SWEEPS = (("cc", "--cc"), ("duration", "--duration"), ("scenario", "--scenario"), ("realtime", "--realtime"),
                   ("metrics_interval", "--metrics-interval"), ("spec_tokens", "--spec-tokens"))


def add_sweep_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sweep", metavar="C1,C2,...",
                        help="run one deployment at these concurrencies in a row, the way srt-slurm's sa-bench does "
                             "(also 64x128x256), and write an srt-slurm job folder DIR/outputs/JOB_ID with one "
                             "result file per concurrency; defaults then: --topology 1xDEP4-1xDEP4, --isl 1024 "
                             "--osl 256, --style dynamo, --noise quiet, --interval 2")
    parser.add_argument("--job-id", default=DEFAULT_JOB_ID, metavar="N",
                        help=f"with --sweep: the job's number, its folder's name (default {DEFAULT_JOB_ID})")
    parser.add_argument("--decode-kv-blocks", type=int, default=DECODE_BLOCKS, metavar="N",
                        help=f"with --sweep: --num-gpu-blocks-override of the decode workers (default {DECODE_BLOCKS}, "
                             "which runs out from C=512 on with the defaults; 0: as much as memory holds)")


def parse_concurrencies(text: str) -> tuple[int, ...]:
    """``64,128,256`` or srt-slurm's ``64x128x256``; UsageError otherwise."""
    parts = [p.strip() for p in regex.split(r"[,x]", text.strip())]
    if not parts or not all(regex.fullmatch(r"\d+", p) for p in parts):
        raise UsageError(f"--sweep {text!r}: expected concurrencies such as 64,128,256")
    values = tuple(int(p) for p in parts)
    if any(v < 1 for v in values):
        raise UsageError(f"--sweep {text!r}: every concurrency must be at least 1")
    if len(set(values)) != len(values):
        raise UsageError(f"--sweep {text!r}: each concurrency may appear once (one result file each)")
    return values


def run_sweep(args: argparse.Namespace) -> int:
    for name, flag in _NOT_FOR_SWEEPS:
        if getattr(args, name, None):
            raise UsageError(f"{flag} does not apply to --sweep (each concurrency runs until its prompts are done)")
    plan = SweepPlan(parse_concurrencies(args.sweep))
    topology = args.topology or SWEEP_DEFAULTS["topology"]
    try:
        topo = parse_topology(topology)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not topo.disaggregated:
        raise UsageError(f"--topology {topology}: a sweep job is written for a prefill/decode deployment "
                         "(NxDEPa-MxDEPb)")
    isl = args.isl if args.isl is not None else SWEEP_DEFAULTS["isl"]
    osl = args.osl if args.osl is not None else SWEEP_DEFAULTS["osl"]
    for flag, value in (("--isl", isl), ("--osl", osl)):
        if value < 1:
            raise UsageError(f"{flag} {value}: must be at least 1")
    if args.decode_kv_blocks < 0:
        raise UsageError(f"--decode-kv-blocks {args.decode_kv_blocks}: must not be negative")
    if not str(args.job_id).isdigit():
        raise UsageError(f"--job-id {args.job_id!r}: srt-slurm job ids are numbers")
    interval = args.interval if args.interval is not None else SWEEP_DEFAULTS["interval"]
    if not interval > 0:
        raise UsageError(f"--interval {interval:g}: must be more than zero")
    cfg = sweep_config(args.seed or 0, topology=topology, isl=isl, osl=osl,
                       decode_blocks=args.decode_kv_blocks or None)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {args.out}: not a folder")
    root = out / "outputs" / str(args.job_id)
    if root.exists():
        raise UsageError(f"--out {args.out}: job {args.job_id} exists there already ({root}); choose another "
                         "folder or --job-id")
    try:
        job = write_sweep_job(out, replace(cfg), plan, job_id=str(args.job_id),
                              style=args.style or SWEEP_DEFAULTS["style"], noise=args.noise or SWEEP_DEFAULTS["noise"],
                              interval=interval)
    except ValueError as exc:  # a deployment that cannot run (e.g. a KV cache too small for one request)
        raise UsageError(str(exc)) from None
    exhausted = job.kv_exhausted_from
    print(f"wrote sweep job {job.job_id} to {os.path.normpath(job.root)}: {len(job.points)} points "
          f"(concurrency {', '.join(str(p.concurrency) for p in job.points)}), {len(job.log_paths)} worker and "
          f"frontend logs, benchmark.out, {(job.end - job.start).total_seconds():.0f} s of benchmark")
    print(f"{topology}: {job.gpus[0]} GPUs ({job.gpus[1]} prefill, {job.gpus[2]} decode), ISL/OSL {isl}/{osl}; "
          + (f"decode KV cache exhausted from C={exhausted} on" if exhausted is not None
             else "the decode KV cache never runs out")
          + f" (see {os.path.normpath(job.root / 'README.md')})")
    return 0
