"""Faults on the live side: a watch session (headless or dashboard) keeps going through source
faults, and writing a report on a full disk fails cleanly (one line, old report intact, no temp file)."""

from __future__ import annotations

import asyncio
import errno
import io
import json
import math
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from pdwatch.cli import main
from pdwatch.commands.watch import run_headless
from pdwatch.errors import UsageError
from pdwatch.session.live import LiveSession
from pdwatch.views.report import output
from pdwatch.views.report.output import write_atomically

REPO = Path(__file__).resolve().parents[2]
PREFILL_BOUND = REPO / "samples" / "prefill-bound"
ENOSPC = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
MIB = 1 << 20


# -- the disk fills up while a report is written ---------------------------------------------------


class FullDiskFile:
    """A text file that runs out of space at one step: half the text lands, then ENOSPC."""

    def __init__(self, real, fail_at: str, seen: list[list[str]]) -> None:
        self.real, self.fail_at, self.seen = real, fail_at, seen

    def write(self, text: str) -> int:
        if self.fail_at == "write":
            self.real.write(text[: len(text) // 2])
            self.real.flush()
            self.seen.append(sorted(os.listdir(self._dir)))  # the partial temp file exists now
            raise ENOSPC
        return self.real.write(text)

    def flush(self) -> None:
        self.real.flush()

    def fileno(self) -> int:
        return self.real.fileno()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.real.close()
        if self.fail_at == "close" and exc[0] is None:
            raise ENOSPC  # a delayed write failing when the file is closed (NFS does this)


def inject_full_disk(monkeypatch, directory: Path, fail_at: str) -> list[list[str]]:
    """Make write_atomically's `fail_at` step fail with ENOSPC; returns the folder listings at failure."""
    seen: list[list[str]] = []
    if fail_at == "mkstemp":
        def mkstemp(*a, **kw):
            raise ENOSPC
        monkeypatch.setattr(output.tempfile, "mkstemp", mkstemp)
    elif fail_at == "fsync":
        def fsync(fd):
            seen.append(sorted(os.listdir(directory)))
            raise ENOSPC
        monkeypatch.setattr(output.os, "fsync", fsync)
    else:
        real_fdopen = os.fdopen

        def fdopen(fd, *a, **kw):
            f = FullDiskFile(real_fdopen(fd, *a, **kw), fail_at, seen)
            f._dir = directory
            return f
        monkeypatch.setattr(output.os, "fdopen", fdopen)
    return seen


@pytest.mark.parametrize("fail_at", ["mkstemp", "write", "fsync", "close"])
def test_disk_full_while_writing_a_report(tmp_path: Path, monkeypatch, fail_at: str):
    target = tmp_path / "report.md"
    target.write_text("the previous report\n", encoding="utf-8")
    seen = inject_full_disk(monkeypatch, tmp_path, fail_at)
    with pytest.raises(UsageError) as caught:
        write_atomically(str(target), "# the new report\n" * 1000, [])
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{target}: ")
    assert message.endswith(os.strerror(errno.ENOSPC))
    assert target.read_text(encoding="utf-8") == "the previous report\n"  # intact
    assert os.listdir(tmp_path) == ["report.md"]  # the temp file is gone
    if fail_at in ("write", "fsync"):
        assert len(seen[0]) == 2  # there was a temp file to clean up


def test_disk_full_report_command_says_so_in_one_line(tmp_path: Path, monkeypatch, capsys):
    target = tmp_path / "report.json"
    target.write_text("{}", encoding="utf-8")
    inject_full_disk(monkeypatch, tmp_path, "fsync")
    assert main(["report", str(PREFILL_BOUND), "--format", "json", "-o", str(target)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"pdwatch: error: {target}: could not write the report: {os.strerror(errno.ENOSPC)}"]
    assert target.read_text(encoding="utf-8") == "{}" and os.listdir(tmp_path) == ["report.json"]


def test_report_of_a_file_whose_name_is_not_utf8(tmp_path: Path):
    """os.listdir hands such a name back with surrogate escapes; writing them used to raise
    UnicodeEncodeError (a traceback) and leave the temp file behind."""
    logs = tmp_path / "logs"
    logs.mkdir()
    name = os.fsdecode(b"caf\xe9_prefill_w0.out")
    shutil.copy(PREFILL_BOUND / "gb200-n001_prefill_w0.out", logs / name)
    target = tmp_path / "report.json"
    assert main(["report", str(logs), "--format", "json", "-o", str(target)]) == 0
    report = json.loads(target.read_bytes().decode("utf-8"))  # valid UTF-8
    assert report["deployment"]["endpoints"][0]["sources"] == [str(logs / name)]  # the same name, read back
    assert sorted(os.listdir(tmp_path)) == ["logs", "report.json"]


# -- the dashboard's export key on a full disk ----------------------------------------------------------


def _plain(widget) -> str:
    visual = widget.render()
    return getattr(visual, "plain", None) or str(visual)


def test_export_key_on_a_full_disk_shows_the_error_and_keeps_running(tmp_path: Path, monkeypatch):
    from textual.widgets import Static

    from pdwatch.views.tui.app import PdwatchApp

    target = tmp_path / "live.md"
    target.write_text("the previous export\n", encoding="utf-8")
    inject_full_disk(monkeypatch, tmp_path, "write")

    async def go() -> str:
        session = LiveSession([str(PREFILL_BOUND)], mode="replay", speed=math.inf)
        app = PdwatchApp(session, refresh=0.1, export_path=str(target))
        async with app.run_test(size=(80, 24)) as pilot:
            deadline = time.monotonic() + 20
            while not (app.snapshot is not None and app.snapshot.done) and time.monotonic() < deadline:
                await pilot.pause(0.05)
            await pilot.press("e")
            await pilot.pause(0.1)
            status = _plain(app.main.query_one("#status", Static))
            assert app.is_running
            await pilot.press("question_mark")  # still answers keys
            await pilot.pause(0.1)
            assert app.is_running
            return status

    status = asyncio.run(go())
    assert status.startswith("export failed: ") and status.endswith(os.strerror(errno.ENOSPC)), status
    assert target.read_text(encoding="utf-8") == "the previous export\n"
    assert os.listdir(tmp_path) == ["live.md"]


# -- a watch session through source faults ----------------------------------------------------------------

STATS = (
    "(APIServer pid=2166) INFO 05-29 14:{minute:02d}:{second:02d} [loggers.py:236] Engine 000: "
    "Avg prompt throughput: {prompt:.1f} tokens/s, Avg generation throughput: {gen:.1f} tokens/s, "
    "Running: {running} reqs, Waiting: {waiting} reqs, GPU KV cache usage: {kv:.1f}%, Prefix cache hit rate: 0.0%"
)
OOM = ("(EngineCore_DP0 pid=2170) ERROR 05-29 14:{minute:02d}:{second:02d} [core.py:843] "
       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB.")


class Writer:
    """Stats lines on a clock that moves 10 s per line, the values telling which line it was."""

    def __init__(self) -> None:
        self.t = 0

    def stats(self, running: int, end: bytes = b"\n") -> bytes:
        self.t += 10
        minute, second = divmod(self.t, 60)
        return STATS.format(minute=minute, second=second, prompt=1000.0 + running, gen=500.0 + running,
                            running=running, waiting=1, kv=12.5).encode() + end

    def oom(self) -> bytes:
        self.t += 1
        minute, second = divmod(self.t, 60)
        return OOM.format(minute=minute, second=second).encode() + b"\n"


def deny_open(monkeypatch, path: Path) -> None:
    """EACCES for this path (chmod 000 denies nothing to root, which CI runs as)."""
    real = os.open

    def fake(p, *a, **kw):
        if os.fspath(p) == str(path):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(p))
        return real(p, *a, **kw)

    monkeypatch.setattr(os, "open", fake)


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def running_of(snapshot, endpoint: str):
    row = next((r for r in snapshot.endpoints if r.name == endpoint), None)
    return None if row is None else row.running


def test_watch_session_keeps_ticking_through_source_faults(tmp_path: Path, monkeypatch):
    logs = tmp_path / "logs"
    logs.mkdir()
    prefill, decode = logs / "n1_prefill_w0.out", logs / "n1_decode_w0.out"
    w = Writer()
    prefill.write_bytes(w.stats(1))
    decode.write_bytes(w.stats(101))
    session = LiveSession([str(logs)], mode="watch", year=2026, poll_interval=0.01)
    wall = [0.0]
    told: list[str] = []

    def step(polls: int = 3):
        snap = None
        for _ in range(polls):
            while session.ingest(2000):
                pass
            wall[0] += 0.5
            snap = session.tick(wall[0])
            told.extend(snap.notices)
        return snap

    assert running_of(step(), "decode_w0") == 101

    # copytruncate of the decode log (its writer appends)
    os.truncate(decode, 0)
    append(decode, w.stats(102))
    assert running_of(step(), "decode_w0") == 102

    # prefill rotated (rename + re-create), and the new file unreadable for a while
    prefill.rename(logs / "n1_prefill_w0.out.1")
    prefill.write_bytes(w.stats(2))
    with monkeypatch.context() as mp:
        deny_open(mp, prefill)
        step(10)
        append(prefill, w.stats(3))
    assert running_of(step(), "prefill_w0") == 3  # read from its start once allowed: nothing lost

    # decode replaced by a directory, then by a file again
    decode.unlink()
    decode.mkdir()
    step(10)
    decode.rmdir()
    decode.write_bytes(w.stats(103))
    assert running_of(step(), "decode_w0") == 103

    # one 8 MiB line between stats lines, and a NUL / CRLF / Latin-1 / UTF-16 stretch
    append(decode, b"x" * (8 * MIB) + b"\n" + w.stats(104))
    append(decode, b"\x00\x00caf\xe9\r\n" + b"\xff\xfe" + "utf-16".encode("utf-16-le") + b"\r\n"
           + w.stats(105, end=b"\r\n") + b"\xc3\x28 bad\r\n")
    snap = step()
    assert running_of(snap, "decode_w0") == 105
    decode_row = next(r for r in snap.endpoints if r.name == "decode_w0")
    assert decode_row.gen_tps == 605.0 and decode_row.kv_usage_pct == 12.5  # CRLF: values intact

    # the writer stalls mid-line: the half line is not used, then completes
    half = w.stats(106)
    append(decode, half[:100])
    assert running_of(step(20), "decode_w0") == 105
    append(decode, half[100:])
    assert running_of(step(), "decode_w0") == 106

    # copytruncate under a writer that does not append: a hole of NULs, then the new lines
    size = decode.stat().st_size
    os.truncate(decode, 0)
    fd = os.open(decode, os.O_WRONLY)
    os.pwrite(fd, w.stats(107), size)
    os.close(fd)
    assert running_of(step(), "decode_w0") == 107

    # after all that, a finding still fires
    append(decode, w.oom())
    snap = step()
    assert [(f.rule, f.endpoint) for f in snap.findings] == [("engine_failure", "decode_w0")]

    # Each fault told once, however many ticks it lasted (two truncations: two notices).
    expected_notices = {
        ": truncated (": 2, "rotated": 1, "Permission denied": 1, "not a regular file": 1,
        "re-created": 1, "longer than": 1, "NUL padding": 1,
    }
    for words, count in expected_notices.items():
        assert sum(words in m for m in told) == count, (words, told)
    assert len(told) == sum(expected_notices.values()), told
    session.close()


def test_headless_watch_prints_each_fault_once_and_still_reports(tmp_path: Path, monkeypatch):
    logs = tmp_path / "logs"
    logs.mkdir()
    decode = logs / "n1_decode_w0.out"
    w = Writer()
    decode.write_bytes(w.stats(100))
    out, err = io.StringIO(), io.StringIO()
    stop = threading.Event()
    session = LiveSession([str(logs)], mode="watch", year=2026, poll_interval=0.01)
    headless = threading.Thread(target=run_headless, args=(session, out),
                                kwargs={"refresh": 0.01, "jsonl": True, "stop": stop, "err": err})
    headless.start()

    def wait_for(predicate, what: str) -> None:
        deadline = time.monotonic() + 15
        while not predicate():
            assert headless.is_alive(), "the headless loop died"
            assert time.monotonic() < deadline, f"timed out waiting for {what}; stderr: {err.getvalue()!r}"
            time.sleep(0.01)

    try:
        wait_for(lambda: session.store.endpoints(), "the first stats line")
        with monkeypatch.context() as mp:
            deny_open(mp, decode)  # before the rotation, so the reader cannot open the new file first
            decode.rename(logs / "n1_decode_w0.out.1")
            decode.write_bytes(w.stats(101))
            wait_for(lambda: "Permission denied" in err.getvalue(), "the permission notice")
            time.sleep(0.2)  # many more polls while it is still denied
        append(decode, b"z" * (3 * MIB) + b"\n")
        wait_for(lambda: "longer than" in err.getvalue(), "the line-cap notice")
        append(decode, w.oom())
        wait_for(lambda: '"engine_failure"' in out.getvalue(), "the finding")
    finally:
        stop.set()
        headless.join(10)
        session.close()
    assert not headless.is_alive()
    # Every notice is in the failure message: which one is missing or repeated says what went wrong.
    lines = err.getvalue().splitlines()
    finding = json.loads(out.getvalue().splitlines()[0])
    assert (finding["rule"], finding["endpoint"], finding["state"]) == ("engine_failure", "decode_w0", "firing"), lines
    assert all(line.startswith("pdwatch: ") for line in lines), lines
    assert len(lines) == len(set(lines)), lines  # nothing repeated
    # The reader may poll between the rename and the re-create ("renamed away; waiting for the
    # new file") or after both: either way one rotation, one denial, one capped line, no deletion.
    assert sum("Permission denied" in line for line in lines) == 1, lines
    assert sum("rotated" in line for line in lines) == 1, lines
    assert sum("longer than" in line for line in lines) == 1, lines
    assert not any("deleted" in line or "re-created" in line for line in lines), lines
