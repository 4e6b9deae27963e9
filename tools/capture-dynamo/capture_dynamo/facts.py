"""What a Dynamo capture writes about itself: ``SCENARIO.scenario.json`` and ``README.md``, with
the measured facts a test can hold pdwatch to: the kit's timeline in UTC, the client's view of
every phase, the maxima of the key series in the scrapes, and counts read off the logs.

The facts are read with plain regular expressions, independently of pdwatch's parsers."""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
from collections import Counter
from pathlib import Path

from capture_vllm import hang_facts
from capture_vllm.load import phase_totals
from capture_vllm.record import iso

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
STATS = re.compile(r"Running: (\d+) reqs, Waiting: (\d+) reqs, (?:GPU|CPU) KV cache usage: ([\d.]+)%")
LEVEL = re.compile(r"^\S+Z\s+(ERROR|WARN)\s|\b(ERROR|WARNING) \d\d-\d\d ")
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")
HEADER = re.compile(r"^# =====.*\bt=(\d+(?:\.\d+)?)")
# The series a README reports per scrape file: gauges by their maximum, counters by first and last value.
WATCHED = ("dynamo_frontend_inflight_requests", "dynamo_frontend_queued_requests", "dynamo_frontend_requests_total",
           "dynamo_frontend_disconnected_clients", "dynamo_component_inflight_requests",
           "dynamo_component_gpu_cache_usage_percent", "dynamo_component_requests_total",
           "vllm:kv_cache_usage_perc", "vllm:num_requests_running", "vllm:num_requests_waiting",
           "vllm:num_preemptions_total", "vllm:prompt_tokens_total", "vllm:generation_tokens_total",
           "vllm:nixl_num_failed_transfers", "vllm:nixl_xfer_time_seconds_count")


def _versions(venv: Path) -> dict[str, str]:
    code = ("import importlib.metadata as m, json\n"
            "out = {}\n"
            "for d in ('ai-dynamo', 'ai-dynamo-runtime', 'vllm', 'torch', 'nixl-cu12'):\n"
            "    try: out[d] = m.version(d)\n"
            "    except Exception: out[d] = 'not installed'\n"
            "print(json.dumps(out))")
    got = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True)
    return json.loads(got.stdout) if got.returncode == 0 else {}


def _machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores ({model}), {platform.machine()}, no GPU"


def log_facts(path: Path) -> dict:
    text = path.read_bytes().decode("utf-8", "replace")
    lines = text.splitlines()
    clean = [ANSI.sub("", line) for line in lines]
    stats = [tuple(float(x) for x in m.groups()) for m in map(STATS.search, clean) if m]
    levels = Counter((m.group(1) or m.group(2)).replace("WARNING", "WARN") for m in map(LEVEL.search, clean) if m)
    return {"file": path.name, "lines": len(lines), "bytes": path.stat().st_size,
            "lines_with_ansi": sum(1 for line in lines if "\x1b[" in line),
            "error_lines": levels.get("ERROR", 0), "warn_lines": levels.get("WARN", 0),
            "stats_lines": len(stats),
            "stats_max_running": max((s[0] for s in stats), default=None),
            "stats_max_waiting": max((s[1] for s in stats), default=None),
            "stats_max_kv_pct": max((s[2] for s in stats), default=None)}


def scrape_facts(path: Path) -> dict:
    """Per watched series (all label sets summed): max and when, first and last value."""
    series: dict[str, list[tuple[float, float]]] = {}
    t = None
    sums: dict[str, float] = {}

    def flush() -> None:
        for name, value in sums.items():
            series.setdefault(name, []).append((t, value))

    scrapes = 0
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        m = HEADER.match(line)
        if m:
            if t is not None:
                flush()
            t, sums, scrapes = float(m.group(1)), {}, scrapes + 1
            continue
        m = SAMPLE.match(line)
        if m and m.group(1) in WATCHED:
            try:
                sums[m.group(1)] = sums.get(m.group(1), 0.0) + float(m.group(3))
            except ValueError:
                pass
    if t is not None:
        flush()
    out = {"file": path.name, "scrapes": scrapes, "series": {}}
    for name, points in series.items():
        top = max(points, key=lambda p: p[1])
        out["series"][name] = {"max": top[1], "max_at": iso(top[0]), "first": points[0][1], "last": points[-1][1],
                               "first_nonzero_at": next((iso(p[0]) for p in points if p[1] > 0), None)}
    return out


def write_description(capture, client, scraper, ready: bool) -> None:
    sc, out = capture.scenario, capture.out_dir
    phases = []
    for window in client.windows:
        totals = phase_totals(client.records, window)
        rows = [r for r in client.records if r.phase == window.name]
        totals["outcomes"] = dict(Counter(str(r.status) if r.status is not None else (r.error or "?").split(":")[0]
                                          for r in rows))
        phases.append(totals)
    description = {
        "scenario": sc.name, "summary": sc.summary, "captured_at": iso(capture.timeline.entries[0]["t"]),
        "versions": _versions(capture.venv), "machine": _machine(), "model": "tiny-qwen3 (dummy weights)",
        "processes": capture.command_lines(), "frontend_http_port": capture.http_port,
        "system_ports": capture.system_ports, "ready": ready,
        "timeline": [{**e, "utc": iso(e["t"])} for e in capture.timeline.entries],
        "phases": phases, "exit_codes": capture.exits,
        "scrapes": {"every_s": 2.0, "taken": scraper.taken,
                    "failed": {k: [iso(t) for t in v] for k, v in scraper.failed.items()}},
        "logs": [log_facts(p) for p in sorted(out.glob(f"{sc.name}.*.log"))],
        "metrics": [scrape_facts(p) for p in sorted(out.glob(f"{sc.name}.*.metrics.txt"))],
        "notes": list(sc.notes),
    }
    if capture.frozen:
        description["freeze"] = freeze_facts(capture, client, scraper)
    (out / f"{sc.name}.scenario.json").write_text(json.dumps(description, indent=1) + "\n", encoding="utf-8")
    (out / "README.md").write_text(readme(description), encoding="utf-8")


def freeze_facts(capture, client, scraper) -> dict:
    """The hang: from the first SIGSTOP to the first SIGCONT, what each log printed, what each
    /metrics served, what /health answered, and what became of the client's requests."""
    sc, out = capture.scenario, capture.out_dir
    start = min(f.stopped_at for _, f in capture.frozen)
    end = min(f.continued_at or float("inf") for _, f in capture.frozen)
    return {"window": {"from": iso(start), "to": iso(end), "seconds": round(end - start, 3)},
            "frozen": [{"process": name, "target": f.target, "pids": [f"{pid} {title[:60]!r}" for pid, title in f.pids],
                        "states": f.states} for name, f in capture.frozen],
            "requests": hang_facts.request_facts(client.records, start, end),
            "logs": [hang_facts.log_facts(p, start, end) for p in sorted(out.glob(f"{sc.name}.*.log"))],
            "metrics": [hang_facts.scrape_facts(p, start, end, WATCHED)
                        for p in sorted(out.glob(f"{sc.name}.*.metrics.txt"))],
            "health": hang_facts.health_facts(scraper.health, start, end),
            "failed_scrapes_during": {name: sum(1 for t in ts if start <= t < end)
                                      for name, ts in scraper.failed.items()}}


def readme(d: dict) -> str:
    v = d["versions"]
    lines = [f"# {d['scenario']}", "", d["summary"], "",
             f"Captured {d['captured_at']} by `tools/capture-dynamo` (pdwatch's Dynamo capture kit): ai-dynamo "
             f"{v.get('ai-dynamo')} (runtime {v.get('ai-dynamo-runtime')}) on vLLM {v.get('vllm')} for CPU (torch "
             f"{v.get('torch')}, nixl-cu12 {v.get('nixl-cu12')}), {d['machine']}. Model: the kit's tiny "
             "random-weight Qwen3 with a word-level tokenizer (`w17 w999`: one word, one token); every request "
             "sets `ignore_eos`, so a completed request's output length is its max_tokens.",
             "All times are UTC. The logs are each process's stdout and stderr, untouched (ANSI colours as the "
             "programs wrote them); `*.metrics.txt` holds each process's `/metrics` every 2 s after a "
             "`# ===== ... t=EPOCH (ISO) port=N =====` line; `*.requests.csv` every request the client sent.", "",
             "## Processes", ""]
    for p in d["processes"]:
        lines += [f"`{p['log']}`:", "", "```", p["command"], "```", ""]
    lines += ["## What happened", "", "| UTC | event |", "|---|---|"]
    lines += [f"| {e['utc'][11:23]} | {e['what']} |" for e in d["timeline"]]
    lines += ["", "## Load phases (client side)", "",
              "| phase | kind | window (UTC) | sent | ok | failed | outcomes | prompt tokens | output tokens | "
              "latency mean/max s |", "|---|---|---|---|---|---|---|---|---|---|"]
    for p in d["phases"]:
        lat = f"{p['latency_mean_s']}/{p['latency_max_s']}" if p["latency_mean_s"] is not None else "–"
        lines.append(f"| {p['phase']} | {p['kind']} | {iso(p['start'])[11:23]} – {iso(p['end'])[11:23]} | "
                     f"{p['sent']} | {p['ok']} | {p['failed']} | {p['outcomes'] or '–'} | {p['prompt_tokens']} | "
                     f"{p['output_tokens']} | {lat} |")
    lines += ["", f"Exit codes: {d['exit_codes']}.", "", "## Measured facts", "", "Logs:", "",
              "| file | lines | bytes | with ANSI | ERROR | WARN | stats lines | max running / waiting / KV % |",
              "|---|---|---|---|---|---|---|---|"]
    for f in d["logs"]:
        top = (f"{f['stats_max_running']:.0f} / {f['stats_max_waiting']:.0f} / {f['stats_max_kv_pct']}"
               if f["stats_lines"] else "–")
        lines.append(f"| {f['file']} | {f['lines']} | {f['bytes']} | {f['lines_with_ansi']} | {f['error_lines']} | "
                     f"{f['warn_lines']} | {f['stats_lines']} | {top} |")
    lines += ["", f"Scrapes taken: {d['scrapes']['taken']}; failed (not written): "
              f"{ {k: len(v) for k, v in d['scrapes']['failed'].items()} }.", ""]
    for m in d["metrics"]:
        lines += [f"`{m['file']}` ({m['scrapes']} scrapes; label sets summed):", ""]
        for name, s in sorted(m["series"].items()):
            lines.append(f"- `{name}`: max {s['max']:g} at {s['max_at'][11:23]}, first {s['first']:g}, "
                         f"last {s['last']:g}, first above 0 at {(s['first_nonzero_at'] or '–')[11:23]}")
        lines.append("")
    if d.get("freeze"):
        lines += hang_facts.render(d["freeze"])
    if d["notes"]:
        lines += ["## Notes", ""] + [f"- {n}" for n in d["notes"]] + [""]
    return "\n".join(lines)
