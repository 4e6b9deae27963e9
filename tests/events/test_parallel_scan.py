"""Scanning one file in pieces on every core gives exactly the sequential scan's events."""

from __future__ import annotations

import io
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from pdwatch.events import parallel_scan
from pdwatch.cli import main
from pdwatch.events.stream import EventStream
from pdwatch.sources import SourceNotice, SourceSet
from tests.conftest import REPO

_STATS = ("(APIServer pid=9) INFO {md} {hms} [loggers.py:335] Engine 00{e}: Avg prompt throughput: 2444.7 tokens/s, "
          "Avg generation throughput: 2194.7 tokens/s, Running: 4 reqs, Waiting: 44 reqs, GPU KV cache usage: 0.2%, "
          "Prefix cache hit rate: 0.0%\n")
_XFER = "(APIServer pid=9) INFO {md} {hms} [metrics.py:1] KV Transfer metrics: Num successful transfers=3\n"
_NOISE = "(EngineCore_DP1 pid=12) DEBUG {md} {hms} [core.py:7] step {i} scheduled some requests for this engine\n"


def _sequential(path: Path) -> list:
    stream = EventStream(SourceSet([str(path)], follow=False), year=2026)
    return [e for e in stream if not isinstance(e, SourceNotice)]


def _renumber_events(events: list, delta: int) -> list:
    return [event.moved(delta) for event in events]


@pytest.fixture(params=["counted", "renumbered"])
def numbering(request) -> str:
    """Pieces numbered from the counts of the lines before them, or from 1 and renumbered once
    those are scanned (``FileScan(renumber=...)``, a report's way)."""
    return request.param


_NUMBERING = {"counted": None, "renumbered": _renumber_events}


def _pieces(path: Path, numbering: str = "counted", **kw) -> list:
    chunks = parallel_scan.scan_file(str(path), year=2026, tz=None, render=list, workers=2,
                                     renumber=_NUMBERING[numbering], **kw)
    return [event for chunk in chunks for event in chunk]


@pytest.fixture
def small_warmup(monkeypatch):
    monkeypatch.setattr(parallel_scan, "_WARMUP_BYTES", 4096)


@pytest.fixture
def rescans(monkeypatch) -> list:
    """Pieces the parent rescanned from the true state (workers run in other processes)."""
    seen: list = []
    real = parallel_scan._scan_piece_here

    def counting(piece, state, *args):
        seen.append(piece.start)
        return real(piece, state, *args)

    monkeypatch.setattr(parallel_scan, "_scan_piece_here", counting)
    return seen


def _write_run(path: Path, lines: int, *, start_month_day: str = "11-29", rollover_at: int | None = None,
               traceback_at: int | None = None, traceback_frames: int = 0) -> None:
    with path.open("w") as out:
        md = start_month_day
        for i in range(lines):
            if rollover_at is not None and i == rollover_at:
                md = "01-01"
            hms = f"{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}"
            if traceback_at is not None and i == traceback_at:
                out.write(f"(EngineCore_DP0 pid=11) ERROR {md} {hms} [core.py:9] Traceback (most recent call last):\n")
                for f in range(traceback_frames):
                    out.write(f'(EngineCore_DP0 pid=11) ERROR {md} {hms} [core.py:9]   File "x{f}.py", line {f}, in run\n')
                out.write(f"(EngineCore_DP0 pid=11) ERROR {md} {hms} [core.py:9] RuntimeError: boom {i}\n")
            out.write(_NOISE.format(md=md, hms=hms, i=i))
            if i % 7 == 0:
                out.write(_STATS.format(md=md, hms=hms, e=i % 4))
                out.write(_XFER.format(md=md, hms=hms))


def test_generated_dynamo_node_log_in_pieces_equals_sequential(tmp_path, small_warmup, numbering):
    log = tmp_path / "node.log"
    subprocess.run([sys.executable, str(REPO / "bench" / "make_mixed_log.py"), "--size", "3M", "--out", str(log)],
                   check=True, capture_output=True)
    sequential = _sequential(log)
    assert len(sequential) > 1000
    assert _pieces(log, numbering, piece_bytes=200_000) == sequential


def test_year_rollover_inside_a_piece_is_rescanned_from_the_true_state(tmp_path, small_warmup, rescans, numbering):
    log = tmp_path / "newyear.log"
    _write_run(log, 12_000, start_month_day="12-31", rollover_at=6_000)
    sequential = _sequential(log)
    years = {e.ts.year for e in sequential}
    assert years == {2026, 2027}
    assert _pieces(log, numbering, piece_bytes=100_000) == sequential
    assert rescans, "the pieces after the new year guessed the old year: they must have been rescanned"


def test_traceback_longer_than_the_warmup_across_pieces(tmp_path, small_warmup, rescans, numbering):
    log = tmp_path / "crash.log"
    _write_run(log, 8_000, traceback_at=3_000, traceback_frames=400)
    sequential = _sequential(log)
    tracebacks = [e for e in sequential if e.kind == "traceback"]
    assert len(tracebacks) == 1 and tracebacks[0].values["frames"] == 400
    assert _pieces(log, numbering, piece_bytes=60_000) == sequential
    assert rescans


def test_plain_run_needs_no_rescan(tmp_path, small_warmup, rescans, numbering):
    log = tmp_path / "plain.log"
    _write_run(log, 8_000)
    assert _pieces(log, numbering, piece_bytes=80_000) == _sequential(log)
    assert rescans == []


def test_line_over_the_cap_is_left_to_the_sequential_reader(tmp_path, monkeypatch, numbering):
    monkeypatch.setattr(parallel_scan, "MAX_LINE_BYTES", 10_000)
    log = tmp_path / "long.log"
    _write_run(log, 3_000)
    with log.open("a") as out:
        out.write("x" * 20_000 + "\n")
    with pytest.raises(parallel_scan.NotSplittable):
        _pieces(log, numbering, piece_bytes=50_000)


def test_terminal_wrapped_file_is_not_split(tmp_path, monkeypatch):
    log = tmp_path / "pasted.log"
    line = _STATS.format(md="11-29", hms="10:00:00", e=0).rstrip("\n")
    with log.open("w") as out:
        for _ in range(400):
            out.write("\n".join(line[i:i + 80] for i in range(0, len(line), 80)) + "\n")
    with pytest.raises(parallel_scan.NotSplittable):
        _pieces(log, piece_bytes=10_000)
    # ``parse`` (whose first piece judges the wrap, not a probe beforehand) then reads it whole.
    sequential = _parse_output(["parse", "--year", "2026", str(log)])
    assert sequential.count('"kind":"stats"') == 400
    monkeypatch.setattr(parallel_scan, "worker_count", lambda: 2)
    monkeypatch.setattr(parallel_scan, "MIN_PARALLEL_BYTES", 10_000)
    monkeypatch.setattr(parallel_scan, "_PIECE_BYTES", 10_000)
    assert parallel_scan.should_split(str(log))
    assert _parse_output(["parse", "--year", "2026", str(log)]) == sequential


def _parse_output(argv: list[str]) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(argv) == 0
    return out.getvalue()


@pytest.mark.parametrize("fmt", ["jsonl", "table"])
def test_parse_command_prints_the_same_bytes_split_or_not(tmp_path, monkeypatch, small_warmup, fmt):
    first, second = tmp_path / "a.log", tmp_path / "b.log"
    _write_run(first, 4_000)
    _write_run(second, 500, traceback_at=100, traceback_frames=3)

    def run() -> str:
        out = io.StringIO()
        with redirect_stdout(out):
            assert main(["parse", "--year", "2026", "--format", fmt, str(tmp_path)]) == 0
        return out.getvalue()

    sequential = run()
    monkeypatch.setattr(parallel_scan, "worker_count", lambda: 2)  # split even on a one-core CI runner
    monkeypatch.setattr(parallel_scan, "MIN_PARALLEL_BYTES", 100_000)
    monkeypatch.setattr(parallel_scan, "_PIECE_BYTES", 50_000)
    assert parallel_scan.should_split(str(first)) and not parallel_scan.should_split(str(second))
    assert run() == sequential


def _write_sparse(path: Path, lines: int, *, stats_every: int, xfer_after: int | None) -> None:
    """Stats lines further apart than the warm-up; a KV-transfer line ``xfer_after`` lines after each."""
    with path.open("w") as out:
        for i in range(lines):
            hms = f"{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}"
            out.write(_NOISE.format(md="11-29", hms=hms, i=i))
            if i % stats_every == 0:
                out.write(_STATS.format(md="11-29", hms=hms, e=(i // stats_every) % 4))
            if xfer_after is not None and i % stats_every == xfer_after:
                out.write(_XFER.format(md="11-29", hms=hms))


def test_stats_lines_further_apart_than_the_warmup(tmp_path, small_warmup, numbering):
    """The warm-up misses the last stats line; where no line of the piece uses it, the guess is
    let through, and the piece's stats state is taken from the true one."""
    log = tmp_path / "sparse.log"
    _write_sparse(log, 20_000, stats_every=700, xfer_after=None)
    assert _pieces(log, numbering, piece_bytes=60_000) == _sequential(log)


def test_a_kv_transfer_line_needing_a_missed_stats_line_is_rescanned(tmp_path, small_warmup, rescans, numbering):
    """The KV-transfer line takes the engine of the stats line before it, which the warm-up missed."""
    log = tmp_path / "sparse-xfer.log"
    _write_sparse(log, 20_000, stats_every=700, xfer_after=650)
    sequential = _sequential(log)
    assert {e.engine for e in sequential if e.kind == "kv_transfer"} == {0, 1, 2, 3}
    assert _pieces(log, numbering, piece_bytes=60_000) == sequential
    assert rescans  # some pieces began between a stats line and its KV-transfer line


@pytest.mark.parametrize("slot_bytes", [None, 64])
def test_json_lines_come_back_through_shared_slots_or_the_pipe_when_too_big(tmp_path, monkeypatch, small_warmup,
                                                                            slot_bytes):
    from pdwatch.commands.parse import _jsonl_bytes, _render_jsonl
    log = tmp_path / "run.log"
    _write_run(log, 4_000, traceback_at=1_500, traceback_frames=3)
    expected = b"".join(map(_jsonl_bytes, _sequential(log)))
    real_init, reads = parallel_scan.OutputSlots.__init__, []
    if slot_bytes is not None:  # too small for any piece's output: every piece falls back to the pipe
        monkeypatch.setattr(parallel_scan.OutputSlots, "__init__",
                            lambda self, count, size: real_init(self, count, slot_bytes))
    real_read = parallel_scan.OutputSlots.read
    monkeypatch.setattr(parallel_scan.OutputSlots, "read",
                        lambda self, slot, length: reads.append(length) or real_read(self, slot, length))
    chunks = list(parallel_scan.scan_file(str(log), year=2026, tz=None, render=_render_jsonl, workers=2,
                                          piece_bytes=30_000, json_lines=True))
    assert b"".join(chunks) == expected
    with log.open("rb") as fh:
        pieces = len(parallel_scan._piece_bounds(fh.fileno(), log.stat().st_size, 30_000))
    assert len(reads) == (0 if slot_bytes else pieces) and pieces > 5


@pytest.mark.parametrize("fmt", ["jsonl", "table"])
def test_a_folder_of_small_files_read_on_every_core_prints_the_sequential_bytes(tmp_path, monkeypatch, capsys, fmt):
    """No file big enough to split, but several that together are: each is read whole by a worker
    ahead of its turn. Same bytes and notices as one sequential stream: the files in turn, then
    what each scanner gives at the end of the input (here an open traceback), after all files."""
    for name, lines in (("a.log", 900), ("b.log", 300), ("c.log", 600), ("d.log", 50)):
        _write_run(tmp_path / name, lines)
    with (tmp_path / "b.log").open("a") as out:  # a traceback still open at the file's end
        out.write("(APIServer pid=9) ERROR 11-29 10:00:00 [core.py:1] Traceback (most recent call last):\n"
                  '(APIServer pid=9) ERROR 11-29 10:00:00 [core.py:1]   File "x.py", line 1, in f\n')
    (tmp_path / "c.log").write_bytes((tmp_path / "c.log").read_bytes() + b"x" * (1_100 << 10) + b"\n")  # over 1 MiB: cut

    def run() -> tuple[str, str]:
        out = io.StringIO()
        with redirect_stdout(out):
            main(["parse", "--year", "2026", "--format", fmt, str(tmp_path)])
        return out.getvalue(), capsys.readouterr().err

    sequential, sequential_err = run()
    assert sequential.count("traceback") == 1 and "line(s) longer than" in sequential_err
    monkeypatch.setattr(parallel_scan, "worker_count", lambda: 2)  # on every core even on a one-core CI runner
    monkeypatch.setattr(parallel_scan, "MIN_PARALLEL_BYTES", sum(f.stat().st_size for f in tmp_path.iterdir()))
    assert not any(parallel_scan.should_split(str(f)) for f in tmp_path.iterdir())
    from pdwatch.commands import parse
    taken: list[str] = []
    take = parse._FilesAhead.take
    monkeypatch.setattr(parse._FilesAhead, "take", lambda self, path: taken.append(path) or take(self, path))
    assert run() == (sequential, sequential_err)
    assert [Path(p).name for p in taken] == ["a.log", "b.log", "c.log", "d.log"]  # each read by a worker
    last = sequential.strip().splitlines()[-1]
    assert "traceback" in last  # the finish of b.log, after d.log's lines


@pytest.mark.parametrize("capture", ["pd_pair", "pd_connector_crash", "kv_pressure"])
@pytest.mark.parametrize("split", ["every file in pieces", "every file whole"])
def test_a_real_captures_folder_on_every_core_prints_what_the_sequential_stream_does(monkeypatch, capsys, capture,
                                                                                     split):
    """Real vLLM logs with their recorded /metrics scrape beside them: the same lines on stdout and
    the same notices on stderr (the scrape skipped, said first) whichever way the files are read."""
    folder = REPO / "tests" / "data" / "real" / "captures" / capture

    def run() -> tuple[str, str]:
        out = io.StringIO()
        with redirect_stdout(out):
            assert main(["parse", "--year", "2026", str(folder)]) == 0
        return out.getvalue(), capsys.readouterr().err

    sequential = run()
    assert "recorded /metrics scrapes, read beside the logs" in sequential[1]
    monkeypatch.setattr(parallel_scan, "worker_count", lambda: 2)
    sizes = [f.stat().st_size for f in folder.glob("*.log")]
    if split == "every file whole" and len(sizes) < 2:
        pytest.skip("one log: a folder of it is read on every core only in pieces")
    # whole: no file is big enough to split, but all of them together are
    monkeypatch.setattr(parallel_scan, "MIN_PARALLEL_BYTES", 1 if split == "every file in pieces" else max(sizes) + 1)
    monkeypatch.setattr(parallel_scan, "_PIECE_BYTES", 20_000)
    assert run() == sequential


def test_the_last_newline_of_a_window_read_from_its_end_is_rfinds(tmp_path):
    import random

    rng = random.Random(5)
    data = bytes(rng.choice(b"ab\n" if rng.random() < 0.5 else b"abcdefgh") for _ in range(50_000))
    data = data[:20_000] + b"x" * 20_000 + data[40_000:]  # a stretch with no newline, longer than a read
    path = tmp_path / "bytes"
    path.write_bytes(data)
    with path.open("rb") as fh:
        for _ in range(300):
            lo = rng.randrange(len(data))
            hi = rng.randrange(lo, len(data) + 1)
            assert parallel_scan._last_newline(fh.fileno(), lo, hi, window=rng.choice([1, 7, 4096])) == data.rfind(b"\n", lo, hi)
