"""Follow mode against real files changed by real writers (threads / a subprocess)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pdwatch.sources import FileTail, LineBlock, SourceSet

from .helpers import has_text, kinds, lines, notices, poll_until, texts

WRITER = r"""
import sys, time
path, n = sys.argv[1], int(sys.argv[2])
with open(path, "ab", buffering=0) as f:
    for i in range(n):
        line = b"line %04d " % i + b"x" * (i % 37) + b"\n"
        # split every line at an awkward place, with a pause in between
        cut = 1 + i % (len(line) - 1)
        f.write(line[:cut]); time.sleep(0.0005)
        f.write(line[cut:])
"""


def run_thread(fn) -> threading.Thread:
    th = threading.Thread(target=fn, daemon=True)
    th.start()
    return th


def test_append_in_pieces_mid_line_deterministic(write):
    p = write("w.out", b"")
    t = FileTail(p, follow=True)
    assert kinds(t.poll()) == ["opened"]
    write("w.out", b"first li")
    assert texts(t.poll()) == []  # the half line is held back
    write("w.out", b"ne\nsecond")
    assert lines(t.poll()) == [(0, 1, b"first line")]
    write("w.out", b" line\n")
    assert lines(t.poll()) == [(0, 2, b"second line")]
    t.close()


def test_append_from_subprocess_writer(write):
    n = 300
    p = write("w.out", b"")
    t = FileTail(p, follow=True, chunk_size=64)  # small chunks: many lines straddle reads
    proc = subprocess.Popen([sys.executable, "-c", WRITER, p, str(n)])
    try:
        items = poll_until(t.poll, lambda it: len(lines(it)) >= n, timeout=2.5)
    finally:
        proc.wait(timeout=5)
    blocks = [it for it in items if isinstance(it, LineBlock)]
    assert all(b.data.endswith(b"\n") for b in blocks)  # never a partial line in follow mode
    got = lines(items)
    assert [no for _, no, _ in got] == list(range(1, n + 1))
    assert got[-1][2] == b"line %04d " % (n - 1) + b"x" * ((n - 1) % 37)
    t.close()


def test_copytruncate(tmp_path: Path):
    p = str(tmp_path / "w.out")
    f = open(p, "ab", buffering=0)  # O_APPEND, like a logger under copytruncate
    t = FileTail(p, follow=True)
    f.write(b"old line number one, quite long\nold line two, also long\nold three\n")
    poll_until(t.poll, has_text(b"old three"))

    def rotate():
        os.truncate(p, 0)  # logrotate copytruncate
        f.write(b"new1\nnew2\n")  # the writer carries on at offset 0

    run_thread(rotate).join()
    items = poll_until(t.poll, has_text(b"new2"))
    assert kinds(items) == ["truncated"]
    n = notices(items, "truncated")[0]
    assert n.message.startswith(f"{p}: truncated (size ") and "reading from the start" in n.message
    assert lines(items) == [(1, 1, b"new1"), (1, 2, b"new2")]
    f.close()
    t.close()


def test_rename_and_recreate_loses_nothing(tmp_path: Path):
    p = str(tmp_path / "w.out")
    t = FileTail(p, follow=True)
    with open(p, "ab", buffering=0) as f:
        f.write(b"a1\na2\na3\n")
        poll_until(t.poll, has_text(b"a3"))

        def rotate():
            f.write(b"late4\nlate5\nhalf6")  # written just before the rename, unread so far
            os.rename(p, p + ".1")
            with open(p, "wb") as g:
                g.write(b"new1\nnew2\n")

        run_thread(rotate).join()
    items = poll_until(t.poll, has_text(b"new2"))
    assert lines(items) == [
        (0, 4, b"late4"),
        (0, 5, b"late5"),
        (0, 6, b"half6"),  # the old file is finished, so its last line is complete
        (1, 1, b"new1"),
        (1, 2, b"new2"),
    ]
    assert kinds(items) == ["rotated"]
    rotated_at = next(i for i, it in enumerate(items) if not isinstance(it, LineBlock))
    assert all(it.generation == 0 for it in items[:rotated_at])  # old data first
    t.close()


def test_delete_and_recreate(tmp_path: Path):
    p = str(tmp_path / "w.out")
    Path(p).write_bytes(b"one\ntwo\n")
    t = FileTail(p, follow=True)
    poll_until(t.poll, has_text(b"two"))
    os.unlink(p)
    items = poll_until(t.poll, lambda it: "deleted" in kinds(it))
    for _ in range(5):
        items += t.poll()
    assert kinds(items) == ["deleted"]  # once, not every poll
    run_thread(lambda: Path(p).write_bytes(b"reborn\n"))
    items = poll_until(t.poll, has_text(b"reborn"))
    assert kinds(items) == ["recreated"]
    assert lines(items) == [(1, 1, b"reborn")]
    t.close()


def test_replaced_by_directory_then_file_again(tmp_path: Path):
    p = tmp_path / "w.out"
    p.write_bytes(b"x\n")
    t = FileTail(str(p), follow=True)
    poll_until(t.poll, has_text(b"x"))
    p.unlink()
    p.mkdir()
    items = t.poll() + t.poll() + t.poll()
    assert kinds(items) == ["not_a_file"]
    p.rmdir()
    p.write_bytes(b"y\n")
    items = poll_until(t.poll, has_text(b"y"))
    assert "recreated" in kinds(items)
    assert lines(items) == [(1, 1, b"y")]
    t.close()


def test_explicit_path_created_later(tmp_path: Path):
    p = str(tmp_path / "later.out")
    s = SourceSet([p], follow=True, poll_interval=0.01)
    items = s.poll() + s.poll()
    assert kinds(items) == ["missing"]  # once
    run_thread(lambda: (time.sleep(0.05), Path(p).write_bytes(b"hello\n")))
    items = poll_until(s.poll, has_text(b"hello"))
    assert kinds(items) == ["opened"]
    assert lines(items) == [(0, 1, b"hello")]
    s.close()


@pytest.mark.parametrize("as_glob", [False, True])
def test_new_file_in_watched_dir_or_glob(tmp_path: Path, as_glob: bool):
    d = tmp_path / "logs"
    d.mkdir()
    (d / "a_prefill_w0.out").write_bytes(b"a\n")
    arg = str(d / "*_w?.out") if as_glob else str(d)
    s = SourceSet([arg], follow=True, rescan_interval=0.02)
    poll_until(s.poll, has_text(b"a"))
    newp = str(d / "b_decode_w0.out")
    run_thread(lambda: (Path(newp).write_bytes(b"b1\n"), (d / "ignored.md").write_bytes(b"no\n")))
    items = poll_until(s.poll, has_text(b"b1", newp))
    assert lines(items, newp) == [(0, 1, b"b1")]
    assert newp in s.sources and str(d / "ignored.md") not in s.sources
    s.close()


def test_rotated_file_in_watched_dir_is_not_read_twice(tmp_path: Path):
    d = tmp_path / "logs"
    d.mkdir()
    p = d / "x.log"
    p.write_bytes(b"old1\nold2\n")
    s = SourceSet([str(d)], follow=True, rescan_interval=0.01)
    poll_until(s.poll, has_text(b"old2"))
    p.rename(d / "x-1.log")  # rotated name still matches *.log
    p.write_bytes(b"new1\n")
    (d / "y.log").write_bytes(b"genuinely new\n")
    items = poll_until(s.poll, lambda it: b"new1" in texts(it) and b"genuinely new" in texts(it))
    deadline = time.monotonic() + 0.2  # several more rescans
    while time.monotonic() < deadline:
        items += s.poll()
        time.sleep(0.01)
    assert texts(items, str(d / "x-1.log")) == []
    assert str(d / "x-1.log") not in s.sources
    assert texts(items, str(p)) == [b"new1"]
    s.close()


def test_empty_txt_classified_once_first_line_arrives(tmp_path: Path):
    d = tmp_path / "logs"
    d.mkdir()
    scrape, log = d / "scrape.txt", d / "log.txt"
    scrape.write_bytes(b"")
    log.write_bytes(b"")
    s = SourceSet([str(d)], follow=True, rescan_interval=0.02)
    assert s.metrics_files == []
    assert s.poll() == []

    def fill():
        with open(scrape, "ab", buffering=0) as f:
            f.write(b"# HE")  # ambiguous for a moment
            time.sleep(0.03)
            f.write(b"LP vllm:num_requests_running x\nvllm:num_requests_running 1.0\n")
        log.write_bytes(b"plain text log\n")

    run_thread(fill)
    items = poll_until(s.poll, lambda it: b"plain text log" in texts(it) and "metrics_file" in kinds(it))
    assert s.metrics_files == [str(scrape)]
    assert texts(items, str(scrape)) == []
    assert str(scrape) not in s.sources
    s.close()


def test_stdin_pipe_follow():
    r, w = os.pipe()
    s = SourceSet(["-"], follow=True, stdin=os.fdopen(r, "rb"), poll_interval=0.01)
    got: list = []
    consumer = run_thread(lambda: got.extend(s.blocks()))

    def writer():
        for piece in (b"hel", b"lo\nwor", b"ld\n", b"no newline at end"):
            os.write(w, piece)
            time.sleep(0.01)
        os.close(w)

    run_thread(writer)
    consumer.join(timeout=2.5)
    assert not consumer.is_alive()  # `-f -`: stdin EOF ends it (nothing else to follow)
    assert lines(got) == [(0, 1, b"hello"), (0, 2, b"world"), (0, 3, b"no newline at end")]
    assert s.sources == ["-"]


def test_stdin_and_file_follow_until_stop(tmp_path: Path):
    r, w = os.pipe()
    p = tmp_path / "w.out"
    p.write_bytes(b"file line\n")
    s = SourceSet([str(p), "-"], follow=True, stdin=os.fdopen(r, "rb"), poll_interval=0.01)
    got: list = []
    consumer = run_thread(lambda: got.extend(s.blocks()))
    os.write(w, b"from stdin\n")
    os.close(w)
    deadline = time.monotonic() + 2
    while not (b"from stdin" in texts(got) and b"file line" in texts(got)) and time.monotonic() < deadline:
        time.sleep(0.01)
    with open(p, "ab") as f:
        f.write(b"more\n")
    while b"more" not in texts(got) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert consumer.is_alive()  # follow keeps going after stdin's EOF
    s.stop()
    consumer.join(timeout=1)
    assert not consumer.is_alive()
    assert texts(got, "-") == [b"from stdin"]
    assert texts(got, str(p)) == [b"file line", b"more"]


def test_stop_is_prompt_even_with_long_poll_interval(tmp_path: Path):
    p = tmp_path / "w.out"
    p.write_bytes(b"")
    s = SourceSet([str(p)], follow=True, poll_interval=30)
    consumer = run_thread(lambda: list(s.blocks()))
    time.sleep(0.05)
    t0 = time.monotonic()
    s.stop()
    consumer.join(timeout=1)
    assert not consumer.is_alive() and time.monotonic() - t0 < 1


def test_injected_clock_and_sleep_drive_rescans(tmp_path: Path):
    d = tmp_path / "logs"
    d.mkdir()
    now = [1000.0]
    sleeps: list[float] = []
    s: SourceSet

    def fake_sleep(dt: float) -> None:
        sleeps.append(dt)
        now[0] += dt
        if len(sleeps) == 1:
            (d / "late.out").write_bytes(b"late\n")
        if len(sleeps) >= 20:
            s.stop()

    s = SourceSet([str(d)], follow=True, poll_interval=1.0, rescan_interval=5.0, clock=lambda: now[0], sleep=fake_sleep)
    got = []
    for it in s.blocks():
        got.append((now[0], it))
    late = [(ts, it) for ts, it in got if isinstance(it, LineBlock)]
    assert [it.data for _, it in late] == [b"late\n"]
    assert late[0][0] >= 1005.0  # only picked up by the rescan due at +5 s (fake time)
    assert set(sleeps) == {1.0}


def test_replay_of_file_without_final_newline(tmp_path: Path):
    p = tmp_path / "w.out"
    subprocess.run([sys.executable, "-c", f"open({str(p)!r}, 'wb').write(b'one\\ntwo, unfinished')"], check=True)
    items = list(SourceSet([str(p)], follow=False).blocks())
    assert lines(items) == [(0, 1, b"one"), (0, 2, b"two, unfinished")]


def test_explicit_txt_created_later_is_classified_first(tmp_path: Path):
    log, scrape = str(tmp_path / "later.txt"), str(tmp_path / "scrape.txt")
    s = SourceSet([log, scrape], follow=True)
    items = s.poll() + s.poll()
    assert sorted(n.source for n in notices(items, "missing")) == [log, scrape]
    assert len(notices(items)) == 2  # once each
    Path(scrape).write_bytes(b"# TYPE vllm:x gauge\nvllm:x 1\n")
    Path(log).write_bytes(b"a log after all\n")
    items = poll_until(s.poll, has_text(b"a log after all"))
    assert s.metrics_files == [scrape] and texts(items, scrape) == []
    assert notices(items, "metrics_file")[0].source == scrape
    s.close()
