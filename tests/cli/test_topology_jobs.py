"""A topology file means what it says, wherever pdwatch is run from.

The job is the real prefill/decode capture (tests/data/real/captures/pd_pair) laid out as an
operator's job folder: logs/ and a topology file beside it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REAL_LOGS

PD_PAIR = REAL_LOGS / "captures" / "pd_pair"


@pytest.fixture
def job(tmp_path: Path) -> Path:
    folder = tmp_path / "job"
    (folder / "logs").mkdir(parents=True)
    for name in ("prefill.log", "decode.log", "proxy.log", "metrics.txt"):
        shutil.copy(PD_PAIR / name, folder / "logs" / name)
    return folder


def report(*args: str, cwd: Path) -> tuple[dict, str]:
    out = subprocess.run([sys.executable, "-m", "pdwatch", "report", *args, "--format", "json"], cwd=cwd,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout), out.stderr


def endpoints(rep: dict) -> dict[str, tuple[str, int]]:
    return {e["name"]: (e["role"], e["gpus"]) for e in rep["deployment"]["endpoints"]}


def test_relative_globs_resolve_from_the_topology_files_folder(job: Path, tmp_path: Path):
    (job / "topology.yaml").write_text(
        "endpoints:\n"
        "  - {name: p0, role: prefill, globs: [logs/prefill.log]}\n"
        "  - {name: d0, role: decode, globs: ['logs/dec*.log']}\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # run from another folder, the logs given by an absolute path
    rep, _ = report(str(job / "logs"), "--topology-file", str(job / "topology.yaml"), cwd=elsewhere)
    assert endpoints(rep) == {"p0": ("prefill", 1), "d0": ("decode", 1)}
    assert rep["deployment"]["total_gpus"] == 2
    assert not [f for f in rep["findings"] if f["rule"] == "stats_missing"]
    assert rep["summary"]["total_tps"] is not None


def test_absolute_globs_match_files_given_by_a_relative_path(job: Path):
    logs = (job / "logs").resolve()
    (job / "topology.yaml").write_text(
        "endpoints:\n"
        f"  - {{name: p0, role: prefill, globs: ['{logs}/pre*.log']}}\n"
        f"  - {{name: d0, role: decode, globs: ['{logs}/decode.log']}}\n")
    rep, _ = report("logs", "--topology-file", "topology.yaml", cwd=job)
    assert endpoints(rep) == {"p0": ("prefill", 1), "d0": ("decode", 1)}
    assert not [f for f in rep["findings"] if f["rule"] == "stats_missing"]


def test_a_topology_endpoint_that_matches_nothing_is_one_notice_not_a_finding(job: Path):
    (job / "topology.yaml").write_text(
        "endpoints:\n"
        "  - {name: p0, role: prefill, globs: [logs/prefill.log]}\n"
        "  - {name: d0, role: decode, globs: [logs/decode.log]}\n"
        "  - {name: d1, role: decode, globs: ['logs/*_decode_w1.out']}\n")
    rep, err = report("logs", "--topology-file", "topology.yaml", cwd=job)
    assert endpoints(rep) == {"p0": ("prefill", 1), "d0": ("decode", 1)}
    assert not [f for f in rep["findings"] if f["endpoint"] == "d1"]
    lines = [line for line in err.splitlines() if "d1" in line]
    assert lines == ["pdwatch: topology endpoint d1 matches none of the sources (globs: logs/*_decode_w1.out); "
                     "left out"]


def test_a_pd_pair_and_its_recorded_scrapes_are_two_endpoints(job: Path):
    rep, err = report("logs", cwd=job)
    assert endpoints(rep) == {"prefill": ("prefill", 1), "decode": ("decode", 1)}
    assert rep["deployment"]["total_gpus"] == 2
    assert "the /metrics of prefill" in err and "the /metrics of decode" in err


def test_a_topologys_urls_are_watched_without_being_given_as_paths(tmp_path: Path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "metrics"))
    from metrics_server import serve

    from pdwatch.cli import build_parser
    from pdwatch.commands.watch import build_session

    scrape = (REAL_LOGS / "captures" / "kv_pressure" / "metrics.txt").read_text()
    body = scrape.split("=====\n", 2)[2].split("# =====", 1)[0]  # one real vLLM 0.32 page
    with serve([body]) as (base, server):
        topology = tmp_path / "topology.yaml"
        topology.write_text(f"endpoints:\n  - {{name: agg, role: aggregated, urls: ['{base}/metrics']}}\n")
        args = build_parser("watch").parse_args(["watch", str(tmp_path), "--topology-file", str(topology),
                                                 "--scrape-interval", "0.2"])
        session = build_session(args)
        try:
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and len(server.served) < 2:
                session.ingest(1000)
                session.tick()
                time.sleep(0.1)
            session.ingest(1000)
            snapshot = session.tick()
        finally:
            session.close()
    assert f"{base}/metrics" in session.sources.sources
    assert [row.name for row in snapshot.endpoints] == ["agg"]
    assert len(server.served) >= 2


def test_a_log_and_the_url_of_its_port_are_one_endpoint_live(tmp_path: Path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "metrics"))
    from metrics_server import serve

    from pdwatch.session.live import LiveSession
    from pdwatch.sources import SourceSet

    capture = REAL_LOGS / "captures" / "kv_pressure"
    page = (capture / "metrics.txt").read_text().split("=====\n", 2)[2].split("# =====", 1)[0]
    with serve([page]) as (base, server):
        port = base.rsplit(":", 1)[1]
        # the real log, as if its server had listened on the test server's port
        log = tmp_path / "server.log"
        log.write_text((capture / "server.log").read_text().replace("51867", port))
        url = f"{base}/metrics"
        session = LiveSession([str(log), url], mode="watch",
                              sources=SourceSet([str(log), url], follow=True, scrape_interval=0.2))
        try:
            deadline = time.monotonic() + 15
            snapshot = None
            while time.monotonic() < deadline:
                session.ingest(1000)
                snapshot = session.tick()
                if len(server.served) >= 3 and any(url in row.sources for row in snapshot.endpoints):
                    break
                time.sleep(0.1)
        finally:
            session.close()
    assert [row.name for row in snapshot.endpoints] == ["server"]
    assert set(snapshot.endpoints[0].sources) == {str(log), url}
    assert len({f.endpoint for f in snapshot.all_findings}) <= 1


def test_a_url_scraped_before_its_log_said_its_port_joins_the_log_endpoint():
    # The race of a live start: the scrape of :8000 arrives before the log's args say port 8000.
    from datetime import datetime, timezone

    from pdwatch.parsers import Event
    from pdwatch.model.store import Store

    t = datetime(2026, 12, 2, 3, 0, tzinfo=timezone.utc)
    url = "http://127.0.0.1:8000/metrics"
    store = Store()
    store.add([Event("stats", url, 1, t, 0, None, {"running": 4, "waiting": 0, "kv_usage_pct": 10.0}, None, "")])
    store.flush()
    assert [e.name for e in store.endpoints()] == ["127.0.0.1:8000"]
    store.add([Event("args", "server.log", 8, t, None, "INFO", {"args": {"port": 8000}}, None, "args"),
               Event("stats", "server.log", 9, t, 0, "INFO", {"running": 5, "waiting": 1, "kv_usage_pct": 11.0},
                     None, "line")])
    store.flush()
    (endpoint,) = store.endpoints()
    assert endpoint.name == "server" and set(endpoint.sources) == {"server.log", url}
    assert sorted(store.stats("server")["running"]) == [4.0, 5.0]  # the early scrape is kept, once
    assert store.model.endpoint_of(url) is endpoint
