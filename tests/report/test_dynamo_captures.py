"""Real NVIDIA Dynamo 1.6.1 jobs: report, replay and watch give the diagnosis written down for each.

The captures (tests/data/real/dynamo/, made by tools/capture-dynamo) are real runs of a Dynamo
frontend and dynamo.vllm workers on vLLM 0.31 for CPU: aggregated and prefill/decode over NIXL,
under KV pressure, with a worker or the frontend killed, a worker that fails to start. Each
folder's README and scenario.json say what the kit did and when; ``expected.yaml`` beside them
says which findings must fire, which may, and the deployment. Its header explains each key.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from datetime import datetime
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

from tests.conftest import REAL_LOGS

DYNAMO = REAL_LOGS / "dynamo"
EXPECTED = yaml.safe_load((DYNAMO / "expected.yaml").read_text())
NAMES = sorted(EXPECTED["captures"])


def _pdwatch(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pdwatch", *args], capture_output=True, text=True, timeout=timeout)


@lru_cache(maxsize=None)
def report(name: str) -> dict:
    out = _pdwatch("report", str(DYNAMO / name), "--format", "json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@lru_cache(maxsize=None)
def replay(name: str) -> list[dict]:
    """The findings a headless replay printed as they fired: JSON lines."""
    out = _pdwatch("replay", str(DYNAMO / name), "--speed", "max", "--headless", "--jsonl")
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def scenario(name: str) -> dict:
    return json.loads((DYNAMO / name / f"{name}.scenario.json").read_text())


def epoch(stamp: str | None) -> float | None:
    return datetime.fromisoformat(stamp).timestamp() if stamp else None


def _when(name: str, what: str) -> tuple[float, float]:
    """(start, end) of a load phase, or of the kit's kill / restart / first freeze (end: open)."""
    run = scenario(name)
    if what in ("kill", "restart", "freeze"):
        event = {"kill": "sigkill", "restart": "restart", "freeze": "sigstop"}[what]
        t = next(e.get("t_signal", e["t"]) for e in run["timeline"] if e.get("event") == event)
        return t, float("inf")
    phase = next(p for p in run["phases"] if p["phase"] == what)
    return phase["start"], phase["end"]


def _matches(name: str, finding: dict, want: dict) -> list[str]:
    """Why ``finding`` is not the expected one (empty: it is)."""
    why = []
    for key in ("rule", "endpoint", "severity"):
        if key in want and finding[key] != want[key]:
            why.append(f"{key} {finding[key]!r} != {want[key]!r}")
    start = epoch(finding["start"])
    if "starts_in" in want:
        begin, end = _when(name, want["starts_in"])
        if not begin - 1.0 <= start <= end:  # lines are stamped in whole seconds
            why.append(f"starts at {finding['start']}, not in {want['starts_in']}")
        elif "within_s" in want and start - begin > want["within_s"]:
            why.append(f"starts {start - begin:.1f} s after {want['starts_in']} began (> {want['within_s']} s)")
    if want.get("ends_by") == "restart":
        back, _ = _when(name, "restart")
        if finding["end"] is None or epoch(finding["end"]) > back + 10:
            why.append(f"still firing at {finding['end']} though the process was back at {back}")
    if "evidence_has" in want:
        quoted = [f"{q.get('source', '')}:{q.get('line_no')} {q['text']}" for q in finding["evidence"]]
        if not any(want["evidence_has"] in q for q in quoted):
            why.append(f"no quoted line has {want['evidence_has']!r}: {quoted}")
    return why


def _allowed(name: str, finding: dict) -> bool:
    allow = EXPECTED["captures"][name].get("allow") or {}
    return finding["rule"] in allow or f"{finding['rule']}@{finding['endpoint']}" in allow


def test_every_capture_has_its_expectations():
    folders = {p.name for p in DYNAMO.iterdir() if p.is_dir()}
    assert folders == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_roles_and_gpus_come_from_what_each_process_prints(name):
    """The frontend is a frontend (no GPU), a worker without a disaggregation mode is aggregated:
    whatever the job's name says (disagg_prefill_killed names every file 'prefill')."""
    got = {e["name"]: {"role": e["role"], "gpus": e["gpus"]} for e in report(name)["deployment"]["endpoints"]}
    assert got == EXPECTED["captures"][name]["endpoints"]


@pytest.mark.parametrize("name", NAMES)
def test_report_gives_the_expected_findings_and_no_others(name):
    findings = report(name)["findings"]
    want = EXPECTED["captures"][name]["expect"]
    problems = []
    for w in want:
        candidates = [f for f in findings if f["rule"] == w["rule"] and f["endpoint"] == w["endpoint"]]
        if not candidates:
            problems.append(f"missing {w['rule']} on {w['endpoint']}")
            continue
        reasons = [_matches(name, f, w) for f in candidates]
        if all(reasons):
            problems.append(f"{w['rule']} on {w['endpoint']}: {reasons[0]}")
    expected_keys = {(w["rule"], w["endpoint"]) for w in want}
    for f in findings:
        if (f["rule"], f["endpoint"]) not in expected_keys and not _allowed(name, f):
            problems.append(f"false alarm: {f['severity']} {f['rule']} on {f['endpoint']}: {f['summary']}")
    assert not problems, "\n".join(problems)


_STATS = re.compile(r"Running: (\d+) reqs, Waiting: (\d+) reqs, (?:GPU|CPU) KV cache usage: ([\d.]+)%")


def _stats_facts(name: str, endpoint: str) -> dict:
    """The peaks of an endpoint's stats lines, counted here with a plain regex (not by pdwatch)."""
    text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", (DYNAMO / name / f"{endpoint}.log").read_text(errors="replace"))
    lines = [tuple(float(x) for x in m.groups()) for m in _STATS.finditer(text)]
    return {"stats_max_waiting": max(w for _, w, _ in lines), "stats_max_kv_pct": max(k for _, _, k in lines)}


@pytest.mark.parametrize("name", [n for n in NAMES if EXPECTED["captures"][n].get("peaks")])
def test_the_peaks_a_finding_states_are_the_stats_lines_peaks(name):
    """One worker, two sources, one truth: with its /metrics beside its log, the KV finding's
    peak usage and queue are those its stats lines show (the capture's own count of them)."""
    for rule, endpoint in EXPECTED["captures"][name]["peaks"].items():
        finding = next(f for f in report(name)["findings"] if f["rule"] == rule and f["endpoint"] == endpoint)
        facts = _stats_facts(name, endpoint)
        kv = re.search(r"\(peak ([\d.,]+)%\)", finding["summary"])
        waiting = re.search(r"requests waiting \(peak ([\d,]+)\)", finding["summary"])
        assert kv and waiting, finding["summary"]
        assert float(kv[1].replace(",", "")) == pytest.approx(facts["stats_max_kv_pct"], abs=0.05)
        assert float(waiting[1].replace(",", "")) == facts["stats_max_waiting"]


@pytest.mark.parametrize("name", NAMES)
def test_the_headline_from_the_logs_alone(name, tmp_path):
    """Without the /metrics files: throughput from the workers' stats lines, the frontend not
    counted, and on vLLM's CPU backend tokens/s per worker, never an invented GPU."""
    for log in (DYNAMO / name).glob("*.log"):
        shutil.copy(log, tmp_path / log.name)
    out = _pdwatch("report", str(tmp_path), "--format", "json")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)["summary"]
    want = EXPECTED["captures"][name]["headline"]
    assert summary["gpus"] is None and summary["tps_per_gpu"] is None
    if "none" in want:
        assert summary["total_tps"] is None
        return
    assert summary["device"] == "CPU"
    assert summary["workers"] == want["workers"]
    assert summary["total_tps"] and summary["total_tps"] > 0
    assert summary["tps_per_worker"] == pytest.approx(summary["total_tps"] / want["workers"])
    text = _pdwatch("report", str(tmp_path)).stdout
    assert "tokens/s per worker** (CPU" in text and "TPS/GPU" not in text.split("##")[0]


@pytest.mark.parametrize("name", NAMES)
def test_replay_fires_what_the_report_found(name):
    """The same findings on the replay's clock, within 10 s of the report's, from the command line
    (the replay runs its rules on the report's grid and uses the recorded /metrics as the report
    does; tests/session/test_one_story.py holds it to one stats interval and its end to the report)."""
    fired = {(e["rule"], e["endpoint"]): epoch(e["start"] if "start" in e else e.get("at"))
             for e in replay(name) if e.get("state", e.get("event")) in ("firing", "FIRING")}
    for w in EXPECTED["captures"][name]["expect"]:
        key = (w["rule"], w["endpoint"])
        assert key in fired, f"replay never fired {key}: {sorted(fired)}"
        reported = min(epoch(f["start"]) for f in report(name)["findings"] if (f["rule"], f["endpoint"]) == key)
        assert abs(fired[key] - reported) <= 10.0, (key, fired[key], reported)


def test_a_decode_workers_kv_transfers_are_what_its_connector_logged():
    """KV transfers in a disaggregated job, per decode worker: the sum of its connector's
    "Num successful transfers" over the run (counted here with a plain regex), in every format."""
    name = "disagg_kv_pressure"
    log = (DYNAMO / name / f"{name}.decode.log").read_text(errors="replace")
    logged = sum(int(n) for n in re.findall(r"Num successful transfers=(\d+)", log))
    endpoints = {e["name"]: e for e in report(name)["endpoints"]}
    got = endpoints[f"{name}.decode"]["kv_transfers"]["run"]
    assert got["transfers"] == logged > 0 and got["failed"] == 0 and got["avg_ms"] > 0
    assert endpoints[f"{name}.prefill"]["kv_transfers"] is None  # the pulling side logs them
    md = _pdwatch("report", str(DYNAMO / name)).stdout
    assert f"| {name}.decode | the run | {logged} | 0 |" in md
