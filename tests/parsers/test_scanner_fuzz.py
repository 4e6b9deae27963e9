"""Arbitrary bytes and mutated real lines never raise, never lose the valid lines around them."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from tests.conftest import EXAMPLE_LINES, scan

VALID = (b"(APIServer pid=9) INFO 11-29 09:01:38 [loggers.py:335] Engine 002: Avg prompt throughput: 1.0 tokens/s, "
         b"Avg generation throughput: 2.0 tokens/s, Running: 3 reqs, Waiting: 4 reqs, GPU KV cache usage: 5.0%, "
         b"Prefix cache hit rate: 0.0%\n")
REAL = [line + b"\n" for line in EXAMPLE_LINES.read_bytes().split(b"\n") if line and not line.startswith(b"#")]


@st.composite
def mutated(draw) -> bytes:
    line = bytearray(draw(st.sampled_from(REAL)))
    for _ in range(draw(st.integers(0, 4))):
        if not line:
            break
        pos = draw(st.integers(0, len(line) - 1))
        line[pos:pos + draw(st.integers(0, 8))] = draw(st.binary(max_size=8))
    return bytes(line).replace(b"\n", b" ") + b"\n"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.binary(max_size=300), mutated()), max_size=12))
def test_garbage_never_raises_and_valid_lines_survive(chunks):
    noise = b"".join(c.replace(b"\n", b" ") + b"\n" for c in chunks)
    data = noise + VALID + noise + VALID
    first = scan(data)
    stats = [e for e in first if e.kind == "stats" and e.values.get("running") == 3 and e.engine == 2]
    assert len(stats) >= 2  # the two valid lines are found whatever surrounds them
    assert [(e.kind, e.line_no, e.values) for e in scan(data)] == [(e.kind, e.line_no, e.values) for e in first]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2000), st.integers(1, 400))
def test_any_block_split_gives_the_same_events(data, block):
    data = data + b"\n" + VALID
    whole = [(e.kind, e.line_no, e.values) for e in scan(data)]
    pieces = [(e.kind, e.line_no, e.values) for e in scan(data, block=block)]
    assert pieces == whole


def test_a_stats_line_as_long_as_the_garbage_around_it_is_not_taken_for_a_wrapped_piece():
    """Found by the test above: garbage lines of the stats line's exact length, each followed by
    a non-record line, once made the file look terminal-wrapped and glued garbage to the line."""
    garbage = (b"\x1b\x00 \t\x00\x00\x00\x00\x00\x00\x1b    \r -             \t\t                                       "
               b"\t          ,22gggggggg((((iii++l--------nnnnnn///////00000022222223333344444444uuuu666yRunning: "
               b"0                ##***,,00000:::GK((UVW!!!!!####2222222fgg(((iiiin112222333444ux\n \n")
    events = scan(garbage + VALID + garbage + VALID)
    assert [(e.line_no, e.values["running"]) for e in events if e.kind == "stats"] == [(3, 3), (6, 3)]


def test_real_logs_with_same_width_lists_are_not_taken_for_wrapped_pastes():
    """vLLM's 'leaked instance' lists are lines of one width followed by more of them; the file
    also has longer lines, which a terminal would have cut."""
    from pdwatch.parsers.wrap import WrapDetector
    from tests.conftest import CPU_LOGS

    for log in sorted(CPU_LOGS.glob("*.log")):
        detector = WrapDetector()
        detector.observe(log.read_bytes())
        assert detector.widths == frozenset(), log.name
