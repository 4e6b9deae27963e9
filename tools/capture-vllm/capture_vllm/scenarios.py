"""The scenarios the kit captures: servers, load phases and how each run ends.

Each is a real run of vLLM for CPU on the tiny dummy-weight model. Most use a stats
interval of 2 s (``VLLM_LOG_STATS_INTERVAL``) to keep runs short; the three
``stats_interval_*`` runs put the same steady load under 1, 2 and 10 s.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .load import Phase

# Every server: the tiny model with dummy weights, token-id prompts, bounded memory.
COMMON_ARGS = ["--load-format", "dummy", "--skip-tokenizer-init", "--dtype", "bfloat16",
               "--max-model-len", "1536", "--max-num-batched-tokens", "1024"]
COMMON_ENV = {"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_LOG_STATS_INTERVAL": "2",
              "VLLM_LOGGING_COLOR": "0", "TZ": "UTC"}


@dataclass(frozen=True)
class ServerSpec:
    name: str  # log file stem
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    proxy_for: tuple[str, str] | None = None  # (prefill, decode): this is the PD proxy, not vLLM


@dataclass(frozen=True)
class Stop:
    """How the run ends. ``sigint``: after the last phase, as an operator's Ctrl-C.
    ``sigint_under_load``: SIGINT ``after_s`` into ``phase``, requests in flight.
    ``kill_worker``: SIGKILL the server's model worker process ``after_s`` into ``phase``:
    a worker that dies mid-run (as an OOM kill or a segfault would); the server is left to
    react on its own, then stopped if it has not exited.
    ``freeze``: SIGSTOP ``after_s`` into ``phase`` to the processes ``target`` names
    (``capture_vllm/freeze.py``: ``engine_core``, ``worker`` or ``tree``, the whole server), held
    for the rest of the run while the clients keep sending: a hang, not a death. After the last
    phase SIGCONT, then SIGINT, so that the processes can exit."""

    kind: str = "sigint"
    phase: str = ""
    after_s: float = 0.0
    target: str = ""  # freeze: which processes


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    phases: tuple[Phase, ...]
    servers: tuple[ServerSpec, ...] = (ServerSpec("server"),)
    target: str = "server"  # the server the client talks to
    stop: Stop = Stop()
    env: tuple[tuple[str, str], ...] = ()  # on top of COMMON_ENV, for every server
    notes: tuple[str, ...] = field(default_factory=tuple)
    # 0: /metrics scraped mid-load and at the end of each idle phase. N: every N s from the first
    # phase to the end, each scrape with a GET /health beside it (a hang's frozen counters).
    scrape_every_s: float = 0.0
    client_timeout_s: float = 120.0  # the client gives up on a request silent this long


# A prefill + decode pair sharing KV blocks through files (ExampleConnector), and the proxy.
PD_SERVERS = (ServerSpec("prefill", ("--max-num-seqs", "16", "--kv-transfer-config", "{KV_CONFIG}")),
              ServerSpec("decode", ("--max-num-seqs", "16", "--kv-transfer-config", "{KV_CONFIG}")),
              ServerSpec("proxy", proxy_for=("prefill", "decode")))

IDLE = Phase("idle1", "idle", seconds=8)
IDLE_END = Phase("idle2", "idle", seconds=8)
LOW = Phase("low", "paced", seconds=10, concurrency=2, every_s=0.75, prompt_len=(64, 128), max_tokens=(64, 128))


# A hang's load: 8 streaming clients (frozen mid-phase); each gives up on a request after 30 s of
# silence (Scenario.client_timeout_s), then two more requests find the server still hung.
_HANG_HIGH = Phase("high", "closed", seconds=20, concurrency=8, prompt_len=(256, 512), max_tokens=(128, 256))
_HANG_AFTER = Phase("after", "paced", seconds=4, concurrency=2, every_s=2.0, prompt_len=(64, 128),
                    max_tokens=(32, 64))


def _steady(seconds: float, concurrency: int = 8) -> Phase:
    return Phase("high", "closed", seconds=seconds, concurrency=concurrency, prompt_len=(256, 512),
                 max_tokens=(128, 256))


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "kv_pressure",
        "A KV cache of 40 blocks (5,120 tokens) under 32 closed-loop clients with long prompts and outputs: "
        "the cache fills, requests wait and running ones are preempted.",
        (IDLE, LOW, Phase("high", "closed", seconds=30, concurrency=32, prompt_len=(600, 800),
                          max_tokens=(300, 500)), IDLE_END),
        servers=(ServerSpec("server", ("--max-num-seqs", "32", "--num-gpu-blocks-override", "40")),),
        notes=("vLLM 0.32's stats line prints no Preemptions field; /metrics counts them "
               "(vllm:num_preemptions_total).",)),
    Scenario(
        "crash_worker_killed",
        "Steady load, then the model worker process (VLLM::Worker) is killed with SIGKILL 10 s into the "
        "high phase: the engine dies mid-run and the server shuts itself down.",
        (IDLE, LOW, _steady(30), IDLE_END),
        servers=(ServerSpec("server", ("--max-num-seqs", "16")),),
        stop=Stop("kill_worker", "high", 10.0)),
    Scenario(
        "sigint_under_load",
        "Steady load, then SIGINT to the server 10 s into the high phase, requests in flight: an orderly "
        "stop the operator started, not a failure.",
        (IDLE, LOW, _steady(30), IDLE_END),
        servers=(ServerSpec("server", ("--max-num-seqs", "16")),),
        stop=Stop("sigint_under_load", "high", 10.0)),
    Scenario(
        "disable_log_stats",
        "A server started with --disable-log-stats under steady load: no stats line, and /metrics has no "
        "vllm: series.",
        (IDLE, LOW, _steady(20), IDLE_END),
        servers=(ServerSpec("server", ("--max-num-seqs", "16", "--disable-log-stats")),)),
    Scenario(
        "api_server_count_2",
        "Two API server processes (--api-server-count 2) under steady load: vLLM disables its stats logging.",
        (IDLE, LOW, _steady(20), IDLE_END),
        servers=(ServerSpec("server", ("--max-num-seqs", "16", "--api-server-count", "2")),)),
    Scenario(
        "data_parallel_2",
        "Two data-parallel engines (--data-parallel-size 2) with one API server, so stats lines come per "
        "engine (Engine 000, Engine 001), under steady load.",
        (IDLE, LOW, _steady(30, concurrency=12), IDLE_END),
        servers=(ServerSpec("server", ("--max-num-seqs", "16", "--data-parallel-size", "2",
                                       "--api-server-count", "1")),)),
    Scenario(
        "spec_ngram",
        "Speculative decoding with ngram drafts (3 speculative tokens) under steady load.",
        (IDLE, LOW, _steady(20), IDLE_END),
        servers=(ServerSpec("server", ("--max-num-seqs", "16", "--speculative-config",
                                       '{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":4,'
                                       '"prompt_lookup_min":2}')),),
        notes=("The random-weight model repeats itself, so ngram drafts are nearly always accepted.",)),
    Scenario(
        "prefix_cache_on",
        "Prefix caching on (--enable-prefix-caching): unique prompts, then prompts sharing their first 512 "
        "tokens (4 full blocks): the hit rate rises.",
        (IDLE, Phase("unique", "closed", seconds=15, concurrency=4, prompt_len=(640, 704), max_tokens=(64, 128)),
         Phase("shared", "closed", seconds=20, concurrency=4, prompt_len=(640, 704), max_tokens=(64, 128),
               shared_prefix=512), IDLE_END),
        servers=(ServerSpec("server", ("--max-num-seqs", "16", "--enable-prefix-caching")),)),
    Scenario(
        "prefix_cache_off",
        "The same load with prefix caching off (--no-enable-prefix-caching): the shared prefix is computed "
        "every time.",
        (IDLE, Phase("unique", "closed", seconds=15, concurrency=4, prompt_len=(640, 704), max_tokens=(64, 128)),
         Phase("shared", "closed", seconds=20, concurrency=4, prompt_len=(640, 704), max_tokens=(64, 128),
               shared_prefix=512), IDLE_END),
        servers=(ServerSpec("server", ("--max-num-seqs", "16", "--no-enable-prefix-caching")),)),
    Scenario(
        "pd_pair",
        "A prefill server and a decode server with a KV connector (ExampleConnector: KV blocks through shared "
        "files) behind a small proxy; the client talks to the proxy. Prompts of 130-250 tokens: one full "
        "block of 128 is transferred per request.",
        (IDLE, Phase("low", "paced", seconds=10, concurrency=2, every_s=0.75, prompt_len=(130, 250),
                     max_tokens=(64, 128)),
         Phase("high", "closed", seconds=25, concurrency=12, prompt_len=(130, 250), max_tokens=(128, 256)),
         IDLE_END),
        servers=PD_SERVERS, target="proxy",
        notes=("The prefill server sees each prompt with max_tokens=1; the decode server loads the prompt's "
               "full blocks from the connector and computes the rest.",)),
    Scenario(
        "pd_connector_crash",
        "The prefill/decode pair of pd_pair with prompts of 384-640 tokens (3 to 5 blocks to transfer): "
        "vLLM 0.32's ExampleConnector fails to inject such a prompt's KV cache on the decode side "
        "(RuntimeError: shape mismatch in inject_kv_into_layer), and the decode engine dies while serving. "
        "A real failure of vLLM, not one the kit causes.",
        (IDLE, LOW, Phase("high", "closed", seconds=25, concurrency=12, prompt_len=(384, 640),
                          max_tokens=(128, 256)), IDLE_END),
        servers=PD_SERVERS, target="proxy"),
    Scenario(
        "engine_core_frozen",
        "Steady load, then vLLM's engine core process (VLLM::EngineCore) is stopped with SIGSTOP 8 s into the "
        "high phase and kept stopped: an engine core hung while the API server process lives. The clients "
        "keep sending (each gives up on a request after 30 s of silence), /metrics and /health are read "
        "every 2 s. After the last phase SIGCONT, then SIGINT.",
        (IDLE, LOW, _HANG_HIGH, _HANG_AFTER, Phase("idle2", "idle", seconds=6)),
        servers=(ServerSpec("server", ("--max-num-seqs", "16")),),
        stop=Stop("freeze", "high", 8.0, target="engine_core"),
        scrape_every_s=2.0, client_timeout_s=30.0),
    Scenario(
        "worker_frozen",
        "Steady load, then vLLM's model worker process (VLLM::Worker) is stopped with SIGSTOP 8 s into the high "
        "phase and kept stopped for over two minutes: the engine core and the API server live and wait for it, as "
        "they would for a worker stuck in a collective. The clients keep sending (each gives up on a request "
        "after 30 s of silence), /metrics and /health are read every 4 s. After the last phase SIGCONT, then "
        "SIGINT.",
        (IDLE, LOW, _HANG_HIGH, _HANG_AFTER, Phase("idle2", "idle", seconds=70)),
        servers=(ServerSpec("server", ("--max-num-seqs", "16")),),
        stop=Stop("freeze", "high", 8.0, target="worker"),
        scrape_every_s=4.0, client_timeout_s=30.0,
        notes=("vLLM's engine core logs `No available shared memory broadcast block found in 60 seconds` "
               "(VLLM_RINGBUFFER_WARNING_INTERVAL, default 60) each minute it waits on a worker's answer.",)),
    *(Scenario(
        f"stats_interval_{s}s",
        f"The same steady load (8 closed-loop clients) with VLLM_LOG_STATS_INTERVAL={s}.",
        (IDLE, LOW, _steady(60 if s >= 10 else 30), IDLE_END),
        servers=(ServerSpec("server", ("--max-num-seqs", "16")),),
        env=(("VLLM_LOG_STATS_INTERVAL", str(s)),)) for s in (1, 2, 10)),
)


def by_name() -> dict[str, Scenario]:
    return {s.name: s for s in SCENARIOS}
