"""`pdwatch report` on real vLLM captures gives the diagnosis written down by hand for each.

The captures (tests/data/real/captures/, made by tools/capture-vllm) are real runs of vLLM
0.32 for CPU; ``expected.yaml`` beside them says, from what each scenario did, which
findings must fire, which may, the deployment, and how the headline compares with the
client's own token counts. Its header explains each key.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from datetime import datetime
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

from tests.conftest import REAL_LOGS

CAPTURES = REAL_LOGS / "captures"
EXPECTED = yaml.safe_load((CAPTURES / "expected.yaml").read_text())
NAMES = sorted(EXPECTED["captures"])


@lru_cache(maxsize=None)
def report(name: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "pdwatch", "report", str(CAPTURES / name), "--format", "json"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def scenario(name: str) -> dict:
    return json.loads((CAPTURES / name / "scenario.json").read_text())


def epoch(stamp: str | None) -> float | None:
    return datetime.fromisoformat(stamp).timestamp() if stamp else None


def test_every_capture_has_its_expectations():
    folders = {p.name for p in CAPTURES.iterdir() if p.is_dir()}
    assert folders == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_the_deployment_is_what_was_started(name):
    got = {e["name"]: {"role": e["role"], "engines": e["engines"], "gpus": e["gpus"]}
           for e in report(name)["deployment"]["endpoints"]}
    assert got == EXPECTED["captures"][name]["endpoints"]


def _matches(finding: dict, want: dict, run: dict) -> list[str]:
    """Why ``finding`` is not the expected one (empty: it is)."""
    why = []
    for key in ("rule", "endpoint", "severity", "engines"):
        if key in want and finding[key] != want[key]:
            why.append(f"{key} {finding[key]!r} != {want[key]!r}")
    start = epoch(finding["start"])
    if "starts_in" in want:
        if want["starts_in"] == "stop":
            begin, end = run["stop"]["event"]["t"], float("inf")
        else:
            phase = next(p for p in run["phases"] if p["phase"] == want["starts_in"])
            begin, end = phase["start"], phase["end"]
        # the rules are evaluated on whole seconds of log time: allow the second it was stamped in
        if not begin - 1.0 <= start <= end:
            why.append(f"starts at {finding['start']}, not in {want['starts_in']}")
        elif "within_s" in want and start - begin > want["within_s"]:
            why.append(f"starts {start - begin:.0f} s after {want['starts_in']} began (> {want['within_s']} s)")
    if "summary_has" in want and want["summary_has"] not in finding["summary"]:
        why.append(f"summary lacks {want['summary_has']!r}: {finding['summary']!r}")
    if "evidence_has" in want and not any(want["evidence_has"] in q["text"] for q in finding["evidence"]):
        why.append(f"no quoted line has {want['evidence_has']!r}: {[q['text'] for q in finding['evidence']]}")
    return why


@pytest.mark.parametrize("name", NAMES)
def test_the_findings_are_exactly_the_expected_ones(name):
    want = EXPECTED["captures"][name]
    findings = report(name)["findings"]
    run = scenario(name)
    problems, used = [], set()
    for expected in want["expect"]:
        candidates = [(i, _matches(f, expected, run)) for i, f in enumerate(findings)
                      if f["rule"] == expected["rule"] and i not in used]
        ok = [i for i, why in candidates if not why]
        if ok:
            used.add(ok[0])
        else:
            problems.append(f"expected {expected}: " + ("; ".join(w for _, why in candidates for w in why)
                                                          or "it did not fire"))
    allowed = set(want.get("allow") or {})
    for i, f in enumerate(findings):
        if i not in used and f["rule"] not in allowed:
            problems.append(f"false alarm: {f['rule']} ({f['severity']}) on {f['endpoint']}: {f['summary']}")
    assert not problems, "\n".join(problems)


def client_tokens_per_s(name: str, lo: float, hi: float, cached_prefix: dict[str, int]) -> float:
    """The client's tokens/s over (lo, hi]: a request's prompt counts when its first token came
    back (minus what the prefix cache served), its output tokens spread evenly over its stream.
    A request that failed mid-stream counts the tokens it streamed (one per chunk)."""
    total = 0.0
    first_in_phase: set[str] = set()
    with open(CAPTURES / name / "requests.csv", encoding="utf-8") as f:
        rows = sorted(csv.DictReader(f), key=lambda r: float(r["sent"]))
    for row in rows:
        if row["status"] != "200" or not row["first_token"]:
            continue
        first, end = float(row["first_token"]), float(row["end"])
        prompt = int(row["prompt_tokens"])
        if row["phase"] in cached_prefix and row["phase"] in first_in_phase:
            prompt -= cached_prefix[row["phase"]]
        first_in_phase.add(row["phase"])
        if lo < first <= hi:
            total += prompt
        out = int(row["output_tokens"] or row["chunks"] or 0)
        if out and end > first:
            total += out * max(0.0, min(end, hi) - max(first, lo)) / (end - first)
    return total / (hi - lo)


@pytest.mark.parametrize("name", NAMES)
def test_the_headline_agrees_with_the_clients_token_counts(name):
    want = EXPECTED["captures"][name]["headline"]
    summary = report(name)["summary"]
    if "not_compared" in want:
        assert summary["total_tps"] is not None, summary  # there is a number; the reason says why it is not checked
        return
    if "none" in want:
        assert summary["total_tps"] is None, summary
        if "note_has" in want:
            assert want["note_has"] in (summary["note"] or ""), summary["note"]
        return
    interval = min(float(s["env"].get("VLLM_LOG_STATS_INTERVAL", 10)) for s in scenario(name)["servers"]
                   if "VLLM_LOG_STATS_INTERVAL" in s["env"])
    lo, hi = epoch(summary["window"]["start"]) - interval, epoch(summary["window"]["end"])
    client = client_tokens_per_s(name, lo, hi, want.get("cached_prefix") or {})
    tol = EXPECTED["tolerance"]
    allowed = tol["relative"] + tol["seconds"] / (hi - lo)
    assert summary["total_tps"] == pytest.approx(client, rel=allowed), (
        f"pdwatch {summary['total_tps']:.1f} tok/s vs client {client:.1f} tok/s over {hi - lo:.0f} s "
        f"(tolerance {100 * allowed:.1f}%)")
