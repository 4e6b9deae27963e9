"""Write the log files a real deployment writes, line by line, from a running ``Simulation``.

One file per endpoint, named like srt-slurm names them (``{node}_prefill_w{i}.out``,
``{node}_decode_w{i}.out``, ``{node}_agg_w{i}.out``) plus the Dynamo frontend's
``{node}_frontend_0.out``. Every line follows ``../shared/formats/README.md``:

- ``vllm``: vLLM ~0.21 (``vllm serve``): ``(APIServer pid=N) LEVEL MM-DD HH:MM:SS [file:line] msg``,
  the version logo, ``Deferred``/``Preemptions`` in the stats line, NIXL lease expiry;
- ``vllm-0.14``: vLLM 0.14: ``vLLM API server version``, no ``Deferred``, and a decode
  worker that reports the transferred prompts as its own prompt throughput (the PD
  double-count trap: before v0.16 every prompt shows up on both sides);
- ``dynamo``: a Dynamo 1.x vLLM worker (vLLM 0.18): the main process (stats, KV-transfer
  lines, warnings) in Dynamo's always-ANSI ``ISO-UTC LEVEL module.func: msg`` format, the
  EngineCore subprocesses in vLLM's format, in the same file.

vLLM stamps are local time (taken as UTC here); Dynamo's are UTC with microseconds.
"""

from __future__ import annotations

import math
import os
import random
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from .metrics import banner, exposition
from .model import Endpoint, Engine, Occurrence, Request, Simulation

ESC = "\x1b"
_DIM, _RESET, _ITALIC = f"{ESC}[2m", f"{ESC}[0m", f"{ESC}[3m"
_PY_COLOR = {"INFO": f"{ESC}[32m", "WARNING": f"{ESC}[33m", "ERROR": f"{ESC}[31m", "DEBUG": f"{ESC}[2m"}
_RUST_LEVEL = {"INFO": (f"{ESC}[32m", " INFO"), "WARN": (f"{ESC}[33m", " WARN"), "ERROR": (f"{ESC}[31m", "ERROR")}
_LOGO = [
    "",
    "       \u2588     \u2588     \u2588\u2584   \u2584\u2588",
    " \u2584\u2584 \u2584\u2588 \u2588     \u2588     \u2588 \u2580\u2584\u2580 \u2588  version {version}",
    "  \u2588\u2584\u2588\u2580 \u2588     \u2588     \u2588     \u2588  model   {model}",
    "   \u2580\u2580  \u2580\u2580\u2580\u2580\u2580 \u2580\u2580\u2580\u2580\u2580 \u2580     \u2580",
    "",
]
SITE = "/usr/local/lib/python3.12/dist-packages"


@dataclass(frozen=True)
class Style:
    name: str
    vllm_version: str
    dynamo: bool  # main process in Dynamo 1.x's VllmColorFormatter format
    decode_counts_transferred_prompt: bool  # < v0.16: decode's "prompt throughput" includes KV received
    deferred_field: bool  # ", Deferred: N reqs" (>= v0.20)
    lease_expiry: bool  # "... before lease expired." (>= 2026-05) instead of "... within N seconds."
    logo: bool  # version logo (>= v0.15) instead of "vLLM API server version"
    graph_profiling: bool  # "Profiling CUDA graph memory" & co (>= 2026-03)
    init_took_s: bool  # "took %.2f s (compilation: %.2f s)" (>= 2026-04) instead of "took %.2f seconds"
    format_gib: bool  # "Available KV cache memory: %s GiB" via format_gib (>= 2026-01) instead of "%.2f GiB"
    waiting_by_reason: bool  # vllm:num_requests_waiting_by_reason (>= 2026-04)
    prompt_by_source: bool  # vllm:prompt_tokens_by_source_total (>= 2026-02)
    where: dict[str, str]  # message -> "file.py:line" in the header


_WHERE_UP = {
    "logo": "utils.py:344", "args": "utils.py:278", "arch": "model.py:1745", "max_len": "model.py:2016",
    "chunked": "scheduler.py:230", "block": "interface.py:662", "mamba_pad": "interface.py:686",
    "ssm_layout": "mamba_utils.py:104", "engine": "core.py:113", "nixl_init": "worker.py:240",
    "load_start": "gpu_model_runner.py:4005", "weights": "default_loader.py:291", "loading": "gpu_model_runner.py:5132",
    "compile": "monitor.py:35", "graph_profile": "gpu_model_runner.py:6283", "graph_est": "gpu_model_runner.py:6369",
    "kv_mem": "gpu_worker.py:469", "kv_size": "kv_cache_utils.py:1733", "max_conc": "kv_cache_utils.py:1734",
    "graph_done": "gpu_model_runner.py:6452", "graph_pool": "gpu_worker.py:627", "init": "core.py:302",
    "serve": "api_server.py:1880", "stats": "loggers.py:271", "spec": "metrics.py:101", "xfer": "metrics.py:103",
    "no_stats": "loggers.py:1297", "nixl_fail": "worker.py:690", "recovered": "scheduler.py:2343",
    "expired": "worker.py:1780", "fatal": "core.py:1188", "output_handler": "async_llm.py:708",
    "proc_died": "utils.py:921", "warmup": "base.py:380", "blocks_override": "kv_cache_utils.py:1722",
}
_WHERE_014 = {
    **_WHERE_UP, "version": "api_server.py:1839", "args": "utils.py:253", "arch": "model.py:1510",
    "max_len": "model.py:1806", "chunked": "scheduler.py:227", "block": "config.py:420", "mamba_pad": "config.py:441",
    "ssm_layout": "mamba_utils.py:88", "engine": "core.py:98", "nixl_init": "nixl_connector.py:820",
    "load_start": "gpu_model_runner.py:3567", "weights": "default_loader.py:308", "loading": "gpu_model_runner.py:3602",
    "compile": "monitor.py:34", "free_mem": "gpu_worker.py:359", "kv_mem": "gpu_worker.py:392",
    "kv_size": "kv_cache_utils.py:1286", "max_conc": "kv_cache_utils.py:1287", "graph_done": "gpu_model_runner.py:4536",
    "init": "core.py:256", "serve": "api_server.py:1916", "stats": "loggers.py:236", "spec": "metrics.py:97",
    "xfer": "metrics.py:99", "no_stats": "loggers.py:164", "nixl_fail": "nixl_connector.py:1680",
    "recovered": "scheduler.py:1935", "expired": "nixl_connector.py:1125", "fatal": "core.py:843",
    "output_handler": "async_llm.py:480", "proc_died": "utils.py:874",
}
_WHERE_018 = {**_WHERE_UP, "engine": "core.py:105", "init": "core.py:288", "nixl_fail": "worker.py:655",
              "expired": "worker.py:1532", "recovered": "scheduler.py:2201", "graph_profile": "gpu_model_runner.py:6011",
              "graph_est": "gpu_model_runner.py:6097", "graph_done": "gpu_model_runner.py:6180"}

STYLES: dict[str, Style] = {
    "vllm": Style("vllm", "0.21.0", dynamo=False, decode_counts_transferred_prompt=False, deferred_field=True,
                  lease_expiry=True, logo=True, graph_profiling=True, init_took_s=True, format_gib=True,
                  waiting_by_reason=True, prompt_by_source=True, where=_WHERE_UP),
    "vllm-0.14": Style("vllm-0.14", "0.14.0", dynamo=False, decode_counts_transferred_prompt=True,
                       deferred_field=False, lease_expiry=False, logo=False, graph_profiling=False, init_took_s=False,
                       format_gib=False, waiting_by_reason=False, prompt_by_source=False, where=_WHERE_014),
    "dynamo": Style("dynamo", "0.18.0", dynamo=True, decode_counts_transferred_prompt=False, deferred_field=False,
                    lease_expiry=False, logo=False, graph_profiling=True, init_took_s=False, format_gib=True,
                    waiting_by_reason=False, prompt_by_source=True, where=_WHERE_018),
}
NOISE_LEVELS = ("full", "quiet")


@dataclass
class LogOptions:
    style: str = "vllm"
    noise: str = "full"  # full: per-request access/router lines; quiet: access log off, router at WARN
    interval: float = 10.0  # VLLM_LOG_STATS_INTERVAL
    start: datetime | None = None  # wall time of the benchmark start (t = 0); default: now - duration
    metrics_interval: float | None = None  # write a recorded /metrics scrape per endpoint this often
    scenario: str = "simulated"

    def __post_init__(self) -> None:
        if self.style not in STYLES:
            raise ValueError(f"unknown style {self.style!r} (choose from {', '.join(STYLES)})")
        if self.noise not in NOISE_LEVELS:
            raise ValueError(f"unknown noise level {self.noise!r} (choose from {', '.join(NOISE_LEVELS)})")
        if not self.interval > 0:
            raise ValueError("the stats interval must be positive")


# --- line envelopes ------------------------------------------------------------------------------


def vllm_record(proc: str | None, pid: int, level: str, ts: datetime, where: str, msg: str) -> str:
    """A vLLM record; multi-line messages repeat the header after ``\\r\\n`` (NewLineFormatter)."""
    head = (f"({proc} pid={pid}) " if proc else "") + f"{level} {ts:%m-%d %H:%M:%S} [{where}] "
    return head + ("\r\n" + head).join(msg.split("\n")) + "\n"


def iso(ts: datetime) -> str:
    return ts.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def dynamo_vllm_record(ts: datetime, level: str, target: str, msg: str) -> str:
    """Dynamo 1.x ``VllmColorFormatter``: vLLM records of a Dynamo worker's main process (always ANSI)."""
    return f"{_DIM}{iso(ts)}{_RESET} {_PY_COLOR[level]}{level:>5}{_RESET} {_DIM}{target}{_RESET}{_DIM}:{_RESET} {msg}\n"


def rust_record(ts: datetime, level: str, target: str, msg: str, fields: tuple[tuple[str, str], ...] = ()) -> str:
    """tracing-subscriber's compact format with ANSI (Dynamo's default, even into files)."""
    color, text = _RUST_LEVEL[level]
    extra = "".join(f" {_ITALIC}{k}{_RESET}{_DIM}={_RESET}{v}" for k, v in fields)
    return f"{_DIM}{iso(ts)}{_RESET} {color}{text}{_RESET} {_DIM}{target}{_RESET}{_DIM}:{_RESET} {msg}{extra}\n"


def uvicorn_access(client: str, method: str, path: str, status: int = 200) -> str:
    return f'INFO:     {client} - "{method} {path} HTTP/1.1" {status} OK\n'


def format_gib(x: float) -> str:
    return str(round(x, 2))


def _f(x: float) -> str:
    """Python's str() of a float rounded to 3 places (how the NIXL stats dict prints)."""
    return str(round(x, 3))


# --- one endpoint's file ---------------------------------------------------------------------------


class EndpointLog:
    def __init__(self, run: LogRun, ep: Endpoint, path: Path) -> None:
        self.run = run
        self.ep = ep
        self.style = run.style
        self.path = path
        self.fh = open(path, "w", encoding="utf-8", newline="")  # noqa: SIM115 (closed by LogRun.close)
        rng = run.rng
        self.api_pid = rng.randrange(2000, 60000)
        self.core_pids = [self.api_pid + 60 + 11 * r + rng.randrange(0, 9) for r in range(len(ep.engines))]
        self.server_pids = [self.api_pid + 30 + i for i in range(ep.settings.api_server_count)]
        self.engine_uuid = _uuid(rng)
        self.ip = f"10.{rng.randrange(1, 250)}.{rng.randrange(0, 250)}.{rng.randrange(2, 250)}"
        self.stats_on = ep.settings.api_server_count == 1
        self.ready_at = -rng.uniform(8.0, 20.0)  # server up, stats loop started (s before the load)
        self.started_at = self.ready_at - rng.uniform(95.0, 110.0)
        # vLLM's stats loop ticks every `interval` seconds from the server's start; whole seconds for short stamps.
        interval = run.opts.interval
        phase = math.ceil(self.ready_at) % interval if interval >= 1 else 0.0
        self.next_stats = phase + (math.floor(-phase / interval) + 1) * interval  # the first tick after t = 0
        self.last_stats_t = self.next_stats - interval
        self.prev: dict[int, tuple[float, float, int, float, float]] = {}
        self.prev_active: dict[int, bool] = {}
        self.xfer_failures: dict[int, int] = {}
        self.closed = False
        self.buffer: list[tuple[float, int, str]] = []

    # -- buffered output, ordered by time within a tick --
    def add(self, t: float, text: str) -> None:
        self.buffer.append((t, len(self.buffer), text))

    def flush(self) -> None:
        if self.buffer:
            self.buffer.sort()
            self.fh.write("".join(text for _, _, text in self.buffer))
            self.buffer.clear()
        self.fh.flush()

    def ts(self, t: float) -> datetime:
        return self.run.start + timedelta(seconds=t)

    # -- record helpers --
    def main(self, t: float, level: str, key: str, msg: str, target: str | None = None) -> None:
        """A record of the process that owns AsyncLLM: the API server, or Dynamo's main process."""
        if self.style.dynamo:
            self.add(t, dynamo_vllm_record(self.ts(t), level, target or _target(key), msg))
        else:
            self.add(t, vllm_record("APIServer", self.api_pid, level, self.ts(t), self.style.where.get(key, key), msg))

    def core(self, t: float, rank: int, level: str, key: str, msg: str) -> None:
        proc = f"EngineCore_DP{rank}" if len(self.ep.engines) > 1 else "EngineCore"
        self.add(t, vllm_record(proc, self.core_pids[rank], level, self.ts(t), self.style.where.get(key, key), msg))

    def core_raw(self, t: float, rank: int, text: str) -> None:
        proc = f"EngineCore_DP{rank}" if len(self.ep.engines) > 1 else "EngineCore"
        self.add(t, f"({proc} pid={self.core_pids[rank]}) {text}")

    # -- start-up ---------------------------------------------------------------------------
    def startup(self) -> None:
        run, ep, st = self.run, self.ep, self.style
        model = run.sim.cfg.model
        cfg = ep.engines[0].cfg
        t = self.started_at
        if not st.dynamo:
            if st.logo:
                logo = "\n".join(_LOGO).format(version=st.vllm_version, model=model.name)
                self.main(t, "INFO", "logo", logo)
            else:
                self.main(t, "INFO", "version", f"vLLM API server version {st.vllm_version}")
        else:
            if ep.role == "decode":
                self.add(t, rust_record(self.ts(t), "INFO", "main.init", "Skipping KV event publisher setup for decode worker"))
        self.main(t + 0.3, "INFO", "args", f"non-default args: {self.non_default_args()}", "utils.log_non_default_args")
        self.main(t + 2.1, "INFO", "arch", f"Resolved architecture: {model.architecture}", "model.__post_init__")
        self.main(t + 2.1, "INFO", "max_len", f"Using max model len {model.max_model_len}", "model.get_and_verify_max_len")
        self.main(t + 2.2, "INFO", "chunked",
                  f"Chunked prefill is enabled with max_num_batched_tokens={cfg.max_num_batched_tokens}.",
                  "scheduler.__post_init__")
        self.main(t + 2.3, "INFO", "block", f"Setting attention block size to {cfg.block_size} tokens to ensure that "
                  "attention page size is >= mamba page size.", "interface.update_block_size_for_backend")
        self.main(t + 2.3, "INFO", "mamba_pad", "Padding mamba page size by 0.78% to ensure that mamba page size "
                  "and attention page size are exactly equal.", "interface.update_block_size_for_backend")
        if ep.settings.ssm_conv_layout:
            self.main(t + 2.4, "INFO", "ssm_layout", "VLLM_SSM_CONV_STATE_LAYOUT env detected. Setting SSM conv state "
                      f"layout to {ep.settings.ssm_conv_layout}.", "mamba_utils.get_conv_state_layout")
        # stderr of a child process before vLLM decorates it: no prefix, no header
        self.add(t + 4.0, f"{SITE}/torch/cuda/__init__.py:63: FutureWarning: The pynvml package is deprecated. "
                 "Please install nvidia-ml-py instead.\n  import pynvml  # type: ignore[import]\n")
        for rank in range(len(ep.engines)):
            self.engine_startup(rank, t + 6.0 + 0.05 * rank)
        ready = self.ready_at
        if not st.dynamo:
            if ep.settings.api_server_count > 1:
                for i, pid in enumerate(self.server_pids):
                    self.add(ready - 1.5 + 0.01 * i, vllm_record(
                        f"ApiServer_{i}", pid, "WARNING", self.ts(ready - 1.5 + 0.01 * i), st.where["no_stats"],
                        "AsyncLLM created with api_server_count more than 1; disabling stats logging to avoid "
                        "incomplete stats."))
            url = f"http://0.0.0.0:{ep.port}"
            if st.logo:
                self.main(ready - 0.5, "INFO", "serve", f"Starting vLLM server on {url}")
            else:
                self.main(ready - 0.5, "INFO", "serve", f"Starting vLLM API server 0 on {url}")
            servers = ([("", self.api_pid)] if ep.settings.api_server_count == 1 else
                       [(f"(ApiServer_{i} pid={pid}) ", pid) for i, pid in enumerate(self.server_pids)])
            for prefix, pid in servers:  # uvicorn's own lines: no vLLM header
                self.add(ready - 0.4, f"{prefix}INFO:     Started server process [{pid}]\n")
                self.add(ready - 0.4, f"{prefix}INFO:     Waiting for application startup.\n")
                self.add(ready - 0.3, f"{prefix}INFO:     Application startup complete.\n")
        elif ep.settings.api_server_count > 1:
            self.main(ready - 1.0, "WARNING", "no_stats", "AsyncLLM created with api_server_count more than 1; "
                      "disabling stats logging to avoid incomplete stats.", "loggers.__init__")
        if not st.dynamo and st.logo and ep.role in ("agg", "decode"):
            self.warmup_traceback(ready - 2.0)

    def engine_startup(self, rank: int, t: float) -> None:
        ep, st, run = self.ep, self.style, self.run
        model = run.sim.cfg.model
        cfg = ep.engines[rank].cfg
        mem = cfg.memory
        rng = run.rng
        if rank == 0:
            self.core(t, 0, "INFO", "engine", f"Initializing a V1 LLM engine (v{st.vllm_version}) with config: "
                      + self.engine_config_repr())
        if ep.group.kind == "DEP" and len(ep.engines) > 1 and run.opts.noise == "full":
            self.core(t + 1.0, rank, "INFO", "parallel_state.py:1325",
                      f"rank {rank} in world size {len(ep.engines)} is assigned as DP rank {rank}, PP rank 0, "
                      f"TP rank 0, EP rank {rank}")
        if run.sim.topology.disaggregated:
            self.core(t + 2.0, rank, "INFO", "nixl_init", f"Initializing NIXL worker {_uuid(rng)}")
        self.core(t + 2.5, rank, "INFO", "load_start", f"Starting to load model {model.name}...")
        load_s = rng.uniform(38.0, 46.0)
        if rank == 0:
            self.core_raw(t + 3.0 + load_s, 0, _progress("Loading safetensors checkpoint shards", 94, load_s,
                                                         completed=True))
        self.core(t + 3.0 + load_s, rank, "INFO", "weights", f"Loading weights took {load_s:.2f} seconds")
        self.core(t + 3.2 + load_s, rank, "INFO", "loading",  # format_gib since ~v0.14 (all styles here)
                  f"Model loading took {format_gib(mem.weights_gib)} GiB memory and "
                  f"{load_s + rng.uniform(1.5, 3.0):.6f} seconds")
        t2 = t + 3.2 + load_s
        compile_s = rng.uniform(16.0, 21.0)
        self.core(t2 + compile_s, rank, "INFO", "compile", f"torch.compile takes {compile_s:.2f} s in total")
        t3 = t2 + compile_s + 0.5
        n_sizes = len(cfg.capture_sizes)
        if st.graph_profiling:
            self.core(t3, rank, "INFO", "graph_profile", f"Profiling CUDA graph memory: PIECEWISE={n_sizes} "
                      f"(largest={cfg.capture_max}), FULL={n_sizes} (largest={cfg.capture_max})")
            self.core(t3 + 1.5, rank, "INFO", "graph_est", f"Estimated CUDA graph memory: {mem.cudagraph_gib:.2f} GiB total")
        if not st.graph_profiling:
            used = mem.total_gib * mem.utilization
            self.core(t3 + 2.0, rank, "INFO", "free_mem", (
                f"Free memory on device ({mem.total_gib - 0.6:.2f}/{mem.total_gib} GiB) on startup. Desired GPU "
                f"memory utilization is ({mem.utilization}, {used:.2f} GiB). Actual usage is {mem.weights_gib:.2f} GiB "
                f"for weight, {mem.activation_gib:.2f} GiB for peak activation, {mem.non_torch_gib:.2f} GiB for "
                f"non-torch memory, and {mem.cudagraph_gib:.2f} GiB for CUDAGraph memory. Replace "
                f"gpu_memory_utilization config with `--kv-cache-memory={int(mem.kv_gib * 2**30)}` to fit into "
                f"requested memory, or `--kv-cache-memory={int((mem.kv_gib + mem.total_gib - 0.6 - used) * 2**30)}` "
                f"to fully utilize gpu memory. Current kv cache memory in use is {int(mem.kv_gib * 2**30)} bytes."))
        kv_gib = format_gib(mem.kv_gib) if st.format_gib else f"{mem.kv_gib:.2f}"
        self.core(t3 + 2.0, rank, "INFO", "kv_mem", f"Available KV cache memory: {kv_gib} GiB")
        override = ep.settings.num_gpu_blocks_override
        if override is not None:
            memory_blocks = mem.kv_tokens(model.kv_bytes_per_token, cfg.block_size) // cfg.block_size
            self.core(t3 + 2.05, rank, "INFO", "blocks_override",
                      f"Overriding num_gpu_blocks={memory_blocks} with num_gpu_blocks_override={override}")
        self.core(t3 + 2.1, rank, "INFO", "kv_size", f"GPU KV cache size: {cfg.kv_capacity:,} tokens")
        conc = cfg.kv_capacity / model.max_model_len
        self.core(t3 + 2.1, rank, "INFO", "max_conc",
                  f"Maximum concurrency for {model.max_model_len:,} tokens per request: {conc:.2f}x")
        capture_s = rng.uniform(14.0, 24.0)
        if rank == 0:
            half = capture_s / 2
            self.core_raw(t3 + 2.5 + half, 0, _progress("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)",
                                                        n_sizes, half, bar=True))
            self.core_raw(t3 + 2.5 + capture_s, 0, _progress("Capturing CUDA graphs (decode, FULL)", n_sizes, half,
                                                             bar=True))
        took = mem.cudagraph_gib * rng.uniform(0.92, 0.99)
        self.core(t3 + 2.6 + capture_s, rank, "INFO", "graph_done",
                  f"Graph capturing finished in {capture_s:.0f} secs, took {took:.2f} GiB")
        if st.graph_profiling:
            diff = mem.cudagraph_gib - took
            self.core(t3 + 2.6 + capture_s, rank, "INFO", "graph_pool",
                      f"CUDA graph pool memory: {format_gib(took)} GiB (actual), {format_gib(mem.cudagraph_gib)} GiB "
                      f"(estimated), difference: {format_gib(diff)} GiB ({100 * diff / mem.cudagraph_gib:.1f}%).")
        init_s = t3 + 2.7 + capture_s - t
        if st.init_took_s:
            msg = f"init engine (profile, create kv cache, warmup model) took {init_s:.2f} s (compilation: {compile_s:.2f} s)"
        else:
            msg = f"init engine (profile, create kv cache, warmup model) took {init_s:.2f} seconds"
        self.core(t3 + 2.7 + capture_s, rank, "INFO", "init", msg)

    def warmup_traceback(self, t: float) -> None:
        """A harmless logged traceback many real start-ups have (chat-template warmup)."""
        msg = "\n".join([
            "Chat template warmup failed",
            "Traceback (most recent call last):",
            f'  File "{SITE}/vllm/renderers/base.py", line 373, in warmup',
            '    self.render_chat([[{"role": "user", "content": "warmup"}]], chat_params)',
            f'  File "{SITE}/vllm/renderers/base.py", line 1301, in render_chat',
            "    rendered = [",
            "               ^",
            f'  File "{SITE}/jinja2/environment.py", line 1295, in render',
            "    self.environment.handle_exception()",
            '  File "<template>", line 47, in top-level template code',
            "jinja2.exceptions.UndefinedError: 'tools' is undefined",
        ])
        self.main(t, "WARNING", "warmup", msg)

    def non_default_args(self) -> str:
        ep, run = self.ep, self.run
        s = ep.settings
        model = run.sim.cfg.model
        parts: list[tuple[str, str]] = []
        if not self.style.dynamo:
            parts += [("model_tag", repr(model.name)), ("host", "'0.0.0.0'"), ("port", str(ep.port))]
        parts += [("model", repr(model.name)), ("trust_remote_code", "True"), ("max_model_len", str(model.max_model_len))]
        if ep.settings.block_size:
            parts.append(("block_size", str(ep.settings.block_size)))
        if ep.group.kind == "DEP" and ep.group.size > 1:
            parts.append(("data_parallel_size", str(ep.group.size)))
            parts.append(("enable_expert_parallel", "True"))
        elif ep.group.size > 1:
            parts.append(("tensor_parallel_size", str(ep.group.size)))
            if ep.group.kind == "TEP":
                parts.append(("enable_expert_parallel", "True"))
        if s.api_server_count != 1 and not self.style.dynamo:
            parts.append(("api_server_count", str(s.api_server_count)))
        if s.gpu_memory_utilization != 0.9:
            parts.append(("gpu_memory_utilization", str(s.gpu_memory_utilization)))
        if "enable_prefix_caching" not in s.defaults:
            parts.append(("enable_prefix_caching", str(s.enable_prefix_caching)))
        if "max_num_batched_tokens" not in s.defaults:
            parts.append(("max_num_batched_tokens", str(s.max_num_batched_tokens)))
        if "max_num_seqs" not in s.defaults:
            parts.append(("max_num_seqs", str(s.max_num_seqs)))
        if "async_scheduling" not in s.defaults or not s.async_scheduling:
            parts.append(("async_scheduling", str(s.async_scheduling)))
        if run.sim.topology.disaggregated:
            parts.append(("mamba_ssm_cache_dtype", "'bfloat16'"))
        parts.append(("language_model_only", "True"))
        if s.spec_tokens:
            parts.append(("speculative_config", f"{{'method': 'mtp', 'num_speculative_tokens': {s.spec_tokens}}}"))
        if s.max_cudagraph_capture_size is not None:
            parts.append(("max_cudagraph_capture_size", str(s.max_cudagraph_capture_size)))
        if s.num_gpu_blocks_override is not None:
            parts.append(("num_gpu_blocks_override", str(s.num_gpu_blocks_override)))
        if not self.style.dynamo and run.opts.noise == "quiet":
            parts.append(("disable_uvicorn_access_log", "True"))
        if run.sim.topology.disaggregated:
            policy = ", kv_load_failure_policy='recompute'" if self.style.vllm_version >= "0.15" else ""
            parts.append(("kv_transfer_config", (
                f"KVTransferConfig(kv_connector='NixlConnector', engine_id='{self.engine_uuid}', "
                "kv_buffer_device='cuda', kv_buffer_size=1000000000.0, kv_role='kv_both', kv_rank=None, "
                "kv_parallel_size=1, kv_ip='127.0.0.1', kv_port=14579, kv_connector_extra_config={}, "
                f"kv_connector_module_path=None, enable_permute_local_kv=False{policy})")))
        return "{" + ", ".join(f"'{k}': {v}" for k, v in parts) + "}"

    def engine_config_repr(self) -> str:
        ep, run = self.ep, self.run
        model = run.sim.cfg.model
        cfg = ep.engines[0].cfg
        dp = ep.group.size if ep.group.kind == "DEP" else 1
        tp = 1 if ep.group.kind == "DEP" else ep.group.size
        spec = (f"SpeculativeConfig(method='mtp', model='{model.name}', num_spec_tokens={cfg.spec_tokens})"
                if cfg.spec_tokens else "None")
        sizes = ", ".join(str(s) for s in cfg.capture_sizes)
        return (
            f"model='{model.name}', speculative_config={spec}, tokenizer='{model.name}', skip_tokenizer_init=False, "
            "tokenizer_mode=auto, revision=None, tokenizer_revision=None, trust_remote_code=True, "
            f"dtype=torch.bfloat16, max_seq_len={model.max_model_len}, download_dir=None, load_format=auto, "
            f"tensor_parallel_size={tp}, pipeline_parallel_size=1, data_parallel_size={dp}, "
            "disable_custom_all_reduce=False, quantization=modelopt_fp4, enforce_eager=False, kv_cache_dtype=auto, "
            "device_config=cuda, structured_outputs_config=StructuredOutputsConfig(backend='auto', "
            "disable_any_whitespace=False, disable_additional_properties=False, reasoning_parser=''), "
            "observability_config=ObservabilityConfig(show_hidden_metrics_for_version=None, "
            "otlp_traces_endpoint=None, collect_detailed_traces=None, cudagraph_metrics=False), seed=0, "
            f"served_model_name={model.name}, enable_prefix_caching={ep.settings.enable_prefix_caching}, "
            "enable_chunked_prefill=True, pooler_config=None, compilation_config={'mode': "
            "<CompilationMode.VLLM_COMPILE: 3>, 'debug_dump_path': None, 'cache_dir': '', 'backend': 'inductor', "
            "'custom_ops': ['none'], 'splitting_ops': ['vllm::unified_attention', "
            "'vllm::unified_attention_with_output', 'vllm::mamba_mixer2', 'vllm::gdn_attention_core'], "
            "'compile_sizes': [], 'inductor_compile_config': {'enable_auto_functionalized_v2': False}, "
            "'cudagraph_mode': <CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>, 'cudagraph_num_of_warmups': 1, "
            f"'cudagraph_capture_sizes': [{sizes}], 'cudagraph_copy_inputs': False, 'pass_config': "
            "{'fuse_norm_quant': False, 'fuse_act_quant': False}, "
            f"'max_cudagraph_capture_size': {cfg.capture_max}, 'local_cache_dir': None}}"
        )

    # -- periodic stats -----------------------------------------------------------------------
    def stats_due(self, now: float) -> bool:
        return self.stats_on and self.ep.alive and self.next_stats <= now + 1e-6

    def write_stats(self, t: float) -> None:
        elapsed = t - self.last_stats_t
        self.last_stats_t = t
        self.next_stats = t + self.run.opts.interval
        st = self.style
        for eng in self.ep.engines:
            prompt = eng.prompt_local
            if st.decode_counts_transferred_prompt:
                prompt += eng.prompt_external
            prev = self.prev.get(eng.rank, (0.0, 0.0, 0, 0.0, 0.0))
            cur = (prompt, eng.gen_tokens, eng.preemptions, eng.drafted, eng.accepted)
            self.prev[eng.rank] = cur
            d_prompt, d_gen = cur[0] - prev[0], cur[1] - prev[1]
            d_pre = cur[2] - prev[2]
            active = d_prompt > 1e-6 or d_gen > 1e-6
            samples = eng.xfer_samples
            eng.xfer_samples = []
            fails = self.xfer_failures.pop(eng.rank, 0)
            if not active and not self.prev_active.get(eng.rank, False):
                continue  # logged at DEBUG when idle: not in the file
            self.prev_active[eng.rank] = active
            parts = [f"Avg prompt throughput: {d_prompt / elapsed:.1f} tokens/s",
                     f"Avg generation throughput: {d_gen / elapsed:.1f} tokens/s",
                     f"Running: {eng.running_count()} reqs", f"Waiting: {eng.waiting_count()} reqs"]
            if st.deferred_field and eng.deferred_count() > 0:
                parts.append(f"Deferred: {eng.deferred_count()} reqs")
            if d_pre > 0:
                parts.append(f"Preemptions: {d_pre}")
            parts.append(f"GPU KV cache usage: {100.0 * eng.kv_fraction():.1f}%")
            parts.append(f"Prefix cache hit rate: {0.0:.1f}%")
            if self.run.sim.topology.disaggregated:
                parts.append(f"External prefix cache hit rate: {eng.external_hit_pct():.1f}%")
            at = t + 0.000113 * eng.rank  # one burst: a few microseconds apart (visible in Dynamo's stamps)
            self.main(at, "INFO", "stats", f"Engine {eng.rank:03d}: " + ", ".join(parts), "loggers.log")
            if eng.cfg.spec_tokens and d_gen > 0:
                self.main(at + 0.00002, "INFO", "spec", _spec_line(eng, cur[3] - prev[3], cur[4] - prev[4], elapsed),
                          "metrics.log")
            if samples or fails:
                self.main(at + 0.00004, "INFO", "xfer", "KV Transfer metrics: " + _xfer_metrics(samples, self.run.rng),
                          "metrics.log")

    # -- events -------------------------------------------------------------------------------------
    def access(self, t: float, client: str, method: str, path: str, status: int = 200) -> None:
        line = uvicorn_access(client, method, path, status)
        if self.ep.settings.api_server_count > 1:  # one of the API server processes answered
            i = self.run.rng.randrange(self.ep.settings.api_server_count)
            line = f"(ApiServer_{i} pid={self.server_pids[i]}) {line}"
        self.add(t, line)

    def xfer_failure(self, t: float, eng: Engine, req: Request, remote: Engine | None, remote_log: EndpointLog | None) -> None:
        blocks = math.ceil(req.isl / eng.cfg.block_size)
        first = self.run.rng.randrange(100, 4000)
        context = {
            "failure_type": "'transfer_failed'", "request_id": f"'{req.request_id}'",
            "engine_id": f"'{self.engine_uuid}'",
            "remote_engine_id": f"'{remote_log.engine_uuid if remote_log else 'unknown'}'",
            "remote_host": f"'{remote_log.ip if remote_log else '0.0.0.0'}'", "remote_port": str(5600 + (remote.rank if remote else 0)),
            "num_local_blocks": str(blocks), "num_remote_blocks": str(blocks),
            "local_block_ids_sample": f"[{first}, {first + 1}, {first + 2}]",
        }
        ctx = "{" + ", ".join(f"'{k}': {v}" for k, v in context.items()) + "}"
        self.core(t, eng.rank, "ERROR", "nixl_fail", f"NIXL transfer failure: transfer_failed | Context: {ctx}")
        self.core(t + 0.01, eng.rank, "WARNING", "recovered",
                  f"Recovered from KV load failure: 1 request(s) rescheduled ({req.isl} tokens affected).")
        self.xfer_failures[eng.rank] = self.xfer_failures.get(eng.rank, 0) + 1

    def kv_expired(self, t: float, eng: Engine, req: Request) -> None:
        if self.style.lease_expiry:
            msg = (f"Releasing expired KV blocks for request {req.request_id} which were retrieved by 0 remote "
                   "worker(s) before lease expired.")
        else:
            msg = (f"Releasing expired KV blocks for request {req.request_id} which were retrieved by 0 decode "
                   f"worker(s) within {int(self.run.sim.cfg.kv_lease_s)} seconds.")
        self.core(t, eng.rank, "WARNING", "expired", msg)

    def crash(self, t: float, eng: Engine) -> None:
        """A CUDA OOM in one engine core: its traceback, the API server's, then the server goes away."""
        st = self.style
        rank = eng.rank
        local_gpu = rank % self.run.sim.cfg.gpu.gpus_per_node
        total = eng.cfg.memory.total_gib
        frames = [
            "EngineCore encountered a fatal error.",
            "Traceback (most recent call last):",
            f'  File "{SITE}/vllm/v1/engine/core.py", line 1179, in run_engine_core',
            "    engine_core.run_busy_loop()",
            f'  File "{SITE}/vllm/v1/engine/core.py", line 1206, in run_busy_loop',
            "    self._process_engine_step()",
            f'  File "{SITE}/vllm/v1/engine/core.py", line 1239, in _process_engine_step',
            "    outputs, model_executed = self.step_fn()",
            "                              ^^^^^^^^^^^^^^",
            f'  File "{SITE}/vllm/v1/engine/core.py", line 403, in step_with_batch_queue',
            "    model_output = future.result()",
            "                   ^^^^^^^^^^^^^^^",
            f'  File "{SITE}/vllm/v1/worker/gpu_model_runner.py", line 3190, in execute_model',
            "    model_output = self._model_forward(",
            "                   ^^^^^^^^^^^^^^^^^^^^",
            f'  File "{SITE}/vllm/model_executor/layers/fused_moe/layer.py", line 2004, in forward_impl',
            "    final_hidden_states = self.quant_method.apply(",
            "                          ^^^^^^^^^^^^^^^^^^^^^^^^",
            f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU {local_gpu} has a total "
            f"capacity of {total:.2f} GiB of which 1.07 GiB is free. Including non-PyTorch memory, this process has "
            f"{total - 1.07:.2f} GiB memory in use. Of the allocated memory {total - 5.4:.2f} GiB is allocated by "
            "PyTorch, and 2.61 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is "
            "large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
            "documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
        ]
        self.core(t, rank, "ERROR", "fatal", "\n".join(frames))
        dead = [
            "AsyncLLM output_handler failed.",
            "Traceback (most recent call last):",
            f'  File "{SITE}/vllm/v1/engine/async_llm.py", line 664, in output_handler',
            "    outputs = await engine_core.get_output_async()",
            "              ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
            f'  File "{SITE}/vllm/v1/engine/core_client.py", line 1012, in get_output_async',
            "    raise self._format_exception(outputs) from None",
            "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) "
            "for the root cause.",
        ]
        if st.dynamo:
            self.main(t + 0.2, "ERROR", "output_handler", dead[0], "async_llm.output_handler")
            self.add(t + 0.2, "\n".join(dead[1:]) + "\n")
        else:
            self.main(t + 0.2, "ERROR", "output_handler", "\n".join(dead))
            self.main(t + 0.3, "ERROR", "proc_died", f"Engine core process EngineCore_DP{rank} died unexpectedly.")
            self.add(t + 1.1, "INFO:     Shutting down\n")
            self.add(t + 1.2, "INFO:     Waiting for application shutdown.\n")
            self.add(t + 1.2, "INFO:     Application shutdown complete.\n")
            self.add(t + 1.3, f"INFO:     Finished server process [{self.api_pid}]\n")

    def close(self) -> None:
        if not self.closed:
            self.flush()
            self.fh.close()
            self.closed = True


class FrontendLog:
    """Dynamo's frontend (Rust, compact format with ANSI): routing and discovery lines."""

    def __init__(self, run: LogRun, path: Path) -> None:
        self.run = run
        self.path = path
        self.fh = open(path, "w", encoding="utf-8", newline="")  # noqa: SIM115
        self.buffer: list[tuple[float, int, str]] = []
        self.closed = False

    def add(self, t: float, level: str, target: str, msg: str, fields: tuple[tuple[str, str], ...] = ()) -> None:
        self.buffer.append((t, len(self.buffer), rust_record(self.run.start + timedelta(seconds=t), level, target,
                                                              msg, fields)))

    def flush(self) -> None:
        if self.buffer:
            self.buffer.sort()
            self.fh.write("".join(text for _, _, text in self.buffer))
            self.buffer.clear()
        self.fh.flush()

    def startup(self, t: float, decode_ready: float, prefill_ready: float) -> None:
        """Router start-up at ``t``; the model appears when the first decode worker is up, then its prefill router."""
        name = f'"{self.run.sim.cfg.model.name}"'
        self.add(t, "INFO", "dynamo_llm::kv_router", "KV Routing initialized")
        self.add(t + 0.4, "INFO", "dynamo_llm::kv_router::subscriber",
                 "KV subscriber waiting for at least one worker instance...")
        self.add(t + 0.5, "INFO", "dynamo_llm::kv_router::subscriber", "Using NATS Core subscription (local_indexer mode)")
        t = decode_ready + 0.6
        self.add(t, "INFO", "dynamo_llm::discovery::watcher", "added model",
                 (("model_name", name), ("namespace", '"dynamo"')))
        self.add(t + 0.1, "INFO", "dynamo_llm::discovery::model", "Adding worker set to model")
        self.add(t + 0.2, "INFO", "dynamo_llm::discovery::watcher", "Chat completions is ready")
        self.add(t + 0.2, "INFO", "dynamo_llm::discovery::watcher", "Completions is ready")
        t = max(t, prefill_ready) + 0.7
        self.add(t, "INFO", "dynamo_llm::discovery::watcher",
                 "Prefill model detected, registering and activating prefill router")
        self.add(t, "INFO", "dynamo_llm::kv_router::prefill_router::activation", "Activating prefill router")
        self.add(t + 0.1, "INFO", "dynamo_llm::kv_router::prefill_router::activation",
                 "Prefill router activated successfully")
        self.add(t + 0.1, "INFO", "dynamo_llm::discovery::model_manager", "Activated prefill router for decode WorkerSet")
        self.add(t + 0.2, "INFO", "dynamo_llm::discovery::watcher",
                 "Prefill model registered and router activated successfully")

    def selected(self, t: float, eng: Engine, req: Request) -> None:
        block = eng.cfg.block_size
        if eng.role == "prefill":
            logit = (eng.queued_tokens + eng.kv_used) / block
            total = eng.cfg.kv_capacity // block
            msg = (f"Selected worker: worker_type=prefill, worker_id={eng.endpoint.worker_id} dp_rank={eng.rank}, "
                   f"logit: {logit:.3f}, cached blocks: 0, tree size: {len(eng.parked) + eng.in_flight()}, "
                   f"total blocks: {total}")
        else:
            logit = eng.kv_used / block
            msg = (f"Selected worker: worker_type=decode, worker_id={eng.endpoint.worker_id} dp_rank={eng.rank}, "
                   f"logit: {logit:.3f}")
        self.add(t, "INFO", "dynamo_kv_router::scheduling::selector", msg)

    def close(self) -> None:
        if not self.closed:
            self.flush()
            self.fh.close()
            self.closed = True


# --- the whole run ------------------------------------------------------------------------------------


class LogRun:
    """Writes a simulation's files as it advances: ``begin()``, then ``after_tick()`` per tick, ``close()``."""

    def __init__(self, sim: Simulation, out_dir: str | os.PathLike, opts: LogOptions) -> None:
        self.sim = sim
        self.opts = opts
        self.style = STYLES[opts.style]
        self.out = Path(out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.rng = random.Random(f"logs-{sim.cfg.seed}")
        if opts.start is None:  # fast-forward: the run ends now, so file times never lie ahead of their mtime
            now = datetime.now(timezone.utc).replace(microsecond=0)
            self.start = now - timedelta(seconds=sim.cfg.duration)
        else:
            self.start = opts.start
        self.logs = {ep.name: EndpointLog(self, ep, self.out / ep.filename) for ep in sim.endpoints}
        self.frontend: FrontendLog | None = None
        if sim.topology.disaggregated:
            node = sim.endpoints[0].node
            self.frontend = FrontendLog(self, self.out / f"{node}_frontend_0.out")
        self.metrics_dir = self.out / "metrics"
        self.next_scrape = opts.metrics_interval if opts.metrics_interval else None
        self.next_health = 5.0
        self.frontend_ip = f"10.{self.rng.randrange(1, 250)}.0.{self.rng.randrange(2, 250)}"
        self.prom_ip = f"10.{self.rng.randrange(1, 250)}.9.{self.rng.randrange(2, 250)}"
        self.created = (self.start - timedelta(seconds=20)).timestamp()
        sim.record_requests = opts.noise == "full"  # per-request lines: access log, router

    @property
    def paths(self) -> list[Path]:
        out = [log.path for log in self.logs.values()]
        if self.frontend is not None:
            out.append(self.frontend.path)
        return sorted(out)

    def begin(self) -> None:
        earliest = 0.0
        for log in self.logs.values():
            log.startup()
            earliest = min(earliest, log.started_at)
        if self.frontend is not None:
            ready = {role: min(log.ready_at for log in self.logs.values() if log.ep.role == role)
                     for role in ("prefill", "decode")}
            self.frontend.startup(earliest - 5.0, ready["decode"], ready["prefill"])
        self.flush()
        if self.opts.metrics_interval:
            self.metrics_dir.mkdir(exist_ok=True)
            for ep in self.sim.endpoints:
                (self.metrics_dir / f"{Path(ep.filename).stem}.metrics.txt").write_text("")

    def after_tick(self) -> None:
        sim = self.sim
        now = sim.t
        for occ in sim.take_occurrences():
            self.report(occ)
        if self.opts.noise == "full":
            while self.next_health <= now:
                for log in self.logs.values():
                    if log.ep.alive and not self.style.dynamo:
                        log.access(self.next_health, f"{self.frontend_ip}:{self.rng.randrange(30000, 60000)}", "GET",
                                   "/health")
                self.next_health += 30.0
        for log in self.logs.values():
            if log.stats_due(now):
                log.write_stats(log.next_stats)
        if self.next_scrape is not None and self.next_scrape <= now + 1e-6:
            self.scrape(self.next_scrape)
            self.next_scrape += self.opts.metrics_interval or 0.0
        self.flush()

    def report(self, occ: Occurrence) -> None:
        eng = occ.engine
        log = self.logs[eng.endpoint.name]
        t = occ.t
        if occ.kind == "route_prefill":
            if self.frontend is not None:
                self.frontend.selected(t, eng, occ.request)
        elif occ.kind == "route_decode":
            if self.frontend is not None:
                self.frontend.selected(t, eng, occ.request)
            src = occ.request.prefill_engine if occ.request else None
            if src is not None and not self.style.dynamo:
                self.logs[src.endpoint.name].access(t, f"{self.frontend_ip}:{self.rng.randrange(30000, 60000)}",
                                                    "POST", "/v1/completions")
        elif occ.kind == "done":
            if not self.style.dynamo:
                client = self.frontend_ip if self.frontend is not None else f"10.0.0.{self.rng.randrange(2, 250)}"
                log.access(t, f"{client}:{self.rng.randrange(30000, 60000)}", "POST", "/v1/completions")
        elif occ.kind == "xfer_fail":
            remote = occ.data.get("remote")
            log.xfer_failure(t, eng, occ.request, remote, self.logs.get(remote.endpoint.name) if remote else None)
        elif occ.kind == "kv_expired":
            log.kv_expired(t, eng, occ.request)
        elif occ.kind == "crash":
            log.crash(t, eng)
            if self.frontend is not None:
                self.frontend_crash(t, eng, occ.data.get("failed", []))
        elif occ.kind == "failed" and self.frontend is not None and occ.data.get("reason"):
            self.frontend.add(t, "WARN", "dynamo_llm::http::service::service_v2", "request completed with client "
                              "request error", (("status", "503"), ("latency_ms", "0")))

    def frontend_crash(self, t: float, eng: Engine, failed: list[Request]) -> None:
        fe = self.frontend
        assert fe is not None
        fe.add(t + 0.9, "WARN", "dynamo_llm::kv_router::push_router",
               f"Failed to free request {_uuid(self.rng)}: connection closed")
        for req in failed:
            latency = int((t - req.sent_at) * 1000)
            fe.add(t + 0.9 + self.rng.uniform(0.0, 0.2), "ERROR", "dynamo_llm::http::service::service_v2",
                   "request completed with server error", (("status", "500"), ("latency_ms", str(latency))))
        fe.add(t + 2.0, "INFO", "dynamo_llm::discovery::model", "Removed worker set from model")
        fe.add(t + 2.0, "INFO", "dynamo_llm::discovery::watcher", "removed model",
               (("model_name", f'"{self.sim.cfg.model.name}"'), ("namespace", '"dynamo"')))

    def scrape(self, t: float) -> None:
        when = self.start + timedelta(seconds=t)
        for ep in self.sim.endpoints:
            if not ep.alive:
                continue
            text = exposition(ep, self.sim.cfg.model.name, self.created, by_reason=self.style.waiting_by_reason,
                              by_source=self.style.prompt_by_source)
            head = banner(self.opts.scenario, "load", f"mid-run(+{t:.1f}s,endpoint={ep.name},"
                          f"in_flight={self.sim.in_flight()})", when, ep.port)
            with open(self.metrics_dir / f"{Path(ep.filename).stem}.metrics.txt", "a", encoding="utf-8") as fh:
                fh.write(head + "\n" + text)
            if self.opts.noise == "full" and not self.style.dynamo:
                self.logs[ep.name].access(t, f"{self.prom_ip}:{self.rng.randrange(30000, 60000)}", "GET", "/metrics")

    def flush(self) -> None:
        for log in self.logs.values():
            log.flush()
        if self.frontend is not None:
            self.frontend.flush()

    def close(self) -> None:
        for log in self.logs.values():
            log.close()
        if self.frontend is not None:
            self.frontend.close()


# --- helpers ------------------------------------------------------------------------------------------


def _target(key: str) -> str:
    return {"stats": "loggers.log", "spec": "metrics.log", "xfer": "metrics.log"}.get(key, key)


def _uuid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) % 4]}{h[17:20]}-{h[20:32]}"


def _progress(desc: str, total: int, seconds: float, *, completed: bool = False, bar: bool = False) -> str:
    """A tqdm progress bar as it lands in a file: every redraw after a carriage return, one newline at the end."""
    frames = []
    steps = sorted({0, *range(max(1, total // 6), total, max(1, total // 6)), total})
    for done in steps:
        elapsed = seconds * done / total
        left = seconds - elapsed
        rate = done / elapsed if elapsed > 0 else 0.0
        pct = int(100 * done / total)
        stamp = f"[{_mmss(elapsed)}<{_mmss(left) if done else '?'}, {f'{rate:5.2f}it/s' if done else '?it/s'}]"
        if completed:
            frames.append(f"{desc}: {pct:3d}% Completed | {done}/{total} {stamp}")
        else:
            filled = "\u2588" * (10 * done // total) + " " * (10 - 10 * done // total)
            frames.append(f"{desc}: {pct:3d}%|{filled if bar else ''}| {done}/{total} {stamp}")
    return "\r" + "\r".join(frames) + "\n"


def _mmss(s: float) -> str:
    s = int(round(s))
    return f"{s // 60:02d}:{s % 60:02d}"


def _spec_line(eng: Engine, drafted: float, accepted: float, elapsed: float) -> str:
    k = eng.cfg.spec_tokens
    drafts = drafted / k if k else 0.0
    mean_len = 1.0 + (accepted / drafts if drafts else 0.0)
    rates, p = [], 1.0
    for a in eng.cfg.spec_acceptance[:k]:
        p *= a
        rates.append(f"{p:.3f}")
    rate = 100.0 * accepted / drafted if drafted else float("nan")
    return (f"SpecDecoding metrics: Mean acceptance length: {mean_len:.2f}, Accepted throughput: "
            f"{accepted / elapsed:.2f} tokens/s, Drafted throughput: {drafted / elapsed:.2f} tokens/s, Accepted: "
            f"{int(accepted)} tokens, Drafted: {int(drafted)} tokens, Per-position acceptance rate: "
            f"{', '.join(rates)}, Avg Draft acceptance rate: {rate:.1f}%")


def _xfer_metrics(samples: list[tuple[float, float, float]], rng: random.Random) -> str:
    if not samples:
        keys = ["Num successful transfers=0", "Avg xfer time (ms)=0.0", "P90 xfer time (ms)=0.0",
                "Avg post time (ms)=0.0", "P90 post time (ms)=0.0", "Avg MB per transfer=0.0",
                "Throughput (MB/s)=0.0", "Avg number of descriptors=0.0"]
        return ", ".join(keys)
    ms = sorted(s[0] for s in samples)
    post = sorted(rng.uniform(0.15, 0.45) for _ in samples)
    mib = sum(s[1] for s in samples)
    n = len(samples)

    def p90(xs: list[float]) -> float:
        return xs[min(n - 1, int(math.ceil(0.9 * n)) - 1)]

    return ", ".join([
        f"Num successful transfers={n}", f"Avg xfer time (ms)={_f(sum(ms) / n)}", f"P90 xfer time (ms)={_f(p90(ms))}",
        f"Avg post time (ms)={_f(sum(post) / n)}", f"P90 post time (ms)={_f(p90(post))}",
        f"Avg MB per transfer={_f(mib / n)}", f"Throughput (MB/s)={_f(mib / (sum(ms) / 1000.0))}",
        f"Avg number of descriptors={round(sum(s[2] for s in samples) / n, 1)}",
    ])
