"""Store and headline: TPS/GPU over the detected plateau, against the simulator's truth."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from parsers import Event
from pdwatch.event_stream import EventStream
from pdwatch.sources import SourceSet
from pdwatch.store import Store
from pdwatch.throughput import headline

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
    assert result.gpus == 1 and not result.gpus_inferred  # the engine-config line prints TP and DP
