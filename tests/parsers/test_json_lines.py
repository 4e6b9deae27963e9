"""``LogScanner(json_lines=True)`` (``pdwatch parse``'s direct lanes) writes exactly the JSON lines
that ``Event`` + ``_jsonl_bytes`` write, and really writes them itself for the common shapes."""

from __future__ import annotations

import subprocess
import sys
from datetime import timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings, strategies as st

import pdwatch.parsers.fastlane as fastlane
from pdwatch.parsers import LogScanner
from pdwatch.commands.parse import _jsonl_bytes, _render_jsonl
from tests.conftest import REPO, header_strategies


def _lines(data: bytes, json_lines: bool, tz=None, source: str = "t.log", year: int | None = 2026) -> list:
    scanner = LogScanner(source, year=year, tz=tz, mtime=1.7e9, json_lines=json_lines)
    return scanner.feed(data, 1) + scanner.finish()


def _direct(text: str, tz=None, source: str = "t.log", year: int | None = 2026) -> int:
    """Both renderings agree; returns how many lines the direct lanes wrote."""
    data = text.encode("utf-8", "surrogatepass")
    events = _lines(data, False, tz, source, year)
    mixed = _lines(data, True, tz, source, year)
    assert _render_jsonl(mixed) == b"".join(map(_jsonl_bytes, events))
    return sum(isinstance(item, bytes) for item in mixed)


# Numbers as logs print them, including the forms that must not be copied.
_odd = st.sampled_from(["0", "00", "007", "0.0", "0.00", "00.5", "1.50", "8.010", "40.00", "606.80", "5.", ".5",
                        "nan", "inf", "-1", "-0.0", "1e-05", "1e5", "0.0001", "0.00012", "0.001", "0.000",
                        "12345678901234567890", "1234567890123456789", "123456789012345678", "9007199254740993",
                        "123456789012345.6", "12345678901234.5", "999999999999999", "0.123456789012345",
                        "1000000000000000.0", "1,024"])
_printed_float = st.builds(lambda x, digits: f"{x:.{digits}f}", st.floats(0, 1e17, allow_nan=False), st.integers(0, 6))
_number = st.one_of(_odd, _printed_float, st.integers(0, 10**20).map(str))

_vllm_header, _dynamo_header = header_strategies()
_header = st.one_of(_vllm_header, _dynamo_header)
_zone = st.sampled_from([None, timezone.utc, ZoneInfo("Asia/Kolkata"), ZoneInfo("Europe/Berlin")])
_engine = st.sampled_from(["", "Engine 000: ", "Engine 17: ", "Engine 007: "])
_tail = st.sampled_from(["", ", External prefix cache hit rate: 12.50%", ", External prefix cache hit rate: nan%",
                         ", Preemptions: 3", "\r", " "])


# What may follow Waiting: v0.20's Deferred, v0.12's Preemptions (both or either), and odd forms.
_middle = st.one_of(st.sampled_from(["", "Preemptions: 4, ", "Deferred: 8 reqs, ", "Deferred: 8 reqs, Preemptions: 3, ",
                                     "Preemptions: 3, Deferred: 8 reqs, ", "Preemptions: 4,", "Deferred: 8, "]),
                    st.builds(lambda n: f"Preemptions: {n}, ", _number),
                    st.builds(lambda n: f"Deferred: {n} reqs, ", _number))


def _stats(header: str, engine: str, nums: list[str], tail: str = "", middle: str = "") -> str:
    p, g, r, w, kv, hit = nums
    return (f"{header}{engine}Avg prompt throughput: {p} tokens/s, Avg generation throughput: {g} tokens/s, "
            f"Running: {r} reqs, Waiting: {w} reqs, {middle}GPU KV cache usage: {kv}%, "
            f"Prefix cache hit rate: {hit}%{tail}\n")


@settings(max_examples=600, deadline=None)
@given(_header, _engine, st.lists(_number, min_size=6, max_size=6), _tail, _middle, _zone)
def test_stats_lines(header, engine, nums, tail, middle, tz):
    _direct(_stats(header, engine, nums, tail, middle), tz)


@settings(max_examples=300, deadline=None)
@given(_header, st.lists(_number, min_size=4, max_size=4), st.lists(_number, min_size=2, max_size=2),
       st.lists(_number, min_size=1, max_size=5), st.sampled_from(["", "%", " extra"]), st.booleans(), _zone)
def test_spec_decode_lines(header, nums, tokens, per_position, tail, stats_first, tz):
    mean, acc, dra, rate = nums
    stats = _stats(header, "Engine 003: ", ["1.0", "2.0", "1", "0", "3.0", "0.0"]) if stats_first else ""
    _direct(f"{stats}{header}SpecDecoding metrics: Mean acceptance length: {mean}, Accepted throughput: {acc} tokens/s, "
            f"Drafted throughput: {dra} tokens/s, Accepted: {tokens[0]} tokens, Drafted: {tokens[1]} tokens, "
            f"Per-position acceptance rate: {', '.join(per_position)}, Avg Draft acceptance rate: {rate}%{tail}\n", tz)


@settings(max_examples=300, deadline=None)
@given(_header, st.lists(_number, min_size=8, max_size=8), st.sampled_from(["", ", Num failed transfers=2", " "]),
       st.booleans(), _zone)
def test_kv_transfer_lines(header, values, tail, stats_first, tz):
    body = ", ".join(f"{label}={value}" for (label, _), value in zip(fastlane._NIXL_FIELDS, values))
    stats = _stats(header, "Engine 003: ", ["1.0", "2.0", "1", "0", "3.0", "0.0"]) if stats_first else ""
    _direct(f"{stats}{header}KV Transfer metrics: {body}{tail}\n", tz)


@settings(max_examples=300, deadline=None)
@given(_header, st.sampled_from(["prefill", "decode", "x_1"]), st.sampled_from(["7587889301234", "0", "abc_9"]),
       st.sampled_from([",", ""]), _number,
       st.lists(st.tuples(st.sampled_from([", logit: ", ", logit: -", ", cached blocks: ", ", tree size: ",
                                           ", total blocks: "]), _number), max_size=4),
       st.sampled_from(["", " ", "\r"]))
def test_worker_selected_lines(header, wtype, wid, comma, dp, fields, tail):
    _direct(f"{header}Selected worker: worker_type={wtype}, worker_id={wid}{comma} dp_rank={dp}"
            f"{''.join(label + value for label, value in fields)}{tail}\n")


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["", "(APIServer pid=2871) ", "(EngineCore_DP3 pid=7) ", "(pid=3) "]),
       st.sampled_from(["INFO", "WARNING", "ERROR", "CRITICAL"]), st.sampled_from([" ", "     "]),
       st.sampled_from(["10.0.3.171", "localhost", "a:1"]),
       st.sampled_from(["POST", "GET", "get"]),
       st.sampled_from(["/v1/completions", "/metrics?x=1", '/a"b', "/a\\b", "/[x]", "/é", "/%41"]),
       st.sampled_from(["HTTP/1.1", "HTTP/2"]), st.sampled_from(["200", "404", "099", "000"]),
       st.sampled_from([" OK", "", "\r"]))
def test_http_access_lines(prefix, level, gap, client, method, path, version, status, tail):
    _direct(f'{prefix}{level}:{gap}{client}:45034 - "{method} {path} {version}" {status}{tail}\n')


_latency = st.one_of(st.sampled_from(["0", "00", "0043", "43168", "999999999999999", "1000000000000000", "35.5", "nan",
                                      "1e5", "-1", '"12"']), st.integers(0, 10**17).map(str))


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(["\x1b[34mDEBUG", "\x1b[32m INFO", "\x1b[33m WARN", "\x1b[1;31mERROR"]),
       st.sampled_from(["", "\x1b[1mhttp-request\x1b[0m\x1b[2m:\x1b[0m"]),
       st.sampled_from(["200", "500", "0", "2000000", "abc", '"200"']), _latency,
       st.sampled_from(["", " \x1b[3mttft_ms\x1b[0m\x1b[2m=\x1b[0m12", "\r", " ", " tail"]),
       st.booleans(), st.sampled_from(["11.356277", "11", "11.000000"]))
def test_request_completed_lines(level, span, status, latency, tail, swapped, stamp):
    fields = [("status", status), ("latency_ms", latency)]
    rendered = "".join(f" \x1b[3m{key}\x1b[0m\x1b[2m=\x1b[0m{value}" for key, value in fields[::-1 if swapped else 1])
    _direct(f"\x1b[2m2026-03-31T18:01:{stamp}Z\x1b[0m {level}\x1b[0m {span}"
            f"\x1b[2mdynamo_llm::http::service::service_v2\x1b[0m\x1b[2m:\x1b[0m request completed{rendered}{tail}\n")


@pytest.mark.parametrize("source", ["t.log", 'we"ird\\%s.log', "ü/é.log", "bad\udcff.log"])
def test_source_names_are_written_as_orjson_writes_them(source):
    line = _stats("INFO 03-31 18:01:11 [loggers.py:1] ", "", ["1.0", "2.5", "3", "4", "5.5", "0.0"])
    taken = _direct(line, source=source)
    assert taken == (0 if source == "bad\udcff.log" else 1)  # not UTF-8: the Event path writes it


def test_year_rollover_and_a_year_from_dynamo_stamps():
    vllm = "INFO {md} 23:59:59 [loggers.py:1] "
    text = (_stats(vllm.format(md="12-31"), "", ["1.0", "2.0", "1", "0", "3.0", "0.0"])
            + _stats(vllm.format(md="01-01"), "", ["1.0", "2.0", "1", "0", "3.0", "0.0"])
            + _stats(vllm.format(md="12-31"), "", ["1.0", "2.0", "1", "0", "3.0", "0.0"]))
    dynamo = "\x1b[2m2025-12-31T18:01:11.356277Z\x1b[0m \x1b[32m INFO\x1b[0m \x1b[2mm.log\x1b[0m\x1b[2m:\x1b[0m "
    assert _direct(text) == 3
    assert _direct(_stats(dynamo, "", ["1.0", "2.0", "1", "0", "3.0", "0.0"]) + text, year=None) == 4


def test_non_lane_events_keep_their_place_between_direct_lines():
    logo_version = "INFO 03-31 18:01:11 [api_server.py:1] vLLM API server version 0.11.0\n"
    stats = _stats("INFO 03-31 18:01:12 [loggers.py:1] ", "", ["1.0", "2.0", "1", "0", "3.0", "0.0"])
    odd = _stats("INFO 03-31 18:01:12 [loggers.py:1] ", "", ["1.50", "nan", "1", "0", "3.0", "0.0"])
    mixed = _lines((logo_version + stats + odd + stats).encode(), True)
    assert [type(item).__name__ for item in mixed][1:] == ["bytes", "Event", "bytes"]
    _direct(logo_version + stats + odd + stats + "Traceback (most recent call last):\n  File \"x\"\nValueError: x\n"
            + stats)


def test_every_direct_lane_is_taken_on_the_benchmark_log(tmp_path):
    out = tmp_path / "mixed.log"
    subprocess.run([sys.executable, str(REPO / "bench" / "make_mixed_log.py"), "--size", "3M", "--out", str(out)],
                   check=True, capture_output=True)
    data = out.read_bytes()
    events = _lines(data, False)
    mixed = _lines(data, True)
    assert _render_jsonl(mixed) == b"".join(map(_jsonl_bytes, events))
    direct_kinds = {line.split(b'"', 4)[3].decode() for line in mixed if isinstance(line, bytes)}
    assert {"stats", "spec_decode", "kv_transfer", "worker_selected", "http_access", "request_completed"} <= direct_kinds
    assert sum(isinstance(item, bytes) for item in mixed) > 0.9 * len(mixed)


def test_canonical_numbers_are_copied():
    assert _direct(_stats("INFO 03-31 18:01:11 [loggers.py:1] ", "Engine 007: ",
                          ["606.80", "8.010", "7", "0", "40.00", "0.001"])) == 1
    # v0.12+ lines under pressure (Preemptions) and v0.20's Deferred stay on the direct lane.
    assert _direct(_stats("INFO 03-31 18:01:11 [loggers.py:1] ", "Engine 007: ", ["0.0", "1.5", "7", "3", "99.9", "0.0"],
                          middle="Deferred: 8 reqs, Preemptions: 3, ")) == 1
    assert _direct("\x1b[2m2026-04-02T02:44:13.701071Z\x1b[0m \x1b[34mDEBUG\x1b[0m \x1b[1mhttp-request\x1b[0m\x1b[2m:\x1b[0m"
                   "\x1b[2mdynamo_llm::http::service::service_v2\x1b[0m\x1b[2m:\x1b[0m request completed "
                   "\x1b[3mstatus\x1b[0m\x1b[2m=\x1b[0m200 \x1b[3mlatency_ms\x1b[0m\x1b[2m=\x1b[0m43168\n") == 1
    assert _direct("INFO 03-31 18:01:11 [m.py:1] Selected worker: worker_type=decode, worker_id=12, dp_rank=007, "
                   "logit: -0.50, cached blocks: 0012\n") == 1


def test_a_router_line_of_a_source_named_with_percent_signs():
    # The router lane formats its line with ``%``: a source's own ``%`` must be written as it is.
    line = ("\x1b[2m2026-12-02T12:16:06.021503Z\x1b[0m \x1b[32m INFO\x1b[0m \x1b[2mdynamo_kv_router::scheduling::selector"
            "\x1b[0m\x1b[2m:\x1b[0m Selected worker: worker_type=prefill, worker_id=7858357388210 dp_rank=1, logit: 34.790, "
            "cached blocks: 0, tree size: 3, total blocks: 2040\n")
    for source in ("job%d/frontend.out", "100%s.log", "a%%b"):
        assert _direct(line * 2, source=source) == 2
