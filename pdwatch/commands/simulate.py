"""``pdwatch simulate``: write the logs of a simulated prefill/decode deployment (no cluster needed)."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path

import regex

from pdwatch.commands import SUMMARIES
from pdwatch.commands.simulate_sweep import add_sweep_arguments, run_sweep
from pdwatch.errors import UsageError
from pdwatch.sim import NOISE_LEVELS, STYLES, LogOptions, SimConfig, parse_topology
from pdwatch.sim import run as run_simulation
from pdwatch.sim.scenarios import SCENARIOS
from pdwatch.units import parse_duration as parse_duration_text

DEFAULTS = {"topology": "4xDEP2-1xDEP8", "cc": 3072, "isl": 8192, "osl": 1024, "duration": "15m", "style": "vllm"}


def parse_duration(text: str) -> float:
    """``--duration``: ``15m``, ``90s``, ``1h30m`` or a number of seconds (``120``); UsageError otherwise."""
    value = text.strip()
    seconds = parse_duration_text(value)
    if seconds is None and regex.fullmatch(r"\d+(?:\.\d+)?", value):
        seconds = float(value)
    if seconds is None:
        raise UsageError(f"--duration {text!r}: expected a duration such as 90s, 15m or 1h30m")
    if seconds <= 0:
        raise UsageError(f"--duration {text!r}: must be more than zero")
    return seconds


def add_deployment_arguments(parser: argparse.ArgumentParser, *, topology: str | None, cc: int | None,
                             duration: str | None, style: str | None, noise: str, interval: float) -> None:
    """Options shared by ``simulate`` and ``demo`` (None = taken from --scenario, else the default)."""
    parser.add_argument("--topology", default=topology, metavar="T",
                        help="NxDEPa-MxDEPb (prefill-decode) or 1xDEPn (aggregated); default "
                             f"{topology or DEFAULTS['topology']}")
    parser.add_argument("--cc", type=int, default=cc, metavar="N",
                        help=f"client concurrency (requests in flight); default {cc or DEFAULTS['cc']}")
    parser.add_argument("--isl", type=int, default=None, metavar="N", help="input sequence length (default 8192)")
    parser.add_argument("--osl", type=int, default=None, metavar="N", help="output sequence length (default 1024)")
    parser.add_argument("--duration", default=duration, metavar="D",
                        help=f"load duration after start-up, e.g. 90s, 15m, 1h (default {duration or DEFAULTS['duration']})")
    parser.add_argument("--seed", type=int, default=None, metavar="N", help="random seed (same seed, same files)")
    parser.add_argument("--style", choices=sorted(STYLES), default=style,
                        help="log format: vllm (vLLM 0.21), vllm-0.14 (older: decode counts transferred prompts), "
                             f"dynamo (Dynamo 1.x worker); default {style or DEFAULTS['style']}")
    parser.add_argument("--noise", choices=NOISE_LEVELS, default=noise,
                        help=f"full: per-request access and router lines; quiet: those off (default {noise})")
    parser.add_argument("--interval", type=float, default=interval, metavar="S",
                        help=f"VLLM_LOG_STATS_INTERVAL: seconds between stats lines (default {interval:g})")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "simulate",
        help=SUMMARIES["simulate"],
        description="Simulate a prefill/decode-disaggregated vLLM deployment (a benchmark client at concurrency "
                    "CC, prefill and decode endpoints with finite capacity) and write the log files each endpoint "
                    "would write, named like srt-slurm names them. Fast-forward by default; --realtime appends "
                    "lines at wall-clock pace so `pdwatch parse --follow` can watch them. --sweep runs one "
                    "deployment at several concurrencies and writes an srt-slurm sa-bench job folder.",
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="folder to write the logs into (new or empty)")
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), metavar="NAME",
                        help=f"start from a library scenario ({', '.join(SCENARIOS)}); other options override it")
    add_deployment_arguments(parser, topology=None, cc=None, duration=None, style=None, noise="full", interval=10.0)
    parser.add_argument("--spec-tokens", type=int, default=None, metavar="K",
                        help="speculative (MTP) tokens per decode step (default 0)")
    parser.add_argument("--metrics-interval", type=float, default=0.0, metavar="S",
                        help="also write a recorded /metrics scrape per endpoint every S seconds, into DIR/metrics "
                             "(default 0: none)")
    parser.add_argument("--realtime", action="store_true", help="append lines at wall-clock pace (Ctrl-C to stop)")
    add_sweep_arguments(parser)
    # None = not given: a sweep has its own defaults (SWEEP_DEFAULTS), a single run the ones in the help
    parser.set_defaults(run=run, noise=None, interval=None)
    for action in parser._actions:
        if action.dest == "noise":
            action.help = "full: per-request access and router lines; quiet: those off (default full; quiet in a --sweep)"
        elif action.dest == "interval":
            action.help = "VLLM_LOG_STATS_INTERVAL: seconds between stats lines (default 10; 2 in a --sweep)"


def build_config(args: argparse.Namespace) -> tuple[SimConfig, LogOptions]:
    """SimConfig and LogOptions from the command line (a scenario, then explicit options)."""
    scenario = SCENARIOS.get(getattr(args, "scenario", None) or "")
    cfg = replace(scenario.config) if scenario else SimConfig()
    style = args.style or (scenario.style if scenario else DEFAULTS["style"])
    topology = args.topology or (None if scenario else DEFAULTS["topology"])
    if topology is not None:
        try:
            parse_topology(topology)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        cfg = replace(cfg, topology=topology)
    changes: dict = {}
    cc = args.cc if args.cc is not None else (None if scenario else DEFAULTS["cc"])
    if cc is not None:
        if cc < 1:
            raise UsageError(f"--cc {cc}: must be at least 1")
        changes["cc"] = cc
    for name in ("isl", "osl"):
        value = getattr(args, name)
        if value is not None:
            if value < 1:
                raise UsageError(f"--{name} {value}: must be at least 1")
            changes[name] = value
    if args.duration is not None or not scenario:
        changes["duration"] = parse_duration(args.duration or DEFAULTS["duration"])
    if args.seed is not None:
        changes["seed"] = args.seed
    spec = getattr(args, "spec_tokens", None)
    if spec is not None:
        if not 0 <= spec <= 4:
            raise UsageError(f"--spec-tokens {spec}: expected 0 to 4")
        changes["decode"] = replace(cfg.decode, spec_tokens=spec)
    cfg = replace(cfg, **changes)
    # A scenario's faults name endpoints of its own topology; drop those another --topology does not have.
    names = {f"{role}_w{i}" for role, group in parse_topology(cfg.topology).groups for i in range(group.count)}
    if cfg.crash is not None and cfg.crash.endpoint not in names:
        cfg = replace(cfg, crash=None)
    if cfg.flaky is not None and cfg.flaky.endpoint not in names:
        cfg = replace(cfg, flaky=None)
    if not args.interval > 0:
        raise UsageError(f"--interval {args.interval:g}: must be more than zero")
    metrics = getattr(args, "metrics_interval", 0.0) or None
    if metrics is not None and metrics < 0:
        raise UsageError("--metrics-interval: must not be negative")
    opts = LogOptions(style=style, noise=args.noise, interval=args.interval, metrics_interval=metrics,
                      scenario=scenario.name if scenario else "simulated")
    return cfg, opts


def check_out_dir(path: str) -> None:
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {path}: not a folder")
    if out.is_dir() and any(out.glob("*.out")):
        raise UsageError(f"--out {path}: already holds log files; choose a new or empty folder")


def run(args: argparse.Namespace) -> int:
    if args.sweep is not None:
        return run_sweep(args)
    args.noise = args.noise or "full"
    args.interval = args.interval if args.interval is not None else 10.0
    cfg, opts = build_config(args)
    check_out_dir(args.out)
    if args.realtime:
        print(f"pdwatch: simulating {cfg.topology} at cc {cfg.cc} in real time into {args.out} "
              f"(stats every {opts.interval:g} s; Ctrl-C to stop)", file=sys.stderr, flush=True)
    try:
        result = run_simulation(cfg, args.out, opts, realtime=args.realtime)
    except ValueError as exc:  # a deployment that cannot run (e.g. a KV cache too small for one request)
        raise UsageError(str(exc)) from None
    sim = result.sim
    half = sim.t / 2
    truth = sim.truth(half, sim.t)
    names = ", ".join(p.name for p in result.paths[:4]) + (", ..." if len(result.paths) > 4 else "")
    print(f"wrote {len(result.paths)} log files to {os.path.normpath(args.out)} ({names})")
    print(f"{cfg.topology}: {sim.topology.gpus} GPUs, cc {cfg.cc}, ISL/OSL {cfg.isl}/{cfg.osl}, {sim.t:g} s of load; "
          f"{sim.completed} requests done, {sim.failed} failed")
    print(f"simulator truth over the second half: total TPS/GPU {truth['tps_per_gpu']:,.0f} (prompt "
          f"{truth['prompt_tps']:,.0f} + generated {truth['gen_tps']:,.0f} tokens/s)")
    return 0
