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


def test_a_line_that_only_looks_like_a_skipped_kind_does_not_end_the_search():
    """While a skipped kind's first line is to come, the search stops at each line holding one
    of its needles (``Prefilter.lines_until``) and goes on after it when it was not one: lines
    that mention ``HTTP/1.`` or ``request completed`` in other words, many of them, in blocks big
    enough for the vectorised search, before and after the first real access and router lines."""
    stats = (b"(APIServer pid=7) INFO 05-29 14:00:%02d [loggers.py:271] Engine 000: Avg prompt throughput: 2.0 "
             b"tokens/s, Avg generation throughput: 1.0 tokens/s, Running: 3 reqs, Waiting: 0 reqs, "
             b"GPU KV cache usage: 5.3%%, Prefix cache hit rate: 0.0%%\n")
    lookalikes = [b"(APIServer pid=7) WARNING 05-29 14:00:01 [proxy.py:9] upstream spoke HTTP/1.0, retrying\n",
                  b"(APIServer pid=7) INFO 05-29 14:00:02 [router.py:3] no request completed yet\n",
                  b"some tool printed HTTP/2 and Selected worker: in one breath\n"]
    access = b'INFO:     10.140.0.89:57758 - "GET /health HTTP/1.1" 200 OK\n'
    router = (b"2026-05-29T14:00:03.277493Z DEBUG dynamo_llm::kv_router::scheduler: Selected worker: "
              b"worker_type=prefill, worker_id=7587889301234 dp_rank=0, logit: 1.250\n")
    lines = [stats % (i % 60) if i % 3 else lookalikes[i % len(lookalikes)] for i in range(6000)]
    lines[2500:2500] = [access]
    lines[4200:4200] = [router]
    data = b"".join(lines) * 3
    everything = scan(data, block=1 << 20)
    firsts: set[str] = set()
    expected = [e for e in everything if e.kind not in UNSTORED_KINDS or not (e.kind in firsts or firsts.add(e.kind))]
    assert {"http_access", "worker_selected", "stats"} <= {e.kind for e in expected}
    for block in (1 << 20, 4096):
        assert scan(data, block=block, skip_kinds=UNSTORED_KINDS) == expected


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
