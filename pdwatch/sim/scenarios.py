"""The labelled scenario library behind ``samples/``: eight deployments, each with a known bottleneck.

``python -m pdwatch.sim.scenarios --out samples`` regenerates every folder deterministically:
the ``.out`` logs, a recorded ``metrics/*.metrics.txt`` where small enough, a README and an
``expected.yaml`` (which rules must fire, which must not, and the simulator's steady-state
total TPS per GPU). ``pdwatch simulate --scenario NAME`` runs one of them at any length.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable

import yaml

from .logwriter import LogOptions
from .model import Crash, FlakyLink, RoleSettings, SimConfig, Simulation
from .runner import run

START = datetime(2026, 5, 29, 14, 0, 0, tzinfo=timezone.utc)
RULES = ("prefill_bound", "decode_bound", "seq_cap_bound", "kv_exhausted", "cudagraph_overflow", "stats_missing",
         "kv_transfer_errors", "dp_imbalance", "engine_failure", "lint_ssm_conv_layout",
         "lint_async_scheduling_off", "lint_prefix_caching_unused", "lint_block_size_mismatch",
         "lint_api_server_count", "capacity")
_STYLE_TEXT = {
    "vllm": "vLLM 0.21 `vllm serve` endpoints",
    "vllm-0.14": "vLLM 0.14 `vllm serve` endpoints (decode reports transferred prompts as prompt throughput)",
    "dynamo": "Dynamo 1.x vLLM workers (vLLM 0.18; ANSI main-process lines)",
}


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    config: SimConfig
    style: str
    window: tuple[float, float]  # steady window, seconds after the benchmark start
    must_fire: list[dict]
    must_not_fire: list[str]
    story: str
    readme: Callable[[dict], str]  # what the numbers show, from the run's summary
    fix: str
    noise: str = "quiet"
    interval: float = 10.0
    tps_known: bool = True  # False when part of the deployment prints no stats
    metrics_interval: float | None = None


_PD_PREFILL = RoleSettings(max_num_batched_tokens=16384)
_PD_DECODE = RoleSettings(max_num_seqs=1024, max_num_batched_tokens=8192)


def _cfg(topology: str, cc: int, duration: float, seed: int, **kw) -> SimConfig:
    base = dict(topology=topology, cc=cc, duration=duration, seed=seed, prefill=_PD_PREFILL, decode=_PD_DECODE)
    base.update(kw)
    return SimConfig(**base)


def _n(x: float) -> str:
    return f"{x:,.0f}"


_QUIET_NOTE = (
    "To keep the sample small the per-request lines are off (`--disable-uvicorn-access-log` on `vllm serve`, "
    "`DYN_LOG=info,dynamo_kv_router::scheduling::selector=warn` on the frontend); the rest of the noise of real "
    "logs is there: the version logo or Dynamo's ANSI lines, progress bars redrawn with `\\r`, warnings. "
    "`pdwatch simulate --scenario NAME` writes the per-request lines too (`--noise full`, its default).")


def _all() -> list[Scenario]:
    return [
        Scenario(
            "prefill-bound", "four DEP2 prefill endpoints cannot feed one DEP8 decode",
            _cfg("4xDEP2-1xDEP8", 3072, 150, 11, prefill=RoleSettings(
                max_num_batched_tokens=8192, defaults=("max_num_batched_tokens",))),
            "dynamo", (60, 140),
            [{"rule": "prefill_bound", "role": "prefill"}],
            ["kv_exhausted", "cudagraph_overflow", "stats_missing", "kv_transfer_errors", "engine_failure",
             "dp_imbalance"],
            "The client keeps 3072 requests in flight, but 8 prefill engines at vLLM's default "
            "`max_num_batched_tokens` (8192, one prompt per step) compute fewer prompt tokens per second than one "
            "DEP8 decode endpoint could turn into output. Prompts pile up in the prefill queues; decode runs a "
            "fraction of its possible batch.",
            lambda s: (
                f"- prefill engines: prompt throughput flat at its ceiling, {_n(s['prefill_prompt_tps_per_engine'])} "
                f"tokens/s per engine; Waiting {s['prefill_waiting_mean']:.0f} per engine on average (it grows "
                "during the ramp and never drains);\n"
                f"- decode engines: Running {s['decode_running_mean']:.0f} per engine against cc/DP = "
                f"{s['cc_per_decode_engine']:.0f}, KV usage {s['decode_kv_max']:.0f}% at most."),
            "add prefill endpoints (`8xDEP2-1xDEP8`, see `healthy`), and set `--max-num-batched-tokens 16384` "
            "(2 x ISL) on prefill: two whole prompts per step, about +8% prompt throughput.",
            metrics_interval=50.0,
        ),
        Scenario(
            "healthy", "eight DEP2 prefill endpoints keep one DEP8 decode busy",
            _cfg("8xDEP2-1xDEP8", 2048, 180, 12), "vllm", (90, 170),
            [],
            ["prefill_bound", "kv_exhausted", "cudagraph_overflow", "stats_missing", "kv_transfer_errors",
             "engine_failure", "dp_imbalance", "seq_cap_bound", "lint_ssm_conv_layout", "lint_async_scheduling_off",
             "lint_prefix_caching_unused", "lint_block_size_mismatch", "lint_api_server_count"],
            "The Qwen3.5 PD article's recipe at a concurrency it handles: prefill has headroom, decode runs cc/DP requests per "
            "engine inside its CUDA graphs and well inside its KV cache. The decode start-up has a harmless logged "
            "traceback (chat-template warmup) that must not count as an engine failure.",
            lambda s: (
                f"- prefill engines: Waiting {s['prefill_waiting_mean']:.1f} per engine on average, prompt throughput "
                f"{_n(s['prefill_prompt_tps_per_engine'])} tokens/s per engine (it breathes with the closed loop);\n"
                f"- decode engines: Running {s['decode_running_mean']:.0f} per engine (cc/DP = "
                f"{s['cc_per_decode_engine']:.0f}), largest step {s['decode_scheduled_max']} tokens (capture max "
                f"{s['decode_capture_max']}), KV usage {s['decode_kv_max']:.0f}% at most, no preemptions."),
            "nothing to fix; this is the baseline the other scenarios are compared with.",
        ),
        Scenario(
            "kv-exhausted", "cc=5120 overflows the KV cache of one DEP8 decode endpoint",
            _cfg("8xDEP2-1xDEP8", 5120, 200, 13, decode=replace(_PD_DECODE, max_cudagraph_capture_size=768)),
            "dynamo", (120, 190),
            [{"rule": "kv_exhausted", "role": "decode"}],
            ["prefill_bound", "cudagraph_overflow", "stats_missing", "kv_transfer_errors", "engine_failure"],
            "5120 requests of ~8K prompt tokens need more KV cache than 8 decode GPUs have (the Qwen3.5 PD "
            "article stops at 5120 for this reason). The capture size is already raised to 768 (cc/8 + 128), so what binds is memory: "
            "the cache fills, new requests wait on decode, running requests get preempted and recomputed.",
            lambda s: (
                f"- decode engines: KV usage {s['decode_kv_mean']:.1f}% on average, Waiting "
                f"{s['decode_waiting_mean']:.0f} per engine, {s['decode_preemptions']} preemptions in the window "
                "(`Preemptions: N` in the stats lines), and prompt throughput on decode from the recomputed "
                f"prompts ({_n(s['decode_prompt_tps_per_engine'])} tokens/s per engine);\n"
                f"- prefill engines: Waiting {s['prefill_waiting_mean']:.1f}, KV usage {s['prefill_kv_mean']:.1f}% "
                "(finished prompts wait there until decode pulls them)."),
            "more decode GPUs, or lower concurrency; for hybrid models `--mamba-ssm-cache-dtype bfloat16` raises the "
            "effective KV capacity; check the block size.",
            metrics_interval=100.0,
        ),
        Scenario(
            "cudagraph-overflow", "decode batches above the largest captured CUDA graph run eager",
            _cfg("8xDEP2-1xDEP8", 4096, 180, 14, decode_weights=(1.05, 1.05, 1.05) + (0.97,) * 5),
            "vllm", (90, 170),
            [{"rule": "cudagraph_overflow", "role": "decode", "engines": [0, 1, 2]}],
            ["kv_exhausted", "prefill_bound", "stats_missing", "kv_transfer_errors", "engine_failure"],
            "At cc=4096 each of the 8 decode ranks gets 512 requests on average, exactly vLLM's default largest "
            "capture size (512). The router favours ranks 0-2 slightly (5%), so they run more than 512 requests "
            "per step: those steps run eager, slower, while ranks 3-7 replay graphs.",
            lambda s: (
                f"- the engine config says `'max_cudagraph_capture_size': {s['decode_capture_max']}`;\n"
                f"- decode ranks {s['decode_over_capture']} run {s['decode_running_hot']:.0f} requests per step, "
                f"ranks 3-7 {s['decode_running_cold']:.0f};\n"
                f"- tokens/s per running request: {s['decode_per_req_hot']:.1f} on the hot ranks against "
                f"{s['decode_per_req_cold']:.1f} on the others (the eager penalty)."),
            "`--max-cudagraph-capture-size` = cc/DP + 128 (640 here) on decode, as the Qwen3.5 PD article does for cc >= 4096.",
        ),
        Scenario(
            "stats-missing", "the decode endpoint prints no stats (api_server_count 8)",
            _cfg("8xDEP2-1xDEP8", 2048, 120, 15, decode=replace(_PD_DECODE, api_server_count=8)),
            "vllm", (60, 110),
            [{"rule": "stats_missing", "role": "decode"}, {"rule": "lint_api_server_count", "role": "decode"}],
            ["kv_exhausted", "cudagraph_overflow", "kv_transfer_errors", "engine_failure"],
            "The decode endpoint was started with `--api-server-count 8` (vLLM's default with DP is one API server "
            "per rank). With more than one API server vLLM disables its stats logging, so half the deployment is "
            "invisible: only the prefill side prints stats lines.",
            lambda s: (
                "- the decode file has `'api_server_count': 8` in its non-default args and eight `AsyncLLM created "
                "with api_server_count more than 1; disabling stats logging to avoid incomplete stats.` warnings, "
                "then no stats line at all;\n"
                f"- the prefill side looks healthy: Waiting {s['prefill_waiting_mean']:.1f} per engine.\n"
                "- total TPS/GPU cannot be computed from the logs (`tps_per_gpu: null`)."),
            "`--api-server-count 1` on the endpoint under study (the Qwen3.5 PD article's advice) brings the stats back.",
            tps_known=False,
        ),
        Scenario(
            "kv-transfer-errors", "NIXL pulls from one prefill endpoint fail",
            _cfg("8xDEP2-1xDEP8", 2048, 150, 16, flaky=FlakyLink("prefill_w3", 0.08)), "vllm", (80, 140),
            [{"rule": "kv_transfer_errors", "role": "decode"},
             {"rule": "kv_transfer_errors", "endpoint": "prefill_w3"}],
            ["kv_exhausted", "cudagraph_overflow", "stats_missing", "engine_failure", "prefill_bound"],
            "The healthy deployment, but 8% of the KV pulls from `prefill_w3` fail (a flaky link). Each failure "
            "is logged on the decode side (`NIXL transfer failure: transfer_failed`), the decode recomputes the "
            "prompt itself (`Recovered from KV load failure`), and 30 s later the prefill side gives the blocks up "
            "(`Releasing expired KV blocks ... before lease expired`).",
            lambda s: (
                f"- {s['xfer_failures']} transfer failures on decode and {s['kv_expired']} expired-blocks warnings on "
                "prefill_w3 over the run;\n"
                f"- decode prompt throughput {_n(s['decode_prompt_tps_per_engine'])} tokens/s per engine: the "
                "recomputed prompts (a healthy decode shows 0.0)."),
            "check the network path to the failing prefill node (the `remote_host` of the failures); until then, "
            "take the endpoint out of the router.",
        ),
        Scenario(
            "engine-crash", "a decode engine dies of a CUDA OOM mid-run",
            _cfg("6xDEP2-1xDEP8", 512, 150, 17, crash=Crash("decode_w0", 3, 110.0)), "vllm-0.14", (50, 100),
            [{"rule": "engine_failure", "endpoint": "decode_w0", "engines": [3]}],
            ["kv_exhausted", "cudagraph_overflow", "kv_transfer_errors"],
            "At t = 110 s rank 3 of the decode endpoint hits `torch.OutOfMemoryError`; the engine core dies, the API "
            "server follows (`EngineDeadError`), every request in flight fails and the benchmark stops. The prefill "
            "endpoints print one last all-zero stats line and go quiet (idle). vLLM 0.14 style: the decode side "
            "reports every transferred prompt as its own prompt throughput, so adding prefill and decode prompt "
            "throughput would count each prompt twice.",
            lambda s: (
                f"- before the crash: decode prompt throughput {_n(s['decode_prompt_tps_per_engine'])} tokens/s per "
                f"engine (transferred prompts, < v0.16) next to {_n(s['prefill_prompt_tps_per_engine'])} on each "
                "prefill engine (computed);\n"
                "- the OOM traceback from `EngineCore_DP3`, then `EngineDeadError`, then nothing more from the decode "
                "file; the frontend logs `request completed with server error` for every request in flight."),
            "read the OOM: lower `--gpu-memory-utilization` or `--max-num-batched-tokens` on decode, then restart.",
        ),
        Scenario(
            "aggregated", "one aggregated (non-PD) DEP8 server",
            SimConfig(topology="1xDEP8", cc=256, duration=150, seed=18), "vllm", (80, 140),
            [],
            ["prefill_bound", "kv_exhausted", "cudagraph_overflow", "stats_missing", "kv_transfer_errors",
             "engine_failure"],
            "A single `vllm serve` with DP8 doing both prefill and decode: no frontend, no KV transfer, one file. "
            "Prompt chunks and decodes share every step. Full noise: one access-log line per request, health checks.",
            lambda s: (
                f"- one endpoint, {s['agg_running_mean']:.0f} requests running per engine, prompt "
                f"{_n(s['agg_prompt_tps_per_engine'])} and generation {_n(s['agg_gen_tps_per_engine'])} tokens/s per "
                "engine;\n"
                "- total TPS/GPU counts the prompt and generated tokens of the one endpoint."),
            "nothing to fix: the reference for a non-PD deployment.",
            noise="full",
        ),
    ]


SCENARIOS: dict[str, Scenario] = {s.name: s for s in _all()}


# --- generation ------------------------------------------------------------------------------------


class _Sampler:
    """Samples the simulator's own state every stats interval inside the steady window."""

    def __init__(self, sc: Scenario) -> None:
        self.sc = sc
        self.rows: list[dict] = []
        self.next = sc.window[0] + sc.interval
        self.base: dict[str, dict] = {}
        self.end: dict[str, dict] = {}

    def __call__(self, sim: Simulation) -> None:
        if abs(sim.t - self.sc.window[0]) < sim.cfg.dt / 2:
            self.base = {e.name: _counters(e) for e in sim.engines}
        if abs(sim.t - self.sc.window[1]) < sim.cfg.dt / 2:
            self.end = {e.name: _counters(e) for e in sim.engines}
        if sim.t + 1e-9 < self.next or sim.t > self.sc.window[1] + 1e-9:
            return
        self.next += self.sc.interval
        for e in sim.engines:
            if e.alive:
                self.rows.append({"role": e.role, "rank": e.rank, "running": e.running_count(),
                                  "waiting": e.waiting_count(), "kv": 100.0 * e.kv_fraction(),
                                  "scheduled": e.n_running * (1 + e.cfg.spec_tokens), "cap": e.cfg.capture_max})


def _counters(e) -> dict:
    return {"prompt": e.prompt_local, "external": e.prompt_external, "gen": e.gen_tokens, "preempt": e.preemptions}


def _summary(sc: Scenario, sim: Simulation, sampler: _Sampler, legacy_prompt: bool) -> dict:
    t0, t1 = sc.window
    span = t1 - t0
    out: dict = {"cc_per_decode_engine": sc.config.cc / max(1, len(sim.decode_engines))}
    for role in ("prefill", "decode", "agg"):
        rows = [r for r in sampler.rows if r["role"] == role]
        engines = [e for e in sim.engines if e.role == role]
        if not rows or not engines:
            continue

        def mean(key: str, rs: list[dict] = rows) -> float:
            return sum(r[key] for r in rs) / len(rs)

        out[f"{role}_running_mean"] = mean("running")
        out[f"{role}_waiting_mean"] = mean("waiting")
        out[f"{role}_kv_mean"] = mean("kv")
        out[f"{role}_kv_max"] = max(r["kv"] for r in rows)
        out[f"{role}_scheduled_max"] = max(r["scheduled"] for r in rows)
        out[f"{role}_capture_max"] = engines[0].cfg.capture_max
        base, end = sampler.base, sampler.end
        prompt = sum(end[e.name]["prompt"] - base[e.name]["prompt"] for e in engines if e.name in base)
        if legacy_prompt and role == "decode":
            prompt += sum(end[e.name]["external"] - base[e.name]["external"] for e in engines if e.name in base)
        gen = sum(end[e.name]["gen"] - base[e.name]["gen"] for e in engines if e.name in base)
        out[f"{role}_prompt_tps_per_engine"] = prompt / span / len(engines)
        out[f"{role}_gen_tps_per_engine"] = gen / span / len(engines)
        out[f"{role}_preemptions"] = sum(end[e.name]["preempt"] - base[e.name]["preempt"] for e in engines
                                         if e.name in base)
        over = sorted({r["rank"] for r in rows if r["scheduled"] > r["cap"]})
        out[f"{role}_over_capture"] = over
        if role == "decode" and over:
            hot = [r for r in rows if r["rank"] in over]
            cold = [r for r in rows if r["rank"] not in over]
            out["decode_running_hot"] = mean("running", hot)
            out["decode_running_cold"] = mean("running", cold) if cold else 0.0
            per = {}
            for e in engines:
                run_mean = mean("running", [r for r in rows if r["rank"] == e.rank])
                per[e.rank] = (end[e.name]["gen"] - base[e.name]["gen"]) / span / run_mean
            out["decode_per_req_hot"] = sum(per[r] for r in over) / len(over)
            cold_ranks = [r for r in per if r not in over]
            out["decode_per_req_cold"] = sum(per[r] for r in cold_ranks) / max(1, len(cold_ranks))
    return out


def generate(sc: Scenario, out_dir: str | Path, *, samples_root: str = "samples") -> dict:
    """Write one scenario folder (replacing the files a previous run generated); returns its expected.yaml data."""
    out = Path(out_dir)
    _clean(out)
    sampler = _Sampler(sc)
    opts = LogOptions(style=sc.style, noise=sc.noise, interval=sc.interval, start=START,
                      metrics_interval=sc.metrics_interval, scenario=sc.name)
    assert sc.window[1] <= sc.config.duration - sc.interval, "the steady window must end before the last stats line"
    counts = {"xfer_fail": 0, "kv_expired": 0}
    result = run(sc.config, out, opts, on_tick=sampler)
    sim = result.sim
    for line in _iter_lines(result.paths):
        if "NIXL transfer failure" in line:
            counts["xfer_fail"] += 1
        elif "Releasing expired KV blocks" in line:
            counts["kv_expired"] += 1
    truth = sim.truth(*sc.window)
    summary = _summary(sc, sim, sampler, legacy_prompt=sc.style == "vllm-0.14")
    summary.update(xfer_failures=counts["xfer_fail"], kv_expired=counts["kv_expired"])
    t0, t1 = (START + timedelta(seconds=x) for x in sc.window)
    expected = {
        "scenario": sc.name,
        "description": sc.title,
        "topology": sc.config.topology,
        "gpus": sim.topology.gpus,
        "cc": sc.config.cc,
        "isl": sc.config.isl,
        "osl": sc.config.osl,
        "style": sc.style,
        "stats_interval_s": sc.interval,
        "must_fire": sc.must_fire,
        "must_not_fire": sc.must_not_fire,
        "tps_per_gpu": round(truth["tps_per_gpu"], 1) if sc.tps_known else None,
        "steady_window": {"start": t0.isoformat(), "end": t1.isoformat()},
        "truth": {"prompt_tps": round(truth["prompt_tps"], 1), "gen_tps": round(truth["gen_tps"], 1),
                  "total_tps": round(truth["total_tps"], 1),
                  "tps_per_gpu": round(truth["tps_per_gpu"], 1)},
    }
    (out / "expected.yaml").write_text(_EXPECTED_HEADER + yaml.safe_dump(expected, sort_keys=False, width=110))
    (out / "README.md").write_text(_readme(sc, sim, expected, summary, samples_root))
    return expected


_EXPECTED_HEADER = (
    "# Generated by `python -m pdwatch.sim.scenarios`; do not edit by hand.\n"
    "# must_fire: rules that must report this problem (on that role / endpoint, on those engines if listed);\n"
    "# must_not_fire: rules that must stay silent; rules in neither list may fire or not.\n"
    "# tps_per_gpu: the simulator's total TPS per GPU over steady_window (prompt tokens/s of the prefill side\n"
    "# + generated tokens/s of the decode side, / GPUs); null when part of the deployment prints no stats.\n"
)


def _readme(sc: Scenario, sim: Simulation, expected: dict, summary: dict, root: str) -> str:
    t0, t1 = (START + timedelta(seconds=x) for x in sc.window)
    fire = ", ".join(f"`{m['rule']}` on {m.get('endpoint') or m.get('role')}"
                     + (f" (engines {m['engines']})" if m.get("engines") else "") for m in sc.must_fire) or "none"
    tps = (f"**{expected['tps_per_gpu']:,.0f}** total TPS/GPU (prompt {_n(expected['truth']['prompt_tps'])} + "
           f"generated {_n(expected['truth']['gen_tps'])} tokens/s over {expected['gpus']} GPUs)"
           if expected["tps_per_gpu"] is not None else "not computable from the logs (`null`)")
    return f"""# {sc.name}: {sc.title}

Simulated, not measured: `{sc.config.topology}` ({sim.topology.gpus} GB200 GPUs), {sim.cfg.model.name},
ISL/OSL {sc.config.isl}/{sc.config.osl} (random_range_ratio {sc.config.range_ratio}), concurrency {sc.config.cc},
{_STYLE_TEXT[sc.style]}, stats every {sc.interval:g} s, {sc.config.duration:g} s of load after the start-up.

{sc.story}

{_QUIET_NOTE.replace("NAME", sc.name) if sc.noise == "quiet" else "Full noise: one access-log line per request, health checks."}

## What the logs show (steady window {t0:%H:%M:%S}-{t1:%H:%M:%S} UTC)

{sc.readme(summary)}

Truth (the simulator's own token counts): {tps}.
Must fire: {fire}. Must not fire: {", ".join(f"`{r}`" for r in sc.must_not_fire)}.

## Fix

{sc.fix}

## Try it

```
pdwatch parse {root}/{sc.name} --format table
pdwatch simulate --scenario {sc.name} --duration 15m --out /tmp/{sc.name}   # a long run of the same deployment
python -m pdwatch.sim.scenarios --out {root} --only {sc.name}               # regenerate this folder
```
"""


def _iter_lines(paths: list[Path]):
    for p in paths:
        with open(p, encoding="utf-8") as fh:
            yield from fh


def _clean(out: Path) -> None:
    """Remove what a previous generation wrote (and only that)."""
    if out.exists():
        for p in out.glob("*.out"):
            p.unlink()
        for name in ("README.md", "expected.yaml"):
            (out / name).unlink(missing_ok=True)
        if (out / "metrics").is_dir():
            shutil.rmtree(out / "metrics")
    out.mkdir(parents=True, exist_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pdwatch.sim.scenarios",
                                     description="Regenerate the scenario library (deterministic).")
    parser.add_argument("--out", required=True, help="folder to write the scenario folders into, e.g. samples")
    parser.add_argument("--only", action="append", choices=sorted(SCENARIOS), help="just this scenario (repeatable)")
    args = parser.parse_args(argv)
    root = Path(args.out)
    for name in args.only or list(SCENARIOS):
        expected = generate(SCENARIOS[name], root / name, samples_root=str(args.out).rstrip("/"))
        tps = expected["tps_per_gpu"]
        print(f"{name:20s} tps_per_gpu={'null' if tps is None else f'{tps:,.1f}'}", file=sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
