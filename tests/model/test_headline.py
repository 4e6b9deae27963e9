"""Store and headline: TPS/GPU over the detected plateau, against the simulator's truth."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from pdwatch.parsers import Event
from pdwatch.events.stream import EventStream
from pdwatch.sources import SourceSet
from pdwatch.model.store import Store
from pdwatch.model.throughput import headline

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
SCENARIOS = sorted(p.name for p in SAMPLES.iterdir() if (p / "expected.yaml").exists())


def load(paths: list[str], year: int | None = None) -> Store:
    store = Store()
    store.add(e for e in EventStream(SourceSet(paths, follow=False), year=year) if isinstance(e, Event))
    store.flush()
    return store


def headline_of(store: Store):
    endpoints = store.endpoints()
    return headline(endpoints, {e.name: store.stats(e.name) for e in endpoints})


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_tps_per_gpu_matches_the_simulators_truth(scenario):
    expected = yaml.safe_load((SAMPLES / scenario / "expected.yaml").read_text())
    result = headline_of(load([str(SAMPLES / scenario)]))
    if expected["tps_per_gpu"] is None:
        assert result.tps_per_gpu is None and "printed no stats lines" in result.note
        return
    assert result.gpus == expected["gpus"]
    assert result.tps_per_gpu == pytest.approx(expected["tps_per_gpu"], rel=0.035)
    truth = expected["steady_window"]
    overlap = min(result.end, pd.Timestamp(truth["end"])) - max(result.start, pd.Timestamp(truth["start"]))
    assert overlap >= pd.Timedelta(seconds=30)


def test_prompts_are_counted_once_in_pd():
    # engine-crash uses vLLM 0.14, whose decode workers report transferred prompts as prompt throughput.
    result = headline_of(load([str(SAMPLES / "engine-crash")]))
    decode_prompt = result.per_role["decode"]["prompt_tps"]
    assert decode_prompt > 0.5 * result.per_role["prefill"]["prompt_tps"]
    assert result.prompt_tps == pytest.approx(result.per_role["prefill"]["prompt_tps"])
    assert result.total_tps == pytest.approx(result.prompt_tps + result.per_role["decode"]["gen_tps"])


def test_store_frames_and_facts_from_a_real_log(tmp_path):
    from tests.conftest import CPU_LOGS
    store = load([str(CPU_LOGS / "s2_seqs4.log")], year=2026)
    (endpoint,) = store.endpoints()
    stats = store.stats(endpoint.name)
    assert len(stats) == 16 and stats["ts"].is_monotonic_increasing
    assert str(stats["ts"].dtype) == "datetime64[ns, UTC]" or str(stats["ts"].dtype).startswith("datetime64")
    facts = endpoint.facts
    assert facts["max_num_seqs"] == 4 and facts["max_capture_size"] is None and facts["stats_interval_s"] == 2.0
    assert facts["kv_capacity_tokens"] == 2097152
    view = store.view()
    assert view.endpoints[0].engines == (0,)
    assert set(store.events(endpoint.name)["kind"]) >= {"shutdown", "traceback", "engine_dead"}
    result = headline_of(store)
    assert result.start.strftime("%H:%M:%S") >= "09:01:38"  # the high phase, not the idle or low one
    # vLLM's CPU backend: no GPU to divide by, tokens/s per worker instead (never an invented GPU)
    assert result.device == "CPU" and result.gpus is None and result.tps_per_gpu is None and not result.gpus_inferred
    assert result.workers == 1 and result.tps_per_worker == pytest.approx(result.total_tps)


def test_an_oscillating_plateau_is_one_plateau(tmp_path):
    # Decode KV-bound with preemption waves (the kv-exhausted scenario run for 11 minutes):
    # throughput swings +-15% around its level for the whole plateau. The headline must
    # cover the plateau, not one calm stretch of it, and be within 2% of its mean.
    from dataclasses import replace

    from pdwatch.sim import LogOptions
    from pdwatch.sim import run as run_simulation
    from pdwatch.sim.scenarios import SCENARIOS

    scenario = SCENARIOS["kv-exhausted"]
    cfg = replace(scenario.config, duration=660.0)
    result = run_simulation(cfg, tmp_path, LogOptions(style=scenario.style, noise="quiet", interval=10.0,
                                                      scenario="oscillating"))
    sim = result.sim
    store = load([str(tmp_path)])
    got = headline_of(store)
    # The plateau: from the end of the ramp (the decode KV cache filled, 150 s in) to the end of the load.
    load_start = min(store.stats(e.name)["ts"].min() for e in store.endpoints() if not store.stats(e.name).empty)
    plateau = sim.truth(150.0, sim.t)
    assert got.tps_per_gpu == pytest.approx(plateau["tps_per_gpu"], rel=0.02)
    covered = (got.end - got.start).total_seconds()
    assert covered >= 0.8 * (sim.t - 150.0), (got.start, got.end, load_start)


def test_closed_loop_dips_do_not_cut_the_plateau():
    # A closed-loop client whose requests finish together: every fifth stats interval the
    # requests in flight drop to a third and throughput to half, then recover (the real
    # captures show this shape). 11 minutes of such a plateau are one plateau.
    from pdwatch.model.deployment import Endpoint

    t0 = pd.Timestamp("2026-05-29T14:00:00Z")
    rows = []
    for i in range(90):  # 30 s ramp-up, 11 min plateau, 15 s idle, at 10 s
        if i < 3:
            inflight, tps = 64 * (i + 1) / 4, 40000.0 * (i + 1) / 4
        elif i < 69:
            dip = (i % 5 == 0)
            inflight = 20.0 if dip else 64.0
            tps = (20000.0 if dip else 40000.0 + 4000.0 * ((i % 3) - 1))
        else:
            inflight, tps = 0.0, 0.0
        rows.append({"ts": t0 + pd.Timedelta(seconds=10 * i), "engine": 0, "prompt_tps": tps * 0.8,
                     "gen_tps": tps * 0.2, "running": inflight, "waiting": 0.0, "kv_usage_pct": 50.0})
    stats = pd.DataFrame(rows)
    plateau = stats.iloc[3:69]
    endpoint = Endpoint("server", facts={"stats_interval_s": 10.0})
    endpoint.engines.add(0)
    got = headline([endpoint], {"server": stats})
    mean = float((plateau["prompt_tps"] + plateau["gen_tps"]).mean())
    assert got.total_tps == pytest.approx(mean, rel=0.02)
    assert (got.end - got.start).total_seconds() >= 0.9 * 660


@pytest.mark.parametrize("scenario", [s for s in SCENARIOS if s != "stats-missing"])
def test_the_headline_is_the_plateaus_mean_from_the_simulators_exact_counts(scenario, tmp_path):
    # The sample's run again (same seed, same lines), to ask the simulator for its exact token
    # counts over the period the headline covers: each stats line averages the interval
    # before it, so the window [start, end] of lines covers (start - interval, end].
    from pdwatch.sim import LogOptions
    from pdwatch.sim import run as run_simulation
    from pdwatch.sim.scenarios import SCENARIOS as LIBRARY, START

    sc = LIBRARY[scenario]
    sim = run_simulation(sc.config, tmp_path, LogOptions(style=sc.style, noise="quiet", interval=sc.interval,
                                                         start=START, scenario=sc.name)).sim
    store = load([str(SAMPLES / scenario)])
    got = headline_of(store)
    lines = pd.concat([store.stats(e.name)["ts"] for e in store.endpoints() if e.role != "frontend"])
    used = lines[(lines >= got.start) & (lines <= got.end)]  # the lines the headline averaged
    t0 = (used.min() - pd.Timestamp(START)).total_seconds() - sc.interval
    t1 = (used.max() - pd.Timestamp(START)).total_seconds()
    assert got.tps_per_gpu == pytest.approx(sim.truth(t0, t1)["tps_per_gpu"], rel=0.02)
    # and that period is the plateau: it holds at least 80% of the scenario's steady window
    w0, w1 = sc.window
    assert min(t1, w1) - max(t0, w0) >= 0.8 * (w1 - w0), (t0, t1, sc.window)
