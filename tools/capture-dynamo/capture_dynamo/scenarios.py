"""The Dynamo scenarios the kit captures: processes, load phases, and what happens mid-run.

Each is a real run of NVIDIA Dynamo 1.6 (``python -m dynamo.frontend`` and ``python -m
dynamo.vllm`` workers on vLLM for CPU) serving the kit's tiny random-weight model, everything
on 127.0.0.1, file-based discovery (no etcd, no NATS). Logging is Dynamo's default (ANSI
colours on, INFO) unless a scenario says otherwise: that is what operators' logs hold.
Stats lines come every 2 s (``VLLM_LOG_STATS_INTERVAL=2``) to keep runs short.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from capture_vllm.load import Phase

# Every worker: the tiny model, dummy weights, bounded lengths.
WORKER_ARGS = ("--load-format", "dummy", "--dtype", "bfloat16", "--max-model-len", "1536",
               "--max-num-batched-tokens", "1024")
COMMON_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1",
              "VLLM_LOG_STATS_INTERVAL": "2", "TZ": "UTC"}
NIXL = json.dumps({"kv_connector": "NixlConnector", "kv_role": "kv_both", "kv_buffer_device": "cpu"},
                  separators=(",", ":"))
KV_PRESSURE = ("--num-gpu-blocks-override", "40")  # 40 blocks of 128 tokens: 5,120 tokens of KV cache


@dataclass(frozen=True)
class Proc:
    """One process of the deployment. ``name`` is its log's middle name (``SCENARIO.NAME.log``).
    ``kind``: ``frontend`` or ``worker``. ``cpu``: the core vLLM for CPU binds its OpenMP threads
    to (``VLLM_CPU_OMP_THREADS_BIND``): two workers left to pick their own both take every core
    and spin against each other on a 2-core machine. ``system_port``: ``frontend`` puts the
    worker's status server on the frontend's HTTP port (a port already in use)."""

    name: str
    kind: str = "worker"
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cpu: str | None = None
    system_port: str = "free"
    nixl_port_of: str | None = None  # share this process's NIXL side-channel port (a port in use)
    must_be_ready: bool = True


@dataclass(frozen=True)
class Action:
    """Something done to a process ``after_s`` into ``phase``. ``kind``: ``kill`` (SIGKILL to its
    main process: an OOM kill or a node fault; its children are left to react on their own),
    ``restart`` (SIGKILL, then the same command again ``down_s`` later, appending to the same log,
    as a supervisor loop would), ``freeze`` (SIGSTOP to the processes ``target`` names, held for
    the rest of the run: a hang, not a death; ``tree``: the main process and every descendant, a
    frozen node; ``engine_core``: only vLLM's engine core child, the ``dynamo.vllm`` process left
    running; see capture-vllm's ``capture_vllm/freeze.py``). Frozen processes get SIGCONT before
    the graceful stop, so that they can exit. Actions due at the same tick run one after the
    other, a freeze taking about 0.1 s (it reads the tree and the states back from /proc): two
    freezes at the same ``after_s`` stop a whole job at once (104 ms apart in disagg_all_frozen)."""

    kind: str
    proc: str
    phase: str
    after_s: float
    down_s: float = 0.0
    target: str = "tree"  # freeze: which processes


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    procs: tuple[Proc, ...]
    phases: tuple[Phase, ...]
    actions: tuple[Action, ...] = ()
    env: tuple[tuple[str, str], ...] = ()  # on top of COMMON_ENV, for every process
    notes: tuple[str, ...] = field(default_factory=tuple)
    client_timeout_s: float = 180.0  # the client gives up on a request silent this long


FRONTEND = Proc("frontend", "frontend")
IDLE = Phase("idle1", "idle", seconds=6)
IDLE_END = Phase("idle2", "idle", seconds=10)
LOW = Phase("low", "paced", seconds=10, concurrency=2, every_s=0.75, prompt_len=(64, 128), max_tokens=(64, 128))
# Long prompts and outputs from 32 clients: more than a 40-block cache holds.
PRESSURE = Phase("high", "closed", seconds=40, concurrency=32, prompt_len=(384, 768), max_tokens=(384, 768),
                 stream=False)
AFTER = Phase("after", "paced", seconds=12, concurrency=2, every_s=1.5, prompt_len=(64, 128), max_tokens=(32, 64))


def _disagg(decode_args: tuple[str, ...] = KV_PRESSURE) -> tuple[Proc, ...]:
    return (FRONTEND,
            Proc("decode", args=("--disaggregation-mode", "decode", "--max-num-seqs", "16", *decode_args,
                                 "--kv-transfer-config", NIXL), cpu="0"),
            Proc("prefill", args=("--disaggregation-mode", "prefill", "--max-num-seqs", "16",
                                  "--kv-transfer-config", NIXL), cpu="1"))


_DISAGG_HIGH = Phase("high", "closed", seconds=40, concurrency=16, prompt_len=(384, 768), max_tokens=(192, 384),
                     stream=False)
_DISAGG_ENV = (("VLLM_NIXL_SIDE_CHANNEL_HOST", "127.0.0.1"),)
# A hang's load: 8 streaming clients, frozen 10 s into the phase; each client gives up on a request
# after 30 s of silence (client_timeout_s), then two more requests find the job still hung.
_HANG_HIGH = Phase("high", "closed", seconds=20, concurrency=8, prompt_len=(256, 512), max_tokens=(128, 256))
_HANG_AFTER = Phase("after", "paced", seconds=4, concurrency=2, every_s=2.0, prompt_len=(64, 128),
                    max_tokens=(32, 64))
_HANG_IDLE = Phase("idle2", "idle", seconds=6)

SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "agg_kv_pressure",
        "An aggregated worker whose KV cache (40 blocks, 5,120 tokens) fills under 32 closed-loop clients with "
        "long prompts and outputs: requests wait and running ones are preempted. Default logging (ANSI colours, "
        "INFO). Graceful stop (SIGINT) after the load.",
        (FRONTEND, Proc("worker", args=("--max-num-seqs", "64", *KV_PRESSURE))),
        (IDLE, LOW, PRESSURE, IDLE_END)),
    Scenario(
        "agg_clean",
        "An aggregated worker with room to spare (a default-sized KV cache) under a light steady load: nothing "
        "is wrong. Graceful stop (SIGINT to the worker, then the frontend) after the load.",
        (FRONTEND, Proc("worker", args=("--max-num-seqs", "16"))),
        (IDLE, LOW, Phase("steady", "closed", seconds=20, concurrency=4, prompt_len=(128, 256),
                          max_tokens=(64, 128)), IDLE_END)),
    Scenario(
        "disagg_kv_pressure",
        "Prefill and decode workers over NIXL (UCX, host buffers); the decode worker's KV cache (40 blocks) fills "
        "under 16 closed-loop clients: the decode side waits and preempts while prefill keeps up.",
        _disagg(), (IDLE, LOW, _DISAGG_HIGH, IDLE_END), env=_DISAGG_ENV),
    Scenario(
        "agg_worker_killed",
        "The aggregated worker's main process is killed with SIGKILL 12 s into the high phase, the KV cache full "
        "and requests in flight. Nothing restarts it: the clients keep sending for the rest of the phase and a "
        "paced phase after it.",
        (FRONTEND, Proc("worker", args=("--max-num-seqs", "64", *KV_PRESSURE))),
        (IDLE, LOW, Phase("high", "closed", seconds=30, concurrency=32, prompt_len=(384, 768),
                          max_tokens=(384, 768), stream=False), AFTER, IDLE_END),
        actions=(Action("kill", "worker", "high", 12.0),)),
    Scenario(
        "disagg_prefill_killed",
        "A prefill/decode job over NIXL whose prefill worker is killed with SIGKILL 12 s into the high phase. "
        "The decode worker stays up.",
        _disagg(()), (IDLE, LOW, Phase("high", "closed", seconds=30, concurrency=8, prompt_len=(384, 768),
                                       max_tokens=(128, 256), stream=False), AFTER, IDLE_END),
        actions=(Action("kill", "prefill", "high", 12.0),), env=_DISAGG_ENV),
    Scenario(
        "disagg_decode_killed",
        "A prefill/decode job over NIXL whose decode worker is killed with SIGKILL 12 s into the high phase. "
        "The prefill worker stays up.",
        _disagg(()), (IDLE, LOW, Phase("high", "closed", seconds=30, concurrency=8, prompt_len=(384, 768),
                                       max_tokens=(128, 256), stream=False), AFTER, IDLE_END),
        actions=(Action("kill", "decode", "high", 12.0),), env=_DISAGG_ENV),
    Scenario(
        "frontend_restart",
        "The frontend is killed with SIGKILL 10 s into the high phase and started again 6 s later with the same "
        "command, its output appended to the same log (a supervisor loop). The worker stays up.",
        (FRONTEND, Proc("worker", args=("--max-num-seqs", "32"))),
        (IDLE, LOW, Phase("high", "closed", seconds=35, concurrency=8, prompt_len=(256, 512),
                          max_tokens=(128, 256), stream=False), IDLE_END),
        actions=(Action("restart", "frontend", "high", 10.0, down_s=6.0),)),
    Scenario(
        "worker_bad_arg",
        "A worker started with --max-model-len 8192, more than the model's 4,096 positions: it fails while "
        "building its engine config and never serves. The frontend is up; the clients' requests find no model.",
        (FRONTEND, Proc("worker", args=("--max-num-seqs", "16", "--max-model-len", "8192"), must_be_ready=False)),
        (Phase("idle1", "idle", seconds=4), Phase("low", "paced", seconds=10, concurrency=2, every_s=1.0,
                                                  prompt_len=(32, 64), max_tokens=(16, 32)),
         Phase("idle2", "idle", seconds=4))),
    Scenario(
        "agg_two_workers_one_killed",
        "Two aggregated workers behind a frontend that may move a request to another worker "
        "(--migration-limit 3); one worker is killed with SIGKILL 10 s into the high phase, the other "
        "stays up and takes the load.",
        (Proc("frontend", "frontend", args=("--migration-limit", "3")),
         Proc("worker0", args=("--max-num-seqs", "16"), cpu="0"),
         Proc("worker1", args=("--max-num-seqs", "16"), cpu="1")),
        (IDLE, LOW, Phase("high", "closed", seconds=30, concurrency=8, prompt_len=(256, 512),
                          max_tokens=(128, 256), stream=False), IDLE_END),
        actions=(Action("kill", "worker1", "high", 10.0),)),
    Scenario(
        "agg_worker_killed_warn",
        "The aggregated worker killed with SIGKILL under load, every process at DYN_LOG=warn (what operators "
        "set to tame Dynamo's logs): the frontend logs failures only.",
        (FRONTEND, Proc("worker", args=("--max-num-seqs", "32"))),
        (IDLE, LOW, Phase("high", "closed", seconds=25, concurrency=8, prompt_len=(256, 512),
                          max_tokens=(128, 256), stream=False), AFTER, IDLE_END),
        actions=(Action("kill", "worker", "high", 10.0),), env=(("DYN_LOG", "warn"),)),
    Scenario(
        "disagg_nixl_port_in_use",
        "A prefill/decode job whose prefill worker is given the decode worker's NIXL side-channel port "
        "(VLLM_NIXL_SIDE_CHANNEL_PORT): two workers of one node started with the same port. Whichever binds it "
        "second cannot; the kit waits up to 2 minutes for each, then sends a few requests.",
        (FRONTEND,
         Proc("decode", args=("--disaggregation-mode", "decode", "--max-num-seqs", "16", "--kv-transfer-config", NIXL),
              cpu="0", must_be_ready=False),
         Proc("prefill", args=("--disaggregation-mode", "prefill", "--max-num-seqs", "16", "--kv-transfer-config",
                               NIXL), cpu="1", nixl_port_of="decode", must_be_ready=False)),
        (Phase("idle1", "idle", seconds=4), Phase("low", "paced", seconds=12, concurrency=2, every_s=1.0,
                                                  prompt_len=(128, 256), max_tokens=(16, 32), stream=False),
         Phase("idle2", "idle", seconds=6)), env=_DISAGG_ENV),
    Scenario(
        "disagg_all_frozen",
        "A prefill/decode job over NIXL hung whole: 10 s into the high phase every worker (prefill and decode, "
        "each its dynamo.vllm process and all its descendants: engine core, model worker) is stopped with "
        "SIGSTOP at once and kept stopped, as frozen nodes or a job stuck in its KV transfers would be; the "
        "frontend stays up. The clients keep sending (each gives up on a request after 30 s of silence). "
        "SIGCONT before the graceful stop.",
        _disagg(()), (IDLE, LOW, _HANG_HIGH, _HANG_AFTER, _HANG_IDLE),
        actions=(Action("freeze", "prefill", "high", 10.0, target="tree"),
                 Action("freeze", "decode", "high", 10.0, target="tree")),
        env=_DISAGG_ENV, client_timeout_s=30.0),
    Scenario(
        "agg_engine_core_frozen",
        "An aggregated worker whose vLLM engine core process (VLLM::EngineCore, a child of the dynamo.vllm "
        "process) is stopped with SIGSTOP 10 s into the high phase and kept stopped: the engine hung while the "
        "worker's main process lives (its status server, its discovery registration). The clients keep sending "
        "(each gives up on a request after 30 s of silence). SIGCONT before the graceful stop.",
        (FRONTEND, Proc("worker", args=("--max-num-seqs", "16"))), (IDLE, LOW, _HANG_HIGH, _HANG_AFTER, _HANG_IDLE),
        actions=(Action("freeze", "worker", "high", 10.0, target="engine_core"),), client_timeout_s=30.0),
    Scenario(
        "worker_port_in_use",
        "A worker whose status server (DYN_SYSTEM_PORT) is given the frontend's HTTP port, already in use. The "
        "frontend is up; the clients send a few requests.",
        (FRONTEND, Proc("worker", args=("--max-num-seqs", "16"), system_port="frontend", must_be_ready=False)),
        (Phase("idle1", "idle", seconds=4), Phase("low", "paced", seconds=10, concurrency=2, every_s=1.0,
                                                  prompt_len=(32, 64), max_tokens=(16, 32)),
         Phase("idle2", "idle", seconds=4))),
)


def by_name() -> dict[str, Scenario]:
    return {s.name: s for s in SCENARIOS}
