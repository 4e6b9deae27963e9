"""The fast lanes must give exactly the events of the general path, line for line."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

import subprocess
import sys

import parsers.envelope as envelope
import parsers.families as families
import parsers.scanner as scanner
from parsers.cleaning import clean_raw
from parsers.envelope import split_envelope, split_raw
from tests.conftest import CPU_LOGS, REPO, scan, require_shared


def _general_split(raw: bytes):
    text = clean_raw(raw)
    return text, split_envelope(text)


def _general_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanner, "match_stats", lambda raw: None)
    monkeypatch.setattr(scanner, "split_raw", _general_split)
    monkeypatch.setattr(families, "stats_message", lambda msg: None)
    monkeypatch.setattr(families, "spec_decode_message", lambda body: None)


def _both_paths(data: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[list, list]:
    fast = scan(data)
    with monkeypatch.context() as m:
        _general_only(m)
        general = scan(data)
    return fast, general


def _stats_lines(paths: list[Path]) -> bytes:
    return b"".join(line for p in paths for line in p.read_bytes().splitlines(keepends=True) if b"Running: " in line)


def test_fast_lane_reads_sample_and_real_stats_lines_like_the_general_path(monkeypatch):
    require_shared()
    paths = sorted((REPO / "samples").glob("*/*.out")) + sorted(CPU_LOGS.glob("*.log"))
    data = _stats_lines(paths)
    fast, general = _both_paths(data, monkeypatch)
    assert len(fast) > 1000
    assert fast == general
    # The lane must actually be taken: sample lines have the common shape.
    assert scanner.match_stats(data.splitlines()[0]) is not None


def test_dynamo_wrapped_stats_line_uses_the_message_lane(monkeypatch):
    line = (b"\x1b[2m2026-03-31T18:01:11.356277Z\x1b[0m \x1b[32m INFO\x1b[0m \x1b[2mloggers.log\x1b[0m\x1b[2m:\x1b[0m "
            b"Engine 004: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 229.6 tokens/s, "
            b"Running: 16 reqs, Waiting: 4 reqs, GPU KV cache usage: 24.9%, Prefix cache hit rate: 1.5%, "
            b"External prefix cache hit rate: 99.6%\n")
    fast, general = _both_paths(line, monkeypatch)
    assert fast == general
    assert fast[0].engine == 4 and fast[0].values["external_prefix_hit_pct"] == 99.6
    assert families.stats_message(fast[0].text.split(": ", 1)[1]) is not None


_number = st.one_of(st.integers(0, 10**7).map(str),
                    st.tuples(st.integers(0, 10**6), st.integers(0, 999)).map(lambda t: f"{t[0]}.{t[1]}"),
                    st.sampled_from(["nan", "inf", "-1.0", "1e5", "007", "1,024"]))
_prefix = st.sampled_from(["", "(APIServer pid=12) ", "(EngineCore_DP3 pid=7) ", "(APIServer rank=1 pid=2) ",
                           "\x1b[32m(APIServer pid=1)\x1b[0m ", "(Worker_TP1 pid=9) "])
_header = st.sampled_from(["INFO 03-31 18:01:11 [loggers.py:271] ", "INFO 03-31 18:01:11.123 [loggers.py:271] ",
                           "WARNING 12-31 23:59:59 [loggers.py:9] ", "WARN 03-31 18:01:11 [loggers.py:271] ",
                           "INFO 03-31 18:01:11 [ loggers.py:271] ", "DEBUG 02-30 25:00:00 [x.py:1] "])
_engine = st.sampled_from(["", "Engine 000: ", "Engine 17: ", "4 Engines Aggregated: "])
_tail = st.sampled_from(["", ", External prefix cache hit rate: 12.5%", ", Preemptions: 3", "\r", " ", ".",
                         ", External prefix cache hit rate: nan%"])


@settings(max_examples=300, deadline=None)
@given(_prefix, _header, _engine, st.lists(_number, min_size=6, max_size=6), _tail)
def test_generated_stats_lines_agree_on_both_paths(prefix, header, engine, nums, tail):
    p, g, r, w, kv, hit = nums
    line = (f"{prefix}{header}{engine}Avg prompt throughput: {p} tokens/s, Avg generation throughput: {g} tokens/s, "
            f"Running: {r} reqs, Waiting: {w} reqs, GPU KV cache usage: {kv}%, Prefix cache hit rate: {hit}%{tail}\n")
    with pytest.MonkeyPatch.context() as monkeypatch:
        fast, general = _both_paths(line.encode(), monkeypatch)
    assert fast == general


def test_generated_mixed_dynamo_log_gives_the_same_events_on_both_paths(tmp_path, monkeypatch):
    """The benchmark's generator writes every line shape of a Dynamo node (coloured frontend,
    colour-formatted worker stats, KV-transfer and spec-decode lines, vLLM subprocesses)."""
    out = tmp_path / "mixed.log"
    subprocess.run([sys.executable, str(REPO / "bench" / "make_mixed_log.py"), "--size", "3M", "--out", str(out)],
                   check=True, capture_output=True)
    data = out.read_bytes()
    fast, general = _both_paths(data, monkeypatch)
    kinds = {e.kind for e in fast}
    assert {"stats", "kv_transfer", "spec_decode", "worker_selected", "request_completed"} <= kinds
    assert fast == general


_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=60)
_level = st.sampled_from([" INFO", "DEBUG", " WARN", "ERROR", "TRACE", "INFO", " CRIT"])
_target = st.sampled_from(["metrics.log", "dynamo_llm::kv_router", "a:", "x::y:z", "loggers.log"])
_colour = st.sampled_from(["\x1b[32m", "\x1b[34m", "\x1b[1;31m", "\x1b[33m"])


@settings(max_examples=400, deadline=None)
@given(_level, _target, _colour, _text, st.sampled_from(["", " ", "  ", "\x1b[0m"]))
def test_coloured_dynamo_envelope_splits_like_the_general_path(level, target, colour, message, gap):
    raw = (f"\x1b[2m2026-03-31T18:01:11.356277Z\x1b[0m {colour}{level}\x1b[0m{gap} \x1b[2m{target}\x1b[0m"
           f"\x1b[2m:\x1b[0m {message}").encode("utf-8", "surrogatepass")
    assert split_raw(raw) == _general_split(raw)
    if gap != "\x1b[0m" and level.strip() != "CRIT":  # the shapes the lane is for: it must take them
        assert envelope._DYNAMO_COLOURED.match(raw) is not None
    assert split_raw(raw[: len(raw) - len(message.encode()) - 1]) == _general_split(raw[: len(raw) - len(message.encode()) - 1])


@settings(max_examples=200, deadline=None)
@given(st.lists(_number, min_size=4, max_size=4), st.lists(st.integers(0, 10**6), min_size=2, max_size=2),
       st.lists(_number, min_size=1, max_size=5), st.sampled_from(["", "%", " extra"]))
def test_spec_decode_lines_agree_on_both_paths(nums, tokens, per_position, tail):
    mean, acc, dra, rate = nums
    line = (f"(EngineCore_DP0 pid=3) INFO 03-31 18:01:11 [metrics.py:1] SpecDecoding metrics: Mean acceptance length: "
            f"{mean}, Accepted throughput: {acc} tokens/s, Drafted throughput: {dra} tokens/s, Accepted: {tokens[0]} "
            f"tokens, Drafted: {tokens[1]} tokens, Per-position acceptance rate: {', '.join(per_position)}, "
            f"Avg Draft acceptance rate: {rate}%{tail}\n")
    with pytest.MonkeyPatch.context() as monkeypatch:
        fast, general = _both_paths(line.encode(), monkeypatch)
    assert fast == general
