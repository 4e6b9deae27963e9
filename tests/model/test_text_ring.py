"""Stats lines from a source that cannot be read back (stdin, an ssh log, a URL) keep their text in a
bounded ring (issue 34): the newest KEPT_TEXT_ROWS of an endpoint, older ones quoted by line number with
a sentence saying their text is gone. A local log and a recorded scrape file are not touched by it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdwatch.model import store as store_module
from pdwatch.model.store import Store, text_gone
from pdwatch.session.analysis import analyse
from tests.conftest import CPU_LOGS, scan

REAL = Path(__file__).resolve().parents[1] / "data" / "real"
LOG = CPU_LOGS / "s9b_qwen3next_hybrid_hd128.log"  # a real vLLM 0.32 CPU run: 19 stats lines
KEEP = 4


@pytest.fixture
def small_ring(monkeypatch):
    monkeypatch.setattr(store_module, "KEPT_TEXT_ROWS", KEEP)


def _fed_live(source: str) -> tuple[Store, dict[int, str]]:
    """The real log's events fed as a watch does, one flush (a dashboard tick) per stats line."""
    events = scan(LOG.read_bytes(), source=source, year=2026)
    store = Store()
    stats_text = {}
    for event in events:
        store.add([event])
        if event.kind == "stats":
            stats_text[event.line_no] = event.text
            store.flush()
    store.flush()
    return store, stats_text


def test_stdin_keeps_the_text_of_its_newest_lines_only(small_ring):
    store, stats_text = _fed_live("-")
    assert len(stats_text) > 2 * KEEP + 2, "the log must outgrow the ring"
    (endpoint,) = store.endpoints()
    frame = store.stats(endpoint.name)
    kept = frame[frame["text"].notna()]
    assert 0 < len(kept) <= 2 * KEEP and len(kept) < len(frame)  # bounded, trimmed as it grows
    newest = sorted(stats_text)[-KEEP:]
    assert set(newest) <= set(kept["line_no"].astype(int))
    for line_no, text in stats_text.items():
        quoted = store.line_text("-", line_no)
        if line_no in set(kept["line_no"].astype(int)):
            assert quoted == text
        else:  # said, not a wrong or empty line
            assert quoted == text_gone("-", line_no)
            assert "no longer kept" in quoted and str(line_no) in quoted


def test_a_local_log_is_read_back_whatever_its_length(small_ring):
    store, stats_text = _fed_live(str(LOG))
    (endpoint,) = store.endpoints()
    assert store.stats(endpoint.name)["text"].isna().all()  # references, no text to ring
    assert all(store.line_text(str(LOG), n) == text for n, text in stats_text.items())


def test_a_recorded_scrape_file_keeps_every_scrape_text(small_ring):
    # The real aggregated sweep's worker scrapes, recorded to a file: their rows have no line to read back.
    job = REAL / "sweeps" / "dynamo-agg-kv48-c1-32" / "2612041606" / "logs"
    analysis = analyse([str(job / "vm_agg_w0.metrics.txt")])
    rows = [(s, t) for ep in analysis.store.endpoints() for s, t in
            zip(analysis.store.stats(ep.name)["source"], analysis.store.stats(ep.name)["text"])]
    assert len(rows) > 2 * KEEP
    assert all(text is not None for _source, text in rows)


def test_kv_transfer_lines_from_stdin_keep_their_newest_text_only(small_ring):
    # A real Dynamo 1.6.1 + vLLM CPU decode worker over NIXL: a KV-transfer line between stats lines.
    log = REAL / "dynamo" / "disagg_kv_pressure" / "disagg_kv_pressure.decode.log"
    events = scan(log.read_bytes(), source="-", year=2026)
    transfers = {e.line_no: e.text for e in events if e.kind == "kv_transfer"}
    assert len(transfers) > 2 * KEEP + 2, "the log must outgrow the ring"
    store = Store()
    for event in events:
        store.add([event])
        store.flush()
    (endpoint,) = store.endpoints()
    rows = store.events(endpoint.name)
    rows = rows[rows["kind"] == "kv_transfer"]
    kept = {int(n) for n, text in zip(rows["line_no"], rows["text"]) if isinstance(text, str)}
    assert 0 < len(kept) <= 2 * KEEP and max(transfers) in kept
    for line_no, text in transfers.items():
        assert store.line_text("-", line_no) == (text if line_no in kept else text_gone("-", line_no))
