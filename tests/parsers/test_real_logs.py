"""The real logs in tests/data/real parse into the right events with the right values."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.conftest import CPU_LOGS, GPU_LOGS, scan

CPU_FILES = ["s2_seqs4.log", "s4_prefix_cache_on.log", "s8_spec_ngram.log", "s9b_qwen3next_hybrid_hd128.log",
             "s10b_pd_example_connector_short_prompts.prefill.log",
             "s10b_pd_example_connector_short_prompts.decode.log"]
DENNIS_120B = "dennislee22-vLLM-benchmarking-vllm-120B-4gpuA10080GB-0.8GRAM-diff-nodes.log"
DENNIS_7B_1 = "dennislee22-vLLM-benchmarking-vllm-7B-1gpuA10080GB-0.25GRAM.log"
DENNIS_7B_2 = "dennislee22-vLLM-benchmarking-vllm-7B-2gpuA10040GB-0.5GRAM-diff-nodes.log"


def events_of(path, **kw):
    return scan(path.read_bytes(), source=path.name, **kw)


@pytest.mark.parametrize("name", CPU_FILES)
def test_every_stats_and_access_line_is_an_event(name):
    data = (CPU_LOGS / name).read_bytes()
    kinds = Counter(e.kind for e in events_of(CPU_LOGS / name))
    assert kinds["stats"] == data.count(b"Avg prompt throughput") > 0
    assert kinds["http_access"] == data.count(b' HTTP/1.1" ')
    assert kinds["shutdown"] == data.count(b"[shutdown] ")
    assert kinds["version"] == kinds["args"] == kinds["engine_config"] == 1


@pytest.mark.parametrize("name", CPU_FILES)
def test_same_events_whatever_the_block_size(name):
    whole = events_of(CPU_LOGS / name)
    pieces = events_of(CPU_LOGS / name, block=700)
    assert [(e.kind, e.line_no, e.values) for e in pieces] == [(e.kind, e.line_no, e.values) for e in whole]


def test_s2_stats_values_line_numbers_and_time():
    events = events_of(CPU_LOGS / "s2_seqs4.log", year=2026)
    stats = [e for e in events if e.kind == "stats"]
    lines = (CPU_LOGS / "s2_seqs4.log").read_bytes().split(b"\n")
    for e in stats:
        assert b"Avg prompt throughput" in lines[e.line_no - 1]
        assert e.engine == 0 and e.level == "INFO"
    high = [e for e in stats if e.values["waiting"] == 44]
    assert len(high) == 4
    first = high[0]
    assert first.ts.isoformat() == "2026-11-29T09:01:38+00:00"
    assert first.values == {"prompt_tps": 2444.7, "gen_tps": 2194.7, "running": 4, "waiting": 44,
                            "kv_usage_pct": 0.2, "prefix_hit_pct": 0.0}
    (args,) = [e for e in events if e.kind == "args"]
    assert args.values["args"]["max_num_seqs"] == 4 and args.values["args"]["max_num_batched_tokens"] == 1024
    (version,) = [e for e in events if e.kind == "version"]
    assert version.values == {"version": "0.32.0", "model": "/models/model"}
    (capture,) = [e for e in events if e.kind == "cudagraph_capture"]
    assert capture.values["sizes"] == [] and capture.values["max_size"] is None
    (size,) = [e for e in events if e.kind == "kv_cache_size"]
    (conc,) = [e for e in events if e.kind == "max_concurrency"]
    assert (size.values["tokens"], size.values["device"]) == (2097152, "CPU")
    assert [e.values["gib"] for e in events if e.kind == "kv_memory"] == [1.0]  # "Explicitly set (1.0/10.09) GiB"
    assert conc.values == {"tokens_per_request": 1536, "concurrency": 1365.33}


def test_orderly_shutdown_traceback_is_grouped():
    events = events_of(CPU_LOGS / "s2_seqs4.log")
    tracebacks = [e for e in events if e.kind == "traceback"]
    assert [t.values["exception"] for t in tracebacks] == ["ValueError", "vllm.v1.engine.exceptions.EngineDeadError"]
    last = tracebacks[-1]
    assert last.end_line_no > last.line_no and last.values["frames"] == 2
    dead = [e for e in events if e.kind == "engine_dead"]
    assert {d.values["reason"] for d in dead} == {"output_handler_failed", "engine_dead_error"}


def test_s8_spec_decode_follows_its_stats_line():
    events = events_of(CPU_LOGS / "s8_spec_ngram.log")
    spec = [e for e in events if e.kind == "spec_decode"]
    assert len(spec) == 7
    assert all(e.engine == 0 for e in spec)
    first = spec[0]
    assert first.values["mean_acceptance_length"] == 3.93
    assert first.values["per_position_acceptance"] == [1.0, 1.0, 0.932]
    assert first.values["acceptance_rate_pct"] == 100.0
    args = next(e for e in events if e.kind == "args").values["args"]
    assert args["speculative_config"]["num_speculative_tokens"] == 3
    assert next(e for e in events if e.kind == "engine_config").values["num_speculative_tokens"] == 3


def test_s9b_hybrid_block_size_and_ssm_dtype():
    events = events_of(CPU_LOGS / "s9b_qwen3next_hybrid_hd128.log")
    blocks = [e.values for e in events if e.kind == "block_size"]
    assert {"attention_block_tokens": 384} in blocks and {"mamba_padding_pct": 46.56} in blocks
    assert [e.values for e in events if e.kind == "ssm_dtype"] == [{"dtype": "float32", "backend": "qwen3_next"}]
    assert [e.values["layout"] for e in events if e.kind == "ssm_conv_layout"] == ["SD"]
    running = [e.values["running"] for e in events if e.kind == "stats"]
    assert max(running) == 16


def test_s10b_decode_kv_role_and_external_prefix_hits():
    events = events_of(CPU_LOGS / "s10b_pd_example_connector_short_prompts.decode.log")
    kv = next(e for e in events if e.kind == "args").values["args"]["kv_transfer_config"]
    assert kv["kv_role"] == "kv_both" and kv["kv_connector"] == "ExampleConnector"
    assert any("external_prefix_hit_pct" in e.values for e in events if e.kind == "stats")


def test_dennislee_ansi_ray_log():
    events = events_of(GPU_LOGS / DENNIS_120B, year=None)  # no --year: the Ray line's 2025 date decides
    kinds = Counter(e.kind for e in events)
    assert kinds["kv_cache_size"] == 4 and kinds["max_concurrency"] == 4 and kinds["model_loading"] == 4
    assert all(e.ts is None or e.ts.year == 2025 for e in events)
    args = next(e for e in events if e.kind == "args").values["args"]
    assert (args["tensor_parallel_size"], args["gpu_memory_utilization"]) == (4, 0.8)
    captures = {e.values["origin"]: e.values["max_size"] for e in events if e.kind == "cudagraph_capture"}
    assert captures == {"override": 1024, "engine_config": 1024}
    assert next(e for e in events if e.kind == "kv_memory").values["gib"] == 45.32
    assert next(e for e in events if e.kind == "cache_config").engine == 0
    assert next(e for e in events if e.kind == "version").values["version"] == "0.10.1.1"


@pytest.mark.parametrize("name", [DENNIS_7B_1, DENNIS_7B_2])
def test_terminal_wrapped_logs_are_rejoined(name):
    events = events_of(GPU_LOGS / name, year=2025)
    by_kind = {}
    for e in events:
        by_kind.setdefault(e.kind, []).append(e)
    args = by_kind["args"][0]
    assert args.values["args"]["model"] == "Qwen2-7B-Instruct"  # cut as 'Qwen' / '2-7B-Instruct'
    assert args.end_line_no == args.line_no + 1
    capture = by_kind["cudagraph_capture"][0].values
    assert capture["max_size"] == 512 and capture["sizes"][-1] == 512 and len(capture["sizes"]) == 67
    assert by_kind["cache_config"][0].values["num_gpu_blocks"] in {5867, 25809}


def test_wrapped_values_are_never_wrong():
    events = events_of(GPU_LOGS / DENNIS_7B_2, year=2025)
    assert [e.values["concurrency"] for e in events if e.kind == "max_concurrency"] == [25.2, 25.2]
    assert [e.values["gib"] for e in events if e.kind == "kv_memory"] == [11.03, 11.03]
    assert [e.values for e in events if e.kind == "cudagraph_memory"] == [{"actual_gib": 1.0, "seconds": 11.0}]


def test_v0_log_gives_namespace_args_and_the_v0_engine_config():
    from tests.conftest import REAL_LOGS
    events = events_of(REAL_LOGS / "vllm-0.8-cpu-v0" / "dmasirkar-vLLM-testing-on-CPU-qwen2.5-1.5b.log", year=2025)
    (args,) = [e for e in events if e.kind == "args"]
    assert args.values["form"] == "namespace" and args.line_no == 3
    a = args.values["args"]
    assert (a["port"], a["tensor_parallel_size"], a["pipeline_parallel_size"], a["data_parallel_size"]) == (8000, 1, 1, 1)
    assert a["disable_log_stats"] is False and a["model"] == "Qwen/Qwen2.5-1.5B-Instruct" and a["max_num_seqs"] is None
    (config,) = [e for e in events if e.kind == "engine_config"]
    assert (config.values["version"], config.values["model"], config.values["tensor_parallel_size"]) == (
        "0.8.5.dev32+g44fa4d556", "Qwen/Qwen2.5-1.5B-Instruct", 1)
    stats = [e for e in events if e.kind == "stats"]
    assert len(stats) == 5 and stats[0].values["running"] == 1 and stats[0].engine is None
