"""pdwatch reading a real Prometheus that scraped real HTTP servers replaying a real vLLM's /metrics.

Nothing is mocked: the ``replayed`` fixture (conftest.py) runs Debian's ``prometheus`` on
127.0.0.1 against servers that serve the recorded pages of tests/data/real/captures phase by
phase. What pdwatch derives through the server is compared with what the served pages give
when pdwatch reads them directly, as the recorded file ``pdwatch record`` would have written.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import datetime, timezone

import pytest
import yaml

from pdwatch.cli import main
from pdwatch.parsers.exposition import CounterState, events_from_exposition
from pdwatch.sources import PromOptions, SampleBlock, SourceNotice, SourceSet

from .prom_helpers import env_without_proxy, free_port

TOLERANCE_S = 0.25  # Prometheus stamps a scrape when it starts; the server logs when it answers


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def stats_rows(jsonl: str) -> list[dict]:
    return [e for e in map(json.loads, jsonl.splitlines()) if e["kind"] == "stats"]


def served_rows(server) -> list[tuple[float, dict]]:
    """(time served, stats event values) of every engine of every page the server answered."""
    state = CounterState()
    rows = []
    for s in server.served:
        for event in events_from_exposition(s.body, source="served", ts=datetime.fromtimestamp(s.at, timezone.utc),
                                            state=state):
            rows.append((s.at, {"engine": event.engine, **event.values}))
    return rows


@pytest.mark.parametrize("name", ["kv_pressure", "data_parallel_2", "prefill", "decode"])
def test_parse_prints_exactly_the_values_served(replayed, capsys, name):
    code, out, err = run(["parse", replayed.source(name), "--since", "5m", "--format", "jsonl"], capsys)
    assert code == 0, err
    got = stats_rows(out)
    want = served_rows(replayed.servers[name])
    assert len(got) == len(want), (len(got), len(want), err)
    for event, (at, values) in zip(got, want):
        for key in ("engine", "running", "waiting", "kv_usage_pct"):
            assert event.get(key) == values.get(key), (key, event, values)
        ts = datetime.fromisoformat(event["ts"]).timestamp()
        assert abs(ts - at) < TOLERANCE_S, (event["ts"], at)
        if values.get("preemptions") is not None:  # a counter's increase, between the same two scrapes
            assert event.get("preemptions") == values["preemptions"]
    engines = {e["engine"] for e in got}
    assert engines == ({0, 1} if name == "data_parallel_2" else {0})


def test_the_pdwatch_command_prints_them_too(replayed):
    """The installed command, as a user types it, in its own process."""
    proc = subprocess.run([sys.executable, "-m", "pdwatch", "parse", replayed.source("kv_pressure"), "--since", "5m",
                           "--format", "jsonl"], capture_output=True, text=True, timeout=60, env=env_without_proxy())
    assert proc.returncode == 0, proc.stderr
    got = [(e["running"], e["waiting"], e["kv_usage_pct"]) for e in stats_rows(proc.stdout)]
    want = [(v["running"], v["waiting"], v["kv_usage_pct"]) for _, v in served_rows(replayed.servers["kv_pressure"])]
    assert got == want
    assert (5, 27, pytest.approx(94.87179487179486)) in got  # the high phase: a queue on a full cache


def _report(argv: list[str], capsys) -> dict:
    code, out, err = run(["report", "--format", "json", *argv], capsys)
    assert code == 0, err
    return json.loads(out)


def _deployment(report: dict) -> dict:
    return {ep["name"]: (ep["role"], tuple(ep["engines"]), ep["gpus"]) for ep in report["deployment"]["endpoints"]}


def _findings(report: dict) -> list[tuple]:
    return sorted((f["rule"], f["endpoint"], tuple(f["engines"]), f["severity"]) for f in report["findings"])


def _starts(report: dict) -> dict:
    return {(f["rule"], f["endpoint"], tuple(f["engines"])): datetime.fromisoformat(f["start"]).timestamp()
            for f in report["findings"]}


def test_report_through_prometheus_is_the_report_of_the_same_scrapes_read_directly(replayed, tmp_path, capsys):
    recordings, endpoints = [], []
    for name, server in replayed.servers.items():
        path = server.write_recording(tmp_path / f"{name}.metrics.txt", scenario=name)
        recordings.append(str(path))
        endpoints.append({"name": name, "role": replayed.roles.get(name, "unknown"), "globs": [str(path)],
                          "prom": replayed.selector(name)})
    topology = tmp_path / "topology.yaml"
    topology.write_text(yaml.safe_dump({"endpoints": endpoints}))

    direct = _report([*recordings, "--topology-file", str(topology)], capsys)
    through = _report([replayed.prom.source + '?match={job="vllm"}', "--since", "5m", "--topology-file",
                       str(topology)], capsys)

    assert _deployment(through) == _deployment(direct)
    assert set(_deployment(through)) == set(replayed.servers)
    assert _findings(through) == _findings(direct)
    assert ("kv_exhausted", "kv_pressure", (0,), "critical") in _findings(through)
    direct_starts = _starts(direct)
    for key, start in _starts(through).items():  # the same grid step, give or take the stamps' difference
        assert abs(start - direct_starts[key]) <= 0.5 + TOLERANCE_S, (key, start, direct_starts[key])


def test_roles_and_names_come_from_the_target_labels(replayed, capsys):
    report = _report([replayed.prom.source + '?match={job="vllm"}', "--since", "5m"], capsys)
    by_name = {ep["name"]: ep for ep in report["deployment"]["endpoints"]}
    for name, server in replayed.servers.items():
        endpoint = by_name[server.address]  # a target is the endpoint its instance label names
        if name in replayed.roles:
            assert (endpoint["role"], endpoint["role_from"]) == (replayed.roles[name], "prometheus label")
        else:
            assert endpoint["role"] == "unknown"
        labels = f'instance="{server.address}",job="vllm"' + (f',role="{replayed.roles[name]}"'
                                                              if name in replayed.roles else "")
        assert endpoint["sources"] == [f"{replayed.prom.source}{{{labels}}}"]


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_the_report_names_the_targets_in_every_format(replayed, capsys, fmt):
    code, out, err = run(["report", replayed.source("decode"), "--since", "5m", "--format", fmt], capsys)
    assert code == 0, err
    address = replayed.servers["decode"].address
    quoted = "&quot;" if fmt == "html" else '"'
    assert f"instance={quoted}{address}{quoted}" in out  # the source, escaped for the format


def test_replay_plays_the_servers_range(replayed, capsys):
    code, out, err = run(["replay", replayed.source("kv_pressure"), "--since", "5m", "--speed", "max",
                          "--headless"], capsys)
    assert code == 0, err
    assert "FIRING" in out and "kv_exhausted" in out, out


def test_watch_reads_the_recent_past_then_each_new_scrape_once(replayed):
    sources = SourceSet([replayed.prom.source + '?match={job="live"}'], follow=True, scrape_interval=0.25,
                        prom=PromOptions(since="1m"))
    started = time.time()
    blocks: list[SampleBlock] = []
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            blocks += [i for i in sources.poll() if isinstance(i, SampleBlock)]
            if sum(b.ts.timestamp() > started for b in blocks) >= 4:
                break
            time.sleep(0.05)
    finally:
        sources.close()
    stamps = [b.ts.timestamp() for b in blocks]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps), "a scrape read twice"
    assert any(t < started - 2 for t in stamps), "the recent past was not read"
    assert sum(t > started for t in stamps) >= 4, "new scrapes did not arrive"
    gaps = [b - a for a, b in zip(stamps, stamps[1:])]
    assert max(gaps) < 1.6, gaps  # every 0.5 s scrape, none lost between the past and the polls


def test_watch_headless_follows_the_server(replayed, tmp_path):
    """pdwatch watch on a prom+http:// source, as a user runs it: it reads, says so, and stops on Ctrl-C."""
    import signal

    import threading

    proc = subprocess.Popen([sys.executable, "-m", "pdwatch", "watch", replayed.prom.source + '?match={job="live"}',
                             "--headless", "--jsonl", "--scrape-interval", "0.5"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env_without_proxy())
    said: list[str] = []
    reading = threading.Event()

    def read_stderr() -> None:
        for line in proc.stderr:
            said.append(line)
            if "1 target(s); reading the last 5 min, then asking every 0.5 s" in line:
                reading.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:  # a busy machine starts Python slowly: wait for the words, not a fixed time
        assert reading.wait(60), "".join(said)
        time.sleep(2)  # a few polls of the server
        proc.send_signal(signal.SIGINT)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    reader.join(10)
    err = "".join(said)
    assert proc.returncode in (0, 130), err
    assert "Traceback" not in err


# -- one-line errors -----------------------------------------------------------------------------------
def _error(argv: list[str], capsys) -> str:
    code, out, err = run(argv, capsys)
    lines = err.strip().splitlines()
    assert code == 2, (code, out, err)
    assert len(lines) == 1 and lines[0].startswith("pdwatch: error: "), err
    return lines[0]


def test_an_unreachable_server_is_one_line(capsys):
    port = free_port()
    line = _error(["report", f"prom+http://127.0.0.1:{port}", "--since", "5m"], capsys)
    assert f"prom+http://127.0.0.1:{port}: cannot reach the Prometheus server" in line


def test_a_bad_selector_is_one_line(replayed, capsys):
    line = _error(["parse", replayed.prom.source + "?match={job=}", "--since", "5m"], capsys)
    assert "bad selector" in line
    # valid for Python's re, refused by the server's RE2: the server's reason is given
    line = _error(["parse", replayed.prom.source + '?match={job=~"(?<=a)b"}', "--since", "5m"], capsys)
    assert 'bad selector {job=~"(?<=a)b"}' in line and "invalid" in line.lower()


def test_an_empty_result_is_one_line(replayed, capsys):
    line = _error(["report", replayed.prom.source + '?match={job="nope"}', "--since", "5m"], capsys)
    assert 'no vllm: or dynamo_frontend_ series pdwatch reads matching {job="nope"} between' in line


def test_a_server_side_limit_is_one_line(replayed, capsys):
    line = _error(["report", replayed.limited.source, "--since", "5m"], capsys)
    assert "a server-side limit stopped the query" in line and "too many samples" in line


def test_a_server_that_is_no_prometheus_is_one_line(replayed, capsys):
    # a /metrics server given as a Prometheus: http.server answers the API's POST with 501
    line = _error(["parse", f"prom+http://{replayed.live.address}", "--since", "5m"], capsys)
    assert line.startswith(f"pdwatch: error: prom+http://{replayed.live.address}: HTTP 501 Not Implemented from "
                           f"http://{replayed.live.address}/api/v1/series (no Prometheus API there: a wrong address "
                           f"or path prefix?): '<!DOCTYPE HTML>'")


def test_a_range_is_required_and_checked(replayed, capsys):
    assert "give --since" in _error(["report", replayed.prom.source], capsys)
    assert "is not before" in _error(["report", replayed.prom.source, "--since", "1m", "--until", "2m"], capsys)
    assert "--since 'yesterday-ish': expected a duration" in _error(["report", replayed.prom.source, "--since", "yesterday-ish"], capsys)


def test_notices_say_what_was_read(replayed):
    sources = SourceSet([replayed.source("kv_pressure")], follow=False, prom=PromOptions(since="5m"))
    items = list(sources.blocks())
    opened = [i for i in items if isinstance(i, SourceNotice) and i.kind == "opened"]
    assert len(opened) == 1 and "1 target(s)" in opened[0].message and "every 0.5 s" in opened[0].message
