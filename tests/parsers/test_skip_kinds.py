"""A scanner told to skip kinds gives exactly the other events (and the first of each skipped kind)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pdwatch.parsers import LogScanner
from pdwatch.model.store import UNSTORED_KINDS
from tests.conftest import CPU_LOGS, REPO, scan


def _inputs(tmp_path) -> list[bytes]:
    mixed = tmp_path / "mixed.log"
    subprocess.run([sys.executable, str(REPO / "bench" / "make_mixed_log.py"), "--size", "3M", "--out", str(mixed)],
                   check=True, capture_output=True)
    files = [mixed, *sorted((REPO / "samples").glob("*/*.out")), *sorted(CPU_LOGS.glob("*.log"))]
    return [f.read_bytes() for f in files]


def test_skipping_the_unstored_kinds_leaves_every_other_event_as_it_was(tmp_path):
    skipped_any = False
    for data in _inputs(tmp_path):
        everything = scan(data, block=1 << 20)
        kept = scan(data, block=1 << 20, skip_kinds=UNSTORED_KINDS)
        firsts: set[str] = set()
        expected = []
        for e in everything:
            if e.kind in UNSTORED_KINDS:
                if e.kind in firsts:
                    continue
                firsts.add(e.kind)
            expected.append(e)
        skipped_any |= len(expected) < len(everything)
        assert kept == expected
    assert skipped_any


def test_skipped_families_are_out_of_the_prefilter():
    """Their lines are not even decoded: the byte search no longer looks for their needles."""
    from pdwatch.parsers.families import FAMILIES
    from pdwatch.parsers.scanner import _search_without

    prefilter, _ = _search_without(UNSTORED_KINDS)
    for family in FAMILIES:
        kinds = {kind for sample in family.samples for kind, _ in sample.expect}
        if kinds and kinds <= UNSTORED_KINDS:
            assert not set(family.needles) & set(prefilter.needles), family.name
    assert b"Running: " in prefilter.needles


def test_a_source_of_router_lines_only_still_gives_its_first():
    line = (b"2026-03-31T18:01:02.277493Z DEBUG dynamo_llm::kv_router::scheduler: Selected worker: worker_type=prefill, "
            b"worker_id=7587889301234 dp_rank=0, logit: 1.250\n")
    events = scan(line * 5, skip_kinds=UNSTORED_KINDS)
    assert [(e.kind, e.line_no) for e in events] == [("worker_selected", 1)]


def test_stats_cannot_be_skipped():
    with pytest.raises(ValueError):
        LogScanner("x.log", skip_kinds=frozenset({"stats"}))
