"""What a capture writes beside the server logs: /metrics scrapes, the client's requests,
and the run's description (scenario.json and a README made from it)."""

from __future__ import annotations

import csv
import json
import time
from dataclasses import asdict, fields
from pathlib import Path

from .load import PhaseWindow, RequestRecord, phase_totals
from .server import get


def iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1000):03d}Z"


class ScrapeFile:
    """``metrics.txt``: one scrape after another, each after a header pdwatch and people can read:
    ``# ===== scenario=S phase=P <what> t=EPOCH (ISO) port=N =====``."""

    def __init__(self, path: Path, scenario: str):
        self.path, self.scenario = path, scenario
        self.taken: list[dict] = []

    def scrape(self, port: int, phase: str, what: str) -> bool:
        status, body = get(port, "/metrics", timeout_s=5.0)
        t = time.time()
        if status != 200:
            self.taken.append({"port": port, "phase": phase, "what": what, "t": t, "status": status})
            return False
        header = f"# ===== scenario={self.scenario} phase={phase} {what} t={t:.3f} ({iso(t)}) port={port} =====\n"
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(header)
            f.write(body.decode("utf-8", "replace"))
        self.taken.append({"port": port, "phase": phase, "what": what, "t": t, "status": status})
        return True


REQUEST_FIELDS = [f.name for f in fields(RequestRecord)]


def write_requests(path: Path, records: list[RequestRecord]) -> None:
    """``requests.csv``: one row per request, times in epoch seconds (ms precision)."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        out = csv.DictWriter(f, REQUEST_FIELDS)
        out.writeheader()
        for rec in sorted(records, key=lambda r: r.sent):
            row = asdict(rec)
            for key in ("sent", "first_token", "end"):
                if row[key] is not None:
                    row[key] = f"{row[key]:.3f}"
            out.writerow(row)


def read_requests(path: Path) -> list[dict]:
    """The rows of ``requests.csv`` with numbers as numbers (for tests and the README)."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for row in csv.DictReader(f):
            out: dict = {}
            for key, value in row.items():
                if value == "":
                    out[key] = None
                elif key in ("sent", "first_token", "end"):
                    out[key] = float(value)
                elif key in ("index", "prompt_tokens", "max_tokens", "output_tokens", "chunks", "status"):
                    out[key] = int(value)
                else:
                    out[key] = value
            rows.append(out)
    return rows


def write_description(out_dir: Path, description: dict, windows: list[PhaseWindow],
                      records: list[RequestRecord]) -> None:
    description["phases"] = [phase_totals(records, w) for w in windows]
    (out_dir / "scenario.json").write_text(json.dumps(description, indent=2) + "\n", encoding="utf-8")
    (out_dir / "README.md").write_text(readme(description), encoding="utf-8")


def readme(d: dict) -> str:
    lines = [f"# {d['scenario']}", "", d["summary"], "",
             f"Captured {d['captured_at']} by `tools/capture-vllm` (pdwatch's capture kit): vLLM {d['vllm_version']} "
             f"for CPU (torch {d['torch_version']}) on {d['machine']}. Model: the kit's tiny random-weight "
             f"Qwen3 (`{d['model']}`), dummy weights, token-id prompts, `ignore_eos` (output length = max_tokens).",
             "Log timestamps are UTC. The files are untouched: each server's stdout and stderr, the `/metrics` "
             "scrapes (`metrics.txt`, one per header line) and every request the client sent (`requests.csv`).", "",
             "## Servers", ""]
    for s in d["servers"]:
        lines += [f"`{s['name']}.log` (port {s['port']}):", "", "```", s["command"], "```", ""]
    lines += ["## Load phases (client side)", "",
              "| phase | kind | window (UTC) | s | sent | ok | failed | prompt tokens | output tokens | latency mean/max s |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for p in d["phases"]:
        lat = f"{p['latency_mean_s']}/{p['latency_max_s']}" if p["latency_mean_s"] is not None else "–"
        lines.append(f"| {p['phase']} | {p['kind']} | {iso(p['start'])[11:23]} – {iso(p['end'])[11:23]} | "
                     f"{p['seconds']} | {p['sent']} | {p['ok']} | {p['failed']} | {p['prompt_tokens']} | "
                     f"{p['output_tokens']} | {lat} |")
    lines += ["", "## How it ended", "", d["ending"], ""]
    if d.get("signals"):
        lines += ["Signals the kit sent (UTC; requests in flight as the client counted them):", "",
                  "| UTC | signal | to | why | in flight | phase |", "|---|---|---|---|---|---|"]
        for sig in d["signals"]:
            to = ", ".join(f"{pid} `{title}`" for pid, title in zip(sig["pids"], sig["titles"]))
            lines.append(f"| {sig['utc'][11:23]} | {sig['signal']} | {to} | {sig['why']} | {sig['in_flight']} | "
                         f"{sig['phase']} |")
        lines.append("")
    if d.get("freeze"):
        from .hang_facts import render

        lines += render(d["freeze"])
    if d.get("notes"):
        lines += ["## Notes", ""] + [f"- {n}" for n in d["notes"]] + [""]
    return "\n".join(lines)
