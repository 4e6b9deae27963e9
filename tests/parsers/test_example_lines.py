"""Every ``# family`` block of tests/data/formats/example-lines.txt gives the right kind."""

from __future__ import annotations

import pytest

from tests.conftest import EXAMPLE_LINES, scan

# Comment prefix -> kinds the block must produce (empty: a line of no known family, skipped silently).
EXPECTED: list[tuple[str, set[str]]] = [
    ("vLLM V1 stats line", {"stats"}),
    ("vLLM V0 stats line", {"stats"}),
    ("vLLM V0 prefix-cache line", {"prefix_cache"}),
    ("vLLM SpecDecoding line", {"spec_decode"}),
    ("vLLM KV Transfer metrics", {"kv_transfer"}),
    ("vLLM startup: non-default args", {"args"}),
    ("vLLM startup: version line", {"version"}),
    ("vLLM startup: version logo", {"version"}),
    ("vLLM startup: V1 engine init", {"engine_config", "cudagraph_capture"}),
    ("vLLM startup: model loading", {"model_loading"}),
    ("vLLM startup: available KV cache memory", {"kv_memory"}),
    ("vLLM startup: KV cache size", {"kv_cache_size"}),
    ("vLLM startup: maximum concurrency", {"max_concurrency"}),
    ("vLLM startup: CUDA graph memory profiling", {"cudagraph_capture"}),
    ("vLLM startup: estimated CUDA graph memory", {"cudagraph_memory"}),
    ("vLLM startup: graph capture done", {"cudagraph_memory"}),
    ("vLLM startup: CUDA graph pool actual vs estimated", {"cudagraph_memory"}),
    ("vLLM startup: init engine", {"init_time"}),
    ("vLLM startup: torch.compile total", {"compile_time"}),
    ("vLLM startup: hybrid/mamba block size adjustment", {"block_size"}),
    ("vLLM startup: mamba page padding", {"block_size"}),
    ("vLLM startup: NIXL connector init", set()),
    ("vLLM warning: stats disabled", {"stats_disabled"}),
    ("vLLM V0 preemption warning", {"preemption"}),
    ("vLLM NIXL expired KV blocks", {"kv_expired"}),
    ("vLLM NIXL transfer failure", {"nixl_failure"}),
    ("vLLM KV load failure recovery", {"kv_load_failure"}),
    ("vLLM KV cache too small at startup", {"kv_cache_error"}),
    ("vLLM engine failed to start", {"engine_dead"}),
    ("vLLM engine fatal error at runtime", {"engine_dead"}),
    ("vLLM EngineDeadError in API server traceback", {"engine_dead"}),
    ("vLLM CUDA OOM inside worker traceback", {"oom"}),
    ("vLLM colour header", {"stats"}),
    ("Dynamo 1.0 vLLM worker main process: vLLM stats", {"stats"}),
    ("Dynamo 1.0 vLLM worker main process: KV transfer metrics", {"kv_transfer"}),
    ("Dynamo 1.0 vLLM worker main process: WARNING", {"stats_disabled"}),
    ("Dynamo vLLM worker subprocess (EngineCore)", {"kv_cache_size"}),
    ("Dynamo vLLM worker, Dynamo-Python logger", {"role_hint"}),
    ("Dynamo frontend (Rust): KV router worker selection", {"worker_selected"}),
    ("Dynamo frontend (Rust): model registration", {"model_registered"}),
    ("Dynamo frontend (Rust): prefill router activation", set()),
    ("Dynamo frontend (Rust): KV routing init", set()),
    ("Dynamo (Rust): warning", set()),
    ("Dynamo (Rust): kv_router push_router warning", set()),
    ("Dynamo with DYN_SDK_DISABLE_ANSI_LOGGING=1", {"worker_selected"}),
    ("Dynamo with DYN_LOGGING_JSONL=1", {"worker_selected"}),
]


def _blocks() -> list[tuple[str, bytes]]:
    blocks: list[tuple[str, list[bytes]]] = []
    for raw in EXAMPLE_LINES.read_bytes().split(b"\n"):
        if raw.startswith(b"# "):
            blocks.append((raw[2:].decode(), []))
        elif raw and blocks:
            blocks[-1][1].append(raw + b"\n")
    # The first comments describe the file; families start at the first comment with lines.
    return [(comment, b"".join(lines)) for comment, lines in blocks if lines]


BLOCKS = _blocks()


def _expected(comment: str) -> set[str]:
    matches = [kinds for prefix, kinds in EXPECTED if comment.startswith(prefix)]
    assert matches, f"no expectation for example family {comment!r}: add it to EXPECTED"
    return matches[0]


def test_example_file_is_read():
    assert len(BLOCKS) >= 60


@pytest.mark.parametrize("comment,data", BLOCKS, ids=[c[:70] for c, _ in BLOCKS])
def test_example_family_kind(comment, data):
    events = scan(data)
    assert {e.kind for e in events} == _expected(comment)


def _one(comment_prefix: str, kind: str):
    for comment, data in BLOCKS:
        if comment.startswith(comment_prefix):
            return [e for e in scan(data) if e.kind == kind]
    raise AssertionError(comment_prefix)


def test_values_dp_engine_and_timestamp():
    (event,) = _one("vLLM V1 stats line, DP=2", "stats")
    assert event.engine == 1
    assert event.ts.isoformat() == "2026-10-20T09:00:10+00:00"
    assert (event.values["prompt_tps"], event.values["running"], event.values["waiting"]) == (20111.7, 48, 3)


def test_values_dynamo_main_process_stats():
    (event,) = _one("Dynamo 1.0 vLLM worker main process: vLLM stats", "stats")
    assert event.ts.isoformat() == "2026-03-31T18:22:15.412003+00:00"
    assert event.level == "INFO" and event.engine == 0
    assert event.values["gen_tps"] == 2650.3 and event.values["external_prefix_hit_pct"] == 99.2


def test_values_logo_version_and_model():
    (event,) = _one("vLLM startup: version logo", "version")
    assert event.values == {"version": "0.21.0", "model": "Qwen/Qwen3-32B"}
    assert event.end_line_no == event.line_no + 1


def test_values_ansi_prefixed_engine_core_name():
    (event,) = _one("vLLM V1 stats line, v0.10.x-v0.11.0", "stats")
    assert event.values["kv_usage_pct"] == 22.5 and event.engine == 0


def test_values_warn_level_written_as_warning():
    (event,) = _one("Dynamo 1.0 vLLM worker main process: WARNING", "stats_disabled")
    assert event.level == "WARNING"


def test_values_jsonl_selection():
    (event,) = _one("Dynamo with DYN_LOGGING_JSONL=1", "worker_selected")
    assert event.values["worker_id"] == "7587889301234" and event.values["dp_rank"] == 0
    assert event.ts.isoformat() == "2026-03-31T18:22:05.123456+00:00"


def test_values_nixl_failure_context():
    (event,) = _one("vLLM NIXL transfer failure", "nixl_failure")
    assert event.values["request_id"] == "cmpl-6a1f2c-0" and event.values["remote_host"] == "10.0.0.12"
