"""Write a simulated sa-bench sweep as an srt-slurm job folder whose result files agree with its logs.

Layout (srt-slurm's current one, see ``/work/shared/formats/srt-slurm-and-dynamo-metrics.md`` §1.1)::

    OUT/outputs/<job_id>/<job_id>.json           job metadata (version 2.0)
    OUT/outputs/<job_id>/config.yaml             the recipe; benchmark.concurrencies lists the points
    OUT/outputs/<job_id>/README.md               what the sweep shows, point by point
    OUT/outputs/<job_id>/logs/<node>_prefill_w<i>.out, <node>_decode_w<i>.out, <node>_frontend_0.out
    OUT/outputs/<job_id>/logs/benchmark.out      bench.sh's output: markers, dates, result blocks
    OUT/outputs/<job_id>/logs/sa-bench_isl_<ISL>_osl_<OSL>/results_concurrency_<C>_gpus_<T>_ctx_<P>_gen_<D>.json

All clocks are UTC: the vLLM and Dynamo lines, the ``date`` lines of ``benchmark.out`` and the
results' ``date`` (the container's local time is taken to be UTC, as the simulator's vLLM lines are).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import yaml

from pdwatch.sim.logwriter import LogOptions, LogRun
from pdwatch.sim.model import ModelProfile, RoleSettings, SimConfig

from .client import SweepPlan, SweepSimulation
from .results import printed_block, result_json

START = datetime(2026, 5, 29, 14, 0, 0, tzinfo=timezone.utc)
DEFAULT_JOB_ID = "4242"
DEFAULT_CONCURRENCIES = (64, 128, 256, 512, 1024)
_BLOCK_SIZE = ModelProfile().block_size
# Knobs of the default sweep: a short benchmark (ISL/OSL 1024/256, --max-model-len 2048) and a decode
# KV cache cut to 96 blocks of 1056 tokens per engine (--num-gpu-blocks-override, as real KV-pressure
# runs do) so that it runs out from C=512 on while C<=256 fits: 64 requests of ~1.1K tokens per engine.
DECODE_BLOCKS = 96


def sweep_config(seed: int = 0, *, topology: str = "1xDEP4-1xDEP4", isl: int = 1024, osl: int = 256,
                 decode_blocks: int | None = DECODE_BLOCKS) -> SimConfig:
    """The deployment of the default sweep (see DECODE_BLOCKS for why its decode cache is small)."""
    return SimConfig(
        topology=topology, isl=isl, osl=osl, seed=seed, duration=math.inf,
        prefill=RoleSettings(max_num_batched_tokens=16384),
        decode=RoleSettings(num_gpu_blocks_override=decode_blocks),
        model=replace(ModelProfile(), max_model_len=max(2048, -(-(isl + osl) // 1024) * 1024)),
    )


@dataclass
class SweepPoint:
    """One measured run, as written: its result file, its window and what the simulator saw in it."""

    concurrency: int
    result_path: Path
    result: dict
    start: datetime  # the run's first request (result date - duration)
    end: datetime  # its last response
    marker_start: datetime  # benchmark.out's `date` after "Running benchmark with concurrency: C"
    marker_end: datetime  # the `date` before "Completed benchmark with concurrency: C"
    decode_kv_max_pct: float = 0.0
    decode_waiting_max: int = 0
    decode_preemptions: int = 0

    @property
    def kv_exhausted(self) -> bool:
        """The simulator's own view: the decode cache ran out (it preempted) during the run."""
        return self.decode_preemptions > 0


@dataclass
class SweepJob:
    root: Path  # OUT/outputs/<job_id>
    job_id: str
    points: list[SweepPoint]
    log_paths: list[Path]
    gpus: tuple[int, int, int]  # total, prefill, decode
    start: datetime  # t = 0: the benchmark script started
    end: datetime  # the last log line's time, about

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def benchmark_out(self) -> Path:
        return self.logs / "benchmark.out"

    @property
    def kv_exhausted_from(self) -> int | None:
        """The lowest concurrency from which every higher point ran out of decode KV cache."""
        first = None
        for p in sorted(self.points, key=lambda p: p.concurrency, reverse=True):
            if not p.kv_exhausted:
                break
            first = p.concurrency
        return first


@dataclass
class _Watch:
    """The simulator's decode state during each measured run (for the README and the tests)."""

    kv_max: dict[int, float] = field(default_factory=dict)
    waiting_max: dict[int, int] = field(default_factory=dict)
    preempt_start: dict[int, int] = field(default_factory=dict)
    preempt_end: dict[int, int] = field(default_factory=dict)

    def sample(self, sim: SweepSimulation) -> None:
        preempted = sum(e.preemptions for e in sim.decode_engines)
        for run in sim.measured:
            c = run.concurrency
            if math.isnan(run.main_start) or (not math.isnan(run.main_end) and sim.t > run.main_end + sim.cfg.dt):
                continue
            self.preempt_start.setdefault(c, preempted)
            self.preempt_end[c] = preempted
            kv = max((100.0 * e.kv_fraction() for e in sim.decode_engines), default=0.0)
            waiting = max((e.waiting_count() for e in sim.decode_engines), default=0)
            self.kv_max[c] = max(self.kv_max.get(c, 0.0), kv)
            self.waiting_max[c] = max(self.waiting_max.get(c, 0), waiting)


def write_sweep_job(out_dir: str | os.PathLike, cfg: SimConfig | None = None, plan: SweepPlan | None = None, *,
                    job_id: str = DEFAULT_JOB_ID, style: str = "dynamo", noise: str = "quiet",
                    interval: float = 2.0, start: datetime = START) -> SweepJob:
    """Simulate ``plan`` on ``cfg`` and write the job into ``out_dir/outputs/<job_id>``.

    Raises:
        FileExistsError: that job folder exists already (nothing is overwritten).
        ValueError: a plan or deployment that cannot run.
    """
    cfg = cfg if cfg is not None else sweep_config()
    plan = plan if plan is not None else SweepPlan(DEFAULT_CONCURRENCIES)
    if not job_id.isdigit():
        raise ValueError(f"job id {job_id!r}: srt-slurm job ids are numbers")
    root = Path(out_dir) / "outputs" / job_id
    if root.exists():
        raise FileExistsError(f"{root} exists already; choose another folder or job id")
    sim = SweepSimulation(replace(cfg, duration=math.inf), plan)
    topo = sim.topology
    if not topo.disaggregated:
        raise ValueError("a sweep job is written for a prefill/decode deployment (NxDEPa-MxDEPb)")
    logs = root / "logs"
    logs.mkdir(parents=True)
    opts = LogOptions(style=style, noise=noise, interval=interval, start=start, scenario=f"sweep-{job_id}")
    writer = LogRun(sim, logs, opts)
    watch = _Watch()
    try:
        writer.begin()
        for _ in sim.run():
            writer.after_tick()
            watch.sample(sim)
            if sim.finished and sim.t >= sim.finished_at + plan.tail_s:
                break
    finally:
        writer.close()

    gpus = (topo.gpus, topo.prefill.gpus, topo.decode.gpus)
    result_dir = logs / f"sa-bench_isl_{cfg.isl}_osl_{cfg.osl}"
    result_dir.mkdir()
    model = sim.cfg.model.name
    points: list[SweepPoint] = []
    blocks: dict[int, dict] = {}
    for run in sim.runs:
        result = result_json(run, start=start, model=model, tokenizer=model)
        blocks[id(run)] = result
        if run.kind != "measured":
            continue
        name = f"results_concurrency_{run.concurrency}_gpus_{gpus[0]}_ctx_{gpus[1]}_gen_{gpus[2]}.json"
        path = result_dir / name
        with open(path, "x", encoding="utf-8") as fh:
            json.dump(result, fh)
        c = run.concurrency
        points.append(SweepPoint(
            c, path, result, _at(start, run.main_start), _at(start, run.main_end),
            _whole_second(_at(start, run.launched)), _whole_second(_at(start, run.exited)),
            decode_kv_max_pct=watch.kv_max.get(c, 0.0), decode_waiting_max=watch.waiting_max.get(c, 0),
            decode_preemptions=watch.preempt_end.get(c, 0) - watch.preempt_start.get(c, 0)))
    end = _at(start, sim.t)
    job = SweepJob(root, job_id, points, writer.paths, gpus, start, end)
    _write_text(job.benchmark_out, _benchmark_out(sim, blocks, start, cfg, gpus, result_dir.name))
    _write_text(root / f"{job_id}.json", json.dumps(_metadata(job, sim, plan), indent=2) + "\n")
    _write_text(root / "config.yaml", yaml.safe_dump(_recipe(job, sim, plan), sort_keys=False, width=110))
    _write_text(root / "README.md", _readme(job, sim, plan, interval))
    return job


def _at(start: datetime, t: float) -> datetime:
    return start + timedelta(seconds=t)


def _whole_second(ts: datetime) -> datetime:
    return ts.replace(microsecond=0)


def _write_text(path: Path, text: str) -> None:
    with open(path, "x", encoding="utf-8") as fh:
        fh.write(text)


def _concurrency_list(plan: SweepPlan) -> str:
    return "x".join(str(c) for c in plan.concurrencies)


# --- benchmark.out ------------------------------------------------------------------------------


def _benchmark_out(sim: SweepSimulation, blocks: dict[int, dict], start: datetime, cfg: SimConfig,
                   gpus: tuple[int, int, int], result_dir: str) -> str:
    """bench.sh's stdout and stderr: its echo markers, `date` lines and the client's output per run."""
    model = sim.cfg.model.name
    endpoint = "http://localhost:8000"
    lines = [
        f"SA-Bench Config: endpoint={endpoint}; isl={cfg.isl}; osl={cfg.osl}; "
        f"concurrencies={_concurrency_list(sim.plan)}; req_rate=inf; model={model}",
        "Verifying endpoint...",
        '{"id":"chatcmpl-0d6c3e1f","choices":[{"index":0,"message":{"content":"The capital of France is Paris.",'
        '"role":"assistant"},"finish_reason":"length"}],"created":' + str(int(start.timestamp()))
        + ',"model":"' + model + '","object":"chat.com',
    ]
    for run in sim.runs:
        result = blocks[id(run)]
        command = (f"python3 -u /srtctl-benchmarks/sa-bench/benchmark_serving.py --model {model} --tokenizer {model} "
                   f"--host localhost --port 8000 --backend dynamo --endpoint /v1/completions --disable-tqdm "
                   f"--dataset-name random --num-prompts {run.num_prompts} --random-input-len {cfg.isl} "
                   f"--random-output-len {cfg.osl} --random-range-ratio {cfg.range_ratio} --ignore-eos "
                   f"--request-rate {'inf' if math.isinf(run.request_rate) else f'{run.request_rate:g}'} "
                   f"--percentile-metrics ttft,tpot,itl,e2el --max-concurrency {run.concurrency}")
        client = [
            "Starting initial single prompt test run...",
            "Initial test run completed. Starting main benchmark run...",
            f"Traffic request rate: {'inf' if math.isinf(run.request_rate) else run.request_rate}",
            "Burstiness factor: 1.0 (Poisson process)",
            f"Maximum request concurrency: {run.concurrency}",
            *printed_block(result),
        ]
        if run.kind == "warmup":
            lines += client
            continue
        name = f"results_concurrency_{run.concurrency}_gpus_{gpus[0]}_ctx_{gpus[1]}_gen_{gpus[2]}.json"
        lines += [
            f"Running benchmark with concurrency: {run.concurrency}",
            f"{_at(start, run.launched):%Y-%m-%d %H:%M:%S}",
            f"+ {command} --save-result --result-dir /logs/{result_dir} --result-filename {name}",
            *client,
            "+ set +x",
            f"{_at(start, run.exited):%Y-%m-%d %H:%M:%S}",
            f"Completed benchmark with concurrency: {run.concurrency}",
            "-----------------------------------------",
        ]
    lines.append(f"SA-Bench complete. Results in /logs/{result_dir}")
    return "\n".join(lines) + "\n"


# --- metadata, recipe, README -----------------------------------------------------------------------


def _nodes(gpus: int, per_node: int) -> int:
    return -(-gpus // per_node)


def _metadata(job: SweepJob, sim: SweepSimulation, plan: SweepPlan) -> dict:
    topo, cfg = sim.topology, sim.cfg
    per_node = cfg.gpu.gpus_per_node
    return {
        "version": "2.0",
        "orchestrator": True,
        "job_id": job.job_id,
        "job_name": f"sim-{topo.prefill.count}p{topo.decode.count}d-sa-bench-{_concurrency_list(plan)}",
        "generated_at": f"{job.start - timedelta(minutes=6):%Y-%m-%d %H:%M:%S}",
        "model": {"path": f"/models/{cfg.model.name}", "container": "nvcr.io/nvidia/ai-dynamo/vllm-runtime",
                  "precision": "fp4"},
        "resources": {
            "gpu_type": cfg.gpu.name.lower(), "gpus_per_node": per_node,
            "prefill_nodes": _nodes(topo.prefill.gpus, per_node), "decode_nodes": _nodes(topo.decode.gpus, per_node),
            "agg_nodes": None, "prefill_workers": topo.prefill.count, "decode_workers": topo.decode.count,
            "agg_workers": None, "gpus_per_prefill": topo.prefill.size, "gpus_per_decode": topo.decode.size,
            "gpus_per_agg": None,
        },
        "backend_type": "vllm",
        "frontend_type": "dynamo",
        "benchmark": {"type": "sa-bench", "isl": cfg.isl, "osl": cfg.osl},
        "tags": ["simulated", "pdwatch"],
        "simulated": {
            "by": "pdwatch simulate --sweep",
            "topology": cfg.topology, "seed": cfg.seed,
            "decode_num_gpu_blocks_override": cfg.decode.num_gpu_blocks_override,
            "kv_exhausted_from_concurrency": job.kv_exhausted_from,
            "clock": "UTC (vLLM/Dynamo lines, benchmark.out dates and result dates alike)",
        },
    }


def _recipe(job: SweepJob, sim: SweepSimulation, plan: SweepPlan) -> dict:
    meta = _metadata(job, sim, plan)
    cfg = sim.cfg

    def worker(settings: RoleSettings) -> dict:
        out = {"max-model-len": cfg.model.max_model_len, "max-num-batched-tokens": settings.max_num_batched_tokens,
               "max-num-seqs": settings.max_num_seqs, "gpu-memory-utilization": settings.gpu_memory_utilization}
        if settings.num_gpu_blocks_override is not None:
            out["num-gpu-blocks-override"] = settings.num_gpu_blocks_override
        return out

    return {
        "name": meta["job_name"],
        "model": meta["model"],
        "resources": {k: v for k, v in meta["resources"].items() if v is not None},
        "frontend": {"type": "dynamo"},
        "backend": {"type": "vllm", "vllm_config": {"prefill": worker(cfg.prefill), "decode": worker(cfg.decode)}},
        "benchmark": {"type": "sa-bench", "isl": cfg.isl, "osl": cfg.osl,
                      "concurrencies": _concurrency_list(plan), "req_rate": "inf"},
    }


def _readme(job: SweepJob, sim: SweepSimulation, plan: SweepPlan, interval: float) -> str:
    cfg, topo = sim.cfg, sim.topology
    rows = []
    for p in job.points:
        r = p.result
        rows.append(f"| {p.concurrency} | {p.start:%H:%M:%S}-{p.end:%H:%M:%S} | {r['output_throughput']:,.0f} | "
                    f"{r['output_throughput'] / job.gpus[0]:,.0f} | {r['output_throughput'] / p.concurrency:,.1f} | "
                    f"{r['median_ttft_ms']:,.0f} | {r['median_tpot_ms']:.1f} | {p.decode_kv_max_pct:.0f}% | "
                    f"{p.decode_waiting_max} | {p.decode_preemptions} |")
    exhausted = job.kv_exhausted_from
    verdict = (f"the decode KV cache runs out from **C={exhausted}** on (KV at 100%, requests waiting on decode, "
               "preemptions); below it nothing binds but the decode step time" if exhausted is not None
               else "the decode KV cache never runs out in this sweep")
    override = cfg.decode.num_gpu_blocks_override
    capacity = sim.decode_engines[0].cfg.kv_capacity
    cache = (f"The decode workers run with `--num-gpu-blocks-override {override}` ({override} blocks of "
             f"{cfg.model.block_size} tokens per engine)" if override is not None
             else f"The decode KV cache is what memory holds ({capacity:,} tokens per engine)")
    return f"""# Simulated sa-bench sweep, job {job.job_id}

Simulated, not measured (`pdwatch simulate --sweep`): one deployment `{cfg.topology}` ({topo.gpus}
GB200 GPUs: {job.gpus[1]} prefill, {job.gpus[2]} decode) of {cfg.model.name}, Dynamo frontend and
vLLM workers, run at the concurrencies {", ".join(str(c) for c in plan.concurrencies)} one after another
the way srt-slurm's `sa-bench/bench.sh` runs them: per concurrency C a warm-up (C x {plan.num_warmup_mult}
prompts at 250 req/s, not saved), then the measured run (C x {plan.num_prompts_mult} prompts, all at once
under `--max-concurrency C`), each client starting with a single test prompt; between runs the
load drops to nothing for a few seconds. ISL/OSL {cfg.isl}/{cfg.osl} (random_range_ratio
{cfg.range_ratio}), stats every {interval:g} s. Every clock is UTC.

{cache}, so {verdict}.

The simulator's own decode state per point: KV usage and waiting requests are the highest of
any decode engine during the window, preemptions the sum over them.

| C | window (UTC) | output tok/s | tok/s/GPU | tok/s/user | median TTFT ms | median TPOT ms | decode KV max | \
decode waiting max | decode preemptions |
|---|---|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}

The window is the result's own (`date` - `duration` to `date`, to the second in the file);
`benchmark.out`'s `date` lines around each run are a few seconds wider (the client's start-up
and its test prompt). The result files' output tokens agree with the decode stats lines' generation
throughput over each window; TTFT is the time from sending a request to its first token on a decode
engine (prefill queue, prompt, decode admission and KV pull included), TPOT the decode step time.
The simulator is fluid: `itls` holds one value per request (its mean gap), not one per token.

```
pdwatch report {job.logs}
```
"""
