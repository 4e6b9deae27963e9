"""What a log's reading found, said once the log is read (``EventStream.end_notices``), from
``parse``, ``report`` and a replay, in the same place whichever way the files are read:

- a log a terminal had cut at its width (a paste from a screen) is rejoined: the widths and
  how many pieces were joined back. The cut logs are made here from a real vLLM capture:
  every line longer than the width is cut into pieces of that width, so the number of
  pieces is known exactly;
- lines that are not valid UTF-8 (read with U+FFFD for their bad bytes): how many.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from pdwatch.cli import main
from pdwatch.events import parallel_scan
from pdwatch.events.stream import EventStream
from pdwatch.session import analysis
from pdwatch.session.ingest import Ingest
from pdwatch.parsers import LogScanner
from pdwatch.sources import SourceSet
from tests.conftest import REPO

CAPTURE = REPO / "tests" / "data" / "real" / "captures" / "pd_pair"
WIDTH = 100


def cut(text: str, width: int) -> tuple[str, int]:
    """``text`` as a terminal of ``width`` columns shows it, and how many pieces it added."""
    out, added = [], 0
    for line in text.splitlines():
        pieces = [line[i:i + width] for i in range(0, len(line), width)] or [""]
        added += len(pieces) - 1
        out += pieces
    return "\n".join(out) + "\n", added


def notice(path: Path, pieces: int, widths: str = str(WIDTH)) -> str:
    return (f"{path}: lines cut at {widths} columns by a terminal: {pieces} piece(s) rejoined to the line "
            f"before them (read line by line)")


def run(argv: list[str], capsys) -> tuple[str, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(argv) == 0
    return out.getvalue(), capsys.readouterr().err


def events(jsonl: str) -> list[dict]:
    """The events of a ``parse`` output without where they were (the cut log has more lines)."""
    rows = []
    for line in jsonl.splitlines():
        row = json.loads(line)
        for key in ("source", "line_no", "end_line_no"):
            row.pop(key, None)
        rows.append(row)
    return rows


@pytest.fixture
def cut_prefill(tmp_path) -> tuple[Path, int]:
    text, pieces = cut((CAPTURE / "prefill.log").read_text(), WIDTH)
    path = tmp_path / "prefill.log"
    path.write_text(text)
    assert pieces > 100
    return path, pieces


def test_parse_rejoins_a_cut_log_and_counts_its_pieces(cut_prefill, capsys):
    path, pieces = cut_prefill
    uncut, uncut_err = run(["parse", "--year", "2026", str(CAPTURE / "prefill.log")], capsys)
    assert uncut_err == ""  # an ordinary log: nothing to say
    got, err = run(["parse", "--year", "2026", str(path)], capsys)
    assert err == f"pdwatch: {notice(path, pieces)}\n"
    assert events(got) == events(uncut)  # every value read whole again


def test_the_report_lists_the_notice_with_the_inputs_notices(cut_prefill, tmp_path, capsys):
    path, pieces = cut_prefill
    out = tmp_path / "report.json"
    _, err = run(["report", "--year", "2026", "--format", "json", "-o", str(out), str(path)], capsys)
    assert notice(path, pieces) in err
    assert notice(path, pieces) in json.loads(out.read_text())["notices"]


def test_a_replay_hears_it_when_the_log_is_read(cut_prefill):
    path, pieces = cut_prefill
    sources = SourceSet([str(path)], follow=False)
    ingest = Ingest(sources, EventStream(None, year=2026), follow=False)
    while not ingest.done:
        ingest.read()
    _, notices, done = ingest.take()
    assert done and [(n.kind, n.message) for n in notices if n.kind != "opened"] == [("wrapped", notice(path, pieces))]


def test_a_log_without_pieces_gives_no_notice(capsys):
    """A real terminal-wrapped paste says it; the real logs around it do not."""
    wrapped = REPO / "tests" / "data" / "real" / "vllm-0.10-gpu" / \
        "dennislee22-vLLM-benchmarking-vllm-7B-1gpuA10080GB-0.25GRAM.log"
    _, err = run(["parse", "--year", "2025", str(wrapped)], capsys)
    assert err.count("rejoined") == 1 and "by a terminal" in err
    _, err = run(["parse", "--year", "2026", str(CAPTURE)], capsys)
    assert "rejoined" not in err


def _folder(tmp_path: Path, cut_prefill: tuple[Path, int]) -> Path:
    folder = tmp_path / "run"
    folder.mkdir()
    cut_prefill[0].rename(folder / "prefill.log")
    for name in ("decode.log", "proxy.log"):
        (folder / name).write_bytes((CAPTURE / name).read_bytes())
    return folder


def test_parse_on_every_core_says_it_where_the_sequential_stream_does(cut_prefill, tmp_path, monkeypatch, capsys):
    """After every file's lines and finish, as the sequential stream gives it, whether the cut log
    is read by a worker ahead of its turn or first tried in pieces (a cut log is read whole)."""
    folder = _folder(tmp_path, cut_prefill)
    with (folder / "proxy.log").open("ab") as out:  # a notice of the file after it, said while reading it
        out.write(b"x" * (1_100 << 10) + b"\n")
    argv = ["parse", "--year", "2026", str(folder)]
    sequential = run(argv, capsys)
    said = sequential[1].splitlines()
    assert "proxy.log: 1 line(s) longer than" in said[0]
    assert said[1] == f"pdwatch: {notice(folder / 'prefill.log', cut_prefill[1])}"
    # then the job's proxy, whose lines are none of vLLM's: named once all is read
    assert said[2:] == [line for line in said[2:] if line.startswith(f"pdwatch: {folder / 'proxy.log'}: no vLLM or Dynamo line")]
    assert len(said) == 3
    monkeypatch.setattr(parallel_scan, "worker_count", lambda: 2)
    from pdwatch.commands import parse
    taken: list[str] = []
    take = parse._FilesAhead.take
    monkeypatch.setattr(parse._FilesAhead, "take", lambda self, path: taken.append(Path(path).name) or take(self, path))
    sizes = [f.stat().st_size for f in folder.iterdir()]
    monkeypatch.setattr(parallel_scan, "_PIECE_BYTES", 20_000)
    for threshold in (max(sizes) + 1, 1):  # every file whole on the workers, then every one in pieces
        monkeypatch.setattr(parallel_scan, "MIN_PARALLEL_BYTES", threshold)
        assert run(argv, capsys) == sequential
    assert taken == ["decode.log", "prefill.log", "proxy.log"]  # the first round: each file by a worker


def _report_in_pieces(patch) -> None:
    """A report's read on two workers whatever the machine, files over 20 KB in pieces of 10-20 KB."""
    patch.setattr(parallel_scan, "worker_count", lambda: 2)
    patch.setattr(analysis, "MIN_PARALLEL_BYTES", 0)
    patch.setattr(analysis, "SPLIT_MIN_BYTES", 20_000)
    patch.setattr(analysis, "_MIN_PIECE_BYTES", 10_000)
    patch.setattr(parallel_scan, "_PIECE_BYTES", 20_000)


def test_report_on_every_core_keeps_the_sequential_notices(cut_prefill, tmp_path, monkeypatch):
    folder = _folder(tmp_path, cut_prefill)
    with monkeypatch.context() as m:
        m.setattr(parallel_scan, "worker_count", lambda: 1)
        sequential = analysis.analyse([str(folder)], year=2026)
    _report_in_pieces(monkeypatch)
    tried: list[str] = []
    start = parallel_scan.FileScan.start
    monkeypatch.setattr(parallel_scan.FileScan, "start",
                        lambda self, pool, **kw: tried.append(Path(self.path).name) or start(self, pool, **kw))
    parallel = analysis.analyse([str(folder)], year=2026)
    assert "prefill.log" in tried  # tried in pieces, then read whole by a worker: it is cut
    wanted = notice(folder / "prefill.log", cut_prefill[1])
    assert [n.message for n in sequential.notices if n.kind != "unrecognised"][-1] == wanted
    assert [(n.kind, n.message) for n in parallel.notices] == [(n.kind, n.message) for n in sequential.notices]


# --- lines that are not valid UTF-8 ------------------------------------------------------------

_valid_lines = st.sampled_from([
    "INFO 12-01 10:00:00 [loggers.py:1] Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: "
    "2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 5.0%, Prefix cache hit rate: 0.0%",
    "plain noise", "caf\u00e9 \u2713 \u2588\u2588\u2588 100%", "", "\x1b[2m2026-12-01T10:00:00.123456Z\x1b[0m \x1b[32m INFO\x1b[0m x",
]).map(lambda text: text.encode())
_bad_lines = st.sampled_from([b"bad \xff\xfe bytes", b"\xc3", b"cut in a char \xe2\x9c", b"\x80 lone continuation",
                              b"Traceback (most recent call last): \xff"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), _valid_lines, _bad_lines), min_size=1, max_size=40), st.data())
def test_the_scanner_counts_each_line_that_is_not_utf8_once(rows, data):
    lines = [bad if is_bad else good for is_bad, good, bad in rows]
    cuts = sorted(set(data.draw(st.lists(st.integers(1, len(lines)), max_size=5))))
    scanner = LogScanner("t.log", year=2026)
    start = 0
    for cut in [*cuts, len(lines)]:  # blocks of whole lines, cut anywhere
        if cut > start:
            scanner.feed(b"".join(line + b"\n" for line in lines[start:cut]), start + 1)
            start = cut
    scanner.finish()
    assert scanner.undecodable_lines == sum(is_bad for is_bad, _, _ in rows)


def _log_with_bad_lines(path: Path, every: int) -> int:
    """A real capture's lines repeated to ~150 KB, with a line of bad bytes every ``every`` lines."""
    lines = (CAPTURE / "prefill.log").read_bytes().splitlines() * 4
    out, bad = [], 0
    for i, line in enumerate(lines):
        out.append(line)
        if i % every == 0:
            out.append(b"garbage \xff\xfe\xfd from a torn write %d" % i)
            bad += 1
    path.write_bytes(b"\n".join(out) + b"\n")
    return bad


def test_parse_and_report_count_the_lines_that_are_not_utf8(tmp_path, capsys):
    path = tmp_path / "server.log"
    bad = _log_with_bad_lines(path, 40)
    said = f"{path}: {bad} line(s) not valid UTF-8: their bad bytes are read as U+FFFD"
    _, err = run(["parse", "--year", "2026", str(path)], capsys)
    assert err == f"pdwatch: {said}\n"
    out = tmp_path / "report.json"
    _, err = run(["report", "--year", "2026", "--format", "json", "-o", str(out), str(path)], capsys)
    assert f"pdwatch: {said}" in err.splitlines()
    assert said in json.loads(out.read_text())["notices"]


def test_valid_utf8_is_not_counted(tmp_path, capsys):
    path = tmp_path / "server.log"
    path.write_bytes((CAPTURE / "prefill.log").read_bytes() + "caf\u00e9 \u2713 \u2588\u2588 done\n".encode())
    _, err = run(["parse", "--year", "2026", str(path)], capsys)
    assert err == ""


def test_a_log_read_in_pieces_counts_each_bad_line_once(tmp_path, monkeypatch, capsys):
    """Each piece first reads the end of the piece before it (its warm-up): the bad lines there
    are that piece's, not counted twice."""
    path = tmp_path / "server.log"
    bad = _log_with_bad_lines(path, 7)
    argv = ["parse", "--year", "2026", str(path)]
    sequential = run(argv, capsys)
    assert f"{bad} line(s) not valid UTF-8" in sequential[1]
    monkeypatch.setattr(parallel_scan, "worker_count", lambda: 2)
    monkeypatch.setattr(parallel_scan, "MIN_PARALLEL_BYTES", 1)
    monkeypatch.setattr(parallel_scan, "_PIECE_BYTES", 20_000)
    monkeypatch.setattr(parallel_scan, "_WARMUP_BYTES", 8_000)
    pieces: list[int] = []
    start = parallel_scan.FileScan.start
    monkeypatch.setattr(parallel_scan.FileScan, "start",
                        lambda self, pool, **kw: pieces.append(len(self._bounds)) or start(self, pool, **kw))
    assert run(argv, capsys) == sequential
    assert pieces[0] > 5  # read in pieces, each after a warm-up in the one before
    with monkeypatch.context() as m:  # the report's read, in pieces too
        _report_in_pieces(m)
        parallel = analysis.analyse([str(path)], year=2026)
    assert len(pieces) == 2 and pieces[1] > 5
    monkeypatch.setattr(parallel_scan, "worker_count", lambda: 1)
    whole = analysis.analyse([str(path)], year=2026)
    assert [n.message for n in parallel.notices] == [n.message for n in whole.notices]
    assert f"{bad} line(s) not valid UTF-8" in whole.notices[-1].message
