"""The built-in rules on the simulated scenarios in samples/: each folder's expected.yaml
says which findings must appear (on that role or endpoint, on exactly those engines when
listed) and which must not."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

from pdwatch.session.analysis import Analysis, analyse

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
FOLDERS = sorted(p.parent for p in SAMPLES.glob("*/expected.yaml"))


@lru_cache(maxsize=None)
def analysed(folder: Path) -> Analysis:
    return analyse([str(folder)], year=2026)


def expected(folder: Path) -> dict:
    return yaml.safe_load((folder / "expected.yaml").read_text())


def roles(a: Analysis) -> dict[str, str]:
    return {e.name: e.role for e in a.store.endpoints()}


def table(a: Analysis) -> str:
    return "\n".join(f"  {f.rule} {f.endpoint} {f.engines} {f.start}-{f.end}: {f.summary}" for f in a.findings)


def test_all_scenarios_are_here():
    assert {f.name for f in FOLDERS} >= {"aggregated", "cudagraph-overflow", "engine-crash", "healthy",
                                         "kv-exhausted", "kv-transfer-errors", "prefill-bound", "stats-missing"}


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_must_fire(folder):
    a, exp = analysed(folder), expected(folder)
    role_of = roles(a)
    for want in exp["must_fire"]:
        hits = [f for f in a.findings if f.rule == want["rule"]
                and ("endpoint" not in want or f.endpoint == want["endpoint"])
                and ("role" not in want or role_of.get(f.endpoint) == want["role"])]
        assert hits, f"{folder.name}: {want} did not fire; findings:\n{table(a)}"
        if "engines" in want:
            got = sorted({g for f in hits for g in f.engines})
            assert got == sorted(want["engines"]), f"{folder.name}: {want['rule']} on engines {got}"


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_must_not_fire(folder):
    a, exp = analysed(folder), expected(folder)
    wrong = [f for f in a.findings if f.rule in set(exp["must_not_fire"])]
    assert not wrong, f"{folder.name}: must not fire:\n" + "\n".join(
        f"  {f.rule} {f.endpoint} {f.engines}: {f.summary}" for f in wrong)


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_findings_read_well(folder):
    """Every finding has text an operator can act on, filled from the data, and quotes lines."""
    for f in analysed(folder).findings:
        for text in (f.summary, f.explanation, f.recommendation):
            assert text and "{{" not in text, (f.rule, text)
        assert f.endpoint in f.summary, (f.rule, f.summary)
        assert f.evidence, f"{f.rule} on {f.endpoint} quotes no line"
        assert all(q["line_no"] > 0 and q["source"] for q in f.evidence), f.evidence


def test_healthy_is_quiet():
    """The baseline: nothing at all, not even a lint."""
    a = analysed(SAMPLES / "healthy")
    assert a.findings == [], table(a)


def test_prefill_bound_names_every_prefill_endpoint_once():
    a = analysed(SAMPLES / "prefill-bound")
    hits = [f for f in a.findings if f.rule == "prefill_bound"]
    assert sorted(f.endpoint for f in hits) == ["prefill_w0", "prefill_w1", "prefill_w2", "prefill_w3"]
    f = hits[0]
    assert "42,262 tokens/s" in f.summary and "at most 107 requests per engine" in f.summary
    assert "--max-num-batched-tokens" in f.recommendation and "Add prefill endpoints" in f.recommendation
    assert all(q["kind"] == "stats" and "Waiting" in q["text"] for q in f.evidence)


def test_cudagraph_overflow_recommends_running_plus_128():
    [f] = [f for f in analysed(SAMPLES / "cudagraph-overflow").findings if f.rule == "cudagraph_overflow"]
    assert "(512)" in f.summary
    # the most requests one of those ranks ran (534-536) + 128, near the articles' cc/DP + 128
    assert re.search(r"about 66[2-4] ", f.recommendation), f.recommendation


def test_engine_crash_quotes_the_oom():
    [f] = [f for f in analysed(SAMPLES / "engine-crash").findings if f.rule == "engine_failure"]
    assert f.severity == "critical" and f.end is None
    assert any(q["kind"] == "oom" and "CUDA out of memory" in q["text"] for q in f.evidence)


def test_kv_transfer_errors_quote_the_failures():
    a = analysed(SAMPLES / "kv-transfer-errors")
    by_ep = {f.endpoint: f for f in a.findings if f.rule == "kv_transfer_errors"}
    assert by_ep["decode_w0"].evidence[0]["kind"] == "nixl_failure"
    assert "remote_host" in by_ep["decode_w0"].evidence[0]["text"]
    assert by_ep["prefill_w3"].evidence[0]["kind"] == "kv_expired"
    assert set(by_ep) == {"decode_w0", "prefill_w3"}  # the healthy prefill endpoints are not blamed
