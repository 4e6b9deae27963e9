"""The sa-bench client of a sweep: one deployment, one benchmark run after another.

srt-slurm's ``sa-bench/bench.sh`` loops over the concurrencies on one running deployment. For
each concurrency C it starts the benchmark client twice: a warm-up (``C x 2`` prompts at
``--request-rate 250``, not saved) and the measured run (``C x 10`` prompts at ``--request-rate
inf``), both with ``--max-concurrency C``. Each start of the client costs a few seconds
(imports, tokenizer) and first sends one prompt alone ("initial single prompt test run"), so
between two runs the load drops to nothing, then to one request, then jumps to C.

``SweepSimulation`` is the simulator with that client instead of the closed loop at a fixed
concurrency; ``RunRecord`` keeps every request of every run (sent, first token, done) for the
result files.
"""

from __future__ import annotations

import heapq
import math
import random
from dataclasses import dataclass, field, replace

from pdwatch.sim.model import Engine, Request, SimConfig, Simulation

WARMUP_RATE = 250.0  # bench.sh: warm-up --request-rate


@dataclass(frozen=True)
class SweepPlan:
    """What bench.sh runs: the concurrencies, in order, and how many prompts per run."""

    concurrencies: tuple[int, ...]
    num_prompts_mult: int = 10  # measured run: C x 10 prompts
    num_warmup_mult: int = 2  # warm-up: C x 2 prompts
    client_start_s: float = 4.0  # from the shell starting the client to its first request
    client_exit_s: float = 1.0  # from the last response to the next shell line (printing, saving)
    tail_s: float = 8.0  # simulated after the last run, so the logs show the deployment idle

    def __post_init__(self) -> None:
        if not self.concurrencies:
            raise ValueError("a sweep needs at least one concurrency")
        if any(c < 1 for c in self.concurrencies):
            raise ValueError("every concurrency must be at least 1")
        if len(set(self.concurrencies)) != len(self.concurrencies):
            raise ValueError("each concurrency may appear once (one result file per concurrency)")
        if self.num_prompts_mult < 1 or self.num_warmup_mult < 1:
            raise ValueError("the prompt multipliers must be at least 1")


@dataclass
class RequestRecord:
    """One request as the client saw it (seconds of simulated time)."""

    isl: int
    osl: int
    sent: float
    first_token: float | None = None
    done: float | None = None
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.done is not None and not self.error


@dataclass
class RunRecord:
    """One start of the benchmark client: its test prompt, then its main run."""

    kind: str  # warmup | measured
    concurrency: int
    num_prompts: int
    request_rate: float  # math.inf = all at once, limited by max_concurrency
    launched: float = math.nan  # the shell started the client
    main_start: float = math.nan  # the main run began (vLLM's benchmark start)
    main_end: float = math.nan  # its last response (vLLM's benchmark end)
    exited: float = math.nan  # the client printed its result and ended
    requests: list[RequestRecord] = field(default_factory=list)  # the main run's, in the order sent
    test_prompt: RequestRecord | None = None

    @property
    def duration(self) -> float:
        return self.main_end - self.main_start


class _Stage:
    """The part of a run in progress: the single test prompt, or the main run."""

    def __init__(self, run: RunRecord, main: bool, start: float, rng: random.Random) -> None:
        self.run = run
        self.main = main
        self.total = run.num_prompts if main else 1
        self.limit = run.concurrency if main else 1
        self.rate = run.request_rate if main else math.inf
        self.next_arrival = start
        self.rng = rng
        self.sent = 0
        self.finished = 0

    def arrival(self) -> float:
        """The next request's arrival time (Poisson at the rate, as vLLM's client draws it)."""
        at = self.next_arrival
        if math.isfinite(self.rate):
            self.next_arrival += self.rng.expovariate(self.rate)
        return at

    @property
    def complete(self) -> bool:
        return self.finished >= self.total


class SweepSimulation(Simulation):
    """A ``Simulation`` driven by the sa-bench sweep client of ``plan`` (``cfg.cc`` is not used).

    The client script starts at ``first_launch`` seconds; ``finished`` is true once the last
    run's client has exited (``finished_at``); the caller keeps ticking ``plan.tail_s`` longer.
    """

    def __init__(self, cfg: SimConfig, plan: SweepPlan, first_launch: float = 1.0) -> None:
        super().__init__(replace(cfg, cc=max(plan.concurrencies), ramp_s=0.0))
        self._sends.clear()  # the closed-loop client's first requests: this client sends its own
        self.plan = plan
        self.runs: list[RunRecord] = []
        for c in plan.concurrencies:
            self.runs.append(RunRecord("warmup", c, c * plan.num_warmup_mult, WARMUP_RATE))
            self.runs.append(RunRecord("measured", c, c * plan.num_prompts_mult, math.inf))
        self._client_rng = random.Random(f"sweep-client-{cfg.seed}")
        self._next_run = 0
        self._next_launch = first_launch
        self._stage: _Stage | None = None
        self._stage_of: dict[int, tuple[_Stage, RequestRecord]] = {}
        self.finished_at: float | None = None

    @property
    def measured(self) -> list[RunRecord]:
        return [r for r in self.runs if r.kind == "measured"]

    @property
    def finished(self) -> bool:
        return self.finished_at is not None

    # --- the script --------------------------------------------------------------------------
    def tick(self) -> None:
        self._advance_script(self.t)
        super().tick()

    def _advance_script(self, now: float) -> None:
        stage = self._stage
        if stage is not None and stage.complete:
            run = stage.run
            if not stage.main:  # the test prompt is back: the main run starts
                run.main_start = now
                self._begin(_Stage(run, True, now, self._client_rng), now)
            else:
                run.main_end = max(r.done for r in run.requests if r.done is not None)
                run.exited = run.main_end + self.plan.client_exit_s
                self._stage = None
                self._next_launch = run.exited  # bench.sh goes straight on to its next client
        if self._stage is not None or self.finished_at is not None or now < self._next_launch:
            return
        if self._next_run == len(self.runs):
            self.finished_at = self.runs[-1].exited
            return
        run = self.runs[self._next_run]
        self._next_run += 1
        run.launched = self._next_launch
        self._begin(_Stage(run, False, run.launched + self.plan.client_start_s, self._client_rng), now)

    def _begin(self, stage: _Stage, now: float) -> None:
        self._stage = stage
        for _ in range(min(stage.limit, stage.total)):
            self._queue_send(stage, now)

    def _queue_send(self, stage: _Stage, now: float) -> None:
        stage.sent += 1
        self._send_seq += 1
        heapq.heappush(self._sends, (max(now, stage.arrival()), self._send_seq))

    # --- the simulator's client hooks ----------------------------------------------------------
    def _send(self, at: float) -> Request:
        stage = self._stage
        assert stage is not None, "a request sent outside a run"
        req = super()._send(at)
        record = RequestRecord(req.isl, req.osl, at)
        if stage.main:
            stage.run.requests.append(record)
        else:
            stage.run.test_prompt = record
        self._stage_of[req.rid] = (stage, record)
        if req.state == "failed":  # no prefill worker took it
            self._finished(req, at, "no prefill worker")
        return req

    def request_done(self, req: Request, engine: Engine, now: float) -> None:
        super().request_done(req, engine, now)
        self._finished(req, now, "")

    def _fail(self, reqs: list[Request], now: float) -> None:
        super()._fail(reqs, now)
        for req in reqs:
            self._finished(req, now, "server error")

    def _reschedule(self, now: float) -> None:
        """The closed loop's replacement request: this client sends from its script instead."""

    def _finished(self, req: Request, now: float, error: str) -> None:
        entry = self._stage_of.pop(req.rid, None)
        if entry is None:
            return
        stage, record = entry
        record.done = now
        record.error = error
        if req.first_token_at is not None and not error:
            record.first_token = min(req.first_token_at, now)
        stage.finished += 1
        if stage.sent < stage.total:
            self._queue_send(stage, now)
