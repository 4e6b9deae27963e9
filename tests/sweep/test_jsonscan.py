"""The bounded-memory reader of a JSON object's top-level keys."""

from __future__ import annotations

import json
import time
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from pdwatch.sweep import jsonscan
from pdwatch.sweep.jsonscan import read_top_level

json_scalars = st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=False) | st.text(max_size=12)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(document=st.dictionaries(st.text(max_size=8), json_values, max_size=6), chunk=st.integers(1, 9),
       indent=st.sampled_from([None, 1]))
def test_reads_what_json_loads_reads_across_chunk_boundaries(tmp_path_factory, document, chunk, indent):
    path = tmp_path_factory.mktemp("scan") / "doc.json"
    path.write_text(json.dumps(document, indent=indent))
    original = jsonscan.CHUNK_BYTES
    jsonscan.CHUNK_BYTES = chunk  # tiny chunks: every token is cut somewhere
    try:
        read = read_top_level(path)
    finally:
        jsonscan.CHUNK_BYTES = original
    assert read.error is None and not read.more_documents
    assert read.values == json.loads(path.read_text())


def test_only_the_keys_asked_for_are_kept(tmp_path: Path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"date": "20261203-105512", "ttfts": [0.1] * 50, "texts": ["a\"]}", "\\"],
                                "mean_tpot_ms": 14.2, "nested": {"x": [1, {"y": "}"}]}}))
    read = read_top_level(path, {"date", "mean_tpot_ms"})
    assert read.values == {"date": "20261203-105512", "mean_tpot_ms": 14.2}
    assert read.error is None


def test_every_cut_of_a_file_is_reported_as_truncated_at_its_end(tmp_path: Path):
    whole = json.dumps({"completed": 80, "ok": True, "itls": [[0.01, 0.02], []], "texts": ["w\\\"5", ""],
                        "nan": float("nan"), "date": "20261203-105512"})
    path = tmp_path / "cut.json"
    for cut in range(len(whole)):
        path.write_text(whole[:cut])
        read = read_top_level(path)
        assert read.error == f"truncated JSON at byte {cut}", (cut, whole[:cut])


@pytest.mark.parametrize("text, error", [
    ('{"completed" 80}', "invalid JSON at byte 13: expected ':'"),
    ('{"completed": 80 "failed": 0}', "invalid JSON at byte 17: expected ',' or '}'"),
    ('{"itls": [[0.1}], "completed": 80}', "invalid JSON at byte 14: unmatched '}'"),
    ('{"completed": tru}', "invalid JSON at byte 14: not a JSON value"),
    ('[{"completed": 80}]', "invalid JSON at byte 0: expected an object ('{')"),
    ('{completed: 80}', "invalid JSON at byte 1: expected a key"),
])
def test_malformed_content_names_the_byte(tmp_path: Path, text: str, error: str):
    path = tmp_path / "bad.json"
    path.write_text(text)
    assert read_top_level(path).error == error


def test_values_before_the_damage_are_kept_and_a_second_document_is_noticed(tmp_path: Path):
    path = tmp_path / "r.json"
    path.write_text('{"completed": 80, "duration": 41.3, "itls": [[0.1, 0.2], [0.')
    read = read_top_level(path)
    assert read.values == {"completed": 80, "duration": 41.3} and read.error.startswith("truncated")
    path.write_text('{"completed": 80}\n{"completed": 160}\n')  # vllm bench serve --append-result
    read = read_top_level(path)
    assert read.values == {"completed": 80} and read.more_documents and read.error is None


def test_a_200_mb_result_is_read_in_bounded_memory(tmp_path: Path):
    """Per-request arrays of ~200 MB before the latency keys, as a --save-detailed file of a long run
    has them: the keys after the arrays are found, and Python's allocations stay under 20 MB."""
    path = tmp_path / "results_concurrency_1024_gpus_8.json"
    itls_row = "[" + ", ".join(["0.012345678901234567"] * 256) + "]"  # one request's inter-token latencies
    text_item = json.dumps("w" * 2000 + ' "quoted" \\ [not a bracket] {nor this}')
    with open(path, "w") as out:
        out.write('{"date": "20261203-105512", "max_concurrency": 1024, "num_prompts": 10240, "duration": 612.5, '
                  '"completed": 10240, "output_throughput": 4321.5, "itls": [')
        rows = 32_000
        for start in range(0, rows, 1000):
            out.write(", ".join([itls_row] * min(1000, rows - start)) + (", " if start + 1000 < rows else ""))
        out.write('], "generated_texts": [')
        out.write(", ".join([text_item] * 12_000))
        out.write('], "mean_tpot_ms": 31.25, "p99_ttft_ms": 812.0}')
    assert path.stat().st_size > 200_000_000
    tracemalloc.start()
    began = time.monotonic()
    try:
        read = read_top_level(path, {"completed", "output_throughput", "mean_tpot_ms", "p99_ttft_ms"})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert read.error is None
    assert read.values == {"completed": 10240, "output_throughput": 4321.5, "mean_tpot_ms": 31.25, "p99_ttft_ms": 812.0}
    assert peak < 20_000_000, f"peak {peak / 1e6:.1f} MB"
    assert time.monotonic() - began < 60  # generous: CPUs shared; it takes about a second alone


def _big_result(path: Path, tail: str = '"mean_tpot_ms": 31.25, "p99_ttft_ms": 812.0}') -> Path:
    """A 20 MB result in vLLM's order: scalars, per-request arrays (strings holding quotes and
    brackets), then the latency keys after them."""
    text_item = json.dumps("w" * 900 + ' "mean_ttft_ms": 1, [not a bracket] {nor this} \\')
    with open(path, "w") as out:
        out.write('{"date": "20261203-105512", "max_concurrency": 64, "duration": 61.5, "completed": 640, '
                  '"output_throughput": 4321.5, "total_token_throughput": 9000.0, "ttfts": [')
        out.write(", ".join(["0.0123"] * 100_000) + '], "generated_texts": [')
        out.write(", ".join([text_item] * 20_000) + '], "mean_ttft_ms": 55.5, ' + tail)
    assert path.stat().st_size > 16_000_000
    return path


def test_a_big_file_is_read_at_its_two_ends_with_the_same_values(tmp_path: Path):
    from pdwatch.sweep.jsonscan import read_scalars
    path = _big_result(tmp_path / "r.json")
    keys = frozenset({"completed", "duration", "output_throughput", "total_token_throughput", "mean_ttft_ms",
                      "mean_tpot_ms", "p99_ttft_ms", "date"})
    needed = frozenset({"completed", "duration", "mean_ttft_ms", "mean_tpot_ms"})
    began = time.monotonic()
    fast = read_scalars(path, keys, needed)
    fast_s = time.monotonic() - began
    whole = read_top_level(path, keys)
    assert fast.error is None and fast.values == whole.values and fast.values["mean_ttft_ms"] == 55.5
    assert fast_s < 0.5  # ends only: not the seconds a walk of 20 MB of arrays takes


def test_a_big_file_cut_short_or_without_its_tail_keys_is_walked_whole(tmp_path: Path):
    from pdwatch.sweep.jsonscan import read_scalars
    keys = frozenset({"completed", "mean_ttft_ms", "mean_tpot_ms"})
    needed = frozenset({"completed", "mean_tpot_ms"})
    cut = _big_result(tmp_path / "cut.json")
    cut.write_bytes(cut.read_bytes()[:-40])  # truncated in the latency keys
    read = read_scalars(cut, keys, needed)
    assert read.error and "truncated JSON" in read.error
    bare = _big_result(tmp_path / "bare.json", tail='"note": "no tpot"}')
    read = read_scalars(bare, keys, needed)
    assert read.error is None and "mean_tpot_ms" not in read.values and read.values["mean_ttft_ms"] == 55.5
