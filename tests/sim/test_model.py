"""The simulator's numbers add up: conservation, KV bounds, the eager penalty, TPS/GPU in the logs = truth."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from pdwatch.sim import Crash, FlakyLink, LogOptions, RoleSettings, SimConfig, Simulation, run
from pdwatch.sim.model import default_capture_sizes

from .helpers import by_engine, in_window, mean, parse_folder, parsed_tps_per_gpu

START = datetime(2026, 5, 29, 14, 0, tzinfo=timezone.utc)
# A small PD deployment whose decode KV cache is too small for its load (gpu_memory_utilization 0.8 on a
# DEP2 decode): it preempts, and with a flaky link and crashes every path of the flow is taken.
TIGHT = SimConfig(topology="4xDEP2-1xDEP2", cc=1200, duration=60, seed=3,
                  decode=RoleSettings(max_num_seqs=1024, gpu_memory_utilization=0.8))


def _in_flight_by_walk(sim: Simulation) -> int:
    """Requests in flight, counted from the engines' queues independently of Simulation.in_flight()."""
    seen: set[int] = set()
    for e in sim.engines:
        for req in [*e.waiting, *e.prefilling, *e.pending, *(r for _, _, r in e.loading)]:
            assert req.rid not in seen, "a request sits in two places"
            seen.add(req.rid)
        running = {req.rid for g_end, _, epoch, req in e.run_heap
                   if req.state == "running" and req.epoch == epoch and req.decode_engine is e}
        assert len(running) == e.n_running
        assert not running & seen
        seen |= running
    return len(seen)


@pytest.mark.parametrize("cfg", [
    TIGHT,
    replace(TIGHT, flaky=FlakyLink("prefill_w1", 0.3), seed=4),
    replace(TIGHT, crash=Crash("decode_w0", 1, 40.0), seed=5),
    replace(TIGHT, crash=Crash("prefill_w0", 0, 30.0), seed=6),
    SimConfig(topology="1xDEP4", cc=300, duration=60, seed=7),
], ids=["kv-tight", "flaky-link", "decode-crash", "prefill-crash", "aggregated"])
def test_requests_in_equal_out_plus_in_flight_at_every_step(cfg):
    checks = {"ticks": 0, "preempted": 0}

    def check(sim: Simulation) -> None:
        checks["ticks"] += 1
        in_flight = _in_flight_by_walk(sim)
        assert sim.sent == sim.completed + sim.failed + in_flight
        assert in_flight <= cfg.cc
        for e in sim.engines:
            assert -1e-6 <= e.kv_used <= e.cfg.kv_capacity + 1e-6, f"{e.name} KV {e.kv_used} / {e.cfg.kv_capacity}"
        checks["preempted"] = sum(e.preemptions for e in sim.engines)

    sim = Simulation(cfg)
    for _ in sim.run():
        check(sim)
    assert checks["ticks"] == round(cfg.duration / cfg.dt)
    assert sim.completed > 0
    if cfg is TIGHT:
        assert checks["preempted"] > 0, "the tight configuration is meant to preempt"


def test_generated_tokens_are_conserved():
    """Tokens generated on decode = OSL of every finished request + what the unfinished ones have so far."""
    cfg = replace(TIGHT, record_requests=True)
    sim = Simulation(cfg)
    finished = 0.0
    for _ in sim.run():
        finished += sum(o.request.osl for o in sim.take_occurrences() if o.kind == "done")
    partial = 0.0
    for e in sim.decode_engines:
        for req in [*e.waiting, *e.prefilling]:
            partial += req.gen
        for g_end, _, epoch, req in e.run_heap:
            if req.state == "running" and req.epoch == epoch and req.decode_engine is e:
                partial += req.gen_start + (e.G - req.g_start) * e.tau
    generated = sum(e.gen_tokens for e in sim.decode_engines)
    assert generated == pytest.approx(finished + partial, rel=1e-6)
    prefill_prompts = sum(e.prompt_local for e in sim.engines if e.role == "prefill")
    assert prefill_prompts > 0


def test_eager_penalty_above_the_largest_captured_graph():
    sim = Simulation(SimConfig(topology="1xDEP2-1xDEP2", cc=10, duration=1))
    cfg = sim.decode_engines[0].cfg
    cap = cfg.capture_max
    assert cap == 512 and cfg.capture_sizes == tuple(default_capture_sizes(1024, 0, None))
    below = cfg.step_time(cap, 0) - cfg.step_time(cap - 1, 0)
    above = cfg.step_time(cap + 1, 0) - cfg.step_time(cap, 0)
    assert above > below + 0.005  # one more request costs the eager penalty, not one token's worth
    # in a run: the ranks the router favours exceed the capture size and make fewer tokens per request
    weights = (1.2, 0.8)
    sim = Simulation(SimConfig(topology="2xDEP2-1xDEP2", cc=1200, isl=2048, osl=512, duration=80, seed=2,
                               ramp_s=5.0, decode_weights=weights))
    rows = {0: [], 1: []}
    gen0 = {}
    for _ in sim.run():
        if sim.t >= 50 and not gen0:
            gen0 = {e.rank: e.gen_tokens for e in sim.decode_engines}
        if sim.t >= 50:
            for e in sim.decode_engines:
                rows[e.rank].append(e.n_running)
    hot, cold = sim.decode_engines
    assert mean(rows[0]) > cap >= mean(rows[1])
    assert hot.eager_steps > 0 and cold.eager_steps == 0
    per_request = {e.rank: (e.gen_tokens - gen0[e.rank]) / 30 / mean(rows[e.rank]) for e in sim.decode_engines}
    assert per_request[0] < 0.9 * per_request[1]


def test_capture_sizes_follow_vllm_defaults():
    assert default_capture_sizes(1024, 0, None)[-1] == 512
    assert default_capture_sizes(128, 0, None)[-1] == 256  # min(2 * max_num_seqs, 512)
    assert default_capture_sizes(1024, 1, None)[-1] == 512
    sizes = default_capture_sizes(1024, 0, 768)
    assert sizes[-1] == 768 and sizes[:4] == [1, 2, 4, 8] and 256 in sizes and 272 in sizes


def test_kv_capacity_comes_from_the_memory_breakdown():
    sim = Simulation(SimConfig(topology="4xDEP2-1xDEP8", cc=1, duration=1))
    for e in (sim.endpoints[0].engines[0], sim.decode_engines[0]):
        mem = e.cfg.memory
        kv_bytes = mem.total_gib * mem.utilization - mem.weights_gib - mem.activation_gib - mem.non_torch_gib \
            - mem.cudagraph_gib
        assert mem.kv_gib == pytest.approx(kv_bytes)
        per_token = sim.cfg.model.kv_bytes_per_token
        assert e.cfg.kv_capacity % e.cfg.block_size == 0
        assert 0 <= kv_bytes * 2**30 / per_token - e.cfg.kv_capacity < e.cfg.block_size
    # experts are sharded over the DP group: DEP2 prefill GPUs hold more weights, so less KV cache
    assert sim.endpoints[0].engines[0].cfg.kv_capacity < sim.decode_engines[0].cfg.kv_capacity


def test_more_prefill_or_bigger_prefill_batches_raise_throughput():
    """The articles' two fixes for a prefill-bound deployment move the simulator the same way."""
    def tps(topology: str, mnbt: int) -> float:
        sim = Simulation(SimConfig(topology=topology, cc=3072, duration=80, seed=1,
                                   prefill=RoleSettings(max_num_batched_tokens=mnbt)))
        for _ in sim.run():
            pass
        return sim.truth(50, 80)["tps_per_gpu"]

    base = tps("4xDEP2-1xDEP8", 8192)
    bigger_batches = tps("4xDEP2-1xDEP8", 16384)
    assert 1.04 < bigger_batches / base < 1.12  # "about +8%"
    assert tps("6xDEP2-1xDEP8", 8192) > base


def test_same_seed_same_run_other_seed_other_run():
    def history(seed: int) -> list[tuple]:
        sim = Simulation(replace(TIGHT, duration=20, seed=seed))
        for _ in sim.run():
            pass
        return [(s.completed, round(s.prompt_prefill, 6), round(s.gen_decode, 6)) for s in sim.history]

    assert history(1) == history(1)
    assert history(1) != history(2)


@pytest.mark.parametrize("style", ["vllm", "dynamo", "vllm-0.14"])
def test_tps_per_gpu_in_the_logs_matches_the_simulator(tmp_path, style):
    cfg = SimConfig(topology="4xDEP2-1xDEP8", cc=3072, duration=110, seed=9)
    result = run(cfg, tmp_path, LogOptions(style=style, noise="quiet", start=START))
    t0, t1 = 50.0, 100.0
    truth = result.truth(t0, t1)
    folder = parse_folder(tmp_path)
    logs = parsed_tps_per_gpu(folder, START + timedelta(seconds=t0), START + timedelta(seconds=t1), 10.0,
                              result.sim.topology.gpus)
    assert logs == pytest.approx(truth["tps_per_gpu"], rel=0.03)
    # the prompt throughput a decode worker prints: ~0 now; before v0.16 every transferred prompt again
    w0, w1 = START + timedelta(seconds=t0), START + timedelta(seconds=t1)
    decode_prompt = mean(e.values["prompt_tps"] for e in in_window(folder.stats(role="decode"), w0, w1))
    prefill_prompt = sum(mean(e.values["prompt_tps"] for e in evs)
                         for evs in by_engine(in_window(folder.stats(role="prefill"), w0, w1)).values())
    if style == "vllm-0.14":
        naive = decode_prompt * len(result.sim.decode_engines) + prefill_prompt
        assert naive == pytest.approx(2 * prefill_prompt, rel=0.05)  # the double count, reproducible
    else:
        assert decode_prompt == 0.0


def test_kv_usage_in_the_logs_never_exceeds_100(tmp_path):
    preempted: dict[float, int] = {}

    def record(sim: Simulation) -> None:
        preempted[round(sim.t, 6)] = sum(e.preemptions for e in sim.decode_engines)

    result = run(replace(TIGHT, duration=80), tmp_path, LogOptions(style="vllm", noise="quiet", start=START),
                 on_tick=record)
    folder = parse_folder(tmp_path)
    kv = [e.values["kv_usage_pct"] for e in folder.stats()]
    assert max(kv) <= 100.0
    decode = folder.stats(role="decode")
    assert max(e.values["kv_usage_pct"] for e in decode) >= 95.0
    # "Preemptions: N" lines add up to the simulator's count at the last stats line
    last = round((max(e.ts for e in decode) - START).total_seconds(), 6)
    assert sum(e.values.get("preemptions", 0) for e in decode) == preempted[last] > 0
    assert preempted[last] <= sum(e.preemptions for e in result.sim.decode_engines)
