"""The wrap detector judges a big block's sample in bulk (``wrap._sample_lines``): it must keep
exactly the counts, the longest line and the widths that cleaning and testing each line one by
one gives (the way a small block is judged), on any lines (colour codes, other escapes, CRs,
controls, tabs, non-ASCII, invalid UTF-8, empty lines) cut into blocks anywhere between lines."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from pdwatch.parsers import wrap
from pdwatch.parsers.wrap import WrapDetector
from tests.conftest import GPU_LOGS
from tests.parsers.test_real_logs import DENNIS_7B_1, DENNIS_7B_2


def _state(detector: WrapDetector) -> tuple:
    return (detector.widths, detector.decided, dict(detector._continued), dict(detector._total), detector._seen,
            detector._previous, detector._longest)


def _observe(detector: WrapDetector, block: bytes, *, bulk: bool) -> None:
    """``observe``, its sample judged in bulk or line by line whatever the block's size."""
    threshold = wrap._BULK_MIN_BYTES
    wrap._BULK_MIN_BYTES = 0 if bulk else 1 << 62
    try:
        detector.observe(block)
    finally:
        wrap._BULK_MIN_BYTES = threshold


def _same_in_blocks(data: bytes, cuts: list[int]) -> None:
    bulk, one_by_one = WrapDetector(), WrapDetector()
    pos = 0
    for cut in sorted(set(cuts)) + [len(data)]:
        end = data.find(b"\n", cut) + 1 or len(data)  # blocks end after a newline, as sources feed them
        if end <= pos:
            continue
        _observe(bulk, data[pos:end], bulk=True)
        _observe(one_by_one, data[pos:end], bulk=False)
        assert _state(bulk) == _state(one_by_one)
        pos = end


_WORD = st.sampled_from([
    "(APIServer pid=7) INFO 05-29 14:00:01 [loggers.py:271] Engine 000: Running: 3 reqs", "Traceback ",
    "\x1b[2m2026-05-29T14:01:50.900077Z\x1b[0m \x1b[32m INFO\x1b[0m dynamo_llm", "x" * 59, "y" * 60, "z" * 61,
    "Available KV cache me", "mory: 11.03 GiB", "\tindented", "progress 10%\rprogress 100%", "\x1b]0;title\x07",
    "\x1b[1;31;m", "\x1b[99", "\x00\x07\x7f", "caf\u00e9", "\u00a0nbsp", "\x85", "{\"k\": 1}", "INFO: x", "  ",
    "/usr/lib/x.py:12: Warn", "[rank0] ", "DEBUG ", "", "-"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_WORD, max_size=6).map("".join), max_size=40), st.lists(st.integers(0, 4000), max_size=5),
       st.booleans())
def test_bulk_judging_gives_the_line_by_line_judgement(lines, cuts, invalid_utf8):
    data = "\n".join(lines).encode()
    if invalid_utf8:
        data = data.replace(b"x", b"\xff\xfe", 3)
    _same_in_blocks(data, cuts)


def test_terminal_wrapped_paste_is_judged_the_same():
    """A real wrapped paste (widths found) and many same-width lines, over more than the sample."""
    for name in (DENNIS_7B_1, DENNIS_7B_2):  # real GPU start-up logs copied from a terminal
        data = (GPU_LOGS / name).read_bytes()
        detector = WrapDetector()
        _observe(detector, data, bulk=True)
        assert detector.widths
        _same_in_blocks(data, [len(data) // 3, len(data) // 2])
    same_width = ("(APIServer pid=7) INFO 05-29 14:00:01 [x.py:1] " + "a" * 40 + "\n" + "b" * 30 + "\n").encode()
    _same_in_blocks(same_width * 4000, [1000, 50_000])
