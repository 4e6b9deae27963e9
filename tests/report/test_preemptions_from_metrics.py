"""Preemptions a stats line does not print are unknown, and the endpoint's /metrics fill them in.

vLLM 0.32 printed no ``Preemptions`` field while its ``vllm:num_preemptions_total`` counted
41 (tests/data/real/captures/kv_pressure). With scrapes close enough to place them (at most
3 stats intervals apart), the counts go to the lines where the cache was full.
"""

from __future__ import annotations

import math

from pdwatch.session.analysis import analyse
from tests.conftest import REAL_LOGS

CAPTURE = REAL_LOGS / "captures" / "kv_pressure"
PORT = 51867  # the capture's server port (its log's args)


def scrape(t: float, preemptions: float, running: float) -> str:
    labels = '{engine="0",model_name="m"}'
    return (f"# ===== phase=x t={t:.3f} port={PORT} =====\n"
            "# TYPE vllm:num_preemptions counter\n"
            f"vllm:num_preemptions_total{labels} {preemptions}\n"
            "# TYPE vllm:num_requests_running gauge\n"
            f"vllm:num_requests_running{labels} {running}\n")


def test_a_line_without_preemptions_leaves_them_unknown(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes((CAPTURE / "server.log").read_bytes())
    store = analyse([str(log)]).store
    stats = store.stats("server")
    assert stats["preemptions"].isna().all()  # not one line prints the field
    (finding,) = [f for f in analyse([str(log)]).findings if f.rule == "kv_exhausted"]
    assert "not printed by this vLLM" in finding.summary


def test_close_scrapes_fill_the_lines_where_the_cache_was_full(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes((CAPTURE / "server.log").read_bytes())
    start = analyse([str(log)]).store.stats("server")["ts"].min().timestamp()
    # a scrape every 2 s over the whole run: 30 preemptions between two of them, at 60 s
    text = "".join(scrape(start + t, 0.0 if t < 60 else 30.0, 4) for t in range(0, 120, 2))
    (tmp_path / "server.metrics.txt").write_text(text)
    analysis = analyse([str(log), str(tmp_path / "server.metrics.txt")])
    stats = analysis.store.stats("server")
    seconds = stats["ts"].map(lambda ts: ts.timestamp())
    window = stats[(seconds > start + 58) & (seconds <= start + 60)]  # between the two scrapes that saw them
    assert math.isclose(stats["preemptions"].sum(), 30.0)
    assert math.isclose(window["preemptions"].sum(), 30.0)
    assert stats["preemptions"].notna().sum() > 0.5 * len(stats)  # the scrapes cover the run: known
    assert any("fill" in n.message and "preemption" in n.message for n in analysis.notices)


def test_far_apart_scrapes_say_nothing_about_lines(tmp_path):
    # the capture's own scrapes: one per phase, 20-50 s apart at a 2 s interval
    analysis = analyse([str(CAPTURE)])
    stats = analysis.store.stats("server")
    queued = stats[stats["waiting"] > 0]  # the high phase, where its 41 preemptions happened
    assert len(queued) > 10 and queued["preemptions"].isna().all()
    (finding,) = [f for f in analysis.findings if f.rule == "kv_exhausted"]
    assert "not printed by this vLLM" in finding.summary
