from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pdwatch.sources import LineFramer

MiB = 1 << 20


def test_split_mid_line_across_feeds():
    f = LineFramer()
    assert f.feed(b"hello wo") == b""
    assert f.buffered == 8
    assert f.feed(b"rld\nsecond") == b"hello world\n"
    assert f.feed(b" line\nthird\n") == b"second line\nthird\n"
    assert f.buffered == 0
    assert f.feed(b"") == b""


def test_many_lines_per_chunk_returned_without_copy():
    chunk = b"".join(b"line %d\n" % i for i in range(10_000))
    f = LineFramer()
    assert f.feed(chunk) is chunk  # the fast path hands the chunk straight back
    assert f.feed(chunk + b"partial") == chunk
    assert f.flush() == b"partial"


def test_bytes_pass_through_untouched():
    raw = b"crlf line\r\n\x00nul\x00 here\n\xff\xfe invalid utf8 \xc3\x28\n\x1b[31mansi\x1b[0m\n"
    f = LineFramer()
    out = b"".join(f.feed(raw[i : i + 3]) for i in range(0, len(raw), 3))
    assert out == raw
    assert f.flush() == b""


def test_line_of_exactly_cap_is_not_cut():
    f = LineFramer(max_line_bytes=10)
    assert f.feed(b"0123456789\n") == b"0123456789\n"
    assert f.feed(b"01234") == b""
    assert f.feed(b"56789") == b""
    assert f.feed(b"\nok\n") == b"0123456789\nok\n"
    assert (f.cut_lines, f.cut_bytes) == (0, 0)


def test_cap_3mib_line_in_one_5mib_chunk():
    long = b"x" * (3 * MiB)
    chunk = b"a\n" + long + b"\n" + b"b" * (2 * MiB - 10) + b"\n"
    f = LineFramer(max_line_bytes=MiB)
    out = f.feed(chunk)
    parts = out.split(b"\n")
    assert parts[0] == b"a"
    assert parts[1] == b"x" * MiB
    assert parts[2] == b"b" * MiB  # the second long line is cut too
    assert parts[3] == b""
    assert f.cut_lines == 2
    assert f.cut_bytes == 2 * MiB + (MiB - 10)
    assert f.buffered == 0


def test_cap_3mib_line_across_small_feeds_memory_bounded():
    cap = MiB
    step = 64 * 1024
    stream = b"before\n" + b"y" * (3 * MiB) + b"\nafter\n"
    f = LineFramer(max_line_bytes=cap)
    out = []
    for i in range(0, len(stream), step):
        out.append(f.feed(stream[i : i + step]))
        assert f.buffered <= cap  # the held partial line never outgrows the cap
    data = b"".join(out)
    assert data == b"before\n" + b"y" * cap + b"\nafter\n"
    assert (f.cut_lines, f.cut_bytes) == (1, 2 * MiB)


def test_cap_partial_line_without_newline_yet():
    f = LineFramer(max_line_bytes=8)
    assert f.feed(b"abcdefghij") == b"abcdefgh\n"  # cut as soon as it outgrows the cap
    assert f.feed(b"klm") == b""  # discarded until the newline
    assert f.feed(b"n\nnext\n") == b"next\n"
    assert (f.cut_lines, f.cut_bytes) == (1, 6)


def test_carried_tail_plus_newline_over_cap():
    f = LineFramer(max_line_bytes=8)
    assert f.feed(b"abcde") == b""
    assert f.feed(b"fghijk\nz\n") == b"abcdefgh\nz\n"
    assert (f.cut_lines, f.cut_bytes) == (1, 3)


def test_flush_and_reset():
    f = LineFramer()
    f.feed(b"one\ntw")
    assert f.flush() == b"tw"
    assert f.flush() == b""
    f.feed(b"half a line")
    f.reset()
    assert f.buffered == 0
    assert f.feed(b"fresh\n") == b"fresh\n"
    g = LineFramer(max_line_bytes=4)
    g.feed(b"toolong")  # now discarding
    g.reset()
    assert g.feed(b"ok\n") == b"ok\n"  # reset also ends discarding


def _reference(stream: bytes, cap: int) -> tuple[bytes, int, int]:
    *complete, partial = stream.split(b"\n")
    out, cut_lines, cut_bytes = [], 0, 0
    for line in [*complete, partial]:
        if len(line) > cap:
            cut_lines += 1
            cut_bytes += len(line) - cap
    for line in complete:
        out.append(line[:cap] + b"\n")
    out.append(partial[:cap] + b"\n" if len(partial) > cap else partial)
    return b"".join(out), cut_lines, cut_bytes


@settings(max_examples=300, deadline=None)
@given(
    stream=st.binary(max_size=300).map(lambda b: b.replace(b"\x00", b"\n")),
    cap=st.integers(1, 40),
    cuts=st.lists(st.integers(0, 300), max_size=12),
)
def test_any_chunking_matches_reference(stream: bytes, cap: int, cuts: list[int]):
    bounds = sorted({0, len(stream), *(c for c in cuts if c <= len(stream))})
    f = LineFramer(max_line_bytes=cap)
    got = []
    for a, b in zip(bounds, bounds[1:]):
        piece = f.feed(stream[a:b])
        assert piece == b"" or piece.endswith(b"\n")
        assert f.buffered <= cap
        got.append(piece)
    got.append(f.flush())
    expected, cut_lines, cut_bytes = _reference(stream, cap)
    assert b"".join(got) == expected
    assert (f.cut_lines, f.cut_bytes) == (cut_lines, cut_bytes)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=600), st.integers(0, 3), st.data())
def test_count_newlines_either_way_is_bytes_count(pattern, big, draw):
    """Small inputs are counted by ``bytes.count``, big ones and maps by numpy: the same number."""
    import mmap

    from pdwatch.sources import framing

    data = (pattern + b"\n") * (1 + big * (framing._VECTOR_MIN_BYTES // (len(pattern) + 1)))
    start = draw.draw(st.integers(0, len(data)))
    end = draw.draw(st.integers(start, len(data)))
    expected = data.count(b"\n", start, end)
    assert framing.count_newlines(data, start, end) == expected
    assert framing.count_newlines(data[start:end]) == expected
    with mmap.mmap(-1, len(data)) as mapped:
        mapped.write(data)
        assert framing.count_newlines(mapped, start, end) == expected
