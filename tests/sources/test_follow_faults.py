"""Faults while following: what a cluster does to the files pdwatch reads.

Truncation, rotation, deletion, a directory in the file's place, permission denied
(injected: the tests run as root, where chmod 000 denies nothing), a writer stalled
mid-line, bursts, a 50 MB line, NULs / CRLF / mixed encodings. Each fault is checked for
"nothing lost, nothing spammed": the notice comes once however often we poll.
"""

from __future__ import annotations

import builtins
import errno
import os
import threading
import tracemalloc
from pathlib import Path

import pytest

from pdwatch.events.stream import EventStream
from pdwatch.sources import FileTail, LineBlock, SourceSet, discovery

from .helpers import has_text, kinds, lines, notices, poll_until, texts

MANY_POLLS = 50
MIB = 1 << 20


def poll_many(poll, n: int = MANY_POLLS) -> list:
    items: list = []
    for _ in range(n):
        items += poll()
    return items


class Denied:
    """Make opening one path fail with EACCES until lift(): what chmod 000 does to a non-root reader.

    Patches os.open (FileTail) and the builtin open as seen by discovery (the *.txt sniff).
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch, path: str) -> None:
        self.path = os.path.normpath(path)
        self.denied = True
        real_os_open, real_open = os.open, builtins.open

        def deny(p) -> None:
            if self.denied and isinstance(p, (str, os.PathLike)) and os.path.normpath(os.fspath(p)) == self.path:
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(p))

        def os_open(p, *a, **kw):
            deny(p)
            return real_os_open(p, *a, **kw)

        def open_(p, *a, **kw):
            deny(p)
            return real_open(p, *a, **kw)

        monkeypatch.setattr(os, "open", os_open)
        monkeypatch.setattr(discovery, "open", open_, raising=False)

    def lift(self) -> None:
        self.denied = False


# -- each fault: its notice comes once, however many polls follow --------------------------------


def _truncate(p: Path, _mp) -> None:
    os.truncate(p, 0)


def _rotate(p: Path, _mp) -> None:
    p.rename(p.with_name(p.name + ".1"))
    p.write_bytes(b"")


def _delete(p: Path, _mp) -> None:
    p.unlink()


def _directory(p: Path, _mp) -> None:
    p.unlink()
    p.mkdir()


def _rotate_to_unreadable(p: Path, mp) -> None:
    _rotate(p, mp)
    Denied(mp, str(p))


def _long_line(p: Path, _mp) -> None:
    with open(p, "ab") as f:
        f.write(b"L" * (3 * MIB))  # no newline yet: cut now, the rest dropped as it comes


@pytest.mark.parametrize(
    ("fault", "kind"),
    [
        (_truncate, "truncated"),
        (_rotate, "rotated"),
        (_delete, "deleted"),
        (_directory, "not_a_file"),
        (_rotate_to_unreadable, "error"),
        (_long_line, "line_capped"),
    ],
)
def test_each_fault_notice_is_shown_once(tmp_path: Path, monkeypatch, fault, kind: str):
    p = tmp_path / "w.out"
    p.write_bytes(b"one\ntwo\n")
    t = FileTail(str(p), follow=True)
    poll_until(t.poll, has_text(b"two"))
    fault(p, monkeypatch)
    items = poll_many(t.poll)
    assert len(notices(items, kind)) == 1, kinds(items)
    assert kinds(items).count(kind) == 1
    if kind == "error":
        assert notices(items, "error")[0].message == f"{p}: Permission denied"
    if kind == "line_capped":
        with open(p, "ab") as f:
            f.write(b"L" * MIB)  # the same over-long line goes on: no new notice
        assert notices(poll_many(t.poll), "line_capped") == []
    t.close()


def test_a_rotation_seen_between_its_rename_and_its_create_is_not_a_deletion(tmp_path: Path):
    # logrotate renames, then creates: a poll in between finds no file at the path, but the
    # old one still has a name (w.out.1). That is one rotation, not a deletion and a re-creation.
    p = tmp_path / "w.out"
    p.write_bytes(b"one\ntwo\n")
    t = FileTail(str(p), follow=True)
    poll_until(t.poll, has_text(b"two"))
    p.rename(tmp_path / "w.out.1")
    items = poll_many(t.poll)
    assert kinds(items) == ["renamed"], kinds(items)
    assert notices(items, "renamed")[0].message == f"{p}: renamed away; waiting for the new file"
    p.write_bytes(b"three\n")
    items = poll_until(t.poll, has_text(b"three"))
    assert kinds(items) == ["rotated"], kinds(items)
    t.close()


def test_a_deleted_file_is_still_a_deletion(tmp_path: Path):
    p = tmp_path / "w.out"
    p.write_bytes(b"one\n")
    t = FileTail(str(p), follow=True)
    poll_until(t.poll, has_text(b"one"))
    p.unlink()
    assert kinds(poll_many(t.poll)) == ["deleted"]
    p.write_bytes(b"two\n")
    assert kinds(poll_until(t.poll, has_text(b"two"))) == ["recreated"]
    t.close()


def test_missing_file_notice_once_then_read_from_its_start(tmp_path: Path):
    p = tmp_path / "later.out"
    s = SourceSet([str(p)], follow=True)
    assert kinds(poll_many(s.poll)) == ["missing"]
    p.write_bytes(b"first\nsecond\n")
    items = poll_until(s.poll, has_text(b"second"))
    assert kinds(items) == ["opened"]
    assert lines(items) == [(0, 1, b"first"), (0, 2, b"second")]
    s.close()


# -- truncation ----------------------------------------------------------------------------------


def test_copytruncate_mid_line_then_more_truncations(tmp_path: Path):
    p = str(tmp_path / "w.out")
    f = open(p, "ab", buffering=0)  # O_APPEND, as a logger under logrotate's copytruncate
    t = FileTail(p, follow=True)
    f.write(b"old1\nold2\nhalf of a line that logrotate copi")
    poll_until(t.poll, has_text(b"old2"))
    os.truncate(p, 0)  # the half line went to the copy; what follows starts a new file
    f.write(b"new1\nnew2\n")
    items = poll_until(t.poll, has_text(b"new2"))
    items += poll_many(t.poll)
    assert kinds(items) == ["truncated"]
    assert lines(items) == [(1, 1, b"new1"), (1, 2, b"new2")]
    os.truncate(p, 0)  # a second rotation is a new fault: reported again, once
    f.write(b"newer\n")
    items = poll_until(t.poll, has_text(b"newer")) + poll_many(t.poll)
    assert kinds(items) == ["truncated"] and lines(items) == [(2, 1, b"newer")]
    f.close()
    t.close()


@pytest.mark.parametrize("when", ["seen", "reader-caught-up", "reader-behind"])
def test_copytruncate_under_a_writer_that_does_not_append(tmp_path: Path, when: str):
    """Output opened with `>`, not `>>`: the writer keeps its offset, so the truncated file starts with a hole of NULs
    as long as the old log. Read as text that hole is one 3 MiB "line", and the line cap used to cut
    the first real line away with it."""
    p = tmp_path / "job.out"
    old_log = b"".join(b"old line %06d\n" % i for i in range(3 * MIB // 16))  # 3 MiB
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)  # no O_APPEND
    os.write(fd, old_log)
    t = FileTail(str(p), follow=True)
    poll_until(t.poll, lambda it: len(lines(it)) == len(old_log) // 16)
    if when == "reader-behind":
        os.write(fd, old_log[: 2 * MIB])  # unread when the rotation comes (the copy has it)
    os.truncate(p, 0)
    items = t.poll() if when == "seen" else []
    os.write(fd, b"first new line\nsecond new line\n")  # at the writer's old offset
    os.close(fd)
    items += poll_until(t.poll, has_text(b"second new line")) + poll_many(t.poll)
    assert texts(items)[-2:] == [b"first new line", b"second new line"]
    assert all(set(line) != {0} for line in texts(items))  # no megabyte "line" of NULs
    assert notices(items, "line_capped") == []
    # Seen by its size, or (the writer already past the reader) by the file's first bytes changing;
    # then the hole is crossed.
    hole = (5 if when == "reader-behind" else 3) * MIB
    assert [n.message.split(" (")[0] for n in notices(items)] == [
        f"{p}: truncated",
        f"{p}: skipped {hole} bytes of NUL padding",
    ]
    assert "copytruncate" in notices(items)[1].message
    t.close()


def test_nul_bytes_a_writer_really_wrote_are_kept(write):
    raw = b"\x00\x00starts with NULs\n\x00\nend\x00\n"
    p = write("nul.out", b"")
    t = FileTail(p, follow=True)
    t.poll()
    write("nul.out", raw)
    items = poll_until(t.poll, has_text(b"end\x00"))
    assert b"".join(it.data for it in items if isinstance(it, LineBlock)) == raw
    assert kinds(items) == []
    t.close()


# -- a directory in the file's place --------------------------------------------------------------


def test_watched_dir_file_replaced_by_directory_then_file_again(tmp_path: Path):
    d = tmp_path / "logs"
    d.mkdir()
    victim, sibling = d / "a_decode_w0.out", d / "b_prefill_w0.out"
    victim.write_bytes(b"a1\n")
    sibling.write_bytes(b"b1\n")
    s = SourceSet([str(d)], follow=True, rescan_interval=0.01)
    poll_until(s.poll, lambda it: b"a1" in texts(it) and b"b1" in texts(it))
    with open(victim, "ab") as f:
        f.write(b"a2 written just before it went\n")
    victim.unlink()
    victim.mkdir()
    (victim / "inner.out").write_bytes(b"not ours\n")  # a directory with a log-like file inside
    with open(sibling, "ab") as f:
        f.write(b"b2\n")
    items = poll_until(s.poll, has_text(b"b2")) + poll_many(s.poll)
    assert texts(items, str(victim)) == [b"a2 written just before it went"]  # drained, not lost
    assert kinds(items) == ["not_a_file"]
    assert str(victim / "inner.out") not in s.sources
    (victim / "inner.out").unlink()
    victim.rmdir()
    victim.write_bytes(b"a file again\n")
    items = poll_until(s.poll, has_text(b"a file again")) + poll_many(s.poll)
    assert kinds(items) == ["recreated"]
    assert lines(items, str(victim)) == [(1, 1, b"a file again")]
    s.close()


# -- permission denied (injected) ----------------------------------------------------------------


def test_permission_denied_on_the_rotated_file_then_lifted(tmp_path: Path, monkeypatch):
    p = tmp_path / "w.out"
    f = open(p, "ab", buffering=0)
    t = FileTail(str(p), follow=True)
    f.write(b"old1\n")
    poll_until(t.poll, has_text(b"old1"))
    f.write(b"old2, unread when the rotation came\n")
    f.close()
    p.rename(tmp_path / "w.out.1")
    p.write_bytes(b"new1\n")
    denied = Denied(monkeypatch, str(p))
    items = poll_many(t.poll)
    assert texts(items) == [b"old2, unread when the rotation came"]  # the old file drained first
    assert [n.message for n in notices(items)] == [f"{p}: Permission denied"]  # once
    with open(p, "ab") as g:
        g.write(b"new2, written while we could not read\n")
    denied.lift()
    items = poll_until(t.poll, has_text(b"new2, written while we could not read")) + poll_many(t.poll)
    assert kinds(items) == ["rotated"]
    assert lines(items) == [(1, 1, b"new1"), (1, 2, b"new2, written while we could not read")]
    t.close()


def test_permission_denied_on_a_txt_in_a_watched_dir_then_lifted(tmp_path: Path, monkeypatch):
    d = tmp_path / "logs"
    d.mkdir()
    p = d / "worker.txt"
    p.write_bytes(b"")  # an empty *.txt waits to be classified (log or /metrics scrape)
    denied = Denied(monkeypatch, str(p))
    s = SourceSet([str(d)], follow=True, rescan_interval=0.01)
    p.write_bytes(b"plain log line\n")
    items = poll_many(s.poll)
    assert [n.message for n in notices(items)] == [f"{p}: Permission denied"]
    assert texts(items) == []
    denied.lift()
    items = poll_until(s.poll, has_text(b"plain log line"))
    assert lines(items) == [(0, 1, b"plain log line")]
    s.close()


def test_stat_denied_while_open_keeps_reading_the_open_file(tmp_path: Path, monkeypatch):
    """The folder loses its search permission: the path can't be checked, the open file still reads."""
    p = tmp_path / "w.out"
    p.write_bytes(b"one\n")
    t = FileTail(str(p), follow=True)
    poll_until(t.poll, has_text(b"one"))
    real_stat = os.stat

    def stat(path, *a, **kw):
        if os.fspath(path) == str(p):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
        return real_stat(path, *a, **kw)

    monkeypatch.setattr(os, "stat", stat)
    with open(p, "ab") as f:
        f.write(b"two\nthree\n")
    items = poll_many(t.poll)
    assert [n.message for n in notices(items)] == [f"{p}: Permission denied"]
    assert lines(items) == [(0, 2, b"two"), (0, 3, b"three")]
    monkeypatch.undo()
    with open(p, "ab") as f:
        f.write(b"four\n")
    items = poll_until(t.poll, has_text(b"four")) + poll_many(t.poll)
    assert kinds(items) == [] and lines(items) == [(0, 4, b"four")]
    t.close()


# -- a writer stalled mid-line, on an injected clock ----------------------------------------------


def test_writer_stalls_mid_line_for_minutes(tmp_path: Path, monkeypatch):
    p = tmp_path / "w.out"
    p.write_bytes(b"complete line\nhalf a stats li")
    now = [0.0]
    stall_s = 10 * 60
    sleeps: list[float] = []
    preads = [0]
    real_pread = os.pread

    def counting_pread(*a, **kw):
        preads[0] += 1
        return real_pread(*a, **kw)

    monkeypatch.setattr(os, "pread", counting_pread)
    s: SourceSet

    def fake_sleep(dt: float) -> None:
        sleeps.append(dt)
        now[0] += dt
        if now[0] == stall_s:  # ten minutes later, the writer finishes its line
            with open(p, "ab") as f:
                f.write(b"ne, finished\nnext\n")
        if now[0] >= stall_s + 5:
            s.stop()

    s = SourceSet([str(p)], follow=True, poll_interval=1.0, clock=lambda: now[0], sleep=fake_sleep)
    got: list[tuple[float, object]] = []
    for item in s.blocks():
        got.append((now[0], item))
    delivered = [(at, line) for at, it in got if isinstance(it, LineBlock) for line in texts([it])]
    assert delivered == [
        (0.0, b"complete line"),
        (stall_s, b"half a stats line, finished"),  # held back whole, not delivered early, not lost
        (stall_s, b"next"),
    ]
    assert kinds([it for _, it in got]) == ["opened"]
    # No busy loop: every empty poll is followed by one poll_interval's sleep, and a poll reads
    # twice (new data; the first bytes, to notice a rewrite).
    assert set(sleeps) == {1.0} and len(sleeps) == stall_s + 5
    assert preads[0] <= 2 * (len(sleeps) + 5)


# -- volume ----------------------------------------------------------------------------------------


def test_50k_lines_in_one_burst_all_in_order_memory_bounded(tmp_path: Path):
    n = 50_000
    filler = b"-" * 1000

    def line(i: int) -> bytes:
        return b"burst %06d " % i + filler

    p = tmp_path / "burst.out"
    p.write_bytes(b"")
    s = SourceSet([str(p)], follow=True)
    s.poll()
    with open(p, "ab") as f:  # ~51 MB in one write()
        f.write(b"\n".join(line(i) for i in range(n)) + b"\n")
    expected_no = 1
    tracemalloc.start()
    try:
        for _ in range(10_000):
            for it in s.poll():
                assert isinstance(it, LineBlock), it
                for no, (_, line_no, text) in enumerate(lines([it]), expected_no):
                    assert (line_no, text) == (no, line(no - 1))
                expected_no += it.data.count(b"\n")
            if expected_no > n:
                break
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert expected_no == n + 1  # all delivered, in order, none lost
    assert peak < 24 * MIB, peak  # a poll reads at most 8 MiB, not the 51 MB burst
    s.close()


@pytest.mark.parametrize("pieces", [1, 800], ids=["one-write", "written-in-64k-pieces"])
def test_one_50mb_line_is_cut_to_the_cap(tmp_path: Path, pieces: int):
    size = 50_000_000
    p = tmp_path / "huge.out"
    p.write_bytes(b"before\n")
    t = FileTail(str(p), follow=True)
    chunk = b"y" * (size // pieces)
    items: list = []

    def consume() -> None:  # keep only what the checks need: memory must stay ours to measure
        for it in t.poll():
            if isinstance(it, LineBlock):
                for gen, no, text in lines([it]):
                    items.append((gen, no, text[:16], len(text)))
            else:
                items.append(it)

    tracemalloc.start()
    try:
        with open(p, "ab") as f:
            for _ in range(pieces):
                f.write(chunk)
                f.flush()
                consume()  # a reader keeping up with a slow writer: the line grows across polls
            f.write(b"\nafter\n")
        for _ in range(200):
            consume()
            if any(isinstance(x, tuple) and x[2] == b"after" for x in items):
                break
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    got = [x for x in items if isinstance(x, tuple)]
    assert got == [(0, 1, b"before", 6), (0, 2, b"y" * 16, MIB), (0, 3, b"after", 5)]
    capped = notices([x for x in items if not isinstance(x, tuple)], "line_capped")
    assert len(capped) == 1  # one notice for one line, counted
    assert capped[0].message.startswith(f"{p}: 1 line(s) longer than {MIB} bytes cut")
    assert peak < 16 * MIB, peak  # bounded by the cap and the per-poll budget, not the line
    t.close()


def test_one_50mb_line_on_stdin(tmp_path: Path):
    r, w = os.pipe()
    s = SourceSet(["-"], follow=True, stdin=os.fdopen(r, "rb"), poll_interval=0.01)

    def writer() -> None:
        with os.fdopen(w, "wb") as out:
            out.write(b"before\n")
            block = b"z" * MIB
            for _ in range(50):
                out.write(block)
            out.write(b"\nafter\n")

    th = threading.Thread(target=writer, daemon=True)
    th.start()
    got: list = []
    capped: list = []
    for it in s.blocks():
        if isinstance(it, LineBlock):
            got += [(no, text[:8], len(text)) for _, no, text in lines([it])]
        elif it.kind == "line_capped":
            capped.append(it)
    th.join(5)
    assert got == [(1, b"before", 6), (2, b"z" * 8, MIB), (3, b"after", 5)]
    assert len(capped) == 1 and capped[0].message.startswith("-: 1 line(s) longer than")


# -- NULs, CRLF, mixed encodings ---------------------------------------------------------------------

STATS = (
    "(APIServer pid=2166) INFO 05-29 14:01:{sec:02d} [loggers.py:236] Engine {engine:03d}: "
    "Avg prompt throughput: {prompt}.5 tokens/s, Avg generation throughput: 3724.3 tokens/s, "
    "Running: {running} reqs, Waiting: 2 reqs, GPU KV cache usage: 41.5%, Prefix cache hit rate: 0.0%"
)


ACCESS = b'(APIServer pid=2166) INFO:     127.0.0.1:50312 - "POST /v1/completions HTTP/1.1" 200 OK'


def prompt_tps(i: int) -> float:
    return 7 * i**3 + 0.5  # lengths vary, as in real logs (all-equal lengths look hard-wrapped)


def stats_line(i: int, tail: bytes = b"") -> bytes:
    return STATS.format(sec=i % 60, engine=i % 4, prompt=7 * i**3, running=60 + i).encode() + tail


def hostile_log() -> tuple[bytes, list[int]]:
    """Valid stats lines (CRLF ended) between junk; returns the bytes and the valid lines' numbers."""
    junk = [
        b"caf\xe9 latin-1 bytes in a utf-8 log",
        # UTF-16 encodes "\n" as b"\n\x00": the next physical line starts with a NUL
        b"\xff\xfe" + "utf-16 after a BOM\nsecond utf-16 line".encode("utf-16-le"),
        b"\xc3\x28 invalid \xed\xa0\x80 surrogate \xf8\x88\x80\x80\x80 five-byte",
        b"\x00\x00\x00 NULs \x00 inside",
        b"",
    ]
    data = b""
    valid: list[int] = []
    for i in range(40):
        data += junk[i % len(junk)] + b"\r\n"
        valid.append(data.count(b"\n") + 1)
        data += stats_line(i) + b"\r\n"
        # A record after each stats line: stats lines that are always followed by non-record text
        # look like a log a terminal hard-wrapped (parsers/wrap.py), which this test is not about.
        data += ACCESS + b"\r\n"
    valid.append(data.count(b"\n") + 1)
    data += stats_line(40, b" caf\xe9 \xff") + b"\r\n"  # invalid bytes at the end of a valid line
    return data, valid


def check_stats(events: list, valid_line_nos: list[int]) -> None:
    stats = [e for e in events if getattr(e, "kind", None) == "stats"]
    assert [e.line_no for e in stats] == valid_line_nos  # none lost next to the junk
    for i, e in enumerate(stats):
        assert e.engine == i % 4
        assert e.values["prompt_tps"] == prompt_tps(i)
        assert (e.values["running"], e.values["waiting"], e.values["kv_usage_pct"]) == (60 + i, 2, 41.5)
        assert e.values["prefix_hit_pct"] == 0.0
        assert e.ts.second == i % 60


def test_nul_crlf_and_mixed_encodings_followed_in_awkward_pieces(tmp_path: Path):
    data, valid = hostile_log()
    p = tmp_path / "hostile_decode_w0.out"
    p.write_bytes(b"")
    s = SourceSet([str(p)], follow=True)
    stream = EventStream(s, year=2026)
    events: list = []
    # Cut between \r and \n, inside multi-byte sequences, inside NUL runs: 1..13 bytes at a time.
    pos, step = 0, 0
    with open(p, "ab", buffering=0) as f:
        while pos < len(data):
            size = 1 + step % 13
            f.write(data[pos : pos + size])
            pos, step = pos + size, step + 1
            if step % 7 == 0:
                for it in s.poll():
                    if isinstance(it, LineBlock):
                        events += stream.events_of(it)
    for it in poll_many(s.poll, 5):
        if isinstance(it, LineBlock):
            events += stream.events_of(it)
    events += stream.finish()
    check_stats(events, valid)
    s.close()


def test_nul_crlf_and_mixed_encodings_replayed(tmp_path: Path):
    data, valid = hostile_log()
    p = tmp_path / "hostile_decode_w0.out"
    p.write_bytes(data)
    events = [e for e in EventStream(SourceSet([str(p)], follow=False), year=2026) if hasattr(e, "line_no")]
    check_stats(events, valid)
