#!/usr/bin/env python3
"""Write a large, realistic mixed vLLM / NVIDIA Dynamo log, for benchmarking ``pdwatch parse``.

Why: issue 2 asks for parse throughput and peak memory on a file of >= 500 MB (and twice
that, to show memory stays flat). Real logs of that size are not in the repository, so
this script makes one: streaming, bounded memory, deterministic for a given ``--seed``,
about 11 s per 500 MB on one core.

What the file imitates: what a log collector gathers from one node of a prefill/decode
(P/D) deployment, all interleaved in time order:

* an NVIDIA Dynamo 1.x frontend/router (Rust ``tracing`` compact format, ANSI on, as it is
  by default even into files): dim ISO-UTC timestamp, coloured level (INFO green, DEBUG
  blue, WARN yellow), dim target, italic ``field`` + dim ``=`` + value, sometimes a bold
  span before the target;
* a Dynamo vLLM **decode** worker with DP ranks 4-7: its main process renders vLLM lines
  with Dynamo's ``VllmColorFormatter`` (``\\x1b[2m<ISO>Z\\x1b[0m \\x1b[32m INFO\\x1b[0m
  \\x1b[2mloggers.log\\x1b[0m\\x1b[2m:\\x1b[0m Engine 004: Avg prompt throughput: ...``);
  each stats line is followed by a ``KV Transfer metrics`` line (NIXL, decode side) and,
  on engines 006 and 007, a ``SpecDecoding metrics`` line; its EngineCore/Worker
  subprocesses log in vLLM's default format;
* a plain ``vllm serve`` **prefill** API server with DP=4 (engines 000-003):
  ``(APIServer pid=2871) INFO 03-31 18:22:15 [loggers.py:271] Engine 000: Avg prompt
  throughput: ...``, request logging (``--enable-log-requests``), uvicorn access lines,
  and its EngineCore/Worker subprocesses.

Line mix by count (steady state; measured: ``bench/out/*.mix.txt`` is written next to
each file, the start-up section adds < 0.01 %):

    ~3.9 %  vLLM stats lines, 8 engines, one per engine every 10 s of log time
            (Engine 000-003 plain form, Engine 004-007 Dynamo ANSI form)
    ~2.9 %  KV Transfer metrics (after every decode stats line) and SpecDecoding
            metrics (after engines 006/007)
    ~1.0 %  uvicorn HTTP access lines (``INFO:     10.0.3.7:45484 - "POST ..." 200 OK``)
    ~0.8 %  router ``Selected worker:`` lines (prefill and decode variants)
    ~0.4 %  Dynamo frontend DEBUG ``request completed`` lines
   ~48 %    other Dynamo Rust compact ANSI noise (DEBUG ~36 %, INFO ~11 %, WARN ~1 %)
    ~6 %    Dynamo Python lines routed through the Rust logger (``handlers.generate``)
   ~33 %    vLLM noise: EngineCore/Worker subprocess lines (INFO/DEBUG/WARNING) and
            APIServer request logging (``Received request ...`` lines are long)
    ~3 %    Dynamo worker main-process vLLM lines in the ANSI form (non-stats)

plus a start-up section at the top (Dynamo frontend start, vLLM logo, ``non-default
args``, a long engine-config line, tqdm progress lines with ``\\r``, KV-cache sizes,
routes), and roughly one multi-line traceback per 2-3 hours of log time (alternately a
vLLM ``logger.exception`` with the header repeated on ``\\r\\n`` continuation lines, and a
raw asyncio traceback on stderr without a header).

Timestamps advance realistically: ~20 lines per second of log time, stats every 10 s per
engine, monotonic across all sources (vLLM's local ``MM-DD HH:MM:SS`` is UTC, as in
containers; having no fraction, it can read up to 1 s behind a neighbouring Dynamo
stamp, as in real files), so the file is also a valid ``pdwatch`` replay input.
500 MiB covers about 33 hours of log time.

Sizes use binary units: ``500M`` = 500 MiB, ``1G`` = 1 GiB. Writing stops after the
first batch of 50 intervals (~0.5 MiB) that reaches the size, so files are up to ~1 MiB
over.
"""

from __future__ import annotations

import argparse
import calendar
import os
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone

MIB = 1 << 20
INTERVAL_S = 10.0  # VLLM_LOG_STATS_INTERVAL default
NOISE_PER_INTERVAL = (170, 215)  # noise lines per 10 s interval (uniform range)
TRACEBACK_EVERY = 900  # one traceback per this many intervals on average (~2.5 h)
MODEL = "Qwen/Qwen3-32B"

# --- ANSI rendering ---------------------------------------------------------------------------

ESC = "\x1b"
DIM, RESET, ITALIC, BOLD = f"{ESC}[2m", f"{ESC}[0m", f"{ESC}[3m", f"{ESC}[1m"
# tracing-subscriber compact: level right-aligned to 5 and coloured.
RUST_LEVEL = {
    "INFO": f"{ESC}[32m INFO{RESET}",
    "DEBUG": f"{ESC}[34mDEBUG{RESET}",
    "WARN": f"{ESC}[33m WARN{RESET}",
    "ERROR": f"{ESC}[31mERROR{RESET}",
}
# Dynamo's VllmColorFormatter: Python level name right-aligned to 5 (WARNING stays whole).
PY_LEVEL = {
    "INFO": f"{ESC}[32m INFO{RESET}",
    "DEBUG": f"{DIM}DEBUG{RESET}",
    "WARNING": f"{ESC}[33mWARNING{RESET}",
    "ERROR": f"{ESC}[31mERROR{RESET}",
}
COLON = f"{DIM}:{RESET}"


def rust_line(iso: str, level: str, target: str, msg: str, fields: str = "", span: str = "") -> str:
    """One Dynamo Rust ``tracing`` compact line (ANSI on, the default)."""
    span_part = f"{BOLD}{span}{RESET}{COLON}" if span else ""
    return f"{DIM}{iso}{RESET} {RUST_LEVEL[level]} {span_part}{DIM}{target}{RESET}{COLON} {msg}{fields}"


def py_line(iso: str, level: str, target: str, msg: str) -> str:
    """One vLLM line from a Dynamo worker main process (``VllmColorFormatter``, always ANSI)."""
    return f"{DIM}{iso}{RESET} {PY_LEVEL[level]} {DIM}{target}{RESET}{COLON} {msg}"


def fields(*pairs: tuple[str, object]) -> str:
    """Rust ``key=value`` fields: italic name, dim ``=``."""
    return "".join(f" {ITALIC}{k}{RESET}{DIM}={RESET}{v}" for k, v in pairs)


def vllm_line(proc: str, level: str, md: str, where: str, msg: str) -> str:
    """One line in vLLM's default format, with the ``(Name pid=N)`` process prefix."""
    return f"{proc} {level} {md} [{where}] {msg}"


# --- time -------------------------------------------------------------------------------------


class Clock:
    """Renders a POSIX time as Dynamo ISO-UTC (with µs) and vLLM ``MM-DD HH:MM:SS``.

    The second-resolution parts are cached: lines come ~20 per second, so strftime runs
    once per second of log time, not once per line.
    """

    def __init__(self) -> None:
        self._sec = -1
        self._iso = self._md = ""

    def stamps(self, t: float) -> tuple[str, str]:
        sec = int(t)
        if sec != self._sec:
            tm = time.gmtime(sec)
            self._sec = sec
            self._iso = time.strftime("%Y-%m-%dT%H:%M:%S", tm)
            self._md = time.strftime("%m-%d %H:%M:%S", tm)
        return f"{self._iso}.{int((t - sec) * 1e6):06d}Z", self._md


# --- the simulated deployment ------------------------------------------------------------------

API_PID = 2871
PREFILL_ENGINES = (0, 1, 2, 3)
DECODE_ENGINES = (4, 5, 6, 7)
SPEC_ENGINES = (6, 7)
API = f"(APIServer pid={API_PID})"
ENGINE_CORE = {e: f"(EngineCore_DP{e} pid={3120 + e if e < 4 else 4410 + e})" for e in PREFILL_ENGINES + DECODE_ENGINES}
WORKERS = [f"(Worker_DP{e}_TP{tp} pid={3300 + 10 * e + tp if e < 4 else 4600 + 10 * e + tp})"
           for e in PREFILL_ENGINES + DECODE_ENGINES for tp in (0, 1)]
WORKER_IDS = {"prefill": [7587889301234 + i for i in range(2)], "decode": [7587889305678 + i for i in range(2)]}


@dataclass
class EngineState:
    """A slow random walk behind one engine's stats lines, so values vary plausibly."""

    engine: int
    decode: bool
    running: float = 0.0
    waiting: float = 0.0
    kv: float = 0.0
    prefix_hit: float = 0.0

    def step(self, rng: random.Random) -> None:
        if self.decode:
            self.running = min(256.0, max(16.0, self.running + rng.gauss(0, 12)))
            self.kv = min(99.9, max(20.0, self.kv + rng.gauss(0, 3)))
            self.waiting = max(0.0, self.waiting + rng.gauss(0, 4) - (2 if self.kv < 90 else -1))
        else:
            self.running = min(32.0, max(0.0, self.running + rng.gauss(0, 3)))
            self.kv = min(60.0, max(1.0, self.kv + rng.gauss(0, 2)))
            self.waiting = max(0.0, self.waiting + rng.gauss(0, 6) - 1)
        self.prefix_hit = min(80.0, max(0.0, self.prefix_hit + rng.gauss(0, 0.3)))

    def message(self, rng: random.Random) -> str:
        """The stats message after the envelope (current vLLM format, optional fields in place)."""
        running, waiting = int(self.running), int(self.waiting)
        if self.decode:
            prompt = 0.0  # >= v0.16: a decode worker counts only locally computed prompt tokens
            gen = running * rng.uniform(9.0, 16.0)
        else:
            prompt = (running + 1) * rng.uniform(700.0, 1400.0)
            gen = running * rng.uniform(0.1, 1.2)
        parts = [f"Engine {self.engine:03d}: Avg prompt throughput: {prompt:.1f} tokens/s",
                 f"Avg generation throughput: {gen:.1f} tokens/s",
                 f"Running: {running} reqs", f"Waiting: {waiting} reqs"]
        if self.decode and self.kv > 97.5:
            parts.append(f"Preemptions: {rng.randint(1, 6)}")
        parts.append(f"GPU KV cache usage: {self.kv:.1f}%")
        parts.append(f"Prefix cache hit rate: {self.prefix_hit:.1f}%")
        if self.decode:
            parts.append(f"External prefix cache hit rate: {rng.uniform(94.0, 99.9):.1f}%")
        return ", ".join(parts)


def kv_transfer_message(rng: random.Random, running: int) -> str:
    n = max(1, int(running * rng.uniform(0.3, 0.9)))
    avg = rng.uniform(2.5, 9.0)
    mb = rng.choice((28.125, 40.0, 56.25))
    return (f"KV Transfer metrics: Num successful transfers={n}, Avg xfer time (ms)={avg:.3f}, "
            f"P90 xfer time (ms)={avg * rng.uniform(1.4, 2.2):.3f}, Avg post time (ms)={rng.uniform(0.1, 0.3):.3f}, "
            f"P90 post time (ms)={rng.uniform(0.3, 0.6):.3f}, Avg MB per transfer={mb}, "
            f"Throughput (MB/s)={mb / avg * 1000:.3f}, Avg number of descriptors={mb * 64:.1f}")


def spec_message(rng: random.Random) -> str:
    drafted = rng.randint(9000, 30000)
    rate = rng.uniform(0.35, 0.6)
    accepted = int(drafted * rate)
    pos = ", ".join(f"{p:.3f}" for p in (rate * 1.5, rate, rate * 0.55))
    return (f"SpecDecoding metrics: Mean acceptance length: {1 + 3 * rate:.2f}, "
            f"Accepted throughput: {accepted / 10:.2f} tokens/s, Drafted throughput: {drafted / 10:.2f} tokens/s, "
            f"Accepted: {accepted} tokens, Drafted: {drafted} tokens, Per-position acceptance rate: {pos}, "
            f"Avg Draft acceptance rate: {rate * 100:.1f}%")


# --- steady-state noise --------------------------------------------------------------------------


class Noise:
    """Makers of one noise line each; ``KINDS`` gives each maker's weight (share by count)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.recent: list[str] = [self._uuid() for _ in range(64)]  # request ids seen in several lines

    KINDS = (
        # name, weight (relative, per noise line)
        ("rust_debug", 37.0),
        ("rust_info", 11.5),
        ("rust_warn", 1.0),
        ("dynamo_py", 6.0),
        ("vllm_sub", 25.0),
        ("api_request", 9.0),
        ("main_ansi", 3.2),
        ("http_access", 1.05),
        ("selected", 0.85),
        ("request_completed", 0.42),
    )

    def _uuid(self) -> str:
        x = self.rng.getrandbits(128)
        h = f"{x:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def _req(self, new: bool = False) -> str:
        if new:
            rid = self._uuid()
            self.recent[self.rng.randrange(64)] = rid
            return rid
        return self.recent[self.rng.randrange(64)]

    def rust_debug(self, iso: str, md: str) -> str:
        rng = self.rng
        k = rng.randrange(7)
        if k == 0:
            return rust_line(iso, "DEBUG", "dynamo_runtime::pipeline::network::egress::push_router",
                             "sending request to instance",
                             fields(("instance_id", rng.choice(WORKER_IDS["decode"] + WORKER_IDS["prefill"])),
                                    ("request_id", f'"{self._req()}"')), span="http-request")
        if k == 1:
            return rust_line(iso, "DEBUG", "dynamo_runtime::pipeline::network::tcp::server", "response stream finished",
                             fields(("subject", f'"dynamo.backend.generate-{rng.getrandbits(48):x}"'),
                                    ("responses", rng.randint(1, 900))))
        if k == 2:
            return rust_line(iso, "DEBUG", "dynamo_llm::kv_router::indexer", "applied kv event",
                             fields(("worker_id", rng.choice(WORKER_IDS["prefill"])), ("event_id", rng.getrandbits(24)),
                                    ("stored_blocks", rng.randint(0, 64)), ("removed_blocks", rng.randint(0, 32))))
        if k == 3:
            w = rng.choice(WORKER_IDS["prefill"])
            overlap, pb, db = rng.randint(0, 60), rng.randint(0, 400), rng.randint(0, 4000)
            return rust_line(iso, "DEBUG", "dynamo_kv_router::scheduling::selector",
                             f"Formula for worker_id={w} dp_rank=Some(0) with {overlap} cached blocks: "
                             f"{pb + db / 1000:.3f} = 1.0 * prefill_blocks + decode_blocks = 1.0 * {pb} + {db}")
        if k == 4:
            return rust_line(iso, "DEBUG", "dynamo_runtime::transports::nats", "publishing event",
                             fields(("subject", '"namespace.dynamo.kv_events"'), ("bytes", rng.randint(200, 9000))))
        if k == 5:
            return rust_line(iso, "DEBUG", "dynamo_llm::preprocessor", "preprocessed request",
                             fields(("request_id", f'"{self._req(new=True)}"'), ("isl", rng.randint(64, 8192)),
                                    ("max_tokens", rng.choice((128, 256, 512, 1024)))), span="http-request")
        return rust_line(iso, "DEBUG", "dynamo_runtime::pipeline::network::ingress::push_endpoint", "received work item",
                         fields(("endpoint", '"generate"'), ("request_id", f'"{self._req()}"')))

    def rust_info(self, iso: str, md: str) -> str:
        rng = self.rng
        k = rng.randrange(4)
        if k == 0:
            w = rng.choice(WORKER_IDS["decode"])
            return rust_line(iso, "INFO", "dynamo_llm::kv_router::publisher", "published kv metrics",
                             fields(("worker_id", w), ("kv_active_blocks", rng.randint(1000, 50000)),
                                    ("kv_total_blocks", 50912), ("num_requests_waiting", rng.randint(0, 40))))
        if k == 1:
            return rust_line(iso, "INFO", "dynamo_runtime::component::client", "instance list updated",
                             fields(("endpoint", '"dynamo/backend/generate"'), ("instances", 2)))
        if k == 2:
            return rust_line(iso, "INFO", "dynamo_llm::kv_router::scheduler", "worker load snapshot",
                             fields(("worker_id", rng.choice(WORKER_IDS["prefill"])),
                                    ("active_prefill_tokens", rng.randint(0, 60000)),
                                    ("queue_depth", rng.randint(0, 30))))
        return rust_line(iso, "INFO", "dynamo_runtime::system_status_server", "health check",
                         fields(("status", '"ready"'), ("uptime_s", rng.randint(100, 200000))))

    def rust_warn(self, iso: str, md: str) -> str:
        rng = self.rng
        if rng.random() < 0.5:
            return rust_line(iso, "WARN", "dynamo_llm::kv_router::push_router",
                             f"Failed to free request {self._req()}: connection closed")
        return rust_line(iso, "WARN", "dynamo_runtime::pipeline::network::tcp::client",
                         "stream closed before the final response",
                         fields(("request_id", f'"{self._req()}"'), ("elapsed_ms", rng.randint(100, 90000))))

    def dynamo_py(self, iso: str, md: str) -> str:
        rng = self.rng
        if rng.random() < 0.6:
            return rust_line(iso, "DEBUG", "handlers.generate", f"New Request ID: {self._req()}")
        return rust_line(iso, "INFO", "handlers.generate",
                         f"Decode request {self._req()} finished: {rng.randint(16, 1024)} tokens, "
                         f"{rng.uniform(0.2, 40):.2f} s")

    def vllm_sub(self, iso: str, md: str) -> str:
        rng = self.rng
        k = rng.randrange(8)
        e = rng.choice(PREFILL_ENGINES + DECODE_ENGINES)
        if k == 0:
            return vllm_line(ENGINE_CORE[e], "DEBUG", md, "core.py:1043",
                             "EngineCore loop active." if rng.random() < 0.5 else "EngineCore waiting for work.")
        if k == 1:
            return vllm_line(rng.choice(WORKERS), "DEBUG", md, "worker.py:1510",
                             f"Rank {rng.randrange(2)}, get_finished: {rng.randint(0, 12)} requests done sending "
                             f"and {rng.randint(0, 12)} requests done recving")
        if k == 2:
            n = rng.randint(8, 256)
            return vllm_line(rng.choice(WORKERS), "DEBUG", md, "worker.py:1288",
                             f"start_load_kv for request cmpl-{self._req()}-0 from remote engine "
                             f"{rng.getrandbits(32):08x}. Num local_block_ids: {n}. Num remote_block_ids: {n}.")
        if k == 3:
            return vllm_line(ENGINE_CORE[e], "INFO", md, "scheduler.py:1811",
                             f"Finished KV load for request cmpl-{self._req()}-0 "
                             f"({rng.randint(128, 16384)} tokens, {rng.uniform(1, 40):.2f} ms)")
        if k == 4:
            return vllm_line(rng.choice(WORKERS), "INFO", md, "worker.py:2043",
                             f"Transfer plan: {rng.randint(1, 8)} descriptor groups, "
                             f"{rng.randint(64, 4096)} descriptors, remote engine {rng.getrandbits(32):08x}")
        if k == 5:
            return vllm_line(ENGINE_CORE[e], "DEBUG", md, "block_pool.py:322",
                             f"Evicted {rng.randint(1, 400)} cached blocks "
                             f"(free blocks: {rng.randint(0, 50912)})")
        if k == 6:
            return vllm_line(rng.choice(WORKERS), "WARNING", md, "worker.py:1733",
                             f"Handshake with remote engine {rng.getrandbits(32):08x} took "
                             f"{rng.uniform(0.5, 4):.2f} s; the first transfer was delayed")
        return vllm_line(ENGINE_CORE[e], "INFO", md, "core.py:745",
                         f"Aborted request cmpl-{self._req()}-0 (client disconnected)")

    def api_request(self, iso: str, md: str) -> str:
        rng = self.rng
        k = rng.randrange(3)
        rid = f"cmpl-{self._req(new=k == 0).replace('-', '')}-0"
        if k == 0:
            return vllm_line(API, "INFO", md, "logger.py:49",
                             f"Received request {rid}: params: SamplingParams(n=1, presence_penalty=0.0, "
                             "frequency_penalty=0.0, repetition_penalty=1.0, temperature=0.0, top_p=1.0, top_k=0, "
                             "min_p=0.0, seed=None, stop=[], stop_token_ids=[], bad_words=[], "
                             "include_stop_str_in_output=False, ignore_eos=True, "
                             f"max_tokens={rng.choice((128, 256, 512, 1024))}, min_tokens=0, logprobs=None, "
                             "prompt_logprobs=None, skip_special_tokens=True, spaces_between_special_tokens=True, "
                             "truncate_prompt_tokens=None, structured_outputs=None, extra_args=None), "
                             "prompt_token_ids: None, prompt_embeds shape: None, lora_request: None.")
        if k == 1:
            return vllm_line(API, "INFO", md, "async_llm.py:353", f"Added request {rid}.")
        return vllm_line(API, "INFO", md, "async_llm.py:531", f"Finished request {rid}.")

    def main_ansi(self, iso: str, md: str) -> str:
        rng = self.rng
        if rng.random() < 0.7:
            return py_line(iso, "DEBUG", "async_llm.add_request", f"Added request {self._req()}.")
        return py_line(iso, "WARNING", "handlers.generate",
                       f"Request {self._req()} cancelled by the client after {rng.randint(1, 900)} tokens")

    def http_access(self, iso: str, md: str) -> str:
        rng = self.rng
        r = rng.random()
        what = ('"POST /v1/completions HTTP/1.1" 200 OK' if r < 0.85 else
                '"GET /metrics HTTP/1.1" 200 OK' if r < 0.95 else '"GET /health HTTP/1.1" 200 OK')
        prefix = f"{API} " if rng.random() < 0.2 else ""
        return f"{prefix}INFO:     10.0.3.{rng.randint(2, 250)}:{rng.randint(32768, 60999)} - {what}"

    def selected(self, iso: str, md: str) -> str:
        rng = self.rng
        if rng.random() < 0.5:
            msg = (f"Selected worker: worker_type=prefill, worker_id={rng.choice(WORKER_IDS['prefill'])} dp_rank=0, "
                   f"logit: {rng.uniform(0, 3):.3f}, cached blocks: {rng.randint(0, 64)}, "
                   f"tree size: {rng.randint(1000, 9000)}, total blocks: 50912")
        else:
            msg = (f"Selected worker: worker_type=decode, worker_id={rng.choice(WORKER_IDS['decode'])} "
                   f"dp_rank={rng.randint(0, 3)}, logit: {rng.uniform(0, 2):.3f}")
        return rust_line(iso, "INFO", "dynamo_kv_router::scheduling::selector", msg)

    def request_completed(self, iso: str, md: str) -> str:
        rng = self.rng
        return rust_line(iso, "DEBUG", "dynamo_llm::http::service::service_v2", "request completed",
                         fields(("status", 200), ("latency_ms", rng.randint(40, 60000))), span="http-request")


# --- occasional multi-line records ---------------------------------------------------------------


def vllm_exception(md: str, rng: random.Random) -> list[str]:
    """A ``logger.exception`` from the API server: NewLineFormatter repeats the header after
    ``\\r\\n`` on each continuation line, and decorate_logs adds the process prefix."""
    header = f"ERROR {md} [serving_completion.py:158] "
    n = rng.randint(32769, 60000)
    body = [
        "Error in preprocessing prompt inputs",
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/serving_completion.py", '
        "line 150, in create_completion",
        "    engine_prompts = await self._preprocess_completion(request, tokenizer, request.prompt)",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/serving_engine.py", '
        "line 1081, in _validate_input",
        "    raise ValueError(",
        f"ValueError: This model's maximum context length is 32768 tokens. However, your request has {n} input "
        "tokens. Please reduce the length of the input messages.",
    ]
    joined = ("\r\n" + API + " " + header).join(body)
    return [f"{API} {header}{joined}"]


def asyncio_traceback(rng: random.Random) -> list[str]:
    """An uncaught task exception in the Dynamo worker, written to stderr with no header."""
    task = rng.randint(10000, 999999)
    return [
        "Task exception was never retrieved",
        f"future: <Task finished name='Task-{task}' coro=<DecodeWorkerHandler.generate() done, defined at "
        "/opt/dynamo/venv/lib/python3.12/site-packages/dynamo/vllm/handlers.py:412> "
        "exception=ConnectionResetError('Connection lost')>",
        "Traceback (most recent call last):",
        '  File "/opt/dynamo/venv/lib/python3.12/site-packages/dynamo/vllm/handlers.py", line 448, in generate',
        "    async for res in gen:",
        '  File "/usr/lib/python3.12/asyncio/streams.py", line 543, in _wait_for_data',
        "    await self._waiter",
        "ConnectionResetError: Connection lost",
    ]


# --- start-up section ----------------------------------------------------------------------------


def tqdm_line(prefix: str, desc: str, total: int, steps: int, seconds: float) -> str:
    """A tqdm bar as it lands in a file: one physical line, each refresh after a ``\\r``."""
    parts = []
    for i in range(steps + 1):
        n = total * i // steps
        pct = 100 * n // total
        filled = 10 * n // total
        bar = "█" * filled + " " * (10 - filled)
        el = seconds * i / steps
        rate = n / el if el else 0.0
        parts.append(f"{desc}: {pct:3d}%|{bar}| {n}/{total} [00:{int(el):02d}<00:{int(seconds - el):02d}, "
                     f"{rate:.2f}it/s]")
    return prefix + " \r" + "\r".join(parts)


def startup_lines(clock: Clock, t: float, rng: random.Random) -> tuple[list[str], float]:
    """Start-up of the frontend, the prefill API server and the decode worker (~2 min)."""
    out: list[str] = []

    def at(dt: float) -> tuple[str, str]:
        nonlocal t
        t += dt
        return clock.stamps(t)

    iso, md = at(0.0)
    out.append(rust_line(iso, "INFO", "dynamo_runtime::distributed", "Initializing distributed runtime",
                         fields(("namespace", '"dynamo"'))))
    iso, md = at(0.4)
    out.append(rust_line(iso, "INFO", "dynamo_llm::kv_router", "KV Routing initialized"))
    out.append(rust_line(iso, "INFO", "dynamo_llm::kv_router::scheduler", "Router queue policy: fcfs"))
    iso, md = at(0.6)
    out.append(vllm_line(API, "INFO", md, "utils.py:344", ""))
    for art in ("       █     █     █▄   ▄█", " ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.21.0",
                "  █▄█▀ █     █     █     █  model   " + MODEL, "   ▀▀  ▀▀▀▀▀ ▀▀▀▀▀ ▀     ▀", ""):
        out[-1] += "\r\n" + vllm_line(API, "INFO", md, "utils.py:344", art)
    out.append(vllm_line(API, "INFO", md, "utils.py:278",
                         f"non-default args: {{'model_tag': '{MODEL}', 'host': '0.0.0.0', 'port': 8100, "
                         f"'model': '{MODEL}', 'max_model_len': 32768, 'gpu_memory_utilization': 0.9, "
                         "'tensor_parallel_size': 2, 'data_parallel_size': 4, 'max_num_seqs': 256, "
                         "'max_num_batched_tokens': 8192, 'enable_prefix_caching': True, "
                         "'kv_transfer_config': KVTransferConfig(kv_connector='NixlConnector', engine_id='4f3c9b1e', "
                         "kv_buffer_device='cuda', kv_role='kv_producer', kv_rank=None, kv_parallel_size=1, "
                         "kv_ip='127.0.0.1', kv_port=14579, kv_connector_extra_config={}), "
                         "'enable_log_requests': True}"))
    out.append(vllm_line(API, "INFO", md, "model.py:2152", "Using max model len 32768"))
    out.append(vllm_line(API, "INFO", md, "scheduler.py:307",
                         "Chunked prefill is enabled with max_num_batched_tokens=8192."))
    capture = "[" + ", ".join(str(s) for s in [1, 2, 4] + list(range(8, 256, 8)) + list(range(256, 513, 16))) + "]"
    for e in PREFILL_ENGINES + DECODE_ENGINES:
        iso, md = at(0.8)
        out.append(vllm_line(ENGINE_CORE[e], "INFO", md, "core.py:113",
                             f"Initializing a V1 LLM engine (v0.21.0) with config: model='{MODEL}', "
                             f"speculative_config=None, tokenizer='{MODEL}', max_seq_len=32768, "
                             "tensor_parallel_size=2, data_parallel_size=4, enable_prefix_caching=True, "
                             "compilation_config={'mode': <CompilationMode.VLLM_COMPILE: 3>, "
                             "'cudagraph_mode': <CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>, "
                             f"'cudagraph_capture_sizes': {capture}, 'max_cudagraph_capture_size': 512}}"))
    iso, md = at(1.0)
    out.append(rust_line(iso, "INFO", "main.init", "Skipping KV event publisher setup for decode worker"))
    for e in PREFILL_ENGINES + DECODE_ENGINES:
        worker = WORKERS[2 * (PREFILL_ENGINES + DECODE_ENGINES).index(e)]
        iso, md = at(2.5)
        out.append(tqdm_line(worker, "Loading safetensors checkpoint shards", 17, 17, 21.0))
        iso, md = at(0.1)
        out.append(vllm_line(worker, "INFO", md, "gpu_model_runner.py:5132",
                             f"Model loading took 30.52 GiB memory and {rng.uniform(30, 45):.6f} seconds"))
        iso, md = at(3.0)
        out.append(vllm_line(worker, "INFO", md, "gpu_worker.py:469", "Available KV cache memory: 61.87 GiB"))
        out.append(vllm_line(ENGINE_CORE[e], "INFO", md, "kv_cache_utils.py:1733", "GPU KV cache size: 506,816 tokens"))
        out.append(vllm_line(ENGINE_CORE[e], "INFO", md, "kv_cache_utils.py:1734",
                             "Maximum concurrency for 32,768 tokens per request: 15.47x"))
        iso, md = at(0.5)
        out.append(tqdm_line(worker, "Capturing CUDA graphs (mixed prelude, PIECEWISE)", 51, 17, 12.0))
        iso, md = at(0.2)
        out.append(tqdm_line(worker, "Capturing CUDA graphs (decode, FULL)", 35, 7, 8.0))
        iso, md = at(0.1)
        out.append(vllm_line(worker, "INFO", md, "gpu_model_runner.py:6452", "Graph capturing finished in 23 secs, took 1.38 GiB"))
        out.append(vllm_line(ENGINE_CORE[e], "INFO", md, "core.py:302",
                             "init engine (profile, create kv cache, warmup model) took 52.17 s (compilation: 18.40 s)"))
    iso, md = at(0.5)
    out.append(vllm_line(API, "INFO", md, "api_server.py:1971", "Starting vLLM server on http://0.0.0.0:8100"))
    out.append(vllm_line(API, "INFO", md, "launcher.py:186", "Available routes are:"))
    for route, methods in (("/health", "GET"), ("/metrics", "GET"), ("/v1/models", "GET"),
                           ("/v1/chat/completions", "POST"), ("/v1/completions", "POST")):
        out.append(vllm_line(API, "INFO", md, "launcher.py:195", f"Route: {route}, Methods: {methods}"))
    out += [f"INFO:     Started server process [{API_PID}]", "INFO:     Waiting for application startup.",
            "INFO:     Application startup complete."]
    iso, md = at(1.0)
    out.append(rust_line(iso, "INFO", "dynamo_llm::discovery::watcher", "added model",
                         fields(("model_name", f'"{MODEL}"'), ("namespace", '"dynamo"'))))
    out.append(rust_line(iso, "INFO", "dynamo_llm::discovery::watcher",
                         "Prefill model detected, registering and activating prefill router"))
    iso, md = at(0.2)
    out.append(rust_line(iso, "INFO", "dynamo_llm::discovery::watcher", "Completions is ready"))
    out.append(rust_line(iso, "INFO", "dynamo_llm::discovery::watcher", "Chat completions is ready"))
    return out, t


# --- the writer ----------------------------------------------------------------------------------


class MixedLog:
    """Generates the log one 10 s interval at a time; counts lines by kind as it goes."""

    def __init__(self, seed: int, start: float) -> None:
        self.rng = random.Random(seed)
        self.clock = Clock()
        self.t = start
        self.noise = Noise(self.rng)
        names = [name for name, _ in Noise.KINDS]
        self.makers = [getattr(self.noise, name) for name in names]
        cum, total = [], 0.0
        for _, weight in Noise.KINDS:
            total += weight
            cum.append(total)
        self.cum_weights = cum
        self.kind_names = names
        self.engines = [EngineState(e, e in DECODE_ENGINES) for e in PREFILL_ENGINES + DECODE_ENGINES]
        for st in self.engines:
            for _ in range(50):
                st.step(self.rng)
        self.counts: Counter[str] = Counter()
        self.intervals = 0

    def startup(self) -> list[str]:
        lines, self.t = startup_lines(self.clock, self.t, self.rng)
        self.t = float(int(self.t) + 1)
        self.counts["startup"] += sum(line.count("\n") + 1 for line in lines)
        return lines

    def interval(self) -> list[str]:
        """All lines of the next 10 s: noise spread evenly, the stats burst near the end."""
        rng, clock, t0 = self.rng, self.clock, self.t
        n = rng.randint(*NOISE_PER_INTERVAL)
        kinds = rng.choices(range(len(self.makers)), cum_weights=self.cum_weights, k=n)
        step = INTERVAL_S / n
        burst_at = int(n * 0.94)  # stats are logged ~9.4 s into the interval
        out: list[str] = []
        makers = self.makers
        for i, k in enumerate(kinds):
            if i == burst_at:
                out += self._burst(t0 + i * step)
            out.append(makers[k](*clock.stamps(t0 + (i + rng.random()) * step)))
        counts = self.counts
        for k in kinds:
            counts[self.kind_names[k]] += 1
        if rng.randrange(TRACEBACK_EVERY) == 0:
            out += self._traceback(t0 + INTERVAL_S - 0.001)
        self.t = t0 + INTERVAL_S
        self.intervals += 1
        return out

    def _burst(self, t: float) -> list[str]:
        """One stats line per engine; decode engines add KV-transfer (and spec) lines after it."""
        rng, out = self.rng, []
        iso, md = self.clock.stamps(t)
        for st in self.engines:
            st.step(rng)
            if not st.decode:
                out.append(vllm_line(API, "INFO", md, "loggers.py:271", st.message(rng)))
                continue
            t += rng.uniform(0.0005, 0.002)  # a separate process: its own microsecond stamp
            iso, md = self.clock.stamps(t)
            out.append(py_line(iso, "INFO", "loggers.log", st.message(rng)))
            out.append(py_line(iso, "INFO", "metrics.log", kv_transfer_message(rng, int(st.running))))
            self.counts["kv_transfer"] += 1
            if st.engine in SPEC_ENGINES:
                out.append(py_line(iso, "INFO", "metrics.log", spec_message(rng)))
                self.counts["spec_decode"] += 1
        self.counts["stats"] += len(self.engines)
        return out

    def _traceback(self, t: float) -> list[str]:
        iso, md = self.clock.stamps(t)
        lines = vllm_exception(md, self.rng) if self.intervals % 2 else asyncio_traceback(self.rng)
        self.counts["traceback_lines"] += sum(line.count("\n") + 1 for line in lines)
        return lines


def parse_size(text: str) -> int:
    """``500M``, ``1G``, ``64K`` or a byte count; binary units."""
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def parse_start(text: str) -> float:
    dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return calendar.timegm(dt.utctimetuple())


def write_log(path: str, size: int, seed: int, start: float) -> Counter[str]:
    """Stream the log to ``path`` (via a temporary name, so a killed run leaves no half file)."""
    gen = MixedLog(seed, start)
    tmp = path + ".part"
    written = 0
    with open(tmp, "wb", buffering=4 * MIB) as fh:
        data = ("\n".join(gen.startup()) + "\n").encode()
        fh.write(data)
        written += len(data)
        batch: list[str] = []
        while written < size:
            for _ in range(50):  # ~50 intervals (~500 KB) per write
                batch += gen.interval()
            data = ("\n".join(batch) + "\n").encode()
            batch.clear()
            fh.write(data)
            written += len(data)
    os.replace(tmp, path)
    gen.counts["intervals"] = gen.intervals
    return gen.counts


def mix_report(counts: Counter[str], size: int, seconds: float, path: str) -> str:
    kinds = [k for k in counts if k not in ("intervals",)]
    total = sum(counts[k] for k in kinds)
    lines = [f"{path}: {size / MIB:.1f} MiB, {total} lines, {counts['intervals']} intervals "
             f"({counts['intervals'] * INTERVAL_S / 3600:.1f} h of log time), written in {seconds:.1f} s"]
    for k in sorted(kinds, key=lambda k: -counts[k]):
        lines.append(f"  {k:<18} {counts[k]:>10}  {100 * counts[k] / total:6.2f} %")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="500M", help="target size, binary units: 100M, 500M, 1G (default 500M)")
    ap.add_argument("--out", required=True, help="output file (parent directories are created)")
    ap.add_argument("--seed", type=int, default=1, help="random seed (default 1); same seed and size, same bytes")
    ap.add_argument("--start", default="2026-03-31T18:00:00Z", help="log start time, ISO (default %(default)s)")
    args = ap.parse_args(argv)

    size = parse_size(args.size)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    t0 = time.perf_counter()
    counts = write_log(args.out, size, args.seed, parse_start(args.start))
    seconds = time.perf_counter() - t0
    report = mix_report(counts, os.path.getsize(args.out), seconds, args.out)
    with open(args.out + ".mix.txt", "w") as fh:
        fh.write(report + "\n")
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
