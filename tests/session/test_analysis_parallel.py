"""`analyse` reading the files on every core builds exactly the Analysis of the sequential read."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from pdwatch.events import parallel_scan
from pdwatch.session import analysis
from pdwatch.model.log_facts import fold as learn_facts
from pdwatch.cli import main
from pdwatch.events.stream import EventStream
from pdwatch.sources import SourceNotice, SourceSet
from pdwatch.model.store import _MODEL_KINDS, Store, fold_events
from tests.conftest import REPO

SAMPLES = sorted(p for p in (REPO / "samples").iterdir() if p.is_dir())


@pytest.fixture
def on_two_cores(monkeypatch) -> list[str]:
    """Read on two workers whatever the input's size (even on a one-core runner), big files in
    small pieces; returns the files scanned in pieces."""
    monkeypatch.setattr(parallel_scan, "worker_count", lambda: 2)
    monkeypatch.setattr(analysis, "MIN_PARALLEL_BYTES", 0)
    monkeypatch.setattr(analysis, "SPLIT_MIN_BYTES", 20_000)
    monkeypatch.setattr(analysis, "_MIN_PIECE_BYTES", 10_000)
    monkeypatch.setattr(parallel_scan, "_PIECE_BYTES", 30_000)
    monkeypatch.setattr(parallel_scan, "_WARMUP_BYTES", 4096)
    split: list[str] = []
    real = parallel_scan.FileScan.start

    def start(self, pool, **kw):
        real(self, pool, **kw)
        split.append(self.path)

    monkeypatch.setattr(parallel_scan.FileScan, "start", start)
    return split


def _sequential(paths: list[str], monkeypatch, **kw) -> analysis.Analysis:
    with monkeypatch.context() as m:
        m.setattr(parallel_scan, "worker_count", lambda: 1)
        return analysis.analyse(paths, **kw)


def _assert_same(got: analysis.Analysis, want: analysis.Analysis) -> None:
    def endpoints(a: analysis.Analysis) -> list:
        return [(e.name, e.role, e.role_from, e.sources, sorted(e.engines), e.facts, e.gpus, e.gpus_inferred)
                for e in a.store.endpoints()]

    assert endpoints(got) == endpoints(want)
    assert list(got.store.model.endpoints) == list(want.store.model.endpoints)  # first-seen order
    assert list(got.store.raw_counts.items()) == list(want.store.raw_counts.items())
    for endpoint in want.store.endpoints():
        pd.testing.assert_frame_equal(got.store.stats(endpoint.name), want.store.stats(endpoint.name))
        pd.testing.assert_frame_equal(got.store.events(endpoint.name), want.store.events(endpoint.name))
        assert got.store.last_seen(endpoint.name) == want.store.last_seen(endpoint.name)
    assert got.notices == want.notices
    assert got.findings == want.findings
    assert got.clock == want.clock
    assert got.headline == want.headline
    assert got.metrics_files == want.metrics_files
    assert got.capacity == want.capacity


@pytest.mark.parametrize("sample", SAMPLES, ids=[p.name for p in SAMPLES])
def test_samples_give_the_same_analysis_on_every_core(sample, monkeypatch, on_two_cores):
    want = _sequential([str(sample)], monkeypatch)
    got = analysis.analyse([str(sample)])
    _assert_same(got, want)
    logs = [p for p in sample.iterdir() if p.suffix in (".out", ".log")]
    share = sum(p.stat().st_size for p in logs) // 2  # a big file: over a quarter of a core's share
    assert sorted(on_two_cores) == sorted(str(p) for p in logs if p.stat().st_size >= max(20_000, share // 4))
    assert on_two_cores or max(p.stat().st_size for p in logs) < 20_000


def test_a_generated_run_with_a_big_file_in_pieces_and_recorded_scrapes(tmp_path, monkeypatch, on_two_cores):
    run = tmp_path / "run"
    assert main(["simulate", "--out", str(run), "--topology", "2xDEP2-1xDEP2", "--duration", "90s",
                 "--style", "dynamo", "--metrics-interval", "5", "--seed", "7"]) == 0
    (run / "empty.log").write_bytes(b"")
    frontend = run / "gb200-n001_frontend_0.out"
    assert frontend.stat().st_size > 300_000  # in ten pieces and more
    paths = [str(run), str(run / "metrics"), str(run / "missing.out")]

    want = _sequential(paths, monkeypatch, year=2026)
    got = analysis.analyse(paths, year=2026)
    _assert_same(got, want)
    assert on_two_cores == [str(frontend)]
    kinds = {n.kind for n in got.notices}
    assert {"opened", "metrics_file", "missing"} <= kinds
    assert any(e.facts.get("stats_from_metrics") for e in got.store.endpoints()) or got.metrics_files


def test_a_file_that_cannot_be_split_is_read_whole(tmp_path, monkeypatch, on_two_cores):
    """A line over the cap (cut only by the sequential reader): the file goes to a worker whole."""
    monkeypatch.setattr(parallel_scan, "MAX_LINE_BYTES", 10_000)
    for sample in (p for p in (REPO / "samples" / "kv-exhausted").iterdir() if p.is_file()):
        (tmp_path / sample.name).write_bytes(sample.read_bytes())
    big = max(tmp_path.iterdir(), key=lambda p: p.stat().st_size)
    with big.open("ab") as out:
        out.write(b"x" * 15_000 + b"\n")
    tried: list[tuple[str, bool]] = []
    real = analysis._start_scan

    def start_scan(path, *args):
        started = real(path, *args)
        tried.append((path, started is not None))
        return started

    monkeypatch.setattr(analysis, "_start_scan", start_scan)
    want = _sequential([str(tmp_path)], monkeypatch)
    got = analysis.analyse([str(tmp_path)])
    _assert_same(got, want)
    assert (str(big), False) in tried and str(big) not in on_two_cores


def test_merging_parts_is_adding_the_events():
    """Store.merge of the folded events, in any cut into runs, is Store.add of the events."""
    events = [e for sample in SAMPLES for e in _events(sample)]
    whole, parted = Store(), Store()
    whole.add(events)
    for start in range(0, len(events), 97):
        for part in fold_events(events[start:start + 97]):
            parted.merge(part)
    whole.flush()
    parted.flush()
    assert whole.raw_counts == parted.raw_counts
    assert [(e.name, e.role, e.sources, e.engines, e.facts) for e in whole.endpoints()] == \
           [(e.name, e.role, e.sources, e.engines, e.facts) for e in parted.endpoints()]
    for endpoint in whole.endpoints():
        pd.testing.assert_frame_equal(whole.stats(endpoint.name), parted.stats(endpoint.name))
        pd.testing.assert_frame_equal(whole.events(endpoint.name), parted.events(endpoint.name))


def test_facts_come_only_from_the_kinds_a_part_keeps():
    """Partial ships the events of ``_MODEL_KINDS`` whole and only counts the others: so no
    other kind may teach the facts anything."""
    for sample in SAMPLES:
        for event in _events(sample):
            if event.kind not in _MODEL_KINDS:
                facts: dict = {}
                learn_facts(facts, event)
                assert facts == {}, (event.kind, facts)


def _events(sample: Path) -> list:
    stream = EventStream(SourceSet([str(sample)], follow=False), year=2026)
    return [e for e in stream if not isinstance(e, SourceNotice)]


def test_a_skipped_kind_seen_once_at_the_start_rescans_no_piece(tmp_path, monkeypatch, on_two_cores):
    """A Dynamo frontend logs ``added model`` once, at start-up: a piece's warm-up does not see
    it, so it guessed the kind still to come. Only a piece that met such a line gave it as the
    first one; the others' guesses hold (each piece was rescanned in the parent before)."""
    run = tmp_path / "run"
    assert main(["simulate", "--out", str(run), "--topology", "2xDEP2-1xDEP2", "--duration", "90s",
                 "--style", "dynamo", "--seed", "3"]) == 0
    frontend = run / "gb200-n001_frontend_0.out"
    text = frontend.read_bytes()
    assert text.count(b"added model") == 1 and text.index(b"added model") < 20_000
    rescans: list[int] = []
    real = parallel_scan._scan_piece_here

    def scan_here(piece, state, *args, **kw):
        if state is not None:
            rescans.append(piece.start)
        return real(piece, state, *args, **kw)

    monkeypatch.setattr(parallel_scan, "_scan_piece_here", scan_here)
    want = _sequential([str(frontend)], monkeypatch, year=2026)
    rescans.clear()
    got = analysis.analyse([str(frontend)], year=2026)
    _assert_same(got, want)
    assert on_two_cores == [str(frontend)] and rescans == []
    assert got.store.raw_counts["model_registered"] == 1
