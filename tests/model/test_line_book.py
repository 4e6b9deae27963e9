"""The store keeps a log's stats lines as references, their text read back from the file when quoted
(issue 34): the text read back is the line that was read, on every kind of real log we hold, and a
file changed since gives "the file has changed" rather than a wrong line."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from pdwatch.parsers.cleaning import clean_raw
from pdwatch.model.line_book import LineBook, changed, text_crc
from pdwatch.model.store import REFERENCED_EVENT_KINDS
from pdwatch.session.analysis import analyse
from pdwatch.views.report.data import build
from tests.conftest import CPU_LOGS, scan

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "tests" / "data" / "real"
LOGS = [
    CPU_LOGS / "s2_seqs4.log",  # vLLM 0.32 CPU, plain
    CPU_LOGS / "s10b_pd_example_connector_short_prompts.decode.log",  # KV-transfer lines between stats lines
    REAL / "dynamo" / "agg_kv_pressure" / "agg_kv_pressure.worker.log",  # Dynamo worker, ANSI
    REAL / "dynamo" / "agg_kv_pressure" / "agg_kv_pressure.frontend.log",  # frontend responses: per-second rows
    REPO / "samples" / "kv-exhausted" / "gb200-n005_decode_w0.out",
]


def _stats_rows(store):
    for endpoint in store.endpoints():
        frame = store.stats(endpoint.name)
        yield from zip(frame["source"], frame["line_no"], frame["text"], frame["crc"])


def _wrapped(tmp_path: Path) -> Path:
    """A real log as pasted from an 80-column terminal: every long line cut into 80-character rows."""
    out = tmp_path / "s2_seqs4.wrapped.log"
    rows = []
    for line in (CPU_LOGS / "s2_seqs4.log").read_text().split("\n"):
        rows.extend([line[i:i + 80] for i in range(0, len(line), 80)] or [""])
    out.write_text("\n".join(rows))
    return out


@pytest.mark.parametrize("path", [*LOGS, "wrapped"], ids=lambda p: str(p) if isinstance(p, str) else p.name[:40])
def test_every_stats_line_read_back_is_the_line_that_was_read(path, tmp_path):
    path = _wrapped(tmp_path) if path == "wrapped" else path
    assert path.exists(), path
    lines = path.read_bytes().split(b"\n")
    analysis = analyse([str(path)])
    rows = list(_stats_rows(analysis.store))
    assert rows, "no stats rows"
    parsed = {e.line_no: e.text for e in scan(path.read_bytes(), source=str(path), year=2025) if e.kind == "stats"}
    for source, line_no, kept, crc in rows:
        assert kept is None, "a log line's text is not kept in memory"
        text = analysis.store.line_text(source, int(line_no))
        # The scanner's own text of that line where it made a stats event of it (a frontend's
        # per-second row quotes one of its response lines: that physical line).
        want = parsed.get(int(line_no))
        if want is None:
            want = clean_raw(lines[int(line_no) - 1])
            assert text_crc(want) == crc
        assert text == want, (line_no, text)


def test_sources_that_cannot_be_read_back_keep_their_text():
    book = LineBook()
    assert not book.can_read_back("<stdin>") and not book.can_read_back("http://127.0.0.1:8000/metrics")
    assert not book.can_read_back("gpu-node-3:/var/log/decode.log")  # an ssh source's name
    assert book.can_read_back(str(REPO / "samples" / "kv-exhausted" / "gb200-n005_decode_w0.out"))


def _stats_quotes(report: dict) -> list[dict]:
    return [q for f in report["findings"] for q in f["evidence"] if "Waiting" in (q.get("text") or "")
            or "has changed" in (q.get("text") or "")]


@pytest.fixture
def job(tmp_path):
    folder = tmp_path / "kv-exhausted"
    shutil.copytree(REPO / "samples" / "kv-exhausted", folder)
    return folder


def test_quotes_read_back_equal_the_report_of_an_untouched_file_and_survive_appends(job):
    analysis = analyse([str(job)])
    before = _stats_quotes(build(analysis))
    assert before and all("has changed" not in q["text"] for q in before)
    log = job / "gb200-n005_decode_w0.out"
    with open(log, "ab") as fh:  # the log grows on (a live job): old lines stay where they were
        fh.write(b"INFO 05-29 14:59:59 [loggers.py:1] Engine 000: one more line\n" * 5000)
    analysis.store.lines = LineBook()  # nothing remembered from the first build
    analysis.store._line_memo.clear()
    assert _stats_quotes(build(analysis)) == before


@pytest.mark.parametrize("how", ["rewritten", "truncated", "rotated"])
def test_a_file_changed_after_it_was_read_gives_its_evidence_as_changed(job, how):
    analysis = analyse([str(job)])
    log = job / "gb200-n005_decode_w0.out"
    quoted = [q for q in _stats_quotes(build(analysis)) if q["source"] == str(log)]
    assert quoted
    data = log.read_bytes()
    if how == "rewritten":  # same size, same line count, other numbers
        log.write_bytes(data.replace(b"Waiting: ", b"Waiting:_"))
    elif how == "truncated":
        log.write_bytes(data[: len(data) // 3])
    else:  # logrotate's create: the old file moved away, a new one started
        os.rename(log, job / "gb200-n005_decode_w0.out.1")
        log.write_bytes(b"INFO 05-29 15:00:00 [loggers.py:1] a new file\n" * 10)
    analysis.store.lines = LineBook()
    analysis.store._line_memo.clear()
    after = {(q["source"], q["line_no"]): q["text"] for q in _stats_quotes(build(analysis))}
    for q in quoted:
        text = after[(q["source"], q["line_no"])]
        assert text == changed(q["source"], q["line_no"]), text
        assert text == f"line {q['line_no']} of {log} (the file has changed since it was read)"


@pytest.mark.parametrize("path", [REAL / "dynamo" / "disagg_kv_pressure" / "disagg_kv_pressure.decode.log",  # NIXL, ANSI
                                  CPU_LOGS / "s8_spec_ngram.log"], ids=lambda p: p.name[:40])
def test_kv_transfer_and_spec_decode_lines_are_references_read_back_as_read(path):
    analysis = analyse([str(path)])
    parsed = {e.line_no: e.text for e in scan(path.read_bytes(), source=str(path), year=2025)
              if e.kind in REFERENCED_EVENT_KINDS}
    assert parsed
    rows = [(src, line, text) for ep in analysis.store.endpoints()
            for src, line, text, kind in zip(*(analysis.store.events(ep.name)[c] for c in ("source", "line_no", "text", "kind")))
            if kind in REFERENCED_EVENT_KINDS]
    assert len(rows) == len(parsed)
    for source, line_no, kept in rows:
        assert not isinstance(kept, str) and kept == text_crc(parsed[int(line_no)])  # a reference, not the text
        assert analysis.store.line_text(source, int(line_no)) == parsed[int(line_no)]


def test_a_kind_a_rule_searches_keeps_its_text(tmp_path):
    path = REAL / "dynamo" / "disagg_kv_pressure" / "disagg_kv_pressure.decode.log"
    rules = tmp_path / "mine.yaml"
    rules.write_text("groups:\n- name: t\n  rules:\n  - finding: slow_transfers\n    severity: warning\n"
                     "    expr: count_matching('kv_transfer', 'Num successful transfers=[0-9]') > 0\n"
                     "    summary: transfers\n")
    analysis = analyse([str(path)], rule_paths=[str(rules)])
    texts = [t for ep in analysis.store.endpoints() for t, k in zip(analysis.store.events(ep.name)["text"],
                                                                      analysis.store.events(ep.name)["kind"])
             if k == "kv_transfer"]
    assert texts and all(isinstance(t, str) for t in texts)
    assert "slow_transfers" in {f.rule for f in analysis.findings}
