"""The prefilter's two ways of placing hits on lines (one call per hit; numpy for a big
block) must give the same lines, needles and line numbers, from any start."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

import pdwatch.parsers.prefilter as prefilter
from pdwatch.parsers.prefilter import Prefilter

_NEEDLES = [b"Running: ", b"HTTP/1.", b"KV cache", b"cache", b"Traceback (most recent call last)"]
_PIECES = [b"\n", b"noise ", b"Running: ", b"HTTP/1.", b"KV cache", b"\x1b[2m", b"Traceback (most recent call last)",
           b"\n\n", b"caches ", b"\xff\xfe"]


def _both(engine_prefilter: Prefilter, data: bytes, start: int) -> list:
    hits = engine_prefilter._hits_find(data, start)
    one_by_one = engine_prefilter._lines_one_by_one(data, start, *hits)
    vectorised = engine_prefilter._lines_vectorised(data, start, *hits)
    assert vectorised == one_by_one
    return one_by_one


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=60), st.data())
def test_vectorised_lines_are_the_one_by_one_lines(pieces, draw):
    data = b"".join(pieces)
    start = draw.draw(st.integers(0, len(data)))
    # Searches start on a line's start (the scanner resumes after a newline), or at 0.
    start = data.rfind(b"\n", 0, start) + 1
    spans = _both(Prefilter(_NEEDLES, use_hyperscan=False), data, start)
    for line_start, line_end, needles, newlines in spans:
        line = data[line_start:line_end]
        assert b"\n" not in line and needles == tuple(n for n in _needle_order(data, line_start, line_end) if n in line)
        assert newlines == data.count(b"\n", start, line_start)


def _needle_order(data: bytes, start: int, end: int) -> list[bytes]:
    """The needles of a line in the order their first match ends (ties: sorted needle order)."""
    line = data[start:end]
    found = []
    for needle in sorted(set(_NEEDLES)):
        pos = line.find(needle)
        if pos >= 0:
            found.append((pos + len(needle) - 1, sorted(set(_NEEDLES)).index(needle), needle))
    return [needle for _, _, needle in sorted(found)]


@pytest.mark.parametrize("use_hyperscan", [True, False])
def test_a_big_block_takes_the_vectorised_way_with_the_same_result(monkeypatch, use_hyperscan):
    line = b"(APIServer pid=1) INFO 03-31 18:01:11 [loggers.py:271] Running: 1 reqs, HTTP/1.1 KV cache\n"
    data = (b"noise line without any needle at all\n" * 7 + line) * 4000
    pf = Prefilter(_NEEDLES, use_hyperscan=use_hyperscan)
    assert len(data) >= prefilter._VECTOR_MIN_BYTES
    big = pf.lines(data, 0)
    monkeypatch.setattr(prefilter, "_VECTOR_MIN_BYTES", len(data) + 1)
    assert pf.lines(data, 0) == big
    assert len(big) == 4000 and big[1][3] == 15 and big[1][2] == (b"Running: ", b"HTTP/1.", b"KV cache", b"cache")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=60), st.data())
def test_lines_until_are_the_lines_to_the_first_line_of_a_stop_needle(pieces, draw):
    """The early stop is exact: the lines ``lines`` gives, up to and including the first that
    holds a needle of ``until``, and where that line ends (else the block's end)."""
    data = b"".join(pieces)
    start = data.rfind(b"\n", 0, draw.draw(st.integers(0, len(data)))) + 1
    until = frozenset(draw.draw(st.sets(st.sampled_from(_NEEDLES))))
    pf = Prefilter(_NEEDLES)
    every = pf.lines(data, start)
    spans, searched_to = pf.lines_until(data, start, until)
    first = next((i for i, span in enumerate(every) if until & set(span[2])), None)
    if first is None:
        assert (spans, searched_to) == (every, len(data))
    else:
        assert (spans, searched_to) == (every[: first + 1], every[first][1])


@pytest.mark.parametrize("stop_at", [0, 1999, 3999])
def test_lines_until_in_a_big_block(monkeypatch, stop_at):
    """The vectorised way, bounded at the stop line: its end is that line's, not the block's."""
    line = b"(APIServer pid=1) INFO 03-31 18:01:11 [loggers.py:271] Running: 1 reqs, KV cache\n"
    lines = [line] * 4000
    lines[stop_at] = b'INFO:     127.0.0.1:1 - "POST /v1/completions HTTP/1.1" 200 OK\n'
    data = b"noise line\n" * 30000 + b"".join(lines)
    pf = Prefilter(_NEEDLES)
    assert len(data) >= prefilter._VECTOR_MIN_BYTES
    spans, searched_to = pf.lines_until(data, 0, frozenset({b"HTTP/1."}))
    assert len(spans) == stop_at + 1 and spans[-1][2] == (b"HTTP/1.",)
    assert data[spans[-1][0]:searched_to] == lines[stop_at].rstrip(b"\n") and data[searched_to:searched_to + 1] == b"\n"
    assert spans == pf.lines(data, 0)[: stop_at + 1]
