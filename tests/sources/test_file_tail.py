from __future__ import annotations

import errno
import os
from pathlib import Path

from pdwatch.sources import FileTail, LineBlock, SourceNotice, SourceSet

from .helpers import kinds, lines, notices, poll_until, texts


def replay(path: str, **kw) -> list:
    t = FileTail(path, follow=False, **kw)
    items: list = []
    for _ in range(10_000):
        items += t.poll()
        if t.at_eof:
            break
    assert t.at_eof
    assert t.poll() == []
    return items


def test_replay_lines_numbering_and_final_partial(write):
    p = write("a.out", b"one\ntwo\nthree")
    items = replay(p)
    assert kinds(items) == ["opened"]
    assert lines(items) == [(0, 1, b"one"), (0, 2, b"two"), (0, 3, b"three")]
    last = [it for it in items if isinstance(it, LineBlock)][-1]
    assert last.data.endswith(b"three")  # the final partial line is delivered as-is


def test_replay_small_chunks_bounded_per_poll(write):
    body = b"".join(b"line %05d\n" % i for i in range(2000))  # 22000 bytes
    p = write("a.out", body)
    t = FileTail(p, follow=False, chunk_size=100)
    first = t.poll()
    delivered = sum(len(it.data) for it in first if isinstance(it, LineBlock))
    assert delivered <= 8 * 100  # at most ~8 chunks per poll
    assert not t.at_eof
    items = first + replay_rest(t)
    assert b"".join(it.data for it in items if isinstance(it, LineBlock)) == body
    assert lines(items)[-1] == (0, 2000, b"line 01999")


def replay_rest(t: FileTail) -> list:
    items: list = []
    while not t.at_eof:
        items += t.poll()
    return items


def test_replay_raw_bytes_untouched(write):
    raw = b"crlf\r\n\x00\x01nul\n\xff\xfe\xc3\x28 bad utf8\n\x1b[1mansi\x1b[0m"
    p = write("raw.log", raw)
    items = replay(p, chunk_size=5)
    assert b"".join(it.data for it in items if isinstance(it, LineBlock)) == raw


def test_replay_empty_missing_and_directory(tmp_path: Path, write):
    p = write("empty.out", b"")
    assert kinds(replay(p)) == ["opened"]
    missing = replay(str(tmp_path / "nope.out"))
    assert kinds(missing) == ["missing"]
    assert missing[0].message.startswith(str(tmp_path / "nope.out") + ": ")
    d = tmp_path / "adir.out"
    d.mkdir()
    assert kinds(replay(str(d))) == ["not_a_file"]


def test_replay_line_cap_notices(write):
    p = write("big.out", b"ok\n" + b"z" * 5000 + b"\n" + b"w" * 3000 + b"\nend\n")
    items = replay(p, chunk_size=1000, max_line_bytes=1024)
    assert texts(items) == [b"ok", b"z" * 1024, b"w" * 1024, b"end"]
    capped = notices(items, "line_capped")
    assert 1 <= len(capped) <= 2  # at most one per poll, with the running count
    assert "2 line(s)" in capped[-1].message
    # line numbers stay physical
    assert [n for _, n, _ in lines(items)] == [1, 2, 3, 4]


def test_replay_via_source_set_sequential(tmp_path: Path, write):
    a = write("a.out", b"a1\na2")
    b = write("b.out", b"b1\n")
    s = SourceSet([str(tmp_path)], follow=False)
    items = list(s.blocks())
    assert texts(items, a) == [b"a1", b"a2"]
    assert texts(items, b) == [b"b1"]
    first_b = next(i for i, it in enumerate(items) if it.source == b)
    assert all(it.source == a for it in items[:first_b])  # one file after the other
    assert s.sources == [a, b]


def test_replay_source_set_missing_file_ends(tmp_path: Path):
    s = SourceSet([str(tmp_path / "gone.out")], follow=False)
    items = list(s.blocks())
    assert kinds(items) == ["missing"]


# -- error path: tests run as root, so chmod can't deny; patch os.open instead -----------


def _deny(monkeypatch, path: str) -> None:
    real_open = os.open

    def fake_open(p, *a, **kw):
        if os.fspath(p) == path:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), p)
        return real_open(p, *a, **kw)

    monkeypatch.setattr(os, "open", fake_open)


def test_open_permission_error_follow_recovers(monkeypatch, write):
    p = write("w.out", b"hello\n")
    t = FileTail(p, follow=True)
    _deny(monkeypatch, p)
    items = t.poll() + t.poll() + t.poll()
    errs = notices(items, "error")
    assert len(errs) == 1  # no spam while the error persists
    assert errs[0].message == f"{p}: Permission denied"
    assert texts(items) == []
    monkeypatch.undo()
    items = poll_until(t.poll, lambda it: b"hello" in texts(it))
    assert kinds(items)[0] == "opened"
    assert lines(items) == [(0, 1, b"hello")]
    t.close()


def test_open_permission_error_replay_reports_and_ends(monkeypatch, write):
    p = write("w.out", b"hello\n")
    _deny(monkeypatch, p)
    items = replay(p)
    assert kinds(items) == ["error"]


def test_read_error_mid_follow_recovers_without_loss(monkeypatch, write):
    p = write("w.out", b"one\n")
    t = FileTail(p, follow=True)
    assert texts(t.poll()) == [b"one"]
    write("w.out", b"two\n")
    real_pread = os.pread

    def broken(*a, **kw):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "pread", broken)
    items = t.poll() + t.poll()
    assert [n.message for n in notices(items, "error")] == [f"{p}: {os.strerror(errno.EIO)}"]
    monkeypatch.setattr(os, "pread", real_pread)
    items = t.poll()
    assert lines(items) == [(0, 2, b"two")]
    # a new failure after recovery is reported again
    monkeypatch.setattr(os, "pread", broken)
    write("w.out", b"three\n")
    assert len(notices(t.poll(), "error")) == 1
    monkeypatch.undo()
    assert lines(t.poll()) == [(0, 3, b"three")]
    t.close()


def test_notice_types_are_plain_dataclasses():
    n = SourceNotice("x", "opened", "x: opened")
    b = LineBlock("x", 1, b"a\n", 0)
    assert (n.kind, b.first_line_no) == ("opened", 1)


def test_history_reads_the_head_and_the_recent_past_with_true_line_numbers(tmp_path):
    from .helpers import lines as delivered, notices

    p = tmp_path / "server.log"
    p.write_bytes(b"".join(b"line %06d\n" % i for i in range(1, 20001)))  # 12 bytes a line
    tail = FileTail(str(p), follow=True, chunk_size=4096, history=(1200, 6000))
    items = []
    for _ in range(200):
        items += tail.poll()
    got = delivered(items)
    numbers = [n for _, n, _ in got]
    texts_ = [t for _, _, t in got]
    assert all(t == b"line %06d" % n for n, t in zip(numbers, texts_))  # each line under its own number
    assert numbers[0] == 1 and numbers[-1] == 20000
    assert len(got) < 2000  # the middle was skipped: the head (~1.2 kB + a chunk) and the last 6 kB
    assert [n.kind for n in notices(items, "info")] == ["info"]
    # what comes after is read as usual
    with open(p, "ab") as f:
        f.write(b"line 020001\n")
    more = []
    for _ in range(5):
        more += tail.poll()
    assert delivered(more) == [(0, 20001, b"line 020001")]
    tail.close()


def test_history_leaves_a_small_file_whole(tmp_path):
    from .helpers import lines as delivered

    p = tmp_path / "server.log"
    p.write_bytes(b"".join(b"line %06d\n" % i for i in range(1, 101)))
    tail = FileTail(str(p), follow=True, chunk_size=4096, history=(1200, 6000))
    items = []
    for _ in range(10):
        items += tail.poll()
    assert [n for _, n, _ in delivered(items)] == list(range(1, 101))
    tail.close()
