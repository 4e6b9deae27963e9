"""The generated files read back through the real parser: every stats line, with the right engine and facts."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import replace
from datetime import datetime, timezone

import pytest

from pdwatch.sim import Crash, FlakyLink, LogOptions, RoleSettings, SimConfig, run

from .helpers import REPO, endpoint_of, integrate, parse_folder

START = datetime(2026, 5, 29, 14, 0, tzinfo=timezone.utc)
_ENGINE = re.compile(rb"Engine (\d{3}): Avg prompt throughput")
_ANSI = re.compile(rb"\x1b\[[0-9;]*m")

PD = SimConfig(topology="2xDEP2-1xDEP4", cc=600, duration=60, seed=21, flaky=FlakyLink("prefill_w1", 0.2),
               kv_lease_s=10.0, decode=RoleSettings(spec_tokens=1))
AGG = SimConfig(topology="1xDEP4", cc=128, duration=45, seed=22)


@pytest.fixture(scope="module", params=[
    ("vllm", PD, "full"), ("vllm-0.14", PD, "quiet"), ("dynamo", PD, "full"), ("vllm", AGG, "full"),
    ("dynamo", replace(PD, crash=Crash("decode_w0", 2, 40.0)), "quiet"),
], ids=["vllm-pd", "vllm014-pd", "dynamo-pd", "vllm-agg", "dynamo-crash"])
def generated(request, tmp_path_factory):
    style, cfg, noise = request.param
    out = tmp_path_factory.mktemp(f"sim-{style}")
    result = run(cfg, out, LogOptions(style=style, noise=noise, start=START, metrics_interval=20.0))
    return style, result, parse_folder(out), out


def test_every_stats_line_comes_back_with_its_engine(generated):
    style, result, folder, _ = generated
    assert folder.parse_errors == 0
    total = 0
    for endpoint, data in folder.raw.items():
        lines = [line for line in data.split(b"\n") if b"Avg prompt throughput" in line]
        stats = [e for e in folder.events[endpoint] if e.kind == "stats"]
        assert len(stats) == len(lines), endpoint
        for line, event in zip(lines, stats):
            assert event.engine == int(_ENGINE.search(line).group(1))
            assert event.ts is not None and event.ts.year == 2026
            assert {"prompt_tps", "gen_tps", "running", "waiting", "kv_usage_pct"} <= set(event.values)
        total += len(stats)
    assert total > 0
    # every engine of every endpoint that prints stats appears
    for ep in result.sim.endpoints:
        if ep.settings.api_server_count == 1:
            engines = {e.engine for e in folder.events[ep.name] if e.kind == "stats"}
            assert engines == set(range(len(ep.engines)))


def test_stats_timestamps_follow_the_interval(generated):
    _, _, folder, _ = generated
    for endpoint, events in folder.events.items():
        times = sorted({e.ts for e in events if e.kind == "stats" and e.engine == 0})
        gaps = {round((b - a).total_seconds()) for a, b in zip(times, times[1:])}
        assert gaps <= {10}, (endpoint, gaps)


def test_startup_facts_match_the_simulated_engines(generated):
    style, result, folder, _ = generated
    for ep in result.sim.endpoints:
        events = folder.events[ep.name]
        cfg = ep.engines[0].cfg
        kv_sizes = [e.values["tokens"] for e in events if e.kind == "kv_cache_size"]
        assert kv_sizes == [cfg.kv_capacity] * len(ep.engines)
        captures = [e.values for e in events if e.kind == "cudagraph_capture" and e.values["origin"] == "engine_config"]
        assert len(captures) == 1 and captures[0]["max_size"] == cfg.capture_max
        assert captures[0]["sizes"] == list(cfg.capture_sizes)
        [config] = [e for e in events if e.kind == "engine_config"]
        assert config.values["version"] == {"vllm": "0.21.0", "vllm-0.14": "0.14.0", "dynamo": "0.18.0"}[style]
        assert config.values.get("num_speculative_tokens", 0) == cfg.spec_tokens
        [args] = [e.values["args"] for e in events if e.kind == "args"]
        if result.sim.topology.disaggregated:
            assert args["kv_transfer_config"]["kv_connector"] == "NixlConnector"
        assert [e.values["gib"] for e in events if e.kind == "kv_memory"] == \
            [pytest.approx(cfg.memory.kv_gib, abs=0.01)] * len(ep.engines)
        assert len([e for e in events if e.kind == "init_time"]) == len(ep.engines)


def test_noise_real_logs_have(generated):
    style, result, folder, _ = generated
    everything = b"".join(folder.raw.values())
    assert b"\r" in everything  # progress bars and the multi-line logo/tracebacks
    if style == "dynamo":
        assert b"\x1b[2m" in everything and b"loggers.log" in everything
        frontend = folder.raw.get("frontend_0", b"")
        assert b"\x1b[32m INFO\x1b[0m" in frontend
    if style == "vllm" and any(ep.role in ("decode", "agg") for ep in result.sim.endpoints):
        assert folder.kind("traceback")  # the harmless warmup traceback
    if style == "vllm" and result.sim.record_requests:
        assert len(folder.kind("http_access")) > result.sim.completed  # one per request + health checks


def test_faults_reach_the_logs(generated):
    style, result, folder, _ = generated
    sim = result.sim
    if sim.cfg.flaky is None or not sim.topology.disaggregated:
        return
    failures = folder.kind("nixl_failure", role="decode")
    assert failures and {e.values["failure_type"] for e in failures} == {"transfer_failed"}
    assert all(e.engine is not None for e in failures)
    recovered = folder.kind("kv_load_failure", role="decode")
    assert len(recovered) == len(failures) and all(e.values["recovered"] for e in recovered)
    expired = folder.kind("kv_expired")
    flaky = next(ep for ep in sim.endpoints if ep.name == sim.cfg.flaky.endpoint)
    assert expired and {e.source for e in expired} == {flaky.filename}  # only the flaky prefill gives blocks up
    # a failed request id on decode is the one whose blocks expire on prefill
    assert {e.values["request_id"] for e in expired} <= {e.values["request_id"] for e in failures}
    if sim.cfg.crash is not None:
        [oom] = folder.kind("oom")
        assert oom.engine == sim.cfg.crash.rank and oom.values["tried_gib"] == 2.5
        assert any(e.values.get("exception") == "torch.OutOfMemoryError" for e in folder.kind("traceback"))
        assert not [e for e in folder.stats(endpoint="decode_w0") if e.ts > oom.ts]


def test_metrics_scrapes_agree_with_the_logs(generated):
    _, result, folder, out = generated
    from prometheus_client.parser import text_string_to_metric_families

    files = sorted((out / "metrics").glob("*.metrics.txt"))
    assert len(files) == len(result.sim.endpoints)
    banner = re.compile(r"^# ===== scenario=\S+ phase=\S+ \S+ t=(?P<t>\d+\.\d{3}) \((?P<iso>\d{4}-\d\d-\d\dT"
                        r"\d\d:\d\d:\d\d\.\d{3}Z)\) port=\d+ =====$", re.M)
    for path in files:
        text = path.read_text()
        heads = list(banner.finditer(text))
        assert heads and text.startswith("# =====")
        bodies = [text[h.end():(heads[i + 1].start() if i + 1 < len(heads) else len(text))]
                  for i, h in enumerate(heads)]
        previous = -1.0
        for head, body in zip(heads, bodies):
            assert datetime.fromtimestamp(float(head["t"]), timezone.utc).strftime("%H:%M:%S") == head["iso"][11:19]
            samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
                       for fam in text_string_to_metric_families(body) for s in fam.samples}
            gen = sum(v for (name, _), v in samples.items() if name == "vllm:generation_tokens_total")
            assert gen >= previous
            previous = gen
            assert all(0.0 <= v <= 1.0 for (name, _), v in samples.items() if name == "vllm:kv_cache_usage_perc")
    # generated tokens between two scrapes = the stats lines' generation throughput over the same span
    decode = next(p for p in files if "_decode_" in p.name or "_agg_" in p.name)
    text = decode.read_text()
    heads = list(banner.finditer(text))
    if len(heads) >= 3:
        def gen_at(i: int) -> float:
            body = text[heads[i].end():heads[i + 1].start() if i + 1 < len(heads) else len(text)]
            return sum(s.value for fam in text_string_to_metric_families(body) for s in fam.samples
                       if s.name == "vllm:generation_tokens_total")
        t_a, t_b = (datetime.fromtimestamp(float(heads[i]["t"]), timezone.utc) for i in (0, 1))
        endpoint = endpoint_of(decode.with_name(decode.name.replace(".metrics.txt", ".out")))[0]
        stats = folder.stats(endpoint=endpoint)
        assert max(e.ts for e in stats) >= t_b  # the lines cover the span
        logged = integrate(stats, "gen_tps", t_a, t_b, 10.0)
        assert logged == pytest.approx(gen_at(1) - gen_at(0), rel=0.03)


def test_pdwatch_parse_reads_the_folder(generated):
    _, _, folder, out = generated
    proc = subprocess.run([sys.executable, "-m", "pdwatch", "parse", str(out), "--format", "jsonl", "--year", "2026"],
                          capture_output=True, text=True, cwd=REPO, timeout=60)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    stats_lines = sum(data.count(b"Avg prompt throughput") for data in folder.raw.values())
    assert sum(1 for e in events if e["kind"] == "stats") == stats_lines
    assert not any(_ANSI.search(line.encode()) for line in proc.stdout.splitlines())
