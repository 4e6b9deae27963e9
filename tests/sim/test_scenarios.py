"""Every scenario in samples/: a well-formed expected.yaml whose labels are visible in the parsed numbers.

Until the rules exist, each rule id has a *signature* here, computed from the events
``parsers.LogScanner`` gives for the folder: a ``must_fire`` rule's signature must be there,
a ``must_not_fire`` rule's (where one is defined) must not.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
import yaml

from pdwatch.sim.scenarios import RULES, SCENARIOS, generate

from .helpers import SAMPLES, Folder, by_engine, in_window, mean, parse_folder, parsed_tps_per_gpu

NAMES = list(SCENARIOS)


@pytest.fixture(scope="module")
def folders() -> dict[str, tuple[dict, Folder]]:
    out = {}
    for name in NAMES:
        path = SAMPLES / name
        assert path.is_dir(), f"samples/{name} is missing: python -m pdwatch.sim.scenarios --out samples"
        out[name] = (yaml.safe_load((path / "expected.yaml").read_text()), parse_folder(path))
    return out


def _window(expected: dict) -> tuple[datetime, datetime]:
    w = expected["steady_window"]
    return datetime.fromisoformat(w["start"]), datetime.fromisoformat(w["end"])


# --- signatures: what each rule would see in the numbers -------------------------------------------------


def _steady(folder: Folder, expected: dict, **where) -> list:
    return in_window(folder.stats(**where), *_window(expected))


def _per_engine_mean(events: list, key: str) -> dict:
    return {k: mean(e.values[key] for e in evs) for k, evs in by_engine(events).items()}


def prefill_bound(folder: Folder, expected: dict, target: dict) -> bool:
    prefill = _steady(folder, expected, role="prefill")
    decode = _steady(folder, expected, role="decode")
    if not prefill or not decode:
        return False
    waiting = [e.values["waiting"] for e in prefill]
    prompt = _per_engine_mean(prefill, "prompt_tps")
    flat = all(abs(e.values["prompt_tps"] - prompt[(e.source, e.engine)]) <= 0.05 * prompt[(e.source, e.engine)]
               for e in prefill)
    n_decode = len({(e.source, e.engine) for e in decode})
    return (min(waiting) >= 10 and mean(waiting) >= 50 and flat
            and mean(e.values["running"] for e in decode) < 0.5 * expected["cc"] / n_decode
            and max(e.values["kv_usage_pct"] for e in decode) < 50)


def kv_exhausted(folder: Folder, expected: dict, target: dict) -> bool:
    decode = _steady(folder, expected, role="decode")
    if not decode:
        return False
    return (mean(e.values["kv_usage_pct"] for e in decode) >= 95
            and mean(e.values["waiting"] for e in decode) > 0
            and sum(e.values.get("preemptions", 0) for e in decode) > 0)


def _capture_max(folder: Folder, endpoint: str) -> int:
    [capture] = [e.values for e in folder.events[endpoint]
                 if e.kind == "cudagraph_capture" and e.values["origin"] == "engine_config"]
    return capture["max_size"]


def _over_capture(folder: Folder, expected: dict) -> dict[str, set[int]]:
    out = {}
    for endpoint in folder.endpoints("decode") + folder.endpoints("agg"):
        [config] = [e.values for e in folder.events[endpoint] if e.kind == "engine_config"]
        spec = config.get("num_speculative_tokens", 0)
        cap = _capture_max(folder, endpoint)
        running = _per_engine_mean(_steady(folder, expected, endpoint=endpoint), "running")
        out[endpoint] = {engine for (_, engine), n in running.items() if n * (1 + spec) > cap}
    return out


def cudagraph_overflow(folder: Folder, expected: dict, target: dict) -> bool:
    over = _over_capture(folder, expected)
    if "engines" in target:
        return any(engines == set(target["engines"]) for engines in over.values())
    return any(over.values())


def stats_missing(folder: Folder, expected: dict, target: dict) -> bool:
    endpoints = [target["endpoint"]] if "endpoint" in target else \
        folder.endpoints(target.get("role", "decode")) if target else \
        [ep for role in ("prefill", "decode", "agg") for ep in folder.endpoints(role)]
    return any(not folder.stats(endpoint=ep) and folder.kind("stats_disabled", endpoint=ep) for ep in endpoints)


def lint_api_server_count(folder: Folder, expected: dict, target: dict) -> bool:
    return any(e.values["args"].get("api_server_count", 1) > 1 for e in folder.kind("args"))


def engine_failure(folder: Folder, expected: dict, target: dict) -> bool:
    endpoints = [target["endpoint"]] if "endpoint" in target else list(folder.events)
    for ep in endpoints:
        ooms = folder.kind("oom", endpoint=ep) + folder.kind("engine_dead", endpoint=ep)
        if not ooms:
            continue
        first = min(e.ts for e in ooms)
        crashed = {e.engine for e in folder.kind("oom", endpoint=ep)}
        tracebacks = [e for e in folder.kind("traceback", endpoint=ep) if e.ts >= first]
        silent = not [e for e in folder.stats(endpoint=ep) if e.ts > first]
        if tracebacks and silent and ("engines" not in target or crashed == set(target["engines"])):
            return True
    return False


def kv_transfer_errors(folder: Folder, expected: dict, target: dict) -> bool:
    if "endpoint" in target:
        return bool(folder.kind("nixl_failure", endpoint=target["endpoint"])
                    or folder.kind("kv_expired", endpoint=target["endpoint"]))
    role = target.get("role")
    return bool(folder.kind("nixl_failure", role=role) or folder.kind("kv_expired", role=role))


def dp_imbalance(folder: Folder, expected: dict, target: dict) -> bool:
    """Decode ranks of one endpoint carrying clearly different loads (>= 10% apart, on real batches)."""
    for ep in folder.endpoints("decode"):
        running = _per_engine_mean(_steady(folder, expected, endpoint=ep), "running")
        if len(running) > 1 and min(running.values()) >= 20 and max(running.values()) > 1.1 * min(running.values()):
            return True
    return False


def seq_cap_bound(folder: Folder, expected: dict, target: dict) -> bool:
    for ep in folder.endpoints("decode"):
        [args] = [e.values["args"] for e in folder.kind("args", endpoint=ep)]
        cap = args.get("max_num_seqs", 1024)
        if any(e.values["running"] >= 0.95 * cap for e in _steady(folder, expected, endpoint=ep)):
            return True
    return False


def lint_ssm_conv_layout(folder: Folder, expected: dict, target: dict) -> bool:
    return any(not [e for e in folder.kind("ssm_conv_layout", endpoint=ep) if e.values["layout"] == "DS"]
               for role in ("prefill", "decode") for ep in folder.endpoints(role))


def lint_async_scheduling_off(folder: Folder, expected: dict, target: dict) -> bool:
    return any(e.values["args"].get("async_scheduling") is not True for e in folder.kind("args"))


def lint_prefix_caching_unused(folder: Folder, expected: dict, target: dict) -> bool:
    return any(e.values["args"].get("enable_prefix_caching", True) for e in folder.kind("args"))


def lint_block_size_mismatch(folder: Folder, expected: dict, target: dict) -> bool:
    sizes = {e.values["attention_block_tokens"] for e in folder.kind("block_size") if "attention_block_tokens" in e.values}
    return len(sizes) > 1


SIGNATURES = {
    "prefill_bound": prefill_bound, "kv_exhausted": kv_exhausted, "cudagraph_overflow": cudagraph_overflow,
    "stats_missing": stats_missing, "lint_api_server_count": lint_api_server_count, "engine_failure": engine_failure,
    "kv_transfer_errors": kv_transfer_errors, "dp_imbalance": dp_imbalance, "seq_cap_bound": seq_cap_bound,
    "lint_ssm_conv_layout": lint_ssm_conv_layout, "lint_async_scheduling_off": lint_async_scheduling_off,
    "lint_prefix_caching_unused": lint_prefix_caching_unused, "lint_block_size_mismatch": lint_block_size_mismatch,
}


# --- the tests -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_expected_yaml_is_well_formed(name, folders):
    expected, folder = folders[name]
    assert expected["scenario"] == name
    assert {"must_fire", "must_not_fire", "tps_per_gpu", "steady_window", "gpus", "cc"} <= set(expected)
    fire = expected["must_fire"]
    assert isinstance(fire, list) and isinstance(expected["must_not_fire"], list)
    for target in fire:
        assert target["rule"] in RULES
        assert set(target) <= {"rule", "role", "endpoint", "engines"}
        assert ("role" in target) != ("endpoint" in target), target
        if "role" in target:
            assert target["role"] in ("prefill", "decode", "agg") and folder.endpoints(target["role"])
        else:
            assert target["endpoint"] in folder.events
        if "engines" in target:
            assert all(isinstance(i, int) and i >= 0 for i in target["engines"])
    assert all(rule in RULES for rule in expected["must_not_fire"])
    assert not {t["rule"] for t in fire} & set(expected["must_not_fire"])
    assert expected["tps_per_gpu"] is None or expected["tps_per_gpu"] > 0
    t0, t1 = _window(expected)
    assert t0 < t1 and t0.tzinfo is not None
    assert (Path(folder.path) / "README.md").read_text().startswith(f"# {name}:")


@pytest.mark.parametrize("name", NAMES)
def test_tps_per_gpu_matches_the_parsed_stats(name, folders):
    expected, folder = folders[name]
    t0, t1 = _window(expected)
    if expected["tps_per_gpu"] is None:
        # part of the deployment prints no stats: nothing to add up
        assert any(not folder.stats(endpoint=ep) for role in ("prefill", "decode", "agg")
                   for ep in folder.endpoints(role))
        return
    logs = parsed_tps_per_gpu(folder, t0, t1, expected["stats_interval_s"], expected["gpus"])
    assert logs == pytest.approx(expected["tps_per_gpu"], rel=0.03)


@pytest.mark.parametrize("name", NAMES)
def test_must_fire_signatures_are_in_the_numbers(name, folders):
    expected, folder = folders[name]
    for target in expected["must_fire"]:
        check = SIGNATURES[target["rule"]]
        assert check(folder, expected, target), f"{name}: no {target['rule']} signature for {target}"


@pytest.mark.parametrize("name", NAMES)
def test_must_not_fire_signatures_are_absent(name, folders):
    expected, folder = folders[name]
    for rule in expected["must_not_fire"]:
        if rule in SIGNATURES:
            assert not SIGNATURES[rule](folder, expected, {}), f"{name}: {rule} signature present"


def test_healthy_is_the_baseline(folders):
    expected, folder = folders["healthy"]
    assert not expected["must_fire"]
    for rule in ("prefill_bound", "kv_exhausted", "cudagraph_overflow", "stats_missing", "engine_failure",
                 "kv_transfer_errors"):
        assert rule in expected["must_not_fire"]
    assert folder.kind("traceback")  # a harmless one (chat-template warmup) that is not an engine failure


def test_aggregated_is_one_endpoint(folders):
    expected, folder = folders["aggregated"]
    assert list(folder.events) == ["agg_w0"]
    assert expected["gpus"] == 8


def test_the_decode_double_count_trap_is_in_engine_crash(folders):
    expected, folder = folders["engine-crash"]
    t0, t1 = _window(expected)
    decode = in_window(folder.stats(role="decode"), t0, t1)
    prefill = in_window(folder.stats(role="prefill"), t0, t1)
    decode_prompt = sum(_per_engine_mean(decode, "prompt_tps").values())
    prefill_prompt = sum(_per_engine_mean(prefill, "prompt_tps").values())
    assert decode_prompt == pytest.approx(prefill_prompt, rel=0.1)  # the same prompts, counted on both sides


def test_samples_stay_small():
    total = sum(p.stat().st_size for p in SAMPLES.rglob("*") if p.is_file())
    assert total < 4_000_000


@pytest.mark.parametrize("name", NAMES)
def test_samples_are_what_the_generator_writes(name, tmp_path):
    """The checked-in folders are up to date: regenerating gives the same bytes."""
    generate(SCENARIOS[name], tmp_path / name, samples_root="samples")
    ours = sorted(p.relative_to(tmp_path / name) for p in (tmp_path / name).rglob("*") if p.is_file())
    theirs = sorted(p.relative_to(SAMPLES / name) for p in (SAMPLES / name).rglob("*") if p.is_file())
    assert ours == theirs
    for rel in ours:
        assert (tmp_path / name / rel).read_bytes() == (SAMPLES / name / rel).read_bytes(), rel
