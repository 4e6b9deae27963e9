"""Recorded /metrics scrapes in a report: they fill the gap of an endpoint without stats lines."""

from __future__ import annotations

import shutil

from pdwatch.session.analysis import analyse
from tests.conftest import CPU_LOGS


def test_a_recorded_scrape_alone_is_an_endpoint_with_stats():
    analysis = analyse([str(CPU_LOGS / "s2_seqs4.metrics.txt")])
    (endpoint,) = analysis.store.endpoints()
    stats = analysis.store.stats(endpoint.name)
    assert endpoint.name == "s2_seqs4" and endpoint.facts["stats_from_metrics"]
    assert len(stats) == 4 and stats["running"].max() == 4 and stats["waiting"].max() == 38
    assert analysis.headline.tps_per_gpu is not None


def test_log_and_scrape_of_one_server_are_one_endpoint_and_the_log_wins(tmp_path):
    for name in ("s2_seqs4.log", "s2_seqs4.metrics.txt"):
        shutil.copy(CPU_LOGS / name, tmp_path / name)
    analysis = analyse([str(tmp_path)], year=2026)
    (endpoint,) = analysis.store.endpoints()
    assert sorted(endpoint.sources) == [str(tmp_path / "s2_seqs4.log"), str(tmp_path / "s2_seqs4.metrics.txt")]
    assert len(analysis.store.stats(endpoint.name)) == 16  # the log's lines, scrapes not added on top
    assert "seq_cap_bound" in {f.rule for f in analysis.findings}
