"""The fast lanes must give exactly the events of the general path, line for line."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

import subprocess
import sys

import pdwatch.parsers.envelope as envelope
import pdwatch.parsers.families as families
import pdwatch.parsers.fastlane as fastlane
import pdwatch.parsers.scanner as scanner
from pdwatch.parsers.cleaning import clean_raw
from pdwatch.parsers.envelope import split_envelope, split_raw
from tests.conftest import CPU_LOGS, REPO, header_strategies, scan


def _general_split(raw: bytes):
    text = clean_raw(raw)
    return text, split_envelope(text)


def _general_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanner, "_LINE_LANES", {})
    monkeypatch.setattr(scanner, "match_stats", lambda raw: None)
    monkeypatch.setattr(scanner, "split_raw", _general_split)
    monkeypatch.setattr(families, "stats_message", lambda msg: None)
    monkeypatch.setattr(families, "spec_decode_message", lambda body: None)


def _both_paths(data: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[list, list]:
    fast = scan(data)
    with monkeypatch.context() as m:
        _general_only(m)
        general = scan(data)
    # repr as well: 10 == 10.0, but the JSON output tells an int from a float.
    assert repr(fast) == repr(general)
    return fast, general


def _lane_takes(line: bytes) -> bool:
    """True when the line's lane reads it whole (no fallback to the general path)."""
    needles = scanner._PREFILTER.needles_in(line)
    method, argument = scanner._LINE_LANES[needles]
    return method(scanner.LogScanner("t.log", year=2026), line, 1, [], argument)


def _stats_lines(paths: list[Path]) -> bytes:
    return b"".join(line for p in paths for line in p.read_bytes().splitlines(keepends=True) if b"Running: " in line)


def test_fast_lane_reads_sample_and_real_stats_lines_like_the_general_path(monkeypatch):
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
    assert {"stats", "kv_transfer", "spec_decode", "worker_selected", "request_completed", "http_access"} <= kinds
    assert fast == general
    # Every line lane is taken by the lines it is for.
    for needle in [n for (n,) in scanner._LINE_LANES]:
        lines = [line for line in data.splitlines() if needle in line][:50]
        if needle != b"HTTP/2":
            assert lines and all(_lane_takes(line) for line in lines), needle


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


# --- the line lanes: each one against the general path on odd variants ------------------------

def test_each_lane_needle_belongs_to_one_family_only():
    for needles in scanner._LINE_LANES:
        assert len(needles) == 1 and len(scanner._BY_NEEDLE[needles[0]]) == 1, needles


def test_nixl_lane_spells_the_keys_as_the_general_path():
    assert fastlane.NIXL_KEYS == tuple(families._snake(label) for label, _ in fastlane._NIXL_FIELDS)


_vllm_header, _dynamo_header = header_strategies()
_header = st.one_of(_vllm_header, _dynamo_header)
_metric = st.one_of(_number, st.sampled_from(["0.0", "00.5", "12345678901234567890", "1234567890123456789.5",
                                              "-1", "1e-05", "5.", ".5", "0"]))


def _agree(text: str) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        _both_paths(text.encode("utf-8", "surrogatepass"), monkeypatch)  # compares reprs: nan != nan


@settings(max_examples=300, deadline=None)
@given(_header, st.lists(_metric, min_size=8, max_size=8),
       st.sampled_from(["", ", Num failed transfers=2", " ", "%", "\r", ", Avg xfer time (ms)=1.0"]),
       st.sampled_from(["", "Engine 001: ", "x"]), st.booleans())
def test_kv_transfer_lines_agree_on_both_paths(header, values, tail, lead, stats_first):
    body = ", ".join(f"{label}={value}" for (label, _), value in zip(fastlane._NIXL_FIELDS, values))
    stats = (f"{header}Engine 003: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, "
             f"Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 3.0%, Prefix cache hit rate: 0.0%\n")
    _agree((stats if stats_first else "") + f"{header}{lead}KV Transfer metrics: {body}{tail}\n")


@settings(max_examples=200, deadline=None)
@given(_header, st.sampled_from(["NixlConnector={'Num successful transfers': 12, 'Avg xfer time (ms)': 3.21}",
                                 "num_successful_transfers=17", "Num successful transfers=007"]))
def test_other_kv_transfer_forms_agree_on_both_paths(header, body):
    _agree(f"{header}KV Transfer metrics: {body}\n")


@settings(max_examples=300, deadline=None)
@given(_header, st.sampled_from(["prefill", "decode", "x_1"]), st.sampled_from(["7587889301234", "0", "abc_9"]),
       st.sampled_from([",", ""]), st.sampled_from(["0", "3", "Some(0)", "None", "12345"]),
       st.lists(st.sampled_from([", logit: 1.250", ", logit: -0.5", ", logit: 2.", ", logit: 1.2.3",
                                 ", cached blocks: 12", ", tree size: 3401", ", total blocks: 50912"]), max_size=4),
       st.sampled_from(["", " ", ", extra: 1", "\r"]), st.sampled_from(["", "pinned "]))
def test_worker_selected_lines_agree_on_both_paths(header, wtype, wid, comma, dp, fields, tail, pinned):
    _agree(f"{header}Selected {pinned}worker: worker_type={wtype}, worker_id={wid}{comma} dp_rank={dp}"
           f"{''.join(fields)}{tail}\n")


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["", "(APIServer pid=2871) ", "(APIServer pid=2871)", "(EngineCore_DP3 pid=7) ",
                        "(pid=3) ", "(APIServer rank=1 pid=2) ", "2026-03-31T18:01:11.123Z ",
                        "(A pid=1) (B pid=2) ", "\x1b[32m(APIServer pid=1)\x1b[0m "]),
       st.sampled_from(["INFO", "WARNING", "ERROR", "DEBUG", "CRITICAL", "WARN"]), st.sampled_from([" ", "     ", "\t"]),
       st.sampled_from(["10.0.3.171", "[::1]", "localhost", "a:1", "1.2.3.4"]), st.sampled_from(["45034", "0"]),
       st.sampled_from(["POST", "GET", "get"]), st.sampled_from(["/v1/completions", "/metrics?x=1", "/a]", "/é", "/[x"]),
       st.sampled_from(["HTTP/1.1", "HTTP/1.0", "HTTP/2", "HTTP/2.0"]), st.sampled_from(["200", "404", "2000"]),
       st.sampled_from([" OK", "", " Not Found", " OK [x]", " INFO 03-31 18:01:11 [a.py:1] b", "\r", "x"]))
def test_http_access_lines_agree_on_both_paths(prefix, level, gap, client, port, method, path, version, status, tail):
    _agree(f'{prefix}{level}:{gap}{client}:{port} - "{method} {path} {version}" {status}{tail}\n')


_field_value = st.sampled_from(["200", "1532", "35.5", "nan", "inf", '"abc"', '"a b"', "a,b", "x=y", "é", "-1", "1_000"])


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["\x1b[34mDEBUG", "\x1b[32m INFO", "\x1b[33m WARN", "\x1b[1;31mERROR", "\x1b[2mTRACE"]),
       st.sampled_from(["", "\x1b[1mhttp-request\x1b[0m\x1b[2m:\x1b[0m", "\x1b[1ma:\x1b[0m\x1b[2m:\x1b[0m",
                        "\x1b[1mx\x1b[0m\x1b[2m:\x1b[0m\x1b[1my\x1b[0m\x1b[2m:\x1b[0m"]),
       st.sampled_from(["dynamo_llm::http::service::service_v2", "metrics", "t:"]),
       st.lists(st.tuples(st.sampled_from(["status", "latency_ms", "ttft_ms", "request_id", "x"]), _field_value),
                max_size=4),
       st.sampled_from(["", " ", "\r", " tail"]), st.sampled_from(["11.356277", "11"]))
def test_request_completed_lines_agree_on_both_paths(level, span, target, fields, tail, stamp):
    rendered = "".join(f" \x1b[3m{key}\x1b[0m\x1b[2m=\x1b[0m{value}" for key, value in fields)
    _agree(f"\x1b[2m2026-03-31T18:01:{stamp}Z\x1b[0m {level}\x1b[0m {span}\x1b[2m{target}\x1b[0m\x1b[2m:\x1b[0m "
           f"request completed{rendered}{tail}\n")


@settings(max_examples=300, deadline=None)
@given(_dynamo_header, _engine, st.lists(_number, min_size=6, max_size=6), _tail)
def test_dynamo_wrapped_stats_lines_agree_on_both_paths(header, engine, nums, tail):
    p, g, r, w, kv, hit = nums
    _agree(f"{header}{engine}Avg prompt throughput: {p} tokens/s, Avg generation throughput: {g} tokens/s, "
           f"Running: {r} reqs, Waiting: {w} reqs, GPU KV cache usage: {kv}%, Prefix cache hit rate: {hit}%{tail}\n")


@settings(max_examples=200, deadline=None)
@given(_header, st.lists(_number, min_size=4, max_size=4), st.lists(st.integers(0, 10**17), min_size=2, max_size=2),
       st.lists(_number, min_size=1, max_size=5), st.sampled_from(["", "%", " extra"]))
def test_spec_decode_lines_agree_on_both_paths_behind_any_header(header, nums, tokens, per_position, tail):
    mean, acc, dra, rate = nums
    _agree(f"{header}SpecDecoding metrics: Mean acceptance length: {mean}, Accepted throughput: {acc} tokens/s, "
           f"Drafted throughput: {dra} tokens/s, Accepted: {tokens[0]} tokens, Drafted: {tokens[1]} tokens, "
           f"Per-position acceptance rate: {', '.join(per_position)}, Avg Draft acceptance rate: {rate}%{tail}\n")
