"""stats_missing on a real-looking run: the plain warning, or information when /metrics fills the gap."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pdwatch.session.analysis import analyse
from pdwatch.sim import LogOptions, run
from pdwatch.sim.scenarios import SCENARIOS, START

SCENARIO = SCENARIOS["stats-missing"]  # decode_w0 runs 8 API servers: vLLM disables its stats lines


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("stats_missing")
    run(replace(SCENARIO.config, duration=90), out,
        LogOptions(style=SCENARIO.style, noise="quiet", interval=10, start=START, metrics_interval=10,
                   scenario=SCENARIO.name))
    return out


def stats_missing(paths):
    findings = [f for f in analyse([str(p) for p in paths]).findings if f.rule == "stats_missing"]
    assert [f.endpoint for f in findings] == ["decode_w0"]
    return findings[0]


def test_the_log_alone_gives_the_warning(run_dir):
    finding = stats_missing([run_dir])
    assert finding.severity == "warning" and "prints no stats lines" in finding.summary
    assert "disabling stats logging" in " ".join(q["text"] for q in finding.evidence)


def test_with_the_recorded_scrapes_it_says_metrics_fill_the_gap(run_dir):
    (scrapes,) = (run_dir / "metrics").glob("*_decode_w0.metrics.txt")
    finding = stats_missing([run_dir, scrapes])
    assert finding.severity == "info"
    assert "stats lines disabled; using /metrics" in finding.summary
    assert "stats lines disabled; using /metrics" in finding.explanation
